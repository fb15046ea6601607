//! The session around one launch: its started/finished lifecycle events and the crash recovery
//! of launches whose `ags` died ([`recover`]), as `commands::run` calls them (docs/lifecycle.md):
//!
//! 1. [`approve`]: every hook of every event is approved before anything runs;
//! 2. [`Session::begin`]: the spool exists, and holds this launch's record when it has finished
//!    hooks (written before the container is created, so a crash after that point is covered);
//! 3. [`Session::after_start`]: once the agent runs — the record gets the container id, the
//!    started hooks run, and leftovers of dead launches are reconciled (their owed finished hooks
//!    included); all diagnostics are held back until the session is over;
//! 4. [`Session::finish`]: after the exit status is known and the container is removed — the held
//!    diagnostics are shown, the finished hooks run, the record is dropped.
//!
//! Nothing here can change the agent's exit code: lifecycle hook failures are printed and logged.

use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use tokio::sync::oneshot;

pub mod recover;

use crate::config::{Config, HookEvent, Paths};
use crate::containment::WritableRoot;
use crate::events::spool::{LaunchRecord, Owner, RecordedHook, SPOOL_VERSION, Spool};
use crate::hooks::HookError;
use crate::hooks::entrypoint::PreparedHook;
use crate::hooks::events::{self, EventInput, FinishedContext, LaunchFacts, StartedContext};
use crate::hooks::runner::{Interrupt, Limits, StderrSink, interrupt_channel, stderr_to_terminal};
use crate::hooks::trust::TrustStore;
use crate::launch::gc;
use crate::launch::notices::say_line;
use crate::launch::signals::SignalWatch;
use crate::launch::sweep_gate::Gate;
use crate::plan::{LaunchIdentity, LaunchPlan};
use crate::podman::Client;
use crate::{Error, prompt};

/// The approved started and finished hooks of a launch (entrypoint bytes read once, here).
#[derive(Debug, Default)]
pub struct LifecycleHooks {
    store: Option<TrustStore>,
    started: Vec<PreparedHook>,
    finished: Vec<PreparedHook>,
}

/// Approve every active hook (prepare, started, finished) in one pass, before any runs, and keep
/// the started and finished ones. Nothing is opened when no lifecycle hook is declared.
pub fn approve(config: &Config) -> Result<LifecycleHooks, Error> {
    if config.started_hooks.is_empty() && config.finished_hooks.is_empty() {
        return Ok(LifecycleHooks::default());
    }
    let store = TrustStore::open(&config.paths, Some(&config.project)).map_err(HookError::from)?;
    let all = config.all_hooks();
    let hooks = events::load_approved(&store, &all, prompt::has_terminal(), &config.workdir)?;
    let (started, finished) = hooks
        .into_iter()
        .filter(|h| h.decl.event != HookEvent::Prepare)
        .partition(|h| h.decl.event == HookEvent::Started);
    Ok(LifecycleHooks {
        store: Some(store),
        started,
        finished,
    })
}

/// The agent has started: its container and when.
#[derive(Debug, Clone)]
struct Started {
    container_id: String,
    at: Instant,
}

/// What ran while the agent did: whether it started, and the held-back diagnostics.
#[derive(Debug, Default)]
pub struct Background {
    started: Option<Started>,
    lines: Vec<String>,
}

/// The lifecycle events of one launch.
#[derive(Debug)]
pub struct Session {
    paths: Paths,
    facts: LaunchFacts,
    hooks: LifecycleHooks,
    spool: Option<Spool>,
    record: Option<LaunchRecord>,
    /// The launch's read-write bind mounts: never on the lifecycle hooks' `PATH`.
    writable: Vec<WritableRoot>,
}

