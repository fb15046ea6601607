//! Stage 1: configuration. Reads the global config (or the one named by `--config`), finds the
//! project (git root or workdir) and its `.ags/config.toml` overlay, applies overlay trust, and
//! resolves everything into a [`Config`] with no optional fields left for defaulted settings.
//!
//! I/O: reads config files and the overlay trust file; may ask on the controlling terminal and
//! append to the trust file. Nothing here runs a hook or opens the Podman socket.

mod decls;
mod file;
mod network;
mod overlay;
mod overlay_summary;
mod paths;
mod safety;
mod user;

use std::path::{Path, PathBuf};

/// The project overlay, relative to the project root.
const OVERLAY: &str = ".ags/config.toml";

pub use crate::egress::model::{AllowEntry, EgressOrigin, EgressSettings, Network, canonical, is_internal};
pub use decls::{DEFAULT_TIMEOUT_SECONDS, HookDecl, HookEvent, HookScope, MAX_DECLS_TOTAL};
pub use file::{ConfigFile, HookDeclFile, SandboxFile};
pub use paths::Paths;
pub use safety::check_not_writable_by_others;
pub use user::{AgentSettings, GitSettings, UserSettings, env_name_syntax};

/// The built-in image name (defined with the agent table, which the CLI reads too).
pub use crate::agents::DEFAULT_IMAGE;
/// The built-in pids limit.
pub const DEFAULT_PIDS_LIMIT: i64 = 4096;

/// Errors of the configuration stage.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The workspace's git repository cannot be guarded (`[sandbox] protect_git`).
    #[error(transparent)]
    GitGuard(#[from] crate::git::model::guard::GitGuardError),
    #[error("HOME is not set; ags needs it to find its config and state")]
    NoHome,
    #[error("workdir {}: {source}", path.display())]
    Workdir { path: PathBuf, source: std::io::Error },
    #[error("workdir {} is not a directory", .0.display())]
    WorkdirNotDir(PathBuf),
    #[error("config {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("config {}: {message}", path.display())]
    Parse { path: PathBuf, message: String },
    #[error("config {}: {key} may only be set in the global config, not in a project overlay; move it to {}", path.display(), global.display())]
    OverlayField {
        path: PathBuf,
        key: &'static str,
        global: PathBuf,
    },
    #[error("config {}: {key}: {message}", path.display())]
    Invalid {
        path: PathBuf,
        key: String,
        message: String,
    },
    #[error("interrupted at the prompt for the project overlay {} ({}); the repository {} was not trusted and nothing was run", overlay.display(), crate::prompt::interruption(*signal), root.display())]
    OverlayTrustInterrupted {
        overlay: PathBuf,
        root: PathBuf,
        /// SIGINT for Ctrl-C, else the signal received at the prompt.
        signal: i32,
    },
    #[error("project overlay {} declares {events} hooks but the repository {} is not trusted; run ags interactively in that repository and answer yes, add the repository to {}, or pass --no-repo-config", overlay.display(), root.display(), trust_file.display())]
    OverlayHooksUntrusted {
        overlay: PathBuf,
        /// The events it declares hooks for (`prepare`, `prepare and finished`, …).
        events: String,
        root: PathBuf,
        trust_file: PathBuf,
    },
    #[error("config {}: larger than {limit} bytes; ags does not read it (a config file is never that large)", path.display())]
    TooLarge { path: PathBuf, limit: u64 },
    #[error("{what} {} has mode {mode:04o}: other users can change it, so ags does not use it; run `chmod go-w {}`", path.display(), path.display())]
    WritableByOthers {
        what: &'static str,
        path: PathBuf,
        mode: u32,
    },
    #[error("overlay trust file {}: {message}", path.display())]
    TrustFile { path: PathBuf, message: String },
    #[error(
        "{count} {event} hook declarations across the global config and the project overlay; at most {MAX_DECLS_TOTAL} are accepted"
    )]
    TooManyDecls { event: HookEvent, count: usize },
}

type Result<T> = std::result::Result<T, ConfigError>;

/// What the command line says about configuration.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    pub config: Option<PathBuf>,
    pub no_repo_config: bool,
    /// `--workdir PATH` (default: the current directory).
    pub workdir: Option<PathBuf>,
    /// Whether an untrusted overlay may be offered for trust on the terminal.
    pub ask_overlay_trust: bool,
}

