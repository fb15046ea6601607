//! Before the agent starts: the programs its configuration starts outside tool calls
//! (`agent_hooks::outside`), read from the created container through Podman and recorded in
//! the launch's agent-hook record; with a guard or handlers configured, also said on stderr.

use crate::agent_hooks::log::RecordServer;
use crate::agent_hooks::outside;
use crate::plan::LaunchPlan;
use crate::podman::{Client, ContainerFile};

/// Read, record and (when something decides tool calls) warn. A file Podman cannot serve, or
/// fails on, is named as not read.
pub async fn record(client: &Client, id: &str, plan: &LaunchPlan, record: Option<&RecordServer>) {
    let (Some(record), Some(wiring)) = (record, &plan.agent_hook_wiring) else {
        return;
    };
    let mut programs = Vec::new();
    for (path, format) in outside::files(&plan.agent) {
        // A file Podman fails to serve is named as not read: what the agent planted in its own
        // volume must not stop every later launch.
        let not_read =
            |why: String| crate::text::escape_line(&format!("{path}: (the whole file): not read: {why}"));
        match client.read_file(id, path, outside::MAX_BYTES).await {
            Ok(ContainerFile::Missing) => {}
            Ok(ContainerFile::Content(bytes)) => programs.extend(outside::programs(path, *format, &bytes)),
            Ok(ContainerFile::NotRead(why)) => programs.push(not_read(why)),
            Err(e) => programs.push(not_read(e.to_string())),
        }
    }
    if programs.is_empty() {
        return;
    }
    let programs = outside::bounded(programs);
    let decides =
        !wiring.guard.deny.is_empty() || !wiring.guard.protect.is_empty() || !wiring.handlers.is_empty();
    if decides {
        eprintln!(
            "ags: warning: {}'s configuration starts programs outside tool calls, which no hook, handler or guard sees (docs/agent-hooks.md):",
            plan.agent
        );
        for p in &programs {
            eprintln!("ags:   {p}");
        }
    }
    record.unguarded(programs);
}
