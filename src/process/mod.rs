//! The one spawn primitive of `ags`: start a program in its own process group with exactly the
//! environment given, feed it stdin bytes then EOF, capture capped stdout, forward capped and
//! escaped stderr, stop it on a timeout, on output overflow or when an abort future fires, then
//! SIGKILL its whole group before reaping it. Prepare hooks (`crate::hooks::runner`), lifecycle
//! hooks, the 1Password CLI (`crate::op`) and the OpenSSH client of an `ssh://` service
//! (`crate::podman`'s tunnel, via [`spawn`]) all run through here: there is no other `Command::spawn` in `ags`
//! (besides the [`watchdog`]'s own start, also here). Every group started is recorded with the
//! watchdog, which kills it should `ags` die before doing so itself.
//!
//! Why `std::process` and a blocking `waitid(WNOWAIT)` instead of `tokio::process`: Tokio reaps a
//! child as soon as it exits, after which its process-group id may in theory be reused, so a
//! later `killpg` could hit a stranger. `WNOWAIT` lets us see the exit while the child is still
//! an unreaped zombie, which keeps its group id reserved until our `killpg` is done.
//!
//! Two supervisors share these rules: [`run`] supervises one process from the async runtime
//! (lifecycle hooks, `op`, the SSH transport), [`supervise_blocking`] supervises it on the
//! calling thread with one `poll(2)` loop (the prepare runner's worker threads, where the
//! runtime's hand-offs and wake-ups cost more CPU than the hooks' own spawns; see `blocking`).
//!
//! A leaf module: it imports only other leaf modules (`procfs`, `text`), so every stage may use it.

use std::ffi::OsString;
use std::future::Future;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::sys::wait::{Id, WaitPidFlag, waitid};
use nix::unistd::Pid;
use tokio::io::AsyncWriteExt;
use tokio::net::unix::pipe;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep_until, timeout_at};

mod blocking;
mod interrupt;
mod output;
pub mod watchdog;

pub(crate) use blocking::{Abort, supervise as supervise_blocking};
pub use interrupt::{Interrupt, InterruptHandle, interrupt_channel};
pub use output::{StderrSink, stderr_to_terminal};
pub(crate) use output::{StderrSummary, StdoutCapture};
use output::{forward_stderr, read_stdout};

/// Writing an executable (exclusive) never overlaps a fork (shared). A child forked while a file
/// is open for writing inherits that descriptor until its own `exec`, and an `exec` of that file
/// during the window fails with ETXTBSY ("text file busy"). Forks may overlap each other.
static FORK_VS_WRITE: RwLock<()> = RwLock::new(());

/// Held by [`spawn`] while forking: no executable (a hook's execution copy) is open for writing
/// meanwhile.
fn fork_guard() -> RwLockReadGuard<'static, ()> {
    FORK_VS_WRITE.read().unwrap_or_else(PoisonError::into_inner)
}

/// Hold this while writing a file that a child will execute (the hooks' execution copies): no
/// process is forked meanwhile.
pub fn no_fork_guard() -> RwLockWriteGuard<'static, ()> {
    FORK_VS_WRITE.write().unwrap_or_else(PoisonError::into_inner)
}

/// `SIGTERM` for 15; `signal N` when unknown.
pub fn signal_name(signal: i32) -> String {
    nix::sys::signal::Signal::try_from(signal)
        .map(|s| s.as_str().to_string())
        .unwrap_or_else(|_| format!("signal {signal}"))
}

/// What to start. The environment is complete: nothing of `ags`'s own is inherited.
#[derive(Debug, Clone)]
pub(crate) struct Spawn {
    /// The program (a path; no `PATH` lookup happens here).
    pub program: PathBuf,
    /// Arguments after `argv[0]`.
    pub args: Vec<OsString>,
    /// Working directory (`None`: `ags`'s own).
    pub cwd: Option<PathBuf>,
    /// The child's whole environment.
    pub env: Vec<(OsString, OsString)>,
}