/// The resolved configuration of one invocation.
#[derive(Debug, Clone)]
pub struct Config {
    pub paths: Paths,
    /// Canonical working directory.
    pub workdir: PathBuf,
    /// Canonical project root: the git repository root, or the workdir outside git.
    pub project: PathBuf,
    pub image: String,
    /// Pids limit for the container.
    pub pids_limit: i64,
    /// Network mode (the global config's, narrowed by the overlay; `--network` may change it).
    pub network: Network,
    /// Where the mode came from, the overlay's floor and the allowlist (`[network]`).
    pub egress: EgressSettings,
    /// Active prepare hook declarations (`[[prepare_hook]]`): global first, then project, in
    /// declaration order.
    pub prepare_hooks: Vec<HookDecl>,
    /// Active `started` hook declarations, in the same order.
    pub started_hooks: Vec<HookDecl>,
    /// Active `finished` hook declarations, in the same order.
    pub finished_hooks: Vec<HookDecl>,
    /// The primary config file that was read (None: built-in defaults).
    pub primary: Option<PathBuf>,
    /// The project overlay that was loaded, if any.
    pub overlay: Option<PathBuf>,
    /// Non-fatal notes for the user (skipped overlays…).
    pub warnings: Vec<String>,
    /// Environment passthrough, mounts, per-agent and git settings of the global config.
    pub user: UserSettings,
    /// `[[agent_hook]]` handlers and the `[agent_guard]` of the global config and the overlay.
    pub agent_hooks: crate::agent_hooks::config::AgentHookSettings,
}

impl Config {
    /// Every active hook declaration: prepare, then started, then finished.
    pub fn all_hooks(&self) -> Vec<HookDecl> {
        [&self.prepare_hooks, &self.started_hooks, &self.finished_hooks]
            .into_iter()
            .flatten()
            .cloned()
            .collect()
    }
}

/// Load the configuration for one invocation.
pub fn load(opts: &LoadOptions) -> Result<Config> {
    let paths = Paths::from_env()?;
    load_with(paths, opts)
}

/// [`load`] with explicit host paths (tests use temp dirs).
pub fn load_with(paths: Paths, opts: &LoadOptions) -> Result<Config> {
    let workdir = canonical_workdir(opts.workdir.as_deref())?;
    let project = project_root(&workdir);
    let overlay_path = project.join(OVERLAY);
    let (primary_path, explicit) = match &opts.config {
        Some(p) => (absolute(p)?, true),
        None => (paths.global_config(), false),
    };
    // Only a `--config` naming the overlay makes them one file: the agent can make the overlay
    // a link to the global config, which must not turn that config into a project's.
    let primary_is_overlay = explicit && same_file(&primary_path, &overlay_path);
    check_not_writable_by_others(&primary_path, "config file")?;
    let primary = read_config(&primary_path, explicit)?;

    let mut warnings = Vec::new();
    warnings.extend(safety::nested_repo_note(&paths, &project, opts.no_repo_config));
    let overlay = match !opts.no_repo_config && !primary_is_overlay && overlay_path.is_file() {
        true => load_overlay(
            &paths,
            &project,
            &overlay_path,
            opts.ask_overlay_trust,
            &mut warnings,
        )?,
        false => None,
    };

    let primary_scope = match primary_is_overlay {
        true => HookScope::Project {
            root: project.clone(),
        },
        false => scope_of_file(&primary_path),
    };
    let mut files = Vec::new();
    if let Some(file) = &primary {
        files.push((primary_path.as_path(), file, primary_scope));
    }
    if let Some((path, file)) = &overlay {
        let scope = HookScope::Project {
            root: project.clone(),
        };
        files.push((path.as_path(), file, scope));
    }
    let [prepare_hooks, started_hooks, finished_hooks] =
        HookEvent::ALL.map(|event| declarations(&files, event));
    let (prepare_hooks, started_hooks, finished_hooks) = (prepare_hooks?, started_hooks?, finished_hooks?);
    let agent_hooks = agent_hook_settings(&files)?;

    let sandbox = primary
        .as_ref()
        .and_then(|f| f.sandbox.clone())
        .unwrap_or_default();
    let sandbox_network = sandbox.network.clone();
    let (mut image, pids_limit) = sandbox_settings(&primary_path, sandbox)?;
    let (network, egress) = network::settings(
        &primary_path,
        primary.as_ref(),
        sandbox_network,
        overlay.as_ref(),
        (&project, &paths),
    )?;
    let user = user_settings(&primary_path, primary.as_ref(), &project, &paths, &mut image)?;
    Ok(Config {
        paths,
        workdir,
        project,
        image,
        pids_limit,
        network,
        egress,
        prepare_hooks,
        started_hooks,
        finished_hooks,
        primary: primary.map(|_| primary_path),
        overlay: overlay.map(|(p, _)| p),
        warnings,
        user,
        agent_hooks,
    })
}

