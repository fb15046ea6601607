//! What a launch with agent hooks adds for the record (docs/agent-hooks.md "The record"): the
//! host-side socket directory and the log path, and the read-only bind of that directory at
//! [`crate::agent_hooks::SOCKET_DIR`]. The `ags` process serves the socket (`crate::agent_hooks::log`).
//! Pure.

use std::path::Path;

use crate::config::Config;
use crate::plan::types::{Origin, PlanMount, RecordPlan};

/// The record socket of the agent hooks (when `agent_hooks` is set, for every agent, `shell`
/// included: whatever runs the dispatcher in the container is recorded). Its directory is a
/// sibling of the launch's staging directory with `-hooks` appended, so a crashed launch's is
/// swept like it. None with a remote service, whose containers cannot reach a socket on this
/// host (the dispatcher then records nothing; the launch says so).
pub fn plan(config: &Config, agent_hooks: bool, remote: bool, host_stage_dir: &Path) -> Option<RecordPlan> {
    if !agent_hooks || remote {
        return None;
    }
    let mut name = host_stage_dir.file_name().unwrap_or_default().to_os_string();
    name.push("-hooks");
    Some(RecordPlan {
        socket_dir: host_stage_dir.with_file_name(name),
        log: config.paths.agent_hooks_log(),
    })
}

/// The read-only bind of the record socket's directory (a socket in a read-only mount can
/// still be connected to; nothing can be created next to it).
pub fn mount(record: &RecordPlan) -> PlanMount {
    let dir = record.socket_dir.clone();
    PlanMount::bind(crate::agent_hooks::SOCKET_DIR, dir, true, Origin::AgentHooks)
}