/// How to talk to the started process and when to give up on it.
#[derive(Clone)]
pub(crate) struct Io {
    /// Written to stdin, then stdin is closed.
    pub stdin: Arc<[u8]>,
    /// Stdout bytes accepted; more ends the process ([`Ending::Overflow`]).
    pub stdout_cap: usize,
    /// Stderr lines go to `stderr_sink`, escaped and prefixed with `[stderr_name] `.
    pub stderr_name: String,
    /// Stderr bytes kept; the rest is read and discarded.
    pub stderr_cap: usize,
    /// Receives stderr lines.
    pub stderr_sink: StderrSink,
    /// Measured from the start of supervision.
    pub timeout: Duration,
    /// How long pipes are still read after the group was killed.
    pub drain_grace: Duration,
}

/// Why supervision stopped (the group is killed in every case).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending<A> {
    /// The process exited by itself.
    Exited,
    /// [`Io::timeout`] expired.
    Timeout,
    /// Stdout exceeded [`Io::stdout_cap`].
    Overflow,
    /// The abort future completed with this value.
    Aborted(A),
}

/// Everything observed about one process, after its group was killed and it was reaped.
#[derive(Debug)]
pub(crate) struct Finished<A> {
    /// Why supervision stopped.
    pub ending: Ending<A>,
    /// Its exit status (or why it could not be had).
    pub status: io::Result<ExitStatus>,
    /// Captured stdout.
    pub stdout: StdoutCapture,
    /// Stderr counters.
    pub stderr: StderrSummary,
    /// Writing stdin failed (other than a broken pipe: a child may ignore its input).
    pub write_error: Option<io::Error>,
}

/// Start `spec` in a new process group with piped standard streams. Blocking (fork/exec, and
/// waiting for any execution copy being written): call it on the blocking pool.
pub(crate) fn spawn(spec: &Spawn) -> io::Result<Running> {
    let mut command = Command::new(&spec.program);
    command
        .args(&spec.args)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if let Some(cwd) = &spec.cwd {
        command.current_dir(cwd);
    }
    let fork_guard = fork_guard();
    let child = command.spawn()?;
    drop(fork_guard);
    let running = Running::new(child);
    // A group the watchdog cannot guard is not left running: `running` is dropped (killed).
    watchdog::watch(running.pgid(), running.start)?;
    Ok(running)
}

/// Start the watchdog (`program arg`, see [`watchdog`]): its own process group, `/` as cwd, an
/// empty environment, stdout and stderr on `/dev/null`, stdin a pipe whose write end is returned
/// (close-on-exec, so no later child inherits it). Blocking (fork/exec).
pub(crate) fn spawn_watchdog(program: &Path, arg: &str) -> io::Result<(Child, ChildStdin)> {
    let mut command = Command::new(program);
    command
        .arg(arg)
        .env_clear()
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    let fork_guard = fork_guard();
    let mut child = command.spawn()?;
    drop(fork_guard);
    let pipe = child
        .stdin
        .take()
        .ok_or_else(|| io::Error::other("the watchdog's stdin was not piped"))?;
    Ok((child, pipe))
}

/// Spawn (on the blocking pool) and supervise: the whole life of one process.
pub(crate) async fn run<A>(spec: Spawn, io: &Io, abort: impl Future<Output = A>) -> io::Result<Finished<A>> {
    start_and_supervise(move || spawn(&spec), io, abort).await
}

/// Run `start` (checks, then [`spawn`]) on the blocking pool and supervise what it started. The
/// blocking task that spawned goes on to wait for the exit: one hand-off to the pool per
/// process, not one for the spawn and another for the wait.
pub(crate) async fn start_and_supervise<A, E>(
    start: impl FnOnce() -> Result<Running, E> + Send + 'static,
    io: &Io,
    abort: impl Future<Output = A>,
) -> Result<Finished<A>, E>
where
    E: Send + 'static,
{
    let (tx, rx) = oneshot::channel();
    let exited = tokio::task::spawn_blocking(move || {
        let started = start();
        let pid = started.as_ref().ok().map(|r| r.pgid);
        // The receiver is gone (the caller was cancelled): dropping `running` kills the group.
        if tx.send(started).is_ok()
            && let Some(pid) = pid
        {
            wait_exit(pid);
        }
    });
    let running = match rx.await {
        Ok(started) => started?,
        // `start` panicked: resume it here.
        Err(_) => {
            joined_blocking(exited.await);
            unreachable!("the start task ends only after sending, unless it panicked")
        }
    };
    Ok(supervise(running, exited, io, abort).await)
}

