//! The on-disk config format: every field optional, unknown keys rejected. `ConfigFile` is what
//! a global (or explicitly selected) config may contain; the project overlay is parsed into the
//! same type and then checked field by field by [`check_overlay_fields`].

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
}

impl ConfigFile {
    /// Whether the file declares hooks of any event.
    pub fn declares_hooks(&self) -> bool {
        !(self.prepare_hook.is_empty() && self.started_hook.is_empty() && self.finished_hook.is_empty())
    }
}

/// `[sandbox]`.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxFile {
    /// Container image to run.
    pub image: Option<String>,
    /// Maximum number of processes in the container.
    pub pids_limit: Option<i64>,
    /// `"default"` (Podman's default network) or `"none"` (loopback only).
    pub network: Option<String>,
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
    } = file;
    if let Some(SandboxFile {
        image,
        pids_limit,
        network,
    }) = sandbox
    {
        if image.is_some() {
            return Err("sandbox.image");
        }
        if pids_limit.is_some() {
            return Err("sandbox.pids_limit");
        }
        if network.is_some() {
            return Err("sandbox.network");
        }
    }
    Ok(())
}