impl Session {
    /// Make sure the spool exists (the OCI hook records there) and, when finished hooks are
    /// declared, write this launch's record. Failures are warnings: the launch goes on.
    pub fn begin(config: &Config, plan: &LaunchPlan, id: &LaunchIdentity, hooks: LifecycleHooks) -> Self {
        let spool = Spool::open(&config.paths)
            .map_err(|e| {
                eprintln!(
                    "{}",
                    crate::text::escape_controls(&format!(
                        "ags: warning: {e}; OCI events of this launch are not recorded"
                    ))
                )
            })
            .ok();
        let record = (!hooks.finished.is_empty()).then(|| LaunchRecord {
            version: SPOOL_VERSION,
            launch_id: plan.launch_id.clone(),
            owner: Owner {
                pid: id.pid,
                start_time: id.start_time,
                host: id.host.clone(),
            },
            project: config.project.clone(),
            workdir: config.workdir.clone(),
            agent: plan.agent.clone(),
            container_name: plan.container_name.clone(),
            container_id: None,
            started_unix_ms: None,
            hooks: hooks
                .finished
                .iter()
                .map(|h| RecordedHook::new(&h.decl, &h.hash))
                .collect(),
        });
        if let (Some(spool), Some(record)) = (&spool, &record)
            && let Err(e) = spool.write_record(record)
        {
            let warning = format!("ags: warning: {e}{UNRECORDED}");
            eprintln!("{}", crate::text::escape_controls(&warning));
        }
        Self {
            paths: config.paths.clone(),
            facts: LaunchFacts {
                launch_id: plan.launch_id.clone(),
                project: config.project.clone(),
                workdir: config.workdir.clone(),
                agent: plan.agent.clone(),
                container_id: String::new(),
                container_name: plan.container_name.clone(),
            },
            hooks,
            spool,
            record,
            writable: plan
                .read_write_sources()
                .map(|source| WritableRoot::new(source.clone(), "this launch's read-write mount"))
                .chain([WritableRoot::new(config.project.clone(), "the project directory")])
                .collect(),
        }
    }