/// Resume a panic of a blocking task in the caller.
pub(crate) fn joined_blocking<R>(r: Result<R, tokio::task::JoinError>) -> R {
    r.unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
}

/// Feed, read and watch `running` until it exits, times out, overflows stdout or `abort`
/// completes; then kill its group, reap it and drain its pipes (bounded by the drain grace).
/// `exited` completes when the process has exited (without reaping it).
async fn supervise<A>(
    mut running: Running,
    mut exited: JoinHandle<()>,
    io: &Io,
    abort: impl Future<Output = A>,
) -> Finished<A> {
    let (stop_tx, stop_rx) = watch::channel(false);
    let pipes = match running.take_pipes() {
        Ok(p) => p,
        Err(source) => return running.abandon(source),
    };
    let mut writer = tokio::spawn(write_stdin(pipes.stdin, io.stdin.clone()));
    let mut stdout = tokio::spawn(read_stdout(pipes.stdout, io.stdout_cap, stop_rx.clone()));
    let stderr = tokio::spawn(forward_stderr(
        pipes.stderr,
        io.stderr_name.clone(),
        io.stderr_cap,
        io.stderr_sink.clone(),
        stop_rx,
    ));
    let _helpers = HelperTasks([
        writer.abort_handle(),
        stdout.abort_handle(),
        stderr.abort_handle(),
    ]);
    let deadline = Instant::now() + io.timeout;
    let mut early_stdout = None;
    tokio::pin!(abort);
    let ending = loop {
        tokio::select! {
            biased;
            _ = &mut exited => break Ending::Exited,
            r = &mut stdout, if early_stdout.is_none() => {
                let capture = joined(r);
                let overflow = capture.overflow;
                early_stdout = Some(capture);
                if overflow {
                    break Ending::Overflow;
                }
            }
            () = sleep_until(deadline) => break Ending::Timeout,
            reason = &mut abort => break Ending::Aborted(reason),
        }
    };
    running.kill();
    if !matches!(ending, Ending::Exited) {
        let _ = exited.await; // returns promptly: the whole group was just SIGKILLed
    }
    let status = running.reap();
    let drain_until = Instant::now() + io.drain_grace;
    let write_error = match timeout_at(drain_until, &mut writer).await {
        Ok(Ok(Err(e))) if e.kind() != io::ErrorKind::BrokenPipe => Some(e),
        Ok(_) => None,
        Err(_) => {
            writer.abort(); // something outside the group still holds stdin open
            None
        }
    };
    let stdout = match early_stdout {
        Some(capture) => capture,
        None => drain(stdout, drain_until, &stop_tx).await,
    };
    let stderr = drain(stderr, drain_until, &stop_tx).await;
    Finished {
        ending,
        status,
        stdout,
        stderr,
        write_error,
    }
}

/// Stops the pipe tasks if supervision is dropped midway (the caller was cancelled); the
/// [`Running`] guard kills the processes, this stops the readers and the writer.
struct HelperTasks([tokio::task::AbortHandle; 3]);

impl Drop for HelperTasks {
    fn drop(&mut self) {
        self.0.iter().for_each(tokio::task::AbortHandle::abort);
    }
}

/// Wait for a reader until `until`, then tell it to stop and take what it has.
async fn drain<R: Default>(mut task: JoinHandle<R>, until: Instant, stop: &watch::Sender<bool>) -> R {
    match timeout_at(until, &mut task).await {
        Ok(r) => joined(r),
        Err(_) => {
            stop.send_replace(true);
            joined(task.await)
        }
    }
}

fn joined<R: Default>(r: Result<R, tokio::task::JoinError>) -> R {
    match r {
        Ok(v) => v,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(_) => R::default(),
    }
}

async fn write_stdin(mut stdin: pipe::Sender, bytes: Arc<[u8]>) -> io::Result<()> {
    stdin.write_all(&bytes).await?;
    stdin.flush().await
    // dropping `stdin` closes it: the child sees EOF
}

