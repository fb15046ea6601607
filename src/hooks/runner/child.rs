//! One hook execution: recheck approval, make the private copy, spawn it (the only `spawn` in
//! `ags`), feed stdin, read stdout/stderr, enforce the hook's timeout, kill its process group,
//! reap it, and classify how it ended.
//!
//! Blocking work (the approval recheck, the copy, `spawn`, waiting for the exit) runs on Tokio's
//! blocking pool, so slow filesystem metadata operations never stall the other hooks' pipes.
//!
//! Why `std::process` and a blocking `waitid(WNOWAIT)` instead of `tokio::process`: Tokio reaps a
//! child as soon as it exits, after which its process-group id may in theory be reused, so a
//! later `killpg` could hit a stranger. `WNOWAIT` lets us see the exit while the entrypoint is
//! still an unreaped zombie, which keeps its group id reserved until our `killpg` is done.

use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::time::SystemTime;

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::sys::wait::{Id, WaitPidFlag, waitid};
use nix::unistd::Pid;
use tokio::io::AsyncWriteExt;
use tokio::net::unix::pipe;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep_until, timeout_at};

use super::output::{StderrSummary, StdoutCapture, forward_stderr, read_stdout};
use super::{AbortReason, ExitInfo, HookFailure, HookReport, Outcome, PASSED_ENV, TaskEnv, error_detail};
use crate::hooks::entrypoint::PreparedHook;
use crate::hooks::exec_copy;

/// What a hook task hands back to the coordinator.
pub(super) struct TaskResult {
    pub index: usize,
    pub report: HookReport,
    pub stdout: Vec<u8>,
    pub failure: Option<HookFailure>,
}

/// How supervision ended, before the group is killed.
#[derive(Debug, Clone, Copy)]
enum Ending {
    Exited,
    Timeout,
    Overflow,
    Aborted(AbortReason),
}

/// Run hook number `index` to completion (or until aborted), never leaving its group alive.
pub(super) async fn run_one(
    index: usize,
    hook: Arc<PreparedHook>,
    env: Arc<TaskEnv>,
    abort: watch::Receiver<Option<AbortReason>>,
) -> TaskResult {
    let mut report = HookReport::not_started(&hook);
    report.started_at = Some(SystemTime::now());
    let t0 = Instant::now();
    let spawned = {
        let (hook, env) = (hook.clone(), env.clone());
        // If this task is aborted meanwhile, dropping the result kills the group.
        joined_blocking(tokio::task::spawn_blocking(move || spawn(&hook, &env)).await)
    };
    let group = match spawned {
        Ok(spawned) => spawned,
        Err(failure) => {
            report.outcome = failure.outcome();
            report.duration = t0.elapsed();
            return TaskResult {
                index,
                report,
                stdout: Vec::new(),
                failure: Some(failure),
            };
        }
    };
    let done = supervise(&hook, &env, group, abort).await;
    report.duration = t0.elapsed();
    report.stdout_bytes = done.stdout.total;
    report.stderr_bytes = done.stderr.total;
    report.exit = done.status.as_ref().ok().map(exit_info);
    let (outcome, failure) = classify(&hook, &env, &done);
    report.outcome = outcome;
    TaskResult {
        index,
        report,
        stdout: done.stdout.bytes,
        failure,
    }
}

pub(super) fn joined_blocking<R>(r: Result<R, tokio::task::JoinError>) -> R {
    r.unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
}

/// Recheck approval, make and verify the copy, and start it. Blocking.
fn spawn(hook: &PreparedHook, env: &TaskEnv) -> Result<GroupGuard, HookFailure> {
    if !env.store.is_approved(&hook.hash)? {
        return Err(HookFailure::NotApproved {
            hash: hook.hash.clone(),
        });
    }
    let program = env.exec_dir.copy(hook)?;
    let passed = PASSED_ENV
        .iter()
        .filter_map(|k| std::env::var_os(k).map(|v| (*k, v)));
    let fork_guard = exec_copy::fork_guard();
    let child = Command::new(&program)
        .args(&hook.decl.args)
        .current_dir(&env.workdir)
        .env_clear()
        .envs(passed)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|source| spawn_failure(program, env, source))?;
    drop(fork_guard);
    Ok(GroupGuard::new(child))
}

