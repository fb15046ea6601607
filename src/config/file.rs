//! The on-disk config format: every field optional, unknown keys rejected. `ConfigFile` is what
//! a global (or explicitly selected) config may contain; the project overlay is parsed into the
//! same type and then checked field by field by [`check_overlay_fields`].

use std::collections::BTreeMap;

use serde::Deserialize;

/// One TOML config file as written by the user.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// `[sandbox]`: how containers are made.
    pub sandbox: Option<SandboxFile>,
    /// `[[prepare_hook]]`: host executables run before the container is created.
    #[serde(default)]
    pub prepare_hook: Vec<HookDeclFile>,
    /// `[[started_hook]]`: host executables run once the agent has started (docs/lifecycle.md).
    #[serde(default)]
    pub started_hook: Vec<HookDeclFile>,
    /// `[[finished_hook]]`: host executables run once the agent's exit status is known.
    #[serde(default)]
    pub finished_hook: Vec<HookDeclFile>,
    /// `[[mount]]`: host paths bind-mounted into every launch (docs/configuration.md).
    #[serde(default)]
    pub mount: Vec<MountFile>,
    /// `[agent.NAME]`: per-agent arguments, environment and sandbox mode.
    #[serde(default)]
    pub agent: BTreeMap<String, AgentFile>,
    /// `[git]`: what of the host's git setup reaches the agent.
    pub git: Option<GitFile>,
    /// `[[project]]`: per-project settings (image), matched by the canonical project path.
    #[serde(default)]
    pub project: Vec<ProjectFile>,
    /// `[op]`: how the 1Password CLI is found.
    pub op: Option<OpFile>,
    /// `[ssh]`: how the OpenSSH client of `ssh://` services is found.
    pub ssh: Option<OpFile>,
    /// `[network]`: mode and egress allowlist (an overlay may only narrow it; checked in
    /// `egress::model`).
    pub network: Option<crate::egress::model::NetworkFile>,
    /// `[[agent_hook]]`: handlers the dispatcher runs inside the container on the agent's hook
    /// events (`agent_hooks::config`).
    #[serde(default)]
    pub agent_hook: Vec<crate::agent_hooks::config::AgentHookFile>,
    /// `[agent_guard]`: the built-in guard's deny patterns and protected paths.
    pub agent_guard: Option<crate::agent_hooks::config::AgentGuardFile>,
    /// `[protect]`: which protected project files the agent may change (global config only).
    pub protect: Option<ProtectFile>,
    /// `[image]`: how `ags image build` builds (global config only).
    pub image: Option<ImageFile>,
    /// `[[credential]]`: values the proxy adds on the host (global config only).
    #[serde(default)]
    pub credential: Vec<crate::credentials::model::CredentialFile>,
}

impl ConfigFile {
    /// Whether the file declares hooks of any event.
    pub fn declares_hooks(&self) -> bool {
        !(self.prepare_hook.is_empty() && self.started_hook.is_empty() && self.finished_hook.is_empty())
    }

    /// Whether the file declares agent hooks or an agent guard.
    pub fn declares_agent_hooks(&self) -> bool {
        !self.agent_hook.is_empty() || self.agent_guard.is_some()
    }
}

/// `[sandbox]`.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxFile {
    pub image: Option<String>,
    /// Maximum number of processes in the container.
    pub pids_limit: Option<i64>,
    /// The old spelling of `[network] mode`: `"default"` (open), `"allowlist"` or `"none"`.
    pub network: Option<String>,
    /// Names of variables copied from `ags`'s own environment into every launch (unset ones
    /// are skipped).
    pub env_passthrough: Option<Vec<String>>,
    /// Mount the workspace's git config and hooks read-only (default true).
    pub protect_git: Option<bool>,
    /// One state volume per agent directory for all projects, instead of one per project
    /// (default false).
    pub shared_state: Option<bool>,
    /// Memory limit of the container: a size (`8g`, `512m`, bytes), `auto` (half of the
    /// machine's memory, at most 8g) or `none`.
    pub memory: Option<SizeValue>,
    /// CPU limit of the container, in CPUs (`2`, `1.5`); default none.
    pub cpus: Option<SizeValue>,
    /// Size of each of `--lockdown`'s `/tmp` and `/var/tmp` tmpfs mounts (default `1g`).
    pub tmpfs_size: Option<SizeValue>,
}

/// A size or number as written: `"8g"`, `8589934592` or `1.5`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum SizeValue {
    /// An integer.
    Int(i64),
    /// A decimal number.
    Float(f64),
    /// Text such as `"8g"` or `"none"`.
    Text(String),
}

impl SizeValue {
    /// The value as the command line would spell it.
    pub fn text(&self) -> String {
        match self {
            SizeValue::Int(n) => n.to_string(),
            SizeValue::Float(f) => f.to_string(),
            SizeValue::Text(t) => t.clone(),
        }
    }
}

/// `[op]` and `[ssh]`: which host program runs (`workspace::host_programs`).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpFile {
    /// Absolute path of the program (default: found on `PATH` outside the directories the
    /// agent can write, and checked).
    pub path: Option<String>,
}

/// One `[[mount]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MountFile {
    /// Host path (absolute, or starting with `~/`).
    pub source: String,
    /// Container path (default: the canonical source path).
    pub target: Option<String>,
    /// Mount read-only.
    #[serde(default)]
    pub readonly: bool,
    /// Skip the mount when the source does not exist (instead of refusing the launch).
    #[serde(default)]
    pub optional: bool,
}

