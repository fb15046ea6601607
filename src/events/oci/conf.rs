//! The `hooks_dir` setting of Podman's containers.conf: where the service reads it from, its
//! effective value, and a minimal text edit that adds a directory to it.
//!
//! Read order (containers.conf(5), containers/common as in Podman 4.3): `$CONTAINERS_CONF` alone
//! when set; otherwise /usr/share/containers/containers.conf, /etc/containers/containers.conf,
//! /etc/containers/containers.conf.d/*.conf, and for a rootless service also
//! `$XDG_CONFIG_HOME/containers/containers.conf` and its `containers.conf.d/*.conf`. The last
//! `[engine] hooks_dir` wins. Unset, a rootful service uses /usr/share/containers/oci/hooks.d;
//! a rootless one runs no hooks (observed on 4.3.1).
//! Ref: <https://github.com/containers/common/blob/main/docs/containers.conf.5.md>.
//!
//! I/O: reads those files ([`effective_hooks_dirs`]); [`add_hooks_dir`] is pure text editing.

use std::path::{Path, PathBuf};

/// Podman's default hooks directory of a rootful service.
pub const ROOTFUL_DEFAULT_HOOKS_DIR: &str = "/usr/share/containers/oci/hooks.d";
/// The drop-in `ags setup oci-hooks` owns for a rootful service.
pub const ROOTFUL_DROP_IN: &str = "/etc/containers/containers.conf.d/60-ags-oci-hooks.conf";

/// Which Podman service: root's, or a user's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServiceKind {
    /// Root's service (hooks run as root).
    Rootful,
    /// The user's rootless service (hooks run as the user).
    Rootless,
}

impl ServiceKind {
    /// The service of the current user: root's for root, the rootless one otherwise.
    pub fn current() -> Self {
        if nix::unistd::geteuid().is_root() {
            Self::Rootful
        } else {
            Self::Rootless
        }
    }
}

/// What the read order depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfEnv {
    /// `$CONTAINERS_CONF`, when set.
    pub containers_conf: Option<PathBuf>,
    /// `$XDG_CONFIG_HOME` (or `~/.config`).
    pub config_home: PathBuf,
    /// The system directory (`/` in production; tests point it elsewhere).
    pub root: PathBuf,
}

impl ConfEnv {
    /// From the process environment.
    pub fn from_env(config_home: &Path) -> Self {
        Self {
            containers_conf: std::env::var_os("CONTAINERS_CONF")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
            config_home: config_home.into(),
            root: "/".into(),
        }
    }

    fn system(&self, path: &str) -> PathBuf {
        self.root.join(path.trim_start_matches('/'))
    }
}

/// containers.conf could not be read or changed.
#[derive(Debug, thiserror::Error)]
pub enum ConfError {
    /// A file exists but cannot be read.
    #[error("{}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    /// A file is not valid TOML, or `hooks_dir` is not a list of strings.
    #[error("{}: {message}; fix the file first", path.display())]
    Invalid { path: PathBuf, message: String },
    /// The setting is written in a way a line edit cannot change safely.
    #[error("{}: cannot add {} to hooks_dir automatically ({reason}); add it to the [engine] hooks_dir list by hand", path.display(), dir.display())]
    Manual {
        path: PathBuf,
        /// The directory to add.
        dir: PathBuf,
        reason: &'static str,
    },
}

/// The files the service of `kind` reads, in order (existing or not).
pub fn read_order(kind: ServiceKind, env: &ConfEnv) -> Vec<PathBuf> {
    if let Some(path) = &env.containers_conf {
        return vec![path.clone()];
    }
    let mut files = vec![
        env.system("/usr/share/containers/containers.conf"),
        env.system("/etc/containers/containers.conf"),
    ];
    files.extend(drop_ins(&env.system("/etc/containers/containers.conf.d")));
    if kind == ServiceKind::Rootless {
        let user = env.config_home.join("containers");
        files.push(user.join("containers.conf"));
        files.extend(drop_ins(&user.join("containers.conf.d")));
    }
    files
}

fn drop_ins(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "conf"))
        .collect();
    out.sort();
    out
}

/// The file `ags setup oci-hooks` edits for the service of `kind`.
pub fn target_file(kind: ServiceKind, env: &ConfEnv) -> PathBuf {
    match (&env.containers_conf, kind) {
        (Some(path), _) => path.clone(),
        (None, ServiceKind::Rootful) => env.system(ROOTFUL_DROP_IN),
        (None, ServiceKind::Rootless) => env.config_home.join("containers/containers.conf"),
    }
}

