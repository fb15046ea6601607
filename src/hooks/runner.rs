//! Stage 2 (run): the prepare-hook runner. Its children are started through [`crate::process`], the
//! ONLY place in `ags` that spawns processes.
//!
//! Input: approved [`PreparedHook`]s in declaration order, the JSON context, [`Limits`], an
//! [`Interrupt`] and a `parse` callback (the response validator). Output: one [`HookRun`] per hook
//! in declaration order, or a [`RunError`] naming the first real failure, with a [`HookReport`]
//! per hook for the run log either way. I/O: execution copies in the approval store, child
//! processes, their pipes, and hook diagnostics on `ags`'s stderr.
//!
//! Rules enforced here:
//! - at most `concurrency` hooks run at once; the phase deadline bounds running AND queued hooks;
//! - each hook's timeout comes from its declaration;
//! - every hook runs from a private copy of its approved bytes (checked unchanged right before the
//!   spawn), in its own process group, with a scrubbed environment, `workdir` as cwd, and the
//!   context on stdin followed by EOF;
//! - when the entrypoint ends (for any reason) its whole process group is SIGKILLed before the
//!   entrypoint is reaped, so the group id cannot have been reused;
//! - the first failure, the phase deadline or an interrupt cancels everything else; the real
//!   cause is returned, never a peer's secondary "cancelled"; there are no retries.

mod child;
mod report;

use std::error::Error as StdError;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::time::{Instant, sleep_until};

use crate::process::Abort;

/// The runner's cancellation and diagnostics inputs, from the spawn primitive.
pub use crate::process::{Interrupt, InterruptHandle, StderrSink, interrupt_channel, stderr_to_terminal};
pub use report::{ExitInfo, HookFailure, HookReport, HookRun, Outcome, RunError};

use super::entrypoint::PreparedHook;
use super::exec_copy::ExecDir;
use super::trust::TrustStore;
use crate::containment::WritableRoot;
use crate::workspace::host_programs::hook_path;
use report::error_detail;

/// Default number of hooks running at once.
pub const DEFAULT_CONCURRENCY: usize = 4;
/// Default bound on the whole execution phase, queueing included.
pub const DEFAULT_PHASE_DEADLINE: Duration = Duration::from_secs(60);
/// Default stdout cap per hook (1 MiB).
pub const DEFAULT_STDOUT_CAP: usize = 1024 * 1024;
/// Default stderr cap per hook (64 KiB); the excess is read and discarded.
pub const DEFAULT_STDERR_CAP: usize = 64 * 1024;
/// How long to keep reading pipes after the hook's group was killed (a re-grouped daemon may hold
/// them open forever).
pub const DEFAULT_DRAIN_GRACE: Duration = Duration::from_secs(2);

/// Environment variables passed through to hooks (when set); everything else is scrubbed.
/// `PATH` loses its relative entries and the directories the agent can write
/// (`workspace::host_programs::hook_path`, [`RunSetup::agent_writable`]).
pub const PASSED_ENV: [&str; 6] = [
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "XDG_RUNTIME_DIR",
    "DBUS_SESSION_BUS_ADDRESS",
];

/// Resource limits of one prepare phase. `Default` gives the production values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Hooks running at once (at least 1).
    pub concurrency: usize,
    /// Deadline of the whole phase, measured from the start of [`run_hooks`].
    pub phase_deadline: Duration,
    /// Stdout bytes accepted per hook; more kills the hook.
    pub stdout_cap: usize,
    /// Stderr bytes shown per hook; more is discarded (and counted).
    pub stderr_cap: usize,
    /// Pipe draining after the group was killed.
    pub drain_grace: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            concurrency: DEFAULT_CONCURRENCY,
            phase_deadline: DEFAULT_PHASE_DEADLINE,
            stdout_cap: DEFAULT_STDOUT_CAP,
            stderr_cap: DEFAULT_STDERR_CAP,
            drain_grace: DEFAULT_DRAIN_GRACE,
        }
    }
}

