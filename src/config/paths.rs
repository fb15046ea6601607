//! Where `ags` keeps its files on the host, derived once from the environment (XDG base
//! directories with the usual fallbacks under $HOME).

use std::path::PathBuf;

use crate::containment::{Class, Protected};

/// Well-known credential directories under the home directory: keys, cloud and cluster logins,
/// the GitHub CLI's and 1Password CLI's logins, the `pass` store.
pub const CREDENTIAL_DIRS: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".config/gcloud",
    ".kube",
    ".docker",
    ".config/gh",
    ".config/op",
    ".op",
    ".password-store",
];

/// Well-known credential files under the home directory: git's `store` helper, netrc (curl,
/// git over HTTPS), the npm, PyPI and cargo registry tokens.
pub const CREDENTIAL_FILES: &[&str] = &[
    ".git-credentials",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials.toml",
    ".cargo/credentials",
];

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

    /// Launch records and OCI events for crash recovery (see `crate::events::spool`).
    pub fn spool_dir(&self) -> PathBuf {
        self.state_dir().join("spool")
    }

    /// The JSONL log of hook executions.
    pub fn hook_log(&self) -> PathBuf {
        self.state_dir().join("hooks.jsonl")
    }

    /// The JSONL log of egress attempts (docs/network.md).
    pub fn egress_log(&self) -> PathBuf {
        self.state_dir().join("egress.jsonl")
    }

    /// The grants in flight of `ags allow` (docs/network.md), one file each.
    pub fn egress_grants(&self) -> PathBuf {
        self.state_dir().join("grants")
    }

    /// The JSONL log of agent hook records (docs/agent-hooks.md).
    pub fn agent_hooks_log(&self) -> PathBuf {
        self.state_dir().join("agent-hooks.jsonl")
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

    /// The RAM-backed candidates for short-lived private files, in order of preference:
    /// [`Paths::stage_root`] when `$XDG_RUNTIME_DIR` is set, then [`Paths::shm_stage_root`].
    /// Whether one is really RAM-backed is checked where it is used.
    pub fn ram_root_candidates(&self) -> Vec<PathBuf> {
        let runtime = self.runtime_dir.as_ref().map(|_| self.stage_root());
        runtime.into_iter().chain([self.shm_stage_root()]).collect()
    }

    /// The private place on disk for what needs no RAM (socket directories, the agent hook
    /// wiring) when neither [`Paths::stage_root`] nor [`Paths::shm_stage_root`] can be used:
    /// `<state>/ags/run`.
    pub fn disk_stage_root(&self) -> PathBuf {
        self.state_dir().join("run")
    }

    /// Every place a launch may stage files in (swept for leftovers, protected from mounts).
    pub fn stage_roots(&self) -> [PathBuf; 3] {
        [self.stage_root(), self.shm_stage_root(), self.disk_stage_root()]
    }

    /// `ags`'s cache directory.
    pub fn cache_dir(&self) -> PathBuf {
        self.cache_home.join("ags")
    }

    /// The host locations no mount of a launch may expose (docs/security.md): `ags`'s own
    /// storage, Podman's default sockets, configuration and storage (root and rootless), the
    /// credential directories and the home directory itself. The socket of a non-default
    /// endpoint and the storage the service reports are added by the launch.
    pub fn protected(&self) -> Vec<Protected> {
        let ags = [
            ("hook approval store", self.hook_trust_dir()),
            ("AGS state directory", self.state_dir()),
            ("AGS cache directory", self.cache_dir()),
            ("repository-overlay trust file", self.overlay_trust_file()),
            ("AGS config directory", self.config_home.join("ags")),
            ("AGS launch staging directory", self.stage_root()),
            ("AGS launch staging directory in /dev/shm", self.shm_stage_root()),
        ];
        let mut podman = vec![
            (
                "rootful Podman API socket directory",
                PathBuf::from("/run/podman"),
            ),
            ("Podman configuration", self.config_home.join("containers")),
            ("Podman configuration", self.home.join(".config/containers")),
            ("Podman configuration", PathBuf::from("/etc/containers")),
            ("Podman storage", self.home.join(".local/share/containers")),
            ("Podman storage", PathBuf::from("/var/lib/containers")),
            ("Podman run-time storage", PathBuf::from("/run/containers")),
            ("Podman run-time storage", PathBuf::from("/run/libpod")),
        ];
        let uid = nix::unistd::getuid().as_raw();
        let runtime_dirs = self
            .runtime_dir
            .iter()
            .cloned()
            .chain((uid != 0).then(|| PathBuf::from(format!("/run/user/{uid}"))));
        for dir in runtime_dirs {
            podman.push(("rootless Podman API socket directory", dir.join("podman")));
            podman.push(("Podman run-time storage", dir.join("containers")));
            podman.push(("Podman run-time storage", dir.join("libpod")));
        }
        let ags = ags.into_iter().map(|(l, p)| Protected::overlap(l, p, Class::Ags));
        let podman = podman
            .into_iter()
            .map(|(l, p)| Protected::overlap(l, p, Class::Podman));
        let dirs = CREDENTIAL_DIRS.iter().map(|d| ("credential directory", d));
        let files = CREDENTIAL_FILES.iter().map(|f| ("credential file", f));
        let creds = dirs
            .chain(files)
            .map(|(label, p)| Protected::overlap(label, self.home.join(p), Class::Credentials));
        // First: `~` and `/` contain most of the rest, and "the home directory" is what a person
        // who ran `ags` there needs to hear, not the approval store inside it.
        let home = Protected::self_or_ancestor("home directory", self.home.clone(), Class::Home);
        [home].into_iter().chain(ags).chain(podman).chain(creds).collect()
    }
}