/// The default hooks directory `ags setup oci-hooks` installs into.
pub fn default_hooks_dir(kind: ServiceKind, env: &ConfEnv) -> PathBuf {
    match kind {
        ServiceKind::Rootful => env.system(ROOTFUL_DEFAULT_HOOKS_DIR),
        ServiceKind::Rootless => env.config_home.join("containers/oci/hooks.d"),
    }
}

/// The `hooks_dir` set in `text` (None when the file does not set it).
pub fn hooks_dir_in(path: &Path, text: &str) -> Result<Option<Vec<PathBuf>>, ConfError> {
    let invalid = |message: String| ConfError::Invalid {
        path: path.into(),
        message,
    };
    let table: toml::Table = toml::from_str(text).map_err(|e| invalid(e.message().to_string()))?;
    let Some(value) = table.get("engine").and_then(|e| e.get("hooks_dir")) else {
        return Ok(None);
    };
    let list = value
        .as_array()
        .ok_or_else(|| invalid("engine.hooks_dir must be a list of paths".into()))?;
    list.iter()
        .map(|v| v.as_str().map(PathBuf::from))
        .collect::<Option<Vec<_>>>()
        .map(Some)
        .ok_or_else(|| invalid("engine.hooks_dir must be a list of paths".into()))
}

/// The hooks directories the service of `kind` uses.
pub fn effective_hooks_dirs(kind: ServiceKind, env: &ConfEnv) -> Result<Vec<PathBuf>, ConfError> {
    let mut dirs = match kind {
        ServiceKind::Rootful => vec![env.system(ROOTFUL_DEFAULT_HOOKS_DIR)],
        ServiceKind::Rootless => Vec::new(),
    };
    for path in read_order(kind, env) {
        if let Some(text) = read(&path)?
            && let Some(set) = hooks_dir_in(&path, &text)?
        {
            dirs = set;
        }
    }
    Ok(dirs)
}

/// The text of `path`; `None` when it does not exist.
pub(super) fn read(path: &Path) -> Result<Option<String>, ConfError> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ConfError::Read {
            path: path.into(),
            source,
        }),
    }
}

/// `text` (the content of `path`, empty when it does not exist) with `dirs` as its
/// `[engine] hooks_dir`, changing as little as possible: the `hooks_dir` line is replaced, or
/// added below `[engine]`, or an `[engine]` table is appended. The result is parsed back to prove
/// it says exactly that.
pub fn set_hooks_dir(path: &Path, text: &str, dirs: &[PathBuf]) -> Result<String, ConfError> {
    hooks_dir_in(path, text)?;
    let manual = |reason| ConfError::Manual {
        path: path.into(),
        dir: dirs.last().cloned().unwrap_or_default(),
        reason,
    };
    let list: Vec<String> = dirs
        .iter()
        .map(|d| {
            d.to_str()
                .map(String::from)
                .ok_or_else(|| manual("a path is not UTF-8"))
        })
        .collect::<Result<_, _>>()?;
    let line = format!("hooks_dir = {}", toml::Value::from(list));
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let header = |l: &str| l.trim_start().starts_with('[');
    let engine = lines.iter().position(|l| {
        let t = l.trim();
        t == "[engine]" || (t.starts_with("[engine]") && t["[engine]".len()..].trim_start().starts_with('#'))
    });
    match engine {
        Some(start) => {
            let end = lines[start + 1..]
                .iter()
                .position(|l| header(l))
                .map_or(lines.len(), |i| start + 1 + i);
            let key = lines[start + 1..end].iter().position(|l| {
                let t = l.trim_start();
                t.strip_prefix("hooks_dir")
                    .is_some_and(|rest| rest.trim_start().starts_with('='))
            });
            match key {
                Some(i) if toml::from_str::<toml::Table>(&lines[start + 1 + i]).is_ok() => {
                    lines[start + 1 + i] = line;
                }
                Some(_) => return Err(manual("its hooks_dir spans several lines")),
                None => lines.insert(start + 1, line),
            }
        }
        None => {
            if lines.last().is_some_and(|l| !l.trim().is_empty()) {
                lines.push(String::new());
            }
            lines.push("[engine]".into());
            lines.push(line);
        }
    }
    let mut out = lines.join("\n");
    out.push('\n');
    if hooks_dir_in(path, &out).ok().flatten().as_deref() != Some(dirs) {
        return Err(manual(
            "hooks_dir is set in a form other than `hooks_dir = [...]` under [engine]",
        ));
    }
    Ok(out)
}

#[cfg(test)]
#[path = "conf_tests.rs"]
mod tests;
