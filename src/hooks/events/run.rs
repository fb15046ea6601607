//! Stage 2 (lifecycle run): run the `started` or `finished` hooks of one launch.
//!
//! Input: approved [`PreparedHook`]s of one event, the serialized context, an [`Interrupt`] and a
//! stderr sink. Output: an [`EventReport`] with one rendered message per failed hook; nothing is
//! returned as an error, because a lifecycle hook's failure must never change the launch's
//! outcome. I/O: child processes (through [`run_hooks`], the only spawn site), the run log.
//!
//! Unlike the prepare phase, hooks are independent: each runs as its own single-hook phase of
//! [`run_hooks`], so one hook's failure neither cancels nor hides another's result. The prepare
//! limits still hold for the event as a whole: at most `concurrency` hooks at once, and the
//! phase deadline bounds running and queued hooks together (a queued hook gets what is left).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::protocol::parse_lifecycle_response;
use crate::config::{HookDecl, HookEvent, Paths};
use crate::containment::WritableRoot;
use crate::hooks::entrypoint::PreparedHook;
use crate::hooks::log::{Record, RunLog};
use crate::hooks::runner::{
    HookReport, Interrupt, Limits, Outcome, RunError, RunSetup, StderrSink, run_hooks,
};
use crate::hooks::trust::TrustStore;
use crate::process::signal_name;

/// Everything one event's run needs.
pub struct EventInput<'a> {
    /// Host paths (the run log).
    pub paths: &'a Paths,
    /// The approval store (rechecked right before each execution).
    pub store: TrustStore,
    /// The event (`started` or `finished`).
    pub event: HookEvent,
    /// Approved hooks of that event, in declaration order.
    pub hooks: Vec<PreparedHook>,
    /// The launch the hooks observe (for the run log).
    pub launch_id: String,
    /// The hooks' cwd.
    pub workdir: PathBuf,
    /// The serialized context written to every hook's stdin.
    pub context: Arc<[u8]>,
    /// Cancellation.
    pub interrupt: Interrupt,
    /// Where escaped, name-prefixed stderr lines go.
    pub stderr: StderrSink,
    /// Limits (production: `Limits::default()`).
    pub limits: Limits,
    /// Directories the agent can write besides the workdir (the launch's read-write mounts):
    /// removed from the hooks' `PATH` with it.
    pub agent_writable: Vec<WritableRoot>,
}

/// What running one event's hooks came to.
#[derive(Debug, Default)]
pub struct EventReport {
    /// Hooks that ran and answered `{"version":1}`.
    pub succeeded: Vec<String>,
    /// One message per failed hook (and a warning when the run log could not be written),
    /// already escaped, without the `ags: ` prefix.
    pub failures: Vec<String>,
}

/// Run the hooks of one event; see the module docs.
pub async fn run_event(input: EventInput<'_>) -> EventReport {
    let EventInput {
        paths,
        store,
        event,
        hooks,
        launch_id,
        workdir,
        context,
        interrupt,
        stderr,
        limits,
        agent_writable,
    } = input;
    let deadline = Instant::now() + limits.phase_deadline;
    let permits = Arc::new(Semaphore::new(limits.concurrency.max(1)));
    let decls: Vec<HookDecl> = hooks.iter().map(|h| h.decl.clone()).collect();
    let mut set = JoinSet::new();
    for (index, hook) in hooks.into_iter().enumerate() {
        let limits = limits.clone();
        let mut setup = RunSetup::new(store.clone(), workdir.clone(), context.clone());
        setup.interrupt = interrupt.clone();
        setup.stderr = stderr.clone();
        setup.agent_writable.extend(agent_writable.iter().cloned());
        let permits = permits.clone();
        set.spawn(async move {
            let Ok(_permit) = permits.acquire_owned().await else {
                unreachable!("the semaphore is never closed")
            };
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return (index, Err(not_started(&hook)));
            }
            setup.limits = Limits {
                phase_deadline: left,
                ..limits
            };
            let result = run_hooks(vec![hook], setup, |_, out| parse_lifecycle_response(out)).await;
            (index, result.map(|mut runs| runs.remove(0).report))
        });
    }
    let mut results: Vec<Option<Result<HookReport, Failed>>> = decls.iter().map(|_| None).collect();
    while let Some(joined) = set.join_next().await {
        let (index, result) = joined.unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
        results[index] = Some(result.map_err(|e| Failed::from_run(e, event, limits.phase_deadline)));
    }
    let mut report = EventReport::default();
    let mut records = Vec::new();
    for (decl, result) in decls.iter().zip(results) {
        let (hook_report, failure) = match result.expect("every task reported") {
            Ok(r) => (r, None),
            Err(f) => (f.report, Some(f.message)),
        };
        records.push(Record::new(&launch_id, decl, &hook_report, vec![], vec![]));
        match failure {
            None => report.succeeded.push(decl.name.clone()),
            Some(message) => report.failures.push(message),
        }
    }
    if let Err(e) = RunLog::append_all(paths, &records) {
        report.failures.push(format!("warning: hook run log: {e}"));
    }
    report
}

/// A hook that failed, with its report for the run log.
struct Failed {
    report: HookReport,
    message: String,
}

impl Failed {
    fn from_run(e: RunError, event: HookEvent, deadline: Duration) -> Self {
        let mut report = e
            .reports()
            .first()
            .cloned()
            .expect("a single-hook phase reports its hook");
        let name = report.name.clone();
        let message = match e {
            RunError::Failed { cause, .. } => format!("{event} hook {name} failed: {cause}"),
            RunError::PhaseDeadline { .. } => format!(
                "{event} hook {name} did not finish within the {deadline:?} deadline of all {event} \
                 hooks; it was killed. Make it faster or declare fewer {event} hooks"
            ),
            RunError::Interrupted { signal, .. } => {
                format!("{event} hook {name} was interrupted by {}", signal_name(signal))
            }
        };
        if report.outcome == Outcome::Ok {
            report.outcome = Outcome::Cancelled;
        }
        Self { report, message }
    }
}

fn not_started(hook: &PreparedHook) -> RunError {
    RunError::PhaseDeadline {
        deadline: Duration::ZERO,
        unfinished: vec![hook.decl.name.clone()],
        reports: vec![HookReport::not_started(hook)],
    }
}
