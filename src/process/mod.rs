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
//! One supervisor applies these rules: [`supervise_blocking`], one `poll(2)` loop on the calling
//! thread (the prepare runner's worker threads, where the runtime's hand-offs and wake-ups cost
//! more CPU than the hooks' own spawns; see `blocking`). [`run`] is its async entry point (`op`,
//! `git`): it runs that loop on Tokio's blocking pool and turns an abort future into an [`Abort`].
//!
//! A leaf module: it imports only other leaf modules (`procfs`, `text`), so every stage may use it.

use std::ffi::OsString;
use std::future::Future;
use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::sys::wait::{Id, WaitPidFlag, waitid};
use nix::unistd::Pid;

mod blocking;
mod interrupt;
mod output;
pub mod watchdog;

pub(crate) use blocking::{Abort, supervise as supervise_blocking};
pub use interrupt::{Interrupt, InterruptHandle, interrupt_channel};
pub use output::{StderrSink, stderr_to_terminal};
pub(crate) use output::{StderrSummary, StdoutCapture};

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

/// Spawn and supervise on the blocking pool ([`blocking::supervise`]): the whole life of one
/// process. `abort` is awaited here and fires the supervisor's [`Abort`]; if this future is
/// dropped midway (the caller was cancelled), the abort fires too and the group is killed.
pub(crate) async fn run<A>(spec: Spawn, io: &Io, abort: impl Future<Output = A>) -> io::Result<Finished<A>>
where
    A: Copy + Send + 'static,
{
    let fire = CancelGuard(Arc::new(Abort::new()?));
    let (io, pipe) = (io.clone(), fire.0.clone());
    let mut task = tokio::task::spawn_blocking(move || Ok(blocking::supervise(spawn(&spec)?, &io, &pipe)));
    tokio::pin!(abort);
    let finished: io::Result<Finished<Option<A>>> = tokio::select! {
        biased;
        done = &mut task => joined_blocking(done),
        reason = &mut abort => {
            fire.0.fire(Some(reason));
            joined_blocking(task.await)
        }
    };
    let finished = finished?;
    let ending = match finished.ending {
        Ending::Exited => Ending::Exited,
        Ending::Timeout => Ending::Timeout,
        Ending::Overflow => Ending::Overflow,
        Ending::Aborted(reason) => Ending::Aborted(reason.expect("only a dropped `run` fires `None`")),
    };
    Ok(Finished {
        ending,
        status: finished.status,
        stdout: finished.stdout,
        stderr: finished.stderr,
        write_error: finished.write_error,
    })
}

/// Fires `None` when [`run`] is dropped (a reason fired earlier is kept).
struct CancelGuard<A: Copy>(Arc<Abort<Option<A>>>);

impl<A: Copy> Drop for CancelGuard<A> {
    fn drop(&mut self) {
        self.0.fire(None);
    }
}

/// Resume a panic of a blocking task in the caller.
pub(crate) fn joined_blocking<R>(r: Result<R, tokio::task::JoinError>) -> R {
    r.unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
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

#[cfg(test)]
mod tests;