/// Block until `pid` has exited, without reaping it.
fn wait_exit(pid: Pid) {
    loop {
        match waitid(Id::Pid(pid), WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT) {
            Err(Errno::EINTR) => continue,
            _ => return,
        }
    }
}

struct Pipes {
    stdin: pipe::Sender,
    stdout: pipe::Receiver,
    stderr: pipe::Receiver,
}

/// Owns a started process. Its process group is SIGKILLed before the process is reaped, and on
/// drop (supervision cancelled) the group is killed and the process reaped as well.
pub(crate) struct Running {
    child: Option<Child>,
    pgid: Pid,
    /// The leader's start time (`/proc/PID/stat`), read once right after the spawn.
    start: Option<u64>,
}

impl Running {
    fn new(child: Child) -> Self {
        // process_group(0): the child leads a new group whose id is its pid.
        let pgid = Pid::from_raw(child.id() as i32);
        Self {
            start: crate::procfs::process_start_time(child.id()),
            child: Some(child),
            pgid,
        }
    }

    fn take_pipes(&mut self) -> io::Result<Pipes> {
        let child = self.child.as_mut().expect("the child is not reaped yet");
        let missing = || io::Error::other("a standard stream of the child was not piped");
        let stdin = OwnedFd::from(child.stdin.take().ok_or_else(missing)?);
        let stdout = OwnedFd::from(child.stdout.take().ok_or_else(missing)?);
        let stderr = OwnedFd::from(child.stderr.take().ok_or_else(missing)?);
        Ok(Pipes {
            stdin: pipe::Sender::from_owned_fd(stdin)?,
            stdout: pipe::Receiver::from_owned_fd(stdout)?,
            stderr: pipe::Receiver::from_owned_fd(stderr)?,
        })
    }

    /// The id of the process group the process leads.
    pub(crate) fn pgid(&self) -> u32 {
        self.pgid.as_raw() as u32
    }

    /// The leader's start time (with [`Self::pgid`] it names the group unambiguously: a reused
    /// pid has another start time). `None` if it could not be read.
    pub(crate) fn start_time(&self) -> Option<u64> {
        self.start
    }

    /// Take the child's stderr pipe (for a long-running helper whose errors are read while it
    /// runs, such as the SSH transport of `crate::podman`).
    pub(crate) fn take_stderr(&mut self) -> Option<std::process::ChildStderr> {
        self.child.as_mut().and_then(|c| c.stderr.take())
    }

    /// Whether the process has exited, without reaping it (its group id stays reserved).
    pub(crate) fn has_exited(&self) -> bool {
        let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT | WaitPidFlag::WNOHANG;
        loop {
            match waitid(Id::Pid(self.pgid), flags) {
                Err(Errno::EINTR) => continue,
                Ok(nix::sys::wait::WaitStatus::StillAlive) => return false,
                _ => return true,
            }
        }
    }

    /// SIGKILL every member of the group (ESRCH: nobody left), and the process itself by its
    /// pid: it may have left its group for another one of the session (`setpgid`), which the
    /// group kill misses, and waiting for its exit would never end. Its pid is ours until it is
    /// reaped (a zombie ignores the signal).
    fn kill(&self) {
        let _ = killpg(self.pgid, Signal::SIGKILL);
        let _ = nix::sys::signal::kill(self.pgid, Signal::SIGKILL);
    }

    /// Reap the process (call after [`Self::kill`]; it is dead or dying). The watchdog forgets
    /// the group first: once the leader is reaped its id may be reused.
    fn reap(&mut self) -> io::Result<ExitStatus> {
        watchdog::forget(self.pgid());
        self.child.take().expect("reaped once").wait()
    }

    /// Setting up the pipes failed: kill, reap and report.
    fn abandon<A>(mut self, source: io::Error) -> Finished<A> {
        self.kill();
        let status = self.reap();
        Finished {
            ending: Ending::Exited,
            status: status.and(Err(source)),
            stdout: StdoutCapture::default(),
            stderr: StderrSummary::default(),
            write_error: None,
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            self.kill();
            watchdog::forget(self.pgid());
            let _ = child.wait(); // SIGKILLed: returns promptly
        }
    }
}