/// The user's settings of the primary config, with what its `[[project]]` table for this
/// project adds (`protect` allowances, the image, which replaces `image`).
fn user_settings(
    primary_path: &Path,
    primary: Option<&ConfigFile>,
    project: &Path,
    paths: &Paths,
    image: &mut String,
) -> Result<UserSettings> {
    let mut user = user::resolve(primary_path, primary, paths)?;
    let projects = primary.map(|f| f.project.as_slice()).unwrap_or_default();
    user.protect_allow.extend(user::project_protect_allow(
        primary_path,
        projects,
        project,
        paths,
    )?);
    if let Some(project_image) = user::project_image(primary_path, projects, project, paths)? {
        *image = project_image;
    }
    Ok(user)
}

/// `[[agent_hook]]` and `[agent_guard]` of the loaded files, global first.
fn agent_hook_settings(
    files: &[(&Path, &ConfigFile, HookScope)],
) -> Result<crate::agent_hooks::config::AgentHookSettings> {
    let agent_hook_files: Vec<_> = files
        .iter()
        .map(|(path, file, scope)| {
            let scope = match scope {
                HookScope::Global => "global",
                HookScope::Project { .. } => "project",
            };
            (
                *path,
                file.agent_hook.as_slice(),
                file.agent_guard.as_ref(),
                scope,
            )
        })
        .collect();
    Ok(crate::agent_hooks::config::resolve(&agent_hook_files)?)
}

