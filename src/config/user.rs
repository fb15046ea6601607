//! The global config's everyday settings, resolved: environment passthrough, `[[mount]]`s,
//! `[agent.NAME]` tables, `[git]` and the `[[project]]` image choice (docs/configuration.md).
//!
//! Only syntax is checked here (absolute paths, variable-name syntax, single-line values). The
//! rules that need later stages run there: reserved environment names and mount sources in the
//! hook stage's policy (`hooks::policy`, `hooks::mount_source`), agent names against the agent
//! table in the plan stage. A project overlay can set none of these (`file::check_overlay_fields`).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use super::file::{AgentFile, ConfigFile, GitFile, MountFile, OpFile, ProjectFile, SandboxFile};
use super::{ConfigError, Paths};
use crate::limits::{self, LimitSettings};

/// What the global config adds to every launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserSettings {
    /// `[sandbox] protect_git` (default true): `.git/config` and `.git/hooks` of the workspace
    /// are mounted read-only.
    pub protect_git: bool,
    /// `[sandbox] shared_state` (default false): agent state volumes shared by all projects.
    pub shared_state: bool,
    /// `[op] path`: the 1Password CLI to run (default: looked up on `PATH` and checked).
    pub op_path: Option<PathBuf>,
    /// `[ssh] path`: the OpenSSH client of `ssh://` services (default: looked up on `PATH` and
    /// checked).
    pub ssh_path: Option<PathBuf>,
    /// `[sandbox] env_passthrough`: names copied from `ags`'s environment when set there.
    pub env_passthrough: Vec<String>,
    /// `[[mount]]` entries, in file order.
    pub mounts: Vec<ConfigMount>,
    /// `[agent.NAME]` tables by agent name (names are checked against the agent table later).
    pub agents: BTreeMap<String, AgentSettings>,
    /// `[git]`.
    pub git: GitSettings,
    /// `[protect] allow` and the `protect_allow` of each `[[project]]` matching the project:
    /// `(key, names)`, the names checked against the table by `workspace::protected`.
    pub protect_allow: Vec<(String, Vec<String>)>,
    /// `[sandbox] memory`, `cpus` and `tmpfs_size`.
    pub limits: LimitSettings,
    /// The declared credentials: the built-ins and `[[credential]]` (docs/credentials.md).
    pub credentials: Vec<crate::credentials::model::Credential>,
}

impl Default for UserSettings {
    fn default() -> Self {
        Self {
            protect_git: true,
            shared_state: false,
            op_path: None,
            ssh_path: None,
            env_passthrough: Vec::new(),
            mounts: Vec::new(),
            agents: BTreeMap::new(),
            git: GitSettings::default(),
            protect_allow: Vec::new(),
            limits: LimitSettings::default(),
            credentials: crate::credentials::model::built_in(),
        }
    }
}

/// One `[[mount]]`, with `~/` expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigMount {
    /// Host path as configured (absolute; not yet checked on the host).
    pub source: PathBuf,
    /// Container path; `None`: the canonical source path.
    pub target: Option<PathBuf>,
    pub readonly: bool,
    /// Skipped when the source does not exist.
    pub optional: bool,
}

/// One `[agent.NAME]` table. `Debug` shows environment names, never values.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct AgentSettings {
    /// Extra arguments after the agent's command.
    pub args: Vec<String>,
    /// Extra environment (may hold secrets: staged, never printed).
    pub env: BTreeMap<String, String>,
    /// Add the agent's own permission-skipping flag.
    pub skip_permissions: bool,
}

impl fmt::Debug for AgentSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentSettings")
            .field("args", &self.args)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("skip_permissions", &self.skip_permissions)
            .finish()
    }
}

