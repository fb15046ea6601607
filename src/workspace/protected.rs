//! Project files that host tools run on their own (issue 22, finding 4; docs/security.md,
//! "Project files host tools run"; decision 0004).
//!
//! Besides git, tools on the host execute files of the workspace without being asked: an agent
//! CLI reads its project settings (hooks, MCP servers, plugins) when you next run it there, VS
//! Code runs a `folderOpen` task when you open the folder, CI runs workflows when you push. The
//! agent can write all of them. [`PROTECTED`] lists them (one table: path, the host tool that
//! runs it, why); [`protection`] decides, for the top of every read-write root that keeps its
//! host path (the workdir, read-write `--add-dir`s):
//! - a listed path that exists is bind-mounted read-only onto itself, and each directory
//!   between it and the root is pinned (bound read-write onto itself, so the agent cannot rename
//!   it away and build another one: `EBUSY`);
//! - a listed path that does not exist is watched: `workspace::protected_state` takes its state
//!   (existence, type, SHA-256 of each file; symbolic links never followed) before the container
//!   and again after it, and moves whatever appeared aside (`NAME.ags-quarantine`);
//! - a listed path named in `[protect] allow` (or `[[project]] protect_allow`, global config
//!   only) is neither: the agent may edit it, and the end of the launch names what changed.
//!
//! A listed path that is a symbolic link, or lies under one, refuses the launch: a bind mount
//! would follow it to wherever it points.
//!
//! I/O: `symlink_metadata` of the listed paths, nothing written (`ags plan` changes nothing).

use std::path::{Path, PathBuf};

use crate::git::model::guard::GitGuard;

#[path = "protected_table.rs"]
mod table;
pub use table::{Entry, Kind, PROTECTED};

/// How a listed path is treated in this launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Handling {
    /// It exists: mounted read-only.
    ReadOnly,
    /// It does not exist: whatever appears there is moved aside after the launch.
    Watched,
    /// Named in `[protect] allow`: the agent may change it; changes are named after the launch.
    Allowed,
}

/// One listed path of one root.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ProtectedPath {
    /// The root (the workdir or a read-write `--add-dir`).
    pub root: PathBuf,
    /// The table's path, relative to `root`.
    pub rel: &'static str,
    /// The host tool that runs it.
    pub tool: &'static str,
    /// What this launch does with it.
    pub handling: Handling,
}

/// Read back only as a path of the table (`ags unit-check` reads what it wrote): a `rel` or
/// `tool` the table does not hold is refused.
impl<'de> serde::Deserialize<'de> for ProtectedPath {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        struct Raw {
            root: PathBuf,
            rel: String,
            tool: String,
            handling: Handling,
        }
        let raw = Raw::deserialize(d)?;
        let entry = PROTECTED
            .iter()
            .find(|e| e.path == raw.rel && e.tool == raw.tool)
            .ok_or_else(|| serde::de::Error::custom(format!("{:?} is not a protected path", raw.rel)))?;
        Ok(ProtectedPath {
            root: raw.root,
            rel: entry.path,
            tool: entry.tool,
            handling: raw.handling,
        })
    }
}

impl ProtectedPath {
    /// The host path.
    pub fn path(&self) -> PathBuf {
        self.root.join(self.rel)
    }
}

/// The protection of a launch (`ags plan --json` shows it as `protected`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Protection {
    /// Every listed path of every root.
    pub paths: Vec<ProtectedPath>,
    /// Bind mounts onto themselves: the existing paths read-only, the directories between them
    /// and their root pinned (read-write).
    pub mounts: Vec<GitGuard>,
}

/// Why a launch cannot protect its project files.
#[derive(Debug, thiserror::Error)]
pub enum ProtectedError {
    /// `[protect] allow` names something not in the table.
    #[error(
        "config {}: {key} names `{name}`, which is not a protected path; use one of: {}",
        config.display(),
        PROTECTED.iter().map(|e| e.path).collect::<Vec<_>>().join(", ")
    )]
    UnknownName {
        /// The primary config file.
        config: PathBuf,
        /// `protect.allow` or `project[N].protect_allow`.
        key: String,
        /// The unknown name.
        name: String,
    },
    /// A listed path cannot be mounted read-only.
    #[error(
        "cannot protect {}: {reason}; host tools run this file on their own, so ags mounts it read-only. Fix it, or let the agent change it with `[protect] allow = [\"{rel}\"]` in the global config (docs/security.md)",
        crate::safepath::display(path)
    )]
    Unprotectable {
        /// The offending path (the listed path or a directory on its way).
        path: PathBuf,
        /// The table's path.
        rel: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// Another live `ags` container could swap a path while this launch mounts it.
    #[error("cannot protect {}: {reason}", crate::safepath::display(path))]
    Neighbour {
        /// The path to be mounted.
        path: PathBuf,
        /// Which container, and what to do.
        reason: String,
    },
}

