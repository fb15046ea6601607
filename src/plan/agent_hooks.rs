//! The agent hooks of the plan (issue #14, docs/agent-hooks.md): the agent's generated wiring,
//! the handlers file (`[[agent_hook]]` and `[agent_guard]` as the dispatcher reads them) and
//! the dispatcher, all read-only in the container; refused when the agent's arguments switch
//! the wiring off. Pure.

use std::path::PathBuf;

use serde_json::json;

use super::PlanError;
use super::types::{AgentHookWiring, MountKind, Origin, PlanFile, PlanMount};
use crate::agent_hooks::wiring::{self, SwitchOff};
use crate::agent_hooks::{DISPATCHER_PATH, HANDLERS_PATH, dispatch};
use crate::config::Config;
use crate::secret::Secret;

/// The agent's arguments (`[agent.NAME] args` and those after `--`) against its hook wiring:
/// an error for a switch that drops every hook (opencode `--pure`), warnings for one that drops
/// some (claude `--bare`).
pub fn check_args<'a>(
    agent: &str,
    args: impl IntoIterator<Item = &'a String>,
) -> Result<Vec<String>, PlanError> {
    sort(wiring::check_args(agent, args))
}

/// The launch's environment names against the agent's wiring: a variable that switches it off
/// is refused, whichever source set it.
pub fn check_env<'a>(agent: &str, names: impl IntoIterator<Item = &'a str>) -> Result<(), PlanError> {
    sort(wiring::check_env(agent, names)).map(|_| ())
}

/// The owner of the wiring files against the agent (gemini ignores a system file that uid 0 does
/// not own inside, as under rootless `keep-id`; `not_root`): refused
/// when `config` has a guard or handlers, else a warning; plus the warning about what no
/// setting closes (opencode's user-config plugins).
pub fn check_user_namespace(config: &Config, agent: &str, not_root: bool) -> Result<Vec<String>, PlanError> {
    let handlers = !config.agent_hooks.is_empty();
    sort(
        wiring::check_user_namespace(agent, not_root, handlers)
            .into_iter()
            .chain(wiring::check_agent(agent, handlers)),
    )
}

/// The first refusal as an error, else the warnings.
fn sort(switches: impl IntoIterator<Item = SwitchOff>) -> Result<Vec<String>, PlanError> {
    let mut warnings = Vec::new();
    for s in switches {
        match s {
            SwitchOff::Refuse(why) => return Err(PlanError::WiringSwitchedOff(why)),
            SwitchOff::Warn(why) => warnings.push(why),
        }
    }
    Ok(warnings)
}

/// Where the dispatcher is installed on the host (`<cache>/agent-hooks/`, named by content).
pub fn dispatcher_host_path(config: &Config) -> PathBuf {
    config
        .paths
        .cache_dir()
        .join("agent-hooks")
        .join(dispatch::INSTALLED_NAME)
}

/// The handlers file of `config` (format: `agent_hooks::dispatch::handlers`).
pub fn handlers_json(config: &Config) -> String {
    let mut s = serde_json::to_string_pretty(&json!({
        "v": 1,
        "handlers": config.agent_hooks.handlers,
        "guard": config.agent_hooks.guard,
    }))
    .expect("handlers serialize");
    s.push('\n');
    s
}

/// Size of each empty read-only tmpfs that shadows a plugin directory.
const EMPTY_DIR_BYTES: u64 = 4096;

/// The hook wiring of `agent` (none when it has no wiring), its generated files (the wiring
/// and the handlers file), the dispatcher's read-only bind and the empty read-only tmpfs over
/// each plugin directory the agent would discover in its state. `tag` is the launch's random
/// suffix; `warnings` come from [`check_args`].
pub fn wiring(
    config: &Config,
    agent: &str,
    tag: &str,
    warnings: Vec<String>,
) -> Option<(AgentHookWiring, Vec<PlanFile>, Vec<PlanMount>)> {
    let w = wiring::generate(agent, tag)?;
    let file = |destination: &str, content: String| PlanFile {
        destination: destination.into(),
        bytes: content.len(),
        content: Secret::new(content),
        origin: Origin::AgentHooks,
        host_path: PathBuf::new(),
    };
    let mut files: Vec<PlanFile> = w
        .files
        .iter()
        .map(|f| file(f.destination, f.content.clone()))
        .collect();
    files.push(file(HANDLERS_PATH, handlers_json(config)));
    let dispatcher = dispatcher_host_path(config);
    let mut mounts = vec![PlanMount {
        destination: DISPATCHER_PATH.into(),
        kind: MountKind::Bind {
            source: dispatcher.clone(),
        },
        read_only: true,
        origin: Origin::AgentHooks,
    }];
    mounts.extend(w.empty_dirs.iter().map(|d| PlanMount {
        destination: d.into(),
        kind: MountKind::Tmpfs {
            size: EMPTY_DIR_BYTES,
        },
        read_only: true,
        origin: Origin::AgentHooks,
    }));
    let plan = AgentHookWiring {
        files: w.files.iter().map(|f| PathBuf::from(f.destination)).collect(),
        args: w.args,
        warnings,
        dispatcher,
        handlers_file: HANDLERS_PATH.into(),
        handlers: config.agent_hooks.handlers.clone(),
        guard: config.agent_hooks.guard.clone(),
    };
    Some((plan, files, mounts))
}