/// `[git]`, defaults filled in.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GitSettings {
    /// Give the agent the host's `user.name`/`user.email` (and signing settings).
    pub identity: bool,
    /// Forward the host's ssh-agent (`SSH_AUTH_SOCK`).
    pub ssh_agent: bool,
    /// A known_hosts file mounted read-only at `/etc/ssh/ssh_known_hosts` when the ssh-agent
    /// is forwarded (default: `~/.ssh/known_hosts` when it exists).
    pub known_hosts: Option<PathBuf>,
    /// `[git] ssh_keys`: the fingerprints (`SHA256:…`) of the only keys of the forwarded agent
    /// the container may list and sign with; empty: every key (`crate::ssh_agent`).
    pub ssh_keys: Vec<String>,
    /// Mount the git data the workdir's checkout needs outside it (`workspace::git_layout`).
    pub repository: bool,
    /// `[git] path`: the host git that reads the commits of a launch (`workspace::git_commits`;
    /// default: looked up on `PATH` and checked).
    pub program: Option<PathBuf>,
}

impl Default for GitSettings {
    fn default() -> Self {
        Self {
            identity: true,
            ssh_agent: false,
            known_hosts: None,
            ssh_keys: Vec::new(),
            repository: true,
            program: None,
        }
    }
}

/// Resolve the everyday settings of the primary config file at `path`.
pub fn resolve(path: &Path, file: Option<&ConfigFile>, paths: &Paths) -> Result<UserSettings, ConfigError> {
    let Some(file) = file else {
        return Ok(UserSettings::default());
    };
    let invalid = |key: String, message: &str| ConfigError::Invalid {
        path: path.into(),
        key,
        message: message.into(),
    };
    let passthrough = file
        .sandbox
        .as_ref()
        .and_then(|s: &SandboxFile| s.env_passthrough.clone())
        .unwrap_or_default();
    for (i, key) in passthrough.iter().enumerate() {
        if !env_name_syntax(key) {
            return Err(invalid(
                format!("sandbox.env_passthrough[{i}]"),
                "must be a variable name matching [A-Za-z_][A-Za-z0-9_]*",
            ));
        }
    }
    let mounts = file
        .mount
        .iter()
        .enumerate()
        .map(|(i, m)| mount(m, paths).map_err(|(field, msg)| invalid(format!("mount[{i}].{field}"), msg)))
        .collect::<Result<_, _>>()?;
    let agents = file
        .agent
        .iter()
        .map(|(name, a)| {
            agent(a)
                .map(|s| (name.clone(), s))
                .map_err(|(field, msg)| invalid(format!("agent.{name}.{field}"), msg))
        })
        .collect::<Result<_, _>>()?;
    let git = git(file.git.as_ref(), paths).map_err(|(field, msg)| invalid(format!("git.{field}"), msg))?;
    let op_path = match file.op.as_ref().and_then(|o: &OpFile| o.path.as_deref()) {
        None => None,
        Some(p) => Some(host_path(p, paths).ok_or_else(|| invalid("op.path".into(), PATH_RULE))?),
    };
    let ssh_path = match file.ssh.as_ref().and_then(|o: &OpFile| o.path.as_deref()) {
        None => None,
        Some(p) => Some(host_path(p, paths).ok_or_else(|| invalid("ssh.path".into(), PATH_RULE))?),
    };
    let credentials =
        crate::credentials::model::resolve(&file.credential).map_err(|(key, msg)| invalid(key, &msg))?;
    let sandbox = file.sandbox.as_ref();
    let limits = sandbox
        .map_or(Ok(LimitSettings::default()), limits)
        .map_err(|(key, msg)| invalid(key, &msg))?;
    Ok(UserSettings {
        protect_git: sandbox.and_then(|s| s.protect_git).unwrap_or(true),
        shared_state: sandbox.and_then(|s| s.shared_state).unwrap_or(false),
        op_path,
        ssh_path,
        env_passthrough: passthrough,
        mounts,
        agents,
        git,
        protect_allow: file
            .protect
            .as_ref()
            .and_then(|p| p.allow.clone())
            .map(|names| vec![("protect.allow".to_string(), names)])
            .unwrap_or_default(),
        limits,
        credentials,
    })
}

