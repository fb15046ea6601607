//! The agent hooks of the plan (issue #14, docs/agent-hooks.md): the agent's generated wiring,
//! the handlers file (`[[agent_hook]]` and `[agent_guard]` as the dispatcher reads them) and
//! the dispatcher, all read-only in the container; refused when the agent's arguments switch
//! the wiring off. Pure.

pub mod record;

use std::path::PathBuf;

use serde_json::json;

use crate::agent_hooks::wiring::{self, SwitchOff};
use crate::agent_hooks::{DISPATCHER_PATH, HANDLERS_PATH, dispatch};
use crate::config::Config;
use crate::plan::types::{
    AgentHookWiring, EnvSource, MountKind, Origin, PlanEnv, PlanFile, PlanMount, RootFile, STAGED_ROOT_DIR,
    STAGING_MOUNT,
};
use crate::secret::Secret;

/// The agent's arguments or environment switch its hook wiring off; the text says which and
/// what to do.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SwitchedOff(pub String);

/// The agent's arguments (`[agent.NAME] args` and those after `--`) against its hook wiring:
/// an error for a switch that drops every hook (opencode `--pure`), warnings for one that drops
/// some (claude `--bare`).
pub fn check_args<'a>(
    agent: &str,
    args: impl IntoIterator<Item = &'a String>,
) -> Result<Vec<String>, SwitchedOff> {
    sort(wiring::check_args(agent, args))
}

/// The launch's environment names against the agent's wiring: a variable that switches it off
/// is refused, whichever source set it.
pub fn check_env<'a>(agent: &str, names: impl IntoIterator<Item = &'a str>) -> Result<(), SwitchedOff> {
    sort(wiring::check_env(agent, names)).map(|_| ())
}

/// What no setting closes for `agent` (opencode's user-config plugins): a warning when
/// `config` has a guard or handlers.
pub fn check_agent(config: &Config, agent: &str) -> Result<Vec<String>, SwitchedOff> {
    sort(wiring::check_agent(agent, !config.agent_hooks.is_empty()))
}

/// The first refusal as an error, else the warnings.
fn sort(switches: impl IntoIterator<Item = SwitchOff>) -> Result<Vec<String>, SwitchedOff> {
    let mut warnings = Vec::new();
    for s in switches {
        match s {
            SwitchOff::Refuse(why) => return Err(SwitchedOff(why)),
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

/// The handlers file of `config` for `agent` (format: `agent_hooks::dispatch::handlers`).
pub fn handlers_json(config: &Config, agent: &str) -> String {
    let mut s = serde_json::to_string_pretty(&json!({
        "v": 1,
        "handlers": config.agent_hooks.handlers,
        "guard": config.agent_hooks.guard,
        "settings": settings_files(config, agent),
    }))
    .expect("handlers serialize");
    s.push('\n');
    s
}

/// The settings files of `agent` whose `env` or shell policy changes what its shell tool runs
/// (`agent_hooks::dispatch::settings`), in its state directory (where the profile points the
/// agent) and in the workdir: the dispatcher checks them whatever its own environment says.
fn settings_files(config: &Config, agent: &str) -> Vec<String> {
    let dir = |var: &str| {
        crate::agents::find(agent)
            .and_then(|p| p.env.iter().find(|(k, _)| *k == var))
            .map(|(_, v)| PathBuf::from(v))
    };
    let work = |rel: &str| config.workdir.join(rel);
    let files = match agent {
        "claude" => {
            let mut f = vec![work(".claude/settings.json"), work(".claude/settings.local.json")];
            if let Some(d) = dir("CLAUDE_CONFIG_DIR") {
                f.extend([d.join("settings.json"), d.join("settings.local.json")]);
            }
            f
        }
        "codex" => {
            let mut f = vec![
                work(".codex/config.toml"),
                config.project.join(".codex/config.toml"),
            ];
            f.extend(dir("CODEX_HOME").map(|d| d.join("config.toml")));
            f
        }
        _ => Vec::new(),
    };
    files.iter().map(|p| p.display().to_string()).collect()
}

/// Size of each empty read-only tmpfs that shadows a plugin directory.
const EMPTY_DIR_BYTES: u64 = 4096;

/// The wiring of one launch as the plan places it.
pub struct WiringPlan {
    /// What the plan shows.
    pub wiring: AgentHookWiring,
    /// Generated files, bind-mounted read-only.
    pub files: Vec<PlanFile>,
    /// The dispatcher and the shadowing empty directories.
    pub mounts: Vec<PlanMount>,
    /// Files staged owned by uid 0 (see [`wiring::ROOT_OWNED`]).
    pub root_files: Vec<RootFile>,
    /// The variables that point the agent at them.
    pub env: Vec<PlanEnv>,
}

/// The plan's part of `agent`'s wiring (none for an agent without one): the wiring files,
/// the handlers file, the dispatcher and the shadowing mounts. `tag` is the launch's random
/// suffix; `warnings` come from [`check_args`]. `not_root`: the launch's files are not uid 0's
/// inside the container (rootless `keep-id`, or a rootful service used by another user), so
/// a file the agent trusts only when root owns it is staged owned by uid 0.
pub fn wiring(
    config: &Config,
    agent: &str,
    tag: &str,
    not_root: bool,
    warnings: Vec<String>,
) -> Option<WiringPlan> {
    let w = wiring::generate(agent, tag)?;
    let file = |destination: &str, content: String| PlanFile {
        destination: destination.into(),
        bytes: content.len(),
        content: Secret::new(content),
        origin: Origin::AgentHooks,
        host_path: PathBuf::new(),
    };
    let root_owned = |f: &wiring::WiringFile| {
        not_root
            .then(|| wiring::ROOT_OWNED.iter().find(|(path, _)| *path == f.destination))
            .flatten()
    };
    let (mut root_files, mut env) = (Vec::new(), Vec::new());
    let mut files = Vec::new();
    for f in &w.files {
        let Some((path, variable)) = root_owned(f) else {
            files.push(file(f.destination, f.content.clone()));
            continue;
        };
        let name = format!("{agent}-{}", path.rsplit('/').next().unwrap_or(path));
        let destination = format!("{STAGING_MOUNT}/{STAGED_ROOT_DIR}/{name}");
        env.push(PlanEnv {
            key: variable.to_string(),
            source: EnvSource::Plain {
                value: destination.clone(),
            },
            origin: Origin::AgentHooks,
        });
        root_files.push(RootFile {
            destination: destination.into(),
            bytes: f.content.len(),
            content: f.content.clone(),
            origin: Origin::AgentHooks,
        });
    }
    files.push(file(HANDLERS_PATH, handlers_json(config, agent)));
    let dispatcher = dispatcher_host_path(config);
    let mut mounts = vec![PlanMount::bind(
        DISPATCHER_PATH,
        dispatcher.clone(),
        true,
        Origin::AgentHooks,
    )];
    mounts.extend(w.empty_dirs.iter().map(|d| PlanMount {
        destination: d.into(),
        kind: MountKind::Tmpfs {
            size: EMPTY_DIR_BYTES,
        },
        read_only: true,
        origin: Origin::AgentHooks,
    }));
    let wiring = AgentHookWiring {
        files: w.files.iter().map(|f| PathBuf::from(f.destination)).collect(),
        args: w.args,
        warnings,
        dispatcher,
        handlers_file: HANDLERS_PATH.into(),
        handlers: config.agent_hooks.handlers.clone(),
        guard: config.agent_hooks.guard.clone(),
    };
    Some(WiringPlan {
        wiring,
        files,
        mounts,
        root_files,
        env,
    })
}
