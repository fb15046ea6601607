//! Hook declarations (`[[prepare_hook]]`, `[[started_hook]]`, `[[finished_hook]]`): syntax checks
//! and resolution of the executable path against the declaring file's directory. Entry-point checks that touch the file (type, size, bytes)
//! belong to `hooks::trust`; this module only reads config text.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{ConfigError, HookDeclFile, Result};

/// At most this many declarations of one event in one config file.
pub const MAX_DECLS_PER_FILE: usize = 64;
/// At most this many declarations of one event across the global config and the project overlay.
pub const MAX_DECLS_TOTAL: usize = 128;
/// Default per-hook timeout.
pub const DEFAULT_TIMEOUT_SECONDS: u32 = 30;

/// The event a hook is declared for; part of what an approval binds, so approving a hook for
/// one event never approves the same program for another.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum HookEvent {
    /// Before any container exists; contributes env, files and mounts.
    Prepare,
    /// Once the agent's container has started; runs alongside the agent.
    Started,
    /// Once the agent's exit status is known.
    Finished,
}

impl HookEvent {
    /// Every event, in launch order.
    pub const ALL: [HookEvent; 3] = [HookEvent::Prepare, HookEvent::Started, HookEvent::Finished];

    /// `prepare`, `started` or `finished`.
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::Prepare => "prepare",
            HookEvent::Started => "started",
            HookEvent::Finished => "finished",
        }
    }
}

impl std::fmt::Display for HookEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a declaration came from; part of what an approval binds.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "scope", rename_all = "lowercase")]
pub enum HookScope {
    /// Declared in the global (or an explicitly selected non-project) config.
    Global,
    /// Declared in a project's `.ags/config.toml`; bound to the canonical project root.
    Project { root: PathBuf },
}

/// One resolved hook declaration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HookDecl {
    /// The event it is declared for.
    pub event: HookEvent,
    pub name: String,
    /// Absolute, lexically normalized path of the entrypoint (not canonicalized: the declared
    /// path is what the user approves).
    pub executable: PathBuf,
    /// Arguments passed after the executable.
    pub args: Vec<String>,
    /// Effective timeout in seconds (default filled in).
    pub timeout_seconds: u32,
    /// Global or project.
    #[serde(flatten)]
    pub scope: HookScope,
    /// The config file that declared it.
    pub config_path: PathBuf,
}

/// Validate and resolve the declarations of one event in one config file.
pub fn resolve(
    config_path: &Path,
    event: HookEvent,
    decls: &[HookDeclFile],
    scope: &HookScope,
) -> Result<Vec<HookDecl>> {
    if decls.len() > MAX_DECLS_PER_FILE {
        return Err(ConfigError::Invalid {
            path: config_path.into(),
            key: format!("{event}_hook"),
            message: format!(
                "{} declarations; at most {MAX_DECLS_PER_FILE} per config file",
                decls.len()
            ),
        });
    }
    let base = config_path.parent().unwrap_or(Path::new("/"));
    decls
        .iter()
        .enumerate()
        .map(|(i, d)| resolve_one(config_path, base, (event, i), d, scope))
        .collect()
}

fn resolve_one(
    path: &Path,
    base: &Path,
    (event, i): (HookEvent, usize),
    d: &HookDeclFile,
    scope: &HookScope,
) -> Result<HookDecl> {
    let invalid = |field: &str, message: String| ConfigError::Invalid {
        path: path.into(),
        key: format!("{event}_hook[{i}].{field}"),
        message,
    };
    if d.name.is_empty()
        || !d
            .name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(invalid(
            "name",
            "must be non-empty and use only A-Z a-z 0-9 _ -".into(),
        ));
    }
    if d.executable.is_empty() || d.executable.contains('\0') {
        return Err(invalid(
            "executable",
            "must be a non-empty path without NUL".into(),
        ));
    }
    if let Some(j) = d.args.iter().position(|a| a.contains('\0')) {
        return Err(invalid("args", format!("argument {j} contains NUL")));
    }
    let timeout_seconds = match d.timeout_seconds {
        None => DEFAULT_TIMEOUT_SECONDS,
        Some(t @ 1..=300) => t as u32,
        Some(t) => return Err(invalid("timeout_seconds", format!("{t} is outside 1..=300"))),
    };
    Ok(HookDecl {
        event,
        name: d.name.clone(),
        executable: crate::safepath::normalize(&base.join(&d.executable)),
        args: d.args.clone(),
        timeout_seconds,
        scope: scope.clone(),
        config_path: path.into(),
    })
}