/// `[sandbox] memory`, `cpus` and `tmpfs_size`, in the syntax of `--memory` and `--cpus`.
fn limits(s: &SandboxFile) -> Result<LimitSettings, (String, String)> {
    let mut out = LimitSettings::default();
    let field = |key: &'static str| move |e: limits::LimitError| (format!("sandbox.{key}"), e.to_string());
    if let Some(v) = &s.memory {
        out.memory = limits::parse_memory(&v.text()).map_err(field("memory"))?;
    }
    if let Some(v) = &s.cpus {
        out.cpus = Some(limits::parse_cpus(&v.text()).map_err(field("cpus"))?);
    }
    if let Some(v) = &s.tmpfs_size {
        out.tmpfs_size = limits::parse_tmpfs_size(&v.text()).map_err(field("tmpfs_size"))?;
    }
    Ok(out)
}

type FieldError = (String, &'static str);

fn mount(m: &MountFile, paths: &Paths) -> Result<ConfigMount, FieldError> {
    let source = host_path(&m.source, paths).ok_or_else(|| ("source".to_string(), PATH_RULE))?;
    let target = match &m.target {
        None => None,
        Some(t) if t.starts_with('/') && !t.contains(['\0', '\n', ':']) => Some(PathBuf::from(t)),
        Some(_) => {
            return Err((
                "target".into(),
                "must be an absolute container path without NUL, line breaks or `:`",
            ));
        }
    };
    Ok(ConfigMount {
        source,
        target,
        readonly: m.readonly,
        optional: m.optional,
    })
}

fn agent(a: &AgentFile) -> Result<AgentSettings, FieldError> {
    if a.args.iter().any(|s| s.contains('\0')) {
        return Err(("args".into(), "arguments must not contain NUL"));
    }
    for (key, value) in &a.env {
        if !env_name_syntax(key) {
            return Err((
                format!("env.{key}"),
                "must be a variable name matching [A-Za-z_][A-Za-z0-9_]*",
            ));
        }
        if value.contains(['\0', '\n', '\r']) {
            return Err((
                format!("env.{key}"),
                "the value must be a single line without NUL (value not shown)",
            ));
        }
    }
    Ok(AgentSettings {
        args: a.args.clone(),
        env: a.env.clone(),
        skip_permissions: a.skip_permissions.unwrap_or(false),
    })
}

fn git(g: Option<&GitFile>, paths: &Paths) -> Result<GitSettings, FieldError> {
    let Some(g) = g else {
        return Ok(GitSettings::default());
    };
    let known_hosts = match &g.known_hosts {
        None => None,
        Some(p) => Some(host_path(p, paths).ok_or_else(|| ("known_hosts".to_string(), PATH_RULE))?),
    };
    let program = match &g.path {
        None => None,
        Some(p) => Some(host_path(p, paths).ok_or_else(|| ("path".to_string(), PATH_RULE))?),
    };
    let ssh_keys = g.ssh_keys.clone().unwrap_or_default();
    if let Some(i) = ssh_keys.iter().position(|k| !is_fingerprint(k)) {
        return Err((format!("ssh_keys[{i}]"), FINGERPRINT_RULE));
    }
    Ok(GitSettings {
        identity: g.identity.unwrap_or(true),
        ssh_agent: g.ssh_agent.unwrap_or(false),
        known_hosts,
        ssh_keys,
        repository: g.repository.unwrap_or(true),
        program,
    })
}

const FINGERPRINT_RULE: &str = "must be a key fingerprint as `ssh-add -l` or `ssh-keygen -l -f KEY.pub` prints it: `SHA256:` followed by 43 base64 characters";

/// `SHA256:` and the unpadded base64 of 32 bytes.
fn is_fingerprint(s: &str) -> bool {
    s.strip_prefix("SHA256:").is_some_and(|b| {
        b.len() == 43
            && b.bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'+' || c == b'/')
    })
}