fn spawn_failure(program: PathBuf, env: &TaskEnv, source: io::Error) -> HookFailure {
    let hint = match source.raw_os_error() {
        Some(libc::EACCES | libc::EPERM) => format!(
            "execution was denied: check that the filesystem of the approval store {} is not mounted \
             noexec and that the interpreter on the entrypoint's #! line is executable \
             (ags never falls back to the original file)",
            env.store.dir().display()
        ),
        Some(libc::ENOENT) => format!(
            "check that the interpreter on the entrypoint's #! line exists and that the workdir {} exists",
            env.workdir.display()
        ),
        Some(libc::ENOEXEC) => "the entrypoint is not a recognized executable; scripts need a #! line".into(),
        _ => "check the entrypoint and its interpreter".into(),
    };
    HookFailure::Spawn {
        program,
        source,
        hint,
    }
}

/// Everything observed about one started process.
struct Done {
    ending: Ending,
    status: io::Result<ExitStatus>,
    stdout: StdoutCapture,
    stderr: StderrSummary,
    write_error: Option<io::Error>,
}

async fn supervise(
    hook: &PreparedHook,
    env: &TaskEnv,
    mut group: GroupGuard,
    mut abort: watch::Receiver<Option<AbortReason>>,
) -> Done {
    let (stop_tx, stop_rx) = watch::channel(false);
    let pipes = match group.take_pipes() {
        Ok(p) => p,
        Err(source) => return group.abandon(source),
    };
    let mut writer = tokio::spawn(write_context(pipes.stdin, env.context.clone()));
    let mut stdout = tokio::spawn(read_stdout(pipes.stdout, env.limits.stdout_cap, stop_rx.clone()));
    let stderr = tokio::spawn(forward_stderr(
        pipes.stderr,
        hook.decl.name.clone(),
        env.limits.stderr_cap,
        env.sink.clone(),
        stop_rx,
    ));
    let _helpers = HelperTasks([
        writer.abort_handle(),
        stdout.abort_handle(),
        stderr.abort_handle(),
    ]);
    let pid = group.pgid;
    let mut exited = tokio::task::spawn_blocking(move || wait_exit(pid));
    let hook_deadline = Instant::now() + std::time::Duration::from_secs(hook.decl.timeout_seconds.into());
    let mut early_stdout = None;
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
            () = sleep_until(hook_deadline) => break Ending::Timeout,
            r = abort.wait_for(Option::is_some) => {
                break Ending::Aborted(r.ok().and_then(|v| *v).unwrap_or(AbortReason::Cancel));
            }
        }
    };
    group.kill();
    if !matches!(ending, Ending::Exited) {
        let _ = exited.await; // returns promptly: the whole group was just SIGKILLed
    }
    let status = group.reap();
    let drain_until = Instant::now() + env.limits.drain_grace;
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
    Done {
        ending,
        status,
        stdout,
        stderr,
        write_error,
    }
}

/// Stops a hook's pipe tasks if supervision is dropped midway (the task was aborted); the
/// [`GroupGuard`] kills the processes, this stops the readers and the writer.
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