/// Everything a phase needs besides the hooks and the response parser.
pub struct RunSetup {
    /// The approval store (rechecked right before each execution; holds the execution copies).
    pub store: TrustStore,
    /// The canonical workdir: each hook's cwd.
    pub workdir: PathBuf,
    /// The UTF-8 JSON context written to every hook's stdin.
    pub context: Arc<[u8]>,
    /// Limits.
    pub limits: Limits,
    /// Cancellation by the user (SIGINT/SIGTERM/SIGHUP).
    pub interrupt: Interrupt,
    /// Where escaped, name-prefixed stderr lines go.
    pub stderr: StderrSink,
    /// Directories the agent can write (the workdir at least): removed from the hooks' `PATH`.
    pub agent_writable: Vec<WritableRoot>,
}

impl RunSetup {
    /// Production defaults: default limits, no interrupt source, stderr to the terminal.
    pub fn new(store: TrustStore, workdir: PathBuf, context: Arc<[u8]>) -> Self {
        Self {
            store,
            context,
            limits: Limits::default(),
            interrupt: Interrupt::never(),
            stderr: stderr_to_terminal(),
            agent_writable: vec![WritableRoot {
                path: workdir.clone(),
                owner: "the workdir".into(),
                running: false,
            }],
            workdir,
        }
    }
}

/// Why running hooks are being killed by the coordinator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AbortReason {
    /// A peer failed or the user interrupted.
    Cancel,
    /// The phase deadline expired.
    PhaseDeadline,
}

/// Write every execution copy before the first spawn. Writing a copy excludes forks
/// (`exec_copy::fork_guard`), so copies written while other hooks are being spawned wait for
/// those spawns and hold up the next ones (64 hooks, 4 at a time: ~2.4 ms per hook in the copy
/// step; see docs/decisions/0008-prepare-runner.md). A failure here is left to that hook's own
/// copy step, which reports it; an interrupt or the deadline stops the wait and the phase, before
/// any worker starts (the unfinished copy step, returned, stops too and is awaited at the end).
async fn copies_first<T>(
    phase: &Phase<T>,
    store: &TrustStore,
    interrupt: &mut Interrupt,
    deadline: Instant,
) -> (ExecDir, Option<tokio::task::JoinHandle<ExecDir>>) {
    let root = super::exec_copy::exec_root(store.ram_roots(), store.dir());
    let mut copying = {
        let (hooks, at, store_dir) = (phase.hooks.clone(), root.clone(), store.dir().to_path_buf());
        let abort = phase.abort.clone();
        let stop = move || abort.fired().is_some();
        tokio::task::spawn_blocking(move || super::exec_copy::write_copies(&hooks, &at, &store_dir, &stop))
    };
    let written = tokio::select! {
        written = &mut copying => Some(child::joined_blocking(written)), // a panic is resumed
        _ = interrupt.wait() => None,
        () = sleep_until(deadline) => None,
    };
    let exec_dir = written.unwrap_or_else(|| ExecDir::new(&root));
    let copying = (!copying.is_finished()).then_some(copying);
    (exec_dir, copying)
}

/// `width` worker threads (the phase's `concurrency`) that take the hooks in declaration order,
/// each running one hook at a time from spawn to reap on its own thread
/// (`process::supervise_blocking`) and sending its result; the phase's task only collects the
/// results, and stops everything through `abort`.
fn spawn_workers(
    width: usize,
    hooks: &Arc<[PreparedHook]>,
    env: &Arc<TaskEnv>,
    abort: &Arc<Abort<AbortReason>>,
) -> (
    Vec<tokio::task::JoinHandle<()>>,
    tokio::sync::mpsc::UnboundedReceiver<child::TaskResult>,
) {
    let next = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let workers = (0..width)
        .map(|_| {
            let (hooks, env, abort) = (hooks.clone(), env.clone(), abort.clone());
            let (next, tx) = (next.clone(), tx.clone());
            tokio::task::spawn_blocking(move || {
                while abort.fired().is_none() {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(hook) = hooks.get(index) else { return };
                    if tx.send(child::run_one(index, hook, &env, &abort)).is_err() {
                        return;
                    }
                }
            })
        })
        .collect();
    (workers, rx)
}