/// The image of the most specific `[[project]]` whose path is the project root or one of its
/// ancestors (compared canonically); `Ok(None)` when none matches.
pub fn project_image(
    path: &Path,
    entries: &[ProjectFile],
    project: &Path,
    paths: &Paths,
) -> Result<Option<String>, ConfigError> {
    let mut best: Option<(usize, &str)> = None;
    for (i, entry) in entries.iter().enumerate() {
        let invalid = |field: &str, message: &str| ConfigError::Invalid {
            path: path.into(),
            key: format!("project[{i}].{field}"),
            message: message.into(),
        };
        let dir = host_path(&entry.path, paths).ok_or_else(|| invalid("path", PATH_RULE))?;
        let image = match entry.image.as_deref() {
            Some(img) if img.trim().is_empty() => return Err(invalid("image", "must not be empty")),
            Some(img) => img,
            None => continue,
        };
        // A project directory that does not exist (yet) matches nothing.
        let Ok(dir) = dir.canonicalize() else { continue };
        let depth = dir.components().count();
        if project.starts_with(&dir) && best.is_none_or(|(d, _)| depth > d) {
            best = Some((depth, image));
        }
    }
    Ok(best.map(|(_, image)| image.to_string()))
}

/// The `protect_allow` lists of every `[[project]]` whose path is the project root or one of
/// its ancestors (compared canonically), as `(key, names)`.
pub fn project_protect_allow(
    path: &Path,
    entries: &[ProjectFile],
    project: &Path,
    paths: &Paths,
) -> Result<Vec<(String, Vec<String>)>, ConfigError> {
    let mut out = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let Some(names) = &entry.protect_allow else {
            continue;
        };
        let dir = host_path(&entry.path, paths).ok_or_else(|| ConfigError::Invalid {
            path: path.into(),
            key: format!("project[{i}].path"),
            message: PATH_RULE.into(),
        })?;
        if dir.canonicalize().is_ok_and(|dir| project.starts_with(dir)) {
            out.push((format!("project[{i}].protect_allow"), names.clone()));
        }
    }
    Ok(out)
}

/// The `[project.network]` of the most specific `[[project]]` whose path is the project root
/// or one of its ancestors (compared canonically), if it has one.
pub fn project_network(
    path: &Path,
    entries: &[ProjectFile],
    project: &Path,
    paths: &Paths,
) -> Result<Option<crate::egress::model::NetworkFile>, ConfigError> {
    let mut best: Option<(usize, &crate::egress::model::NetworkFile)> = None;
    for (i, entry) in entries.iter().enumerate() {
        let Some(network) = &entry.network else { continue };
        let dir = host_path(&entry.path, paths).ok_or_else(|| ConfigError::Invalid {
            path: path.into(),
            key: format!("project[{i}].path"),
            message: PATH_RULE.into(),
        })?;
        let Ok(dir) = dir.canonicalize() else { continue };
        let depth = dir.components().count();
        if project.starts_with(&dir) && best.is_none_or(|(d, _)| depth > d) {
            best = Some((depth, network));
        }
    }
    Ok(best.map(|(_, n)| n.clone()))
}

const PATH_RULE: &str = "must be an absolute path (or start with ~/) without NUL or line breaks";

/// `~/x` → `$HOME/x`; other paths must be absolute. No NUL or line breaks.
fn host_path(raw: &str, paths: &Paths) -> Option<PathBuf> {
    if raw.contains(['\0', '\n', '\r']) {
        return None;
    }
    if let Some(rest) = raw.strip_prefix("~/") {
        return Some(paths.home.join(rest));
    }
    raw.starts_with('/').then(|| PathBuf::from(raw))
}

/// `^[A-Za-z_][A-Za-z0-9_]*$`.
pub fn env_name_syntax(key: &str) -> bool {
    let mut bytes = key.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}