    /// The work that starts with the agent: wait for `on_start` (the container id; dropped when
    /// the launch failed before), record it, run the started hooks, and reconcile leftovers of
    /// dead launches. Output is held back in the returned [`Background`].
    pub fn after_start(
        &self,
        client: Client,
        on_start: oneshot::Receiver<String>,
    ) -> impl Future<Output = Background> + Send + 'static {
        let (paths, mut facts, spool, mut record) = (
            self.paths.clone(),
            self.facts.clone(),
            self.spool.clone(),
            self.record.clone(),
        );
        let (store, hooks) = (self.hooks.store.clone(), self.hooks.started.clone());
        let writable = self.writable.clone();
        async move {
            let (lines, sink) = buffer();
            let started = on_start.await.ok().map(|container_id| Started {
                container_id,
                at: Instant::now(),
            });
            let run_started = async {
                let mut messages = Vec::new();
                let Some(s) = &started else { return messages };
                facts.container_id = s.container_id.clone();
                if let (Some(spool), Some(record)) = (&spool, &mut record) {
                    record.container_id = Some(s.container_id.clone());
                    record.started_unix_ms = Some(unix_ms());
                    if let Err(e) = spool.write_record(record) {
                        messages.push(format!("warning: {e}{UNRECORDED}"));
                    }
                }
                let (Some(store), false) = (store, hooks.is_empty()) else {
                    return messages;
                };
                let context = serde_json::to_vec(&StartedContext::new(facts.clone())).expect("serializes");
                let input = event_input(
                    &paths,
                    store,
                    HookEvent::Started,
                    hooks,
                    &facts,
                    context,
                    &writable,
                );
                let report = events::run_event(EventInput {
                    stderr: sink.clone(),
                    ..input
                })
                .await;
                messages.extend(report.failures);
                messages
            };
            let reconcile = async {
                // Only when a dead launch may have left something (`sweep_gate`).
                let Some(gate) = Gate::open(&paths, client.url()) else {
                    return Vec::new();
                };
                match gc::sweep(&client, None).await {
                    Ok(report) => {
                        gate.done();
                        let mut said = recover::recover(&paths, &report.swept, sink.clone()).await;
                        said.extend(crate::receipt::recover(&paths));
                        said
                    }
                    Err(e) => vec![format!("warning: removing leftovers of earlier launches: {e}")],
                }
            };
            let (started_failures, recovered) = tokio::join!(run_started, reconcile);
            let mut lines = std::mem::take(&mut *lines.lock().unwrap_or_else(|p| p.into_inner()));
            lines.extend(
                started_failures
                    .into_iter()
                    .chain(recovered)
                    .map(|l| format!("ags: {l}")),
            );
            Background { started, lines }
        }
    }

    /// Show what was held back, run the finished hooks (when the agent started) and drop this
    /// launch's spool files. `exit_code` is the agent's, when known; `ended` is when it became
    /// known.
    pub async fn finish(
        self,
        background: Background,
        exit_code: Option<u8>,
        ended: Instant,
        signals: &SignalWatch,
    ) {
        for line in &background.lines {
            say_line(&crate::text::escape_controls(line));
        }
        if let (Some(started), Some(store), false) = (
            &background.started,
            self.hooks.store.clone(),
            self.hooks.finished.is_empty(),
        ) {
            let facts = LaunchFacts {
                container_id: started.container_id.clone(),
                ..self.facts.clone()
            };
            let ending = events::Ending {
                exit_code: exit_code.map(i32::from),
                duration_ms: Some(ended.saturating_duration_since(started.at).as_millis() as u64),
                recovered: false,
            };
            let context =
                serde_json::to_vec(&FinishedContext::new(facts.clone(), ending)).expect("serializes");
            let hooks = self.hooks.finished.clone();
            let input = event_input(
                &self.paths,
                store,
                HookEvent::Finished,
                hooks,
                &facts,
                context,
                &self.writable,
            );
            let report = events::run_event(EventInput {
                interrupt: interrupt_from_now(signals),
                ..input
            })
            .await;
            for f in report.failures {
                say_line(&crate::text::escape_controls(&format!("ags: {f}")));
            }
        }
        if let Some(spool) = &self.spool
            && let Err(e) = spool.forget(&self.facts.launch_id)
        {
            say_line(&crate::text::escape_controls(&format!("ags: warning: {e}")));
        }
    }
}

/// The input of a lifecycle event run: hook stderr to the terminal, no interrupt.
pub fn event_input<'a>(
    paths: &'a Paths,
    store: TrustStore,
    event: HookEvent,
    hooks: Vec<PreparedHook>,
    facts: &LaunchFacts,
    context: Vec<u8>,
    writable: &[WritableRoot],
) -> EventInput<'a> {
    EventInput {
        paths,
        store,
        event,
        hooks,
        launch_id: facts.launch_id.clone(),
        workdir: facts.workdir.clone(),
        context: Arc::from(context),
        interrupt: Interrupt::never(),
        stderr: stderr_to_terminal(),
        limits: Limits::default(),
        agent_writable: writable.to_vec(),
    }
}

/// A stderr sink that keeps lines for later.
fn buffer() -> (Arc<Mutex<Vec<String>>>, StderrSink) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let keep = lines.clone();
    let sink: StderrSink = Arc::new(move |line: &str| {
        keep.lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(line.to_string());
    });
    (lines, sink)
}

/// An interrupt for signals that arrive from now on (a signal already forwarded to the agent
/// must not cancel the finished hooks).
fn interrupt_from_now(signals: &SignalWatch) -> Interrupt {
    let (handle, interrupt) = interrupt_channel();
    let mut rx = signals.receiver();
    rx.mark_unchanged();
    tokio::spawn(async move {
        if rx.changed().await.is_ok()
            && let Some(sig) = *rx.borrow()
        {
            handle.trigger(sig);
        }
    });
    interrupt
}

const UNRECORDED: &str = "; if ags is killed, this launch's finished hooks cannot run later";

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as u64
}
