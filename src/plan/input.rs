//! What the plan is built from: the launch settings of the command line, the launch's identity,
//! the hooks' contributions and the service facts ([`PlanInput`]).

use std::path::{Path, PathBuf};

use super::types::*;
use crate::config::{Config, Network};
use crate::git::model::guard::GitGuard;
use crate::git::model::identity::GitIdentity;
use crate::git::plan::SshAgent;
use crate::secret::Secret;

/// The launch settings from the command line, already resolved (terminal detection done,
/// paths canonicalized) by the caller.
#[derive(Debug, Clone, Default)]
pub struct RunSettings {
    /// Agent name.
    pub agent: String,
    /// Arguments after `--`.
    pub command: Vec<String>,
    /// Allocate a terminal.
    pub tty: bool,
    /// `TERM` to give the agent when a terminal is allocated.
    pub term: Option<String>,
    /// `--image`.
    pub image: Option<String>,
    /// `--env-file` and `--env` values, resolved (later entries win), each with its origin
    /// (the env file, or the command line); they beat every hook.
    pub env: Vec<(String, Secret, super::Origin)>,
    /// The `--env-file`s read, as checked (`workspace::user_paths`): checked again right
    /// before the container is created, against other running launches' mounts too.
    pub env_files: Vec<crate::workspace::user_paths::CheckedHostPath>,
    /// `[sandbox] env_passthrough` and `[agent.NAME] env` values, resolved; hooks beat them.
    pub config_env: Vec<(String, Secret)>,
    /// The user's bind mounts (`--add-dir`, `[[mount]]`), sources already checked.
    pub mounts: Vec<UserMount>,
    /// The parts of the workspace's git repositories mounted onto themselves (`[sandbox]
    /// protect_git`): the git dir pinned, its config and hooks read-only.
    pub git_guards: Vec<GitGuard>,
    /// The project files host tools run on their own (`workspace::protected`).
    pub protected: crate::workspace::protected::Protection,
    /// The host's git identity given to the agent (`[git] identity`), when there is one.
    pub git_identity: Option<GitIdentity>,
    /// The host's ssh-agent, forwarded (`--ssh-agent`, `[git] ssh_agent`).
    pub ssh_agent: Option<SshAgent>,
    /// `--label KEY=VALUE`, as given.
    pub labels: Vec<String>,
    /// `--op-secret-set VAULT/ITEM`.
    pub op_secret_sets: Vec<String>,
    /// `--expect-plan`: the plan digest the launch must have (`plan::digest`).
    pub expect_plan: Option<String>,
    /// `--lockdown`.
    pub lockdown: bool,
    /// `--network`.
    pub network: Option<Network>,
    /// `--allow`, parsed.
    pub allow: Vec<crate::config::AllowEntry>,
    /// "The sandbox is the boundary": `--yolo` or `[agent.NAME] skip_permissions`.
    pub skip_permissions: bool,
    /// `[agent.NAME] args` of the launched agent.
    pub agent_args: Vec<String>,
    /// `--name`.
    pub name: Option<String>,
    /// `--timeout`.
    pub timeout: Option<std::time::Duration>,
    /// `--publish`, as given.
    pub publish: Vec<String>,
    /// `--no-init`.
    pub no_init: bool,
    /// `--memory`, `--cpus` over `[sandbox] memory`, `cpus`, `tmpfs_size`.
    pub limits: crate::limits::LimitSettings,
    /// Wire the agent's own hooks to the dispatcher (docs/agent-hooks.md). Set only where the
    /// dispatcher is mounted too: a hook command that cannot run makes gemini refuse every tool.
    pub agent_hooks: bool,
}

/// A bind mount the user asked for: `--add-dir` (origin `Cli`) or a global-config `[[mount]]`
/// (origin `Config`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserMount {
    /// Canonical host path, checked like a hook mount source.
    pub source: PathBuf,
    /// Path inside the container.
    pub destination: PathBuf,
    /// Mounted read-only.
    pub read_only: bool,
    /// Where it came from.
    pub origin: Origin,
}

/// Who owns this launch (recorded in labels so leftovers can be attributed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchIdentity {
    /// `ags-<pid>-<nanos>`.
    pub launch_id: String,
    /// Random hex suffix for resource names.
    pub suffix: String,
    /// Pid of this `ags` process.
    pub pid: u32,
    /// Start time of this process (clock ticks since boot, from /proc/self/stat).
    pub start_time: u64,
    /// Host name.
    pub host: String,
}

/// Contributions from hooks, already resolved by precedence (the plan only places them).
#[derive(Debug, Clone, Default)]
pub struct HookLayer {
    /// Environment (staged literals and op references) with origins.
    pub env: Vec<(String, EnvSource, Origin)>,
    /// Generated files.
    pub files: Vec<PlanFile>,
    /// Bind mounts (sources canonical and checked).
    pub mounts: Vec<PlanMount>,
}

/// Everything [`build`] needs.
#[derive(Debug, Clone)]
pub struct PlanInput<'a> {
    /// Resolved configuration.
    pub config: &'a Config,
    /// Resolved command line.
    pub run: &'a RunSettings,
    /// Launch identity.
    pub identity: &'a LaunchIdentity,
    /// Whether the Podman service is rootless.
    pub rootless: bool,
    /// Whether the Podman service reports SELinux enabled (`/libpod/info`).
    pub selinux: bool,
    /// Whether the Podman service is on another machine (`tcp://`, `ssh://`): generated files
    /// then travel in the staging volume instead of host files (docs/remote.md).
    pub remote: bool,
    /// Whether the plan is exported (`--format kube`) rather than launched here: like a remote
    /// service, no proxy of this host reaches the container (docs/credentials.md).
    pub exported: bool,
    /// The total memory of the machine that runs the container, when known: `memory = auto`
    /// is half of it, at most 8g.
    pub host_memory: Option<u64>,
    /// The invoking user's uid and gid.
    pub user: (u32, u32),
    /// Private host directory for this launch's generated files (used only when there are any).
    pub host_stage_dir: &'a Path,
    /// Hook contributions.
    pub hooks: &'a HookLayer,
}