async fn write_context(mut stdin: pipe::Sender, context: Arc<[u8]>) -> io::Result<()> {
    stdin.write_all(&context).await?;
    stdin.flush().await
    // dropping `stdin` closes it: the hook sees EOF
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

fn exit_info(status: &ExitStatus) -> ExitInfo {
    match (status.code(), status.signal()) {
        (Some(code), _) => ExitInfo::Code(code),
        (None, Some(sig)) => ExitInfo::Signal(sig),
        (None, None) => ExitInfo::Code(-1),
    }
}

fn classify(hook: &PreparedHook, env: &TaskEnv, done: &Done) -> (Outcome, Option<HookFailure>) {
    let failure = match done.ending {
        Ending::Aborted(AbortReason::Cancel) => return (Outcome::Cancelled, None),
        Ending::Aborted(AbortReason::PhaseDeadline) => return (Outcome::Timeout, None),
        Ending::Overflow => HookFailure::OutputTooLarge {
            cap: env.limits.stdout_cap,
        },
        Ending::Timeout => HookFailure::Timeout {
            seconds: hook.decl.timeout_seconds,
        },
        Ending::Exited => match exited_failure(done, env) {
            Some(f) => f,
            None => return (Outcome::Ok, None),
        },
    };
    (failure.outcome(), Some(failure))
}

fn exited_failure(done: &Done, env: &TaskEnv) -> Option<HookFailure> {
    if done.stdout.overflow {
        return Some(HookFailure::OutputTooLarge {
            cap: env.limits.stdout_cap,
        });
    }
    let status = match &done.status {
        Ok(status) => status,
        Err(e) => return Some(io_failure("waiting for the hook", e)),
    };
    if let Some(signal) = status.signal() {
        return Some(HookFailure::Signaled {
            signal,
            signal_name: super::signal_name(signal),
        });
    }
    match status.code() {
        Some(0) => {}
        code => {
            return Some(HookFailure::NonZeroExit {
                code: code.unwrap_or(-1),
                detail: error_detail(&done.stdout.bytes),
            });
        }
    }
    if let Some(e) = &done.stdout.error {
        return Some(io_failure("reading its stdout", e));
    }
    done.write_error
        .as_ref()
        .map(|e| io_failure("writing the context to its stdin", e))
}

fn io_failure(what: &'static str, e: &io::Error) -> HookFailure {
    HookFailure::Io {
        what,
        source: io::Error::new(e.kind(), e.to_string()),
    }
}

struct Pipes {
    stdin: pipe::Sender,
    stdout: pipe::Receiver,
    stderr: pipe::Receiver,
}

/// Owns the started entrypoint. Its process group is SIGKILLed before the entrypoint is reaped,
/// and on drop (task aborted) the group is killed and the entrypoint reaped as well.
struct GroupGuard {
    child: Option<Child>,
    pgid: Pid,
}

impl GroupGuard {
    fn new(child: Child) -> Self {
        // process_group(0): the child leads a new group whose id is its pid.
        let pgid = Pid::from_raw(child.id() as i32);
        Self {
            child: Some(child),
            pgid,
        }
    }

    fn take_pipes(&mut self) -> io::Result<Pipes> {
        let child = self.child.as_mut().expect("the child is not reaped yet");
        let missing = || io::Error::other("a standard stream of the hook was not piped");
        let stdin = OwnedFd::from(child.stdin.take().ok_or_else(missing)?);
        let stdout = OwnedFd::from(child.stdout.take().ok_or_else(missing)?);
        let stderr = OwnedFd::from(child.stderr.take().ok_or_else(missing)?);
        Ok(Pipes {
            stdin: pipe::Sender::from_owned_fd(stdin)?,
            stdout: pipe::Receiver::from_owned_fd(stdout)?,
            stderr: pipe::Receiver::from_owned_fd(stderr)?,
        })
    }

    /// SIGKILL every member of the group (ESRCH: nobody left).
    fn kill(&self) {
        let _ = killpg(self.pgid, Signal::SIGKILL);
    }

    /// Reap the entrypoint (call after [`Self::kill`]; it is dead or dying).
    fn reap(&mut self) -> io::Result<ExitStatus> {
        self.child.take().expect("reaped once").wait()
    }

    /// Setting up the pipes failed: kill, reap and report.
    fn abandon(mut self, source: io::Error) -> Done {
        self.kill();
        let status = self.reap();
        Done {
            ending: Ending::Exited,
            status: status.and(Err(source)),
            stdout: StdoutCapture::default(),
            stderr: StderrSummary::default(),
            write_error: None,
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            self.kill();
            let _ = child.wait(); // SIGKILLed: returns promptly
        }
    }
}
