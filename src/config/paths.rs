//! Where `ags` keeps its files on the host, derived once from the environment (XDG base
//! directories with the usual fallbacks under $HOME).

use std::path::{Path, PathBuf};

/// Host locations `ags` reads and writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paths {
    /// The user's home directory.
    pub home: PathBuf,
    /// `$XDG_CONFIG_HOME` or `~/.config`.
    pub config_home: PathBuf,
    /// `$XDG_STATE_HOME` or `~/.local/state`.
    pub state_home: PathBuf,
    /// `$XDG_CACHE_HOME` or `~/.cache`.
    pub cache_home: PathBuf,
    /// `$XDG_RUNTIME_DIR`, when set.
    pub runtime_dir: Option<PathBuf>,
}

impl Paths {
    /// Read the locations from the process environment.
    pub fn from_env() -> Result<Self, super::ConfigError> {
        let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        let home = var("HOME").ok_or(super::ConfigError::NoHome)?;
        let abs = |p: Option<PathBuf>| p.filter(|p| p.is_absolute());
        Ok(Self {
            config_home: abs(var("XDG_CONFIG_HOME")).unwrap_or_else(|| home.join(".config")),
            state_home: abs(var("XDG_STATE_HOME")).unwrap_or_else(|| home.join(".local/state")),
            cache_home: abs(var("XDG_CACHE_HOME")).unwrap_or_else(|| home.join(".cache")),
            runtime_dir: abs(var("XDG_RUNTIME_DIR")),
            home,
        })
    }

    /// The default global config file.
    pub fn global_config(&self) -> PathBuf {
        self.config_home.join("ags/config.toml")
    }

    /// Canonical repository roots whose `.ags/config.toml` the user trusts, one per line.
    pub fn overlay_trust_file(&self) -> PathBuf {
        self.config_home.join("ags/trusted-repo-overlays.txt")
    }

    /// Hook approval tokens (one file per approved hash) and execution copies.
    pub fn hook_trust_dir(&self) -> PathBuf {
        self.state_home.join("ags-hook-trust")
    }

    /// `ags`'s own state directory (run log, launch records).
    pub fn state_dir(&self) -> PathBuf {
        self.state_home.join("ags")
    }

    /// Launch records and OCI events for crash recovery (see `crate::spool`).
    pub fn spool_dir(&self) -> PathBuf {
        self.state_dir().join("spool")
    }

    /// The JSONL log of hook executions.
    pub fn hook_log(&self) -> PathBuf {
        self.state_dir().join("hooks.jsonl")
    }

    /// Where launches keep private, short-lived host files (generated files bind-mounted into
    /// the container): `$XDG_RUNTIME_DIR/ags` (RAM-backed on systemd hosts), else
    /// `<state>/ags/run`.
    pub fn stage_root(&self) -> PathBuf {
        match &self.runtime_dir {
            Some(dir) => dir.join("ags"),
            None => self.state_dir().join("run"),
        }
    }

    /// The RAM-backed place to stage generated files when [`Paths::stage_root`] is on disk:
    /// `/dev/shm/ags-<uid>`.
    pub fn shm_stage_root(&self) -> PathBuf {
        PathBuf::from(format!("/dev/shm/ags-{}", nix::unistd::geteuid()))
    }

    /// Every place a launch may stage files in (swept for leftovers, protected from mounts).
    pub fn stage_roots(&self) -> [PathBuf; 2] {
        [self.stage_root(), self.shm_stage_root()]
    }

    /// `ags`'s cache directory.
    pub fn cache_dir(&self) -> PathBuf {
        self.cache_home.join("ags")
    }

    /// Whether `p` lies inside `dir` (both taken as given; canonicalize first when it matters).
    pub fn is_within(p: &Path, dir: &Path) -> bool {
        p.starts_with(dir)
    }
}