/// Shared, read-only inputs of every hook task.
struct TaskEnv {
    store: TrustStore,
    exec_dir: ExecDir,
    workdir: PathBuf,
    /// The hooks' `PATH` (`None`: `ags` has none).
    path: Option<OsString>,
    context: Arc<[u8]>,
    limits: Limits,
    sink: StderrSink,
}

enum Stop {
    Failed(usize, HookFailure),
    Deadline,
    Interrupted(i32),
}

/// Run `hooks` (already approved) concurrently and hand each successful stdout to `parse`.
/// Results come back in declaration order, whatever the completion order. A `parse` error is
/// that hook's failure and cancels its peers.
pub async fn run_hooks<T, E, F>(
    hooks: Vec<PreparedHook>,
    setup: RunSetup,
    mut parse: F,
) -> Result<Vec<HookRun<T>>, RunError>
where
    F: FnMut(&PreparedHook, &[u8]) -> Result<T, E>,
    E: Into<Box<dyn StdError + Send + Sync>>,
{
    let RunSetup {
        store,
        workdir,
        context,
        limits,
        mut interrupt,
        stderr,
        agent_writable,
    } = setup;
    let path = std::env::var_os("PATH").map(|p| hook_path(&p, &agent_writable));
    let deadline = Instant::now() + limits.phase_deadline;
    let abort = match Abort::new() {
        Ok(abort) => Arc::new(abort),
        Err(source) => return Err(Phase::<T>::cannot_start(hooks, source)),
    };
    // If this future is dropped midway, the workers kill their hooks and stop.
    let _stop_on_drop = FireOnDrop(abort.clone());
    let mut phase = Phase::new(hooks, abort);
    let (exec_dir, copying) = copies_first(&phase, &store, &mut interrupt, deadline).await;
    let env = Arc::new(TaskEnv {
        exec_dir,
        store,
        workdir,
        path,
        context,
        limits: limits.clone(),
        sink: stderr,
    });
    // An interrupt or the deadline that came first (while the copies were written, or before
    // the phase began) stops the phase before any hook starts.
    if let Some(sig) = interrupt.fired() {
        phase.halt(Stop::Interrupted(sig), AbortReason::Cancel);
    } else if Instant::now() >= deadline {
        phase.halt(Stop::Deadline, AbortReason::PhaseDeadline);
    }
    // Halted already (interrupted or out of time while copying): no worker, no hook started.
    let width = match phase.stop {
        Some(_) => 0,
        None => limits.concurrency.max(1).min(phase.hooks.len()),
    };
    let (workers, mut rx) = spawn_workers(width, &phase.hooks, &env, &phase.abort);
    loop {
        if let Some(sig) = interrupt.fired() {
            phase.halt(Stop::Interrupted(sig), AbortReason::Cancel);
        }
        let running = phase.stop.is_none();
        tokio::select! {
            biased;
            done = rx.recv() => match done {
                None => break,
                Some(done) => phase.record(done, &mut parse),
            },
            sig = interrupt.wait(), if running => phase.halt(Stop::Interrupted(sig), AbortReason::Cancel),
            () = sleep_until(deadline), if running => phase.halt(Stop::Deadline, AbortReason::PhaseDeadline),
        }
    }
    for worker in workers {
        child::joined_blocking(worker.await); // a worker's panic is resumed here
    }
    // Every task is done: remove the execution copies (off the executor: rmdir can be slow).
    let _ = tokio::task::spawn_blocking(move || drop(env)).await;
    // Copies abandoned by an interrupt or the deadline: their task stops after the copy it is
    // writing (the abort fired) and removes the directory; nothing may write copies once the
    // phase has returned.
    if let Some(copying) = copying {
        let _ = copying.await;
    }
    phase.finish(&limits)
}

/// The coordinator's bookkeeping: per-hook reports and values in declaration order, and why the
/// phase stopped early (the first cause only).
struct Phase<T> {
    hooks: Arc<[PreparedHook]>,
    reports: Vec<HookReport>,
    values: Vec<Option<T>>,
    stop: Option<Stop>,
    abort: Arc<Abort<AbortReason>>,
}