/// The allowed names, checked against the table: `(key, names)` per config entry.
pub fn check_allow(
    config: &Path,
    lists: &[(String, Vec<String>)],
) -> Result<Vec<&'static str>, ProtectedError> {
    let mut out = Vec::new();
    for (key, names) in lists {
        for name in names {
            let trimmed = name.trim_end_matches('/');
            let entry =
                PROTECTED
                    .iter()
                    .find(|e| e.path == trimmed)
                    .ok_or_else(|| ProtectedError::UnknownName {
                        config: config.into(),
                        key: key.clone(),
                        name: crate::text::escape_line(name),
                    })?;
            out.push(entry.path);
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// The protection of `roots` (read-write mounts that keep their host path), `allowed` left to
/// the agent.
pub fn protection(roots: &[PathBuf], allowed: &[&str]) -> Result<Protection, ProtectedError> {
    let mut out = Protection::default();
    for root in roots {
        for entry in PROTECTED {
            let handling = match allowed.contains(&entry.path) {
                true => Handling::Allowed,
                false => match existing(root, entry)? {
                    true => Handling::ReadOnly,
                    false => Handling::Watched,
                },
            };
            if handling == Handling::ReadOnly {
                mount(root, entry.path, &mut out.mounts);
            }
            out.paths.push(ProtectedPath {
                root: root.clone(),
                rel: entry.path,
                tool: entry.tool,
                handling,
            });
        }
    }
    out.mounts.sort_by(|a, b| a.path.cmp(&b.path));
    out.mounts.dedup_by(|a, b| a.path == b.path);
    Ok(out)
}

/// Whether `entry` exists under `root` as something a read-only bind can hold (a regular file
/// or a directory, no symbolic link on the way); refused when it exists as anything else.
fn existing(root: &Path, entry: &Entry) -> Result<bool, ProtectedError> {
    let mut here = root.to_path_buf();
    let parts: Vec<&str> = entry.path.split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        here.push(part);
        let fail = |reason: &str| ProtectedError::Unprotectable {
            path: here.clone(),
            rel: entry.path,
            reason: reason.into(),
        };
        let meta = match std::fs::symlink_metadata(&here) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(fail(&e.to_string())),
        };
        let last = i + 1 == parts.len();
        if meta.file_type().is_symlink() {
            return Err(fail(
                "it is a symbolic link, which a read-only mount would follow to its target (one the agent made leads to its own files: session-13 attack K1); remove it, and restore the real file from git if it was one",
            ));
        }
        if !last && !meta.is_dir() {
            // `.github` a file: nothing can exist below it, and the agent would have to
            // replace it to create one (watched).
            return Ok(false);
        }
        if last && !(meta.is_dir() || meta.is_file()) {
            return Err(fail("it is neither a regular file nor a directory"));
        }
        // A second name of the file is not under the read-only mount: the agent writes it
        // there while the launch runs (session-13 attack K3).
        if last && meta.is_file() && std::os::unix::fs::MetadataExt::nlink(&meta) > 1 {
            return Err(fail(
                "the file has other names (hard links), through which the agent could write it; keep one: `find . -samefile PATH` lists them",
            ));
        }
    }
    Ok(true)
}

/// The read-only mount of `root/rel` and the pins of the directories between.
fn mount(root: &Path, rel: &str, out: &mut Vec<GitGuard>) {
    let mut here = root.to_path_buf();
    let parts: Vec<&str> = rel.split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        here.push(part);
        out.push(GitGuard {
            path: here.clone(),
            read_only: i + 1 == parts.len(),
            create: None,
        });
    }
}

#[cfg(test)]
#[path = "protected_tests.rs"]
mod tests;