/// One `[agent.NAME]` table.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentFile {
    /// Arguments added after the agent's command (before the ones after `--`).
    #[serde(default)]
    pub args: Vec<String>,
    /// Environment for this agent (staged like `--env` values; hooks and `--env` win).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// "The sandbox is the boundary": add the agent's own flag that skips its permission prompts.
    pub skip_permissions: Option<bool>,
}

/// `[git]`.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GitFile {
    /// Give the agent the host's git identity (default true).
    pub identity: Option<bool>,
    /// Forward the host's ssh-agent socket (default false).
    pub ssh_agent: Option<bool>,
    /// A known_hosts file mounted read-only for the agent's ssh (default: `~/.ssh/known_hosts`).
    pub known_hosts: Option<String>,
    /// Only these keys of the forwarded ssh-agent (`SHA256:…` fingerprints) are listed and
    /// used for signing (default: every key of the agent).
    pub ssh_keys: Option<Vec<String>>,
    /// Mount the git data the workdir's checkout needs outside it: a linked worktree's common
    /// dir, a submodule's git dir, the repository around a subdirectory (default true).
    pub repository: Option<bool>,
    /// The host's git that reads the commits a launch made (default: found on `PATH` outside
    /// the directories the agent can write, and checked).
    pub path: Option<String>,
}

/// `[protect]` (docs/security.md, "Project files host tools run").
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProtectFile {
    /// Protected paths (names from the table in `workspace::protected`) the agent may change.
    pub allow: Option<Vec<String>>,
}

/// `[image]` (docs/images.md).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageFile {
    /// PEM CA certificates every `ags image build` adds to the image's trust store (the CA of a
    /// TLS-intercepting proxy), as `--ca-cert` does; absolute paths.
    pub ca_certs: Option<Vec<std::path::PathBuf>>,
}

/// One `[[project]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProjectFile {
    /// The project root (absolute or `~/`; compared after canonicalization).
    pub path: String,
    /// Image for launches in this project (beats `[sandbox] image`; `--image` beats it).
    pub image: Option<String>,
    /// Protected paths the agent may change in this project (added to `[protect] allow`).
    pub protect_allow: Option<Vec<String>>,
    /// `[project.network]`: this project's network, over the global `[network]` (its mode and
    /// flags win, its allow and deny entries are added; docs/network.md).
    pub network: Option<crate::egress::model::NetworkFile>,
}

/// One `[[prepare_hook]]`, `[[started_hook]]` or `[[finished_hook]]` declaration as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookDeclFile {
    /// Unique-ish name (`[A-Za-z0-9_-]+`), used by `ags hooks test NAME`.
    pub name: String,
    /// Path of the executable, relative to the directory of the declaring config file.
    pub executable: String,
    /// Arguments (argv, not a shell string).
    #[serde(default)]
    pub args: Vec<String>,
    /// Per-hook timeout, 1..=300 seconds (default 30).
    pub timeout_seconds: Option<i64>,
}

/// Keys a project overlay may not set, with the reason shown to the user. Exhaustive
/// destructuring makes adding a field to [`ConfigFile`] a compile error here until someone
/// decides whether an overlay may set it.
pub fn check_overlay_fields(file: &ConfigFile) -> Result<(), &'static str> {
    let ConfigFile {
        sandbox,
        prepare_hook: _,
        started_hook: _,
        finished_hook: _,
        mount,
        agent,
        git,
        project,
        op,
        ssh,
        network: _,
        agent_hook: _,
        agent_guard: _,
        protect,
        image,
        credential,
    } = file;
    // Each of these reaches host data or loosens the sandbox: an overlay is written inside the
    // repository, where the agent can write; `protect` must not loosen what protects it.
    let mut set = vec![
        ("mount", !mount.is_empty()),
        ("agent", !agent.is_empty()),
        ("git", git.is_some()),
        ("project", !project.is_empty()),
        ("op", op.is_some()),
        ("protect", protect.is_some()),
        ("ssh", ssh.is_some()),
        ("image", image.is_some()),
        // Where the real value of a key may go is the user's decision, never the workspace's.
        ("credential", !credential.is_empty()),
    ];
    if let Some(SandboxFile {
        image,
        pids_limit,
        network,
        env_passthrough,
        protect_git,
        shared_state,
        memory,
        cpus,
        tmpfs_size,
    }) = sandbox
    {
        // Limits protect the host from the agent: the agent can write the overlay.
        set.extend([
            ("sandbox.memory", memory.is_some()),
            ("sandbox.cpus", cpus.is_some()),
            ("sandbox.tmpfs_size", tmpfs_size.is_some()),
            ("sandbox.protect_git", protect_git.is_some()),
            ("sandbox.shared_state", shared_state.is_some()),
            ("sandbox.env_passthrough", env_passthrough.is_some()),
            ("sandbox.image", image.is_some()),
            ("sandbox.pids_limit", pids_limit.is_some()),
            ("sandbox.network", network.is_some()),
        ]);
    }
    match set.into_iter().find(|(_, is_set)| *is_set) {
        Some((name, _)) => Err(name),
        None => Ok(()),
    }
}