/// The project overlay at `path` of the project `root`, when it is trusted (or trusted now on
/// the terminal, when `ask`); a skipped one leaves a note in `warnings`. An overlay that cannot
/// be read as a config is an error only when the repository is trusted (`overlay::unreadable`).
fn load_overlay(
    paths: &Paths,
    root: &Path,
    path: &Path,
    ask: bool,
    warnings: &mut Vec<String>,
) -> Result<Option<(PathBuf, ConfigFile)>> {
    let parsed = safety::read_overlay(root, Path::new(OVERLAY))
        .and_then(|text| parse_text(path, &text).map(|file| (file, text)));
    let (file, text) = match parsed {
        Ok(parsed) => parsed,
        Err(e @ (ConfigError::Parse { .. } | ConfigError::TooLarge { .. } | ConfigError::Read { .. })) => {
            warnings.push(overlay::unreadable(paths, root, path, e)?);
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    match overlay::decide(paths, root, path, (&file, &text), ask)? {
        overlay::Decision::Load => {
            check_not_writable_by_others(path, "project config overlay")?;
            file::check_overlay_fields(&file).map_err(|key| ConfigError::OverlayField {
                path: path.into(),
                key,
                global: paths.global_config(),
            })?;
            Ok(Some((path.into(), file)))
        }
        overlay::Decision::Skip(msg) => {
            warnings.push(msg);
            Ok(None)
        }
    }
}

/// The declarations of `event` across the loaded files (global first), within the total limit.
fn declarations(files: &[(&Path, &ConfigFile, HookScope)], event: HookEvent) -> Result<Vec<HookDecl>> {
    let mut out = Vec::new();
    for (path, file, scope) in files {
        let decls = match event {
            HookEvent::Prepare => &file.prepare_hook,
            HookEvent::Started => &file.started_hook,
            HookEvent::Finished => &file.finished_hook,
        };
        out.extend(decls::resolve(path, event, decls, scope)?);
    }
    if out.len() > MAX_DECLS_TOTAL {
        return Err(ConfigError::TooManyDecls {
            event,
            count: out.len(),
        });
    }
    Ok(out)
}

fn sandbox_settings(path: &Path, s: SandboxFile) -> Result<(String, i64)> {
    let invalid = |key: &str, message: &str| ConfigError::Invalid {
        path: path.into(),
        key: key.into(),
        message: message.into(),
    };
    let image = s.image.unwrap_or_else(|| DEFAULT_IMAGE.into());
    if image.trim().is_empty() {
        return Err(invalid("sandbox.image", "must not be empty"));
    }
    let pids = s.pids_limit.unwrap_or(DEFAULT_PIDS_LIMIT);
    if !(1..=1_000_000).contains(&pids) {
        return Err(invalid("sandbox.pids_limit", "must be between 1 and 1000000"));
    }
    Ok((image, pids))
}

fn read_config(path: &Path, must_exist: bool) -> Result<Option<ConfigFile>> {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !must_exist => Ok(None),
        Err(e) => Err(ConfigError::Read {
            path: path.into(),
            source: e,
        }),
        Ok(_) => parse_file(path).map(Some),
    }
}

/// The global config's `[image] ca_certs` (absolute paths; empty without a config file or key).
/// `ags image build` reads only the global config: it builds for no project, and a project's
/// overlay may not set `[image]`.
pub fn image_ca_certs(config: Option<&Path>) -> Result<Vec<PathBuf>> {
    let (path, explicit) = match config {
        Some(p) => (absolute(p)?, true),
        None => (Paths::from_env()?.global_config(), false),
    };
    check_not_writable_by_others(&path, "config file")?;
    let certs = read_config(&path, explicit)?
        .and_then(|f| f.image)
        .and_then(|i| i.ca_certs)
        .unwrap_or_default();
    match certs.iter().position(|p| !p.is_absolute()) {
        Some(i) => Err(ConfigError::Invalid {
            path,
            key: format!("image.ca_certs[{i}]"),
            message: "must be an absolute path".into(),
        }),
        None => Ok(certs),
    }
}

/// Parse one config file strictly (unknown keys are errors naming the key).
pub fn parse_file(path: &Path) -> Result<ConfigFile> {
    parse_text(path, &safety::read_bounded(path)?)
}

fn parse_text(path: &Path, text: &str) -> Result<ConfigFile> {
    let mut file: ConfigFile = toml::from_str(text).map_err(|e| ConfigError::Parse {
        path: path.into(),
        message: safety::parse_message(&e),
    })?;
    // So that an allow or deny entry can be named by its file and line.
    let networks = file
        .network
        .iter_mut()
        .chain(file.project.iter_mut().filter_map(|p| p.network.as_mut()));
    for network in networks {
        network.source = Some(crate::egress::model::Source::new(path, text));
    }
    Ok(file)
}

fn canonical_workdir(p: Option<&Path>) -> Result<PathBuf> {
    let raw = match p {
        Some(p) => p.to_path_buf(),
        None => std::env::current_dir().map_err(|e| ConfigError::Workdir {
            path: ".".into(),
            source: e,
        })?,
    };
    let canon = raw.canonicalize().map_err(|e| ConfigError::Workdir {
        path: raw.clone(),
        source: e,
    })?;
    if !canon.is_dir() {
        return Err(ConfigError::WorkdirNotDir(canon));
    }
    Ok(canon)
}

fn absolute(p: &Path) -> Result<PathBuf> {
    if p.is_absolute() {
        return Ok(p.to_path_buf());
    }
    let cwd = std::env::current_dir().map_err(|e| ConfigError::Workdir {
        path: ".".into(),
        source: e,
    })?;
    Ok(cwd.join(p))
}

/// The scope of declarations in the primary config `path`, from where the file is, not how it
/// was named: a `config.toml` in a `.ags` directory is the project overlay of the directory
/// above (`--config /other/repo/.ags/config.toml` declares hooks of /other/repo); any other file
/// is global.
fn scope_of_file(path: &Path) -> HookScope {
    let Ok(canon) = path.canonicalize() else {
        return HookScope::Global;
    };
    let in_ags_dir = canon.file_name().is_some_and(|n| n == "config.toml")
        && canon
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|n| n == ".ags");
    match canon.parent().and_then(Path::parent) {
        Some(root) if in_ags_dir => HookScope::Project { root: root.into() },
        _ => HookScope::Global,
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// The git repository root containing `workdir` (a `.git` directory or file), else `workdir`.
pub fn project_root(workdir: &Path) -> PathBuf {
    workdir
        .ancestors()
        .find(|dir| dir.join(".git").exists())
        .unwrap_or(workdir)
        .to_path_buf()
}

impl From<crate::agent_hooks::config::Invalid> for ConfigError {
    fn from(e: crate::agent_hooks::config::Invalid) -> Self {
        ConfigError::Invalid {
            path: e.path,
            key: e.key,
            message: e.message,
        }
    }
}

#[cfg(test)]
mod tests;

/// `[[agent_hook]]` and `[agent_guard]` as loaded from the config files.
#[cfg(test)]
#[path = "agent_hooks_tests.rs"]
mod agent_hooks_tests;
