//! Crash recovery: run the finished hooks that a killed `ags` still owes, once each.
//!
//! Called after the leftover sweep (at every launch, once the agent runs, and by `ags gc`). For
//! each spool record whose owner (or claimer) is a dead process on this host: claim it, work out
//! how the agent ended from what is left — the record, the OCI events (when the hooks are
//! installed) and the swept container — and run the recorded finished hooks with
//! `"recovered": true`. A launch whose agent never started runs none. The hooks are never asked
//! about: one whose approval is gone (or whose entrypoint changed) is reported and skipped.
//!
//! I/O: the spool, the approval store, hook processes (through the runner), the run log.

use std::path::Path;

use crate::config::{HookEvent, Paths};
use crate::events::spool::{Claimed, EventLine, LaunchRecord, OciStage, Owner, Spool};
use crate::hooks::entrypoint::PreparedHook;
use crate::hooks::events::{self, Ending, EventInput, FinishedContext, LaunchFacts};
use crate::hooks::runner::StderrSink;
use crate::hooks::trust::TrustStore;
use crate::launch::gc::SweptContainer;
use crate::launch::identity;

/// Run the owed finished hooks; returns messages for the user (without the `ags: ` prefix).
/// Hook stderr goes to `sink`.
pub async fn recover(paths: &Paths, swept: &[SweptContainer], sink: StderrSink) -> Vec<String> {
    let spool = match Spool::existing(paths) {
        Ok(Some(spool)) => spool,
        Ok(None) => return Vec::new(),
        Err(e) => return vec![format!("warning: crash recovery: {e}")],
    };
    let me = identity::current();
    let me = Owner {
        pid: me.pid,
        start_time: me.start_time,
        host: me.host,
    };
    let mut lines = Vec::new();
    for pending in spool.pending(&me.host, identity::owner_alive) {
        match spool.claim(pending, &me) {
            Ok(Some(claimed)) => lines.extend(finish_claimed(paths, &spool, claimed, swept, &sink).await),
            Ok(None) => {}
            Err(e) => lines.push(format!("warning: crash recovery: {e}")),
        }
    }
    spool.sweep_events(|pid| Path::new(&format!("/proc/{pid}")).exists());
    lines
}

async fn finish_claimed(
    paths: &Paths,
    spool: &Spool,
    claimed: Claimed,
    swept: &[SweptContainer],
    sink: &StderrSink,
) -> Vec<String> {
    let rec = &claimed.record;
    let events = spool.events(&rec.launch_id);
    let container = swept
        .iter()
        .find(|c| c.launch_id.as_deref() == Some(rec.launch_id.as_str()));
    let what = format!("launch {} (ags pid {} is gone)", rec.launch_id, rec.owner.pid);
    let mut lines = match Evidence::gather(rec, &events, container) {
        None => vec![format!("{what}: its agent never started; no finished hook runs")],
        Some(evidence) => run_recorded(paths, rec, evidence, sink, &what).await,
    };
    if let Err(e) = spool.complete(claimed) {
        lines.push(format!("warning: crash recovery: {e}"));
    }
    lines
}

async fn run_recorded(
    paths: &Paths,
    rec: &LaunchRecord,
    evidence: Evidence,
    sink: &StderrSink,
    what: &str,
) -> Vec<String> {
    let store = match TrustStore::open(paths, Some(&rec.project)) {
        Ok(store) => store,
        Err(e) => return vec![format!("{what}: its finished hooks cannot run: {e}")],
    };
    let mut lines = Vec::new();
    let mut hooks = Vec::new();
    for recorded in &rec.hooks {
        match PreparedHook::load(recorded.decl()) {
            Ok(hook) if store.is_approved(&hook.hash).unwrap_or(false) => hooks.push(hook),
            Ok(_) => lines.push(format!(
                "{what}: finished hook {} is not approved (its approval was revoked or its entrypoint \
                 changed since the launch); it was not run",
                recorded.name
            )),
            Err(e) => lines.push(format!("{what}: {e}; it was not run")),
        }
    }
    if hooks.is_empty() {
        return lines;
    }
    let facts = LaunchFacts {
        launch_id: rec.launch_id.clone(),
        project: rec.project.clone(),
        workdir: rec.workdir.clone(),
        agent: rec.agent.clone(),
        container_id: evidence
            .container_id
            .unwrap_or_else(|| rec.container_name.clone()),
        container_name: rec.container_name.clone(),
    };
    let context = serde_json::to_vec(&FinishedContext::new(facts.clone(), evidence.ending));
    let input = super::event_input(
        paths,
        store,
        HookEvent::Finished,
        hooks,
        &facts,
        context.expect("serializes"),
        &[],
    );
    let report = events::run_event(EventInput {
        stderr: sink.clone(),
        ..input
    })
    .await;
    if !report.succeeded.is_empty() {
        lines.push(format!(
            "{what}: ran its finished hooks: {}",
            report.succeeded.join(", ")
        ));
    }
    lines.extend(report.failures);
    lines
}

/// How a launch's agent ended, from what is left of it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Evidence {
    container_id: Option<String>,
    ending: Ending,
}

impl Evidence {
    /// `None` when nothing says the agent ever started. Sources, best first: the OCI events,
    /// the sweep record of whichever `ags` removed the container, the container this process
    /// swept, and the launch record.
    fn gather(rec: &LaunchRecord, events: &[EventLine], container: Option<&SweptContainer>) -> Option<Self> {
        let event = |stage| events.iter().find(|e| e.stage == stage);
        let (poststart, poststop, swept) = (
            event(OciStage::Poststart),
            event(OciStage::Poststop),
            event(OciStage::Swept),
        );
        let ran = |state: &str| ["running", "exited", "stopped", "paused", "stopping"].contains(&state);
        let container_ran = container.is_some_and(|c| c.started_at > 0 || ran(&c.state));
        let swept_ran = swept.is_some_and(|e| e.state.as_deref().is_some_and(ran));
        if rec.container_id.is_none()
            && poststart.is_none()
            && poststop.is_none()
            && !container_ran
            && !swept_ran
        {
            return None;
        }
        let exited = container.filter(|c| c.state == "exited" || c.state == "stopped");
        let exit_code = poststop
            .and_then(|e| e.exit_code)
            .or(swept.and_then(|e| e.exit_code))
            .or(exited.map(|c| c.exit_code));
        let start_ms = rec.started_unix_ms.or(poststart.map(|e| e.unix_ms)).or(container
            .filter(|c| c.started_at > 0)
            .map(|c| c.started_at as u64 * 1000));
        let end_ms = poststop
            .map(|e| e.unix_ms)
            .or(swept.filter(|e| e.exit_code.is_some()).map(|e| e.unix_ms))
            .or(exited
                .filter(|c| c.exited_at > 0)
                .map(|c| c.exited_at as u64 * 1000));
        let duration_ms = start_ms.zip(end_ms).map(|(s, e)| e.saturating_sub(s));
        let container_id = rec
            .container_id
            .clone()
            .or(events.first().map(|e| e.container_id.clone()))
            .or(container.map(|c| c.id.clone()));
        Some(Self {
            container_id,
            ending: Ending {
                exit_code,
                duration_ms,
                recovered: true,
            },
        })
    }
}

#[cfg(test)]
#[path = "recover_tests.rs"]
mod tests;