/// Fires the abort when dropped: a cancelled phase leaves no hook running.
struct FireOnDrop(Arc<Abort<AbortReason>>);

impl Drop for FireOnDrop {
    fn drop(&mut self) {
        self.0.fire(AbortReason::Cancel);
    }
}

impl<T> Phase<T> {
    fn new(hooks: Vec<PreparedHook>, abort: Arc<Abort<AbortReason>>) -> Self {
        Self {
            reports: hooks.iter().map(HookReport::not_started).collect(),
            values: hooks.iter().map(|_| None).collect(),
            hooks: hooks.into(),
            stop: None,
            abort,
        }
    }

    /// The phase could not even be set up (no pipe for stopping hooks): nothing was run.
    fn cannot_start(hooks: Vec<PreparedHook>, source: io::Error) -> RunError {
        RunError::Failed {
            name: hooks.first().map(|h| h.decl.name.clone()).unwrap_or_default(),
            cause: Box::new(HookFailure::Io {
                what: "creating the pipe that stops hooks (nothing was run)",
                source,
            }),
            cancelled: hooks.iter().skip(1).map(|h| h.decl.name.clone()).collect(),
            reports: hooks.iter().map(HookReport::not_started).collect(),
        }
    }

    /// Stop the phase (first cause wins) and tell running hooks to die.
    fn halt(&mut self, stop: Stop, reason: AbortReason) {
        if self.stop.is_none() {
            self.stop = Some(stop);
            self.abort.fire(reason);
        }
    }

    /// Take a finished hook's result; parse its stdout while the phase is still going.
    fn record<E, F>(&mut self, done: child::TaskResult, parse: &mut F)
    where
        F: FnMut(&PreparedHook, &[u8]) -> Result<T, E>,
        E: Into<Box<dyn StdError + Send + Sync>>,
    {
        let index = done.index;
        self.reports[index] = done.report;
        let failure = match done.failure {
            Some(f) => Some(f),
            None if self.stop.is_none() && self.reports[index].outcome == Outcome::Ok => {
                match parse(&self.hooks[index], &done.stdout) {
                    Ok(v) => {
                        self.values[index] = Some(v);
                        None
                    }
                    Err(e) => Some(HookFailure::Rejected { source: e.into() }),
                }
            }
            None => None,
        };
        if let Some(f) = failure {
            self.reports[index].outcome = f.outcome();
            self.halt(Stop::Failed(index, f), AbortReason::Cancel);
        }
    }

    /// Hooks that produced no result because the phase stopped (except `except`).
    fn unfinished(&self, except: Option<usize>) -> Vec<String> {
        let stopped = [Outcome::Cancelled, Outcome::NotStarted, Outcome::Timeout];
        self.reports
            .iter()
            .enumerate()
            .filter(|(i, r)| Some(*i) != except && stopped.contains(&r.outcome))
            .map(|(_, r)| r.name.clone())
            .collect()
    }

    fn finish(mut self, limits: &Limits) -> Result<Vec<HookRun<T>>, RunError> {
        match self.stop.take() {
            None => Ok(self
                .reports
                .into_iter()
                .zip(self.values)
                .map(|(report, value)| HookRun {
                    report,
                    value: value.expect("every hook succeeded when the phase did not stop"),
                })
                .collect()),
            Some(Stop::Failed(index, cause)) => Err(RunError::Failed {
                name: self.reports[index].name.clone(),
                cause: Box::new(cause),
                cancelled: self.unfinished(Some(index)),
                reports: self.reports,
            }),
            Some(Stop::Deadline) => Err(RunError::PhaseDeadline {
                deadline: limits.phase_deadline,
                unfinished: self.unfinished(None),
                reports: self.reports,
            }),
            Some(Stop::Interrupted(signal)) => Err(RunError::Interrupted {
                signal,
                unfinished: self.unfinished(None),
                reports: self.reports,
            }),
        }
    }
}
