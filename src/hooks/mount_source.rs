//! Stage 2 (materialization): contextual checks of a hook mount source on the host. Does I/O
//! (metadata and `canonicalize` only; nothing is opened, created or modified).
//!
//! Input: a statically valid [`HostSource`] and the [`ProtectedHostPaths`] of this user.
//! Output: the canonical host path to bind-mount, or a [`MountSourceError`].
//!
//! Rules: the source must exist; after following symlinks it must be a regular file or a
//! directory (FIFOs, sockets and devices are refused from their metadata, without opening them);
//! and its canonical path must not overlap — be equal to, inside, or an ancestor of — AGS's own
//! host storage: the hook approval store, the AGS state and cache directories, and the
//! repository-overlay trust file. A protected path that does not exist yet is resolved through
//! its nearest existing ancestor (canonicalized, with the missing rest re-appended), so a symlink
//! alias of `~/.config/ags` is caught before the trust file is ever created.
//!
//! This is a check at materialization time, not a lock: the lead's launch code should call it
//! as late as possible before creating the container.

use std::io;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use crate::config::Paths;

use super::policy::HostSource;

/// One protected host location and what it is (for messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtectedPath {
    /// What the location is, e.g. "hook approval store".
    pub label: &'static str,
    /// The location as configured (may not exist yet).
    pub path: PathBuf,
}

/// The host locations a hook mount may not expose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtectedHostPaths {
    entries: Vec<ProtectedPath>,
}

impl ProtectedHostPaths {
    /// The approval store, state dir, cache dir and overlay trust file of `paths`, plus the
    /// AGS config directory, the launch staging root and the Podman socket directories.
    pub fn from_paths(paths: &Paths) -> Self {
        Self::new(
            vec![
                ProtectedPath {
                    label: "hook approval store",
                    path: paths.hook_trust_dir(),
                },
                ProtectedPath {
                    label: "AGS state directory",
                    path: paths.state_dir(),
                },
                ProtectedPath {
                    label: "AGS cache directory",
                    path: paths.cache_dir(),
                },
                ProtectedPath {
                    label: "repository-overlay trust file",
                    path: paths.overlay_trust_file(),
                },
                // Beyond the spec's list: the global config (a writable mount would let the agent
                // change the next launch's image or network), other launches' staged files, and
                // the Podman API sockets (access to them controls every container).
                ProtectedPath {
                    label: "AGS config directory",
                    path: paths.config_home.join("ags"),
                },
                ProtectedPath {
                    label: "AGS launch staging directory",
                    path: paths.stage_root(),
                },
                ProtectedPath {
                    label: "AGS launch staging directory in /dev/shm",
                    path: paths.shm_stage_root(),
                },
                ProtectedPath {
                    label: "rootful Podman API socket directory",
                    path: PathBuf::from("/run/podman"),
                },
            ]
            .into_iter()
            .chain(paths.runtime_dir.as_ref().map(|dir| ProtectedPath {
                label: "rootless Podman API socket directory",
                path: dir.join("podman"),
            }))
            .collect(),
        )
    }

    /// An explicit list (tests, or callers protecting more).
    pub fn new(entries: Vec<ProtectedPath>) -> Self {
        Self { entries }
    }

    /// The configured entries.
    pub fn entries(&self) -> &[ProtectedPath] {
        &self.entries
    }
}

/// Why a mount source cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum MountSourceError {
    /// The source does not exist (AGS does not create hook mount sources).
    #[error("mount source {source_path} does not exist; the hook must create it before answering")]
    Missing {
        /// The source as given.
        source_path: String,
    },
    /// The source could not be inspected.
    #[error("mount source {source_path} cannot be inspected: {cause}; check its permissions")]
    Inaccessible {
        /// The source as given.
        source_path: String,
        /// The I/O failure.
        cause: io::Error,
    },
    /// Not a regular file or directory.
    #[error("mount source {source_path} is a {kind}; only regular files and directories can be mounted")]
    WrongType {
        /// The source as given.
        source_path: String,
        /// What it is instead.
        kind: &'static str,
    },
    /// Overlaps AGS's own storage.
    #[error(
        "mount source {source_path} (canonical {canonical}) overlaps the {label} at {protected}; \
         hooks may not expose AGS trust, state or cache storage, mount a different directory"
    )]
    Protected {
        /// The source as given.
        source_path: String,
        /// Its canonical path.
        canonical: String,
        /// What it overlaps.
        label: &'static str,
        /// The resolved protected location.
        protected: String,
    },
}

/// Check a hook mount source on the host and return its canonical path.
pub fn check_mount_source(
    source: &HostSource,
    protected: &ProtectedHostPaths,
) -> Result<PathBuf, MountSourceError> {
    let source_path = source.to_string();
    let canonical = std::fs::canonicalize(source.as_path()).map_err(|cause| match cause.kind() {
        io::ErrorKind::NotFound => MountSourceError::Missing {
            source_path: source_path.clone(),
        },
        _ => MountSourceError::Inaccessible {
            source_path: source_path.clone(),
            cause,
        },
    })?;
    if let Some((label, resolved)) = first_overlap(&canonical, protected) {
        return Err(MountSourceError::Protected {
            source_path,
            canonical: display(&canonical),
            label,
            protected: display(&resolved),
        });
    }
    let meta = std::fs::metadata(&canonical).map_err(|cause| MountSourceError::Inaccessible {
        source_path: source_path.clone(),
        cause,
    })?;
    match special_kind(meta.file_type()) {
        Some(kind) => Err(MountSourceError::WrongType { source_path, kind }),
        None => Ok(canonical),
    }
}

fn display(p: &Path) -> String {
    super::policy::display_escaped(&p.to_string_lossy())
}

/// `None` for regular files and directories, otherwise what the entry is.
fn special_kind(t: std::fs::FileType) -> Option<&'static str> {
    if t.is_file() || t.is_dir() {
        None
    } else if t.is_fifo() {
        Some("FIFO")
    } else if t.is_socket() {
        Some("socket")
    } else if t.is_char_device() {
        Some("character device")
    } else if t.is_block_device() {
        Some("block device")
    } else {
        Some("special file")
    }
}

/// The first protected entry whose configured or resolved location overlaps `canonical`.
fn first_overlap(canonical: &Path, protected: &ProtectedHostPaths) -> Option<(&'static str, PathBuf)> {
    protected.entries.iter().find_map(|entry| {
        let resolved = resolve_through_existing_ancestor(&entry.path);
        [resolved, entry.path.clone()]
            .into_iter()
            .find(|p| overlaps(canonical, p))
            .map(|p| (entry.label, p))
    })
}

/// Equal, inside, or an ancestor (component-wise).
fn overlaps(a: &Path, b: &Path) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

/// Canonicalize the nearest existing ancestor of `path` and re-append the missing rest.
pub fn resolve_through_existing_ancestor(path: &Path) -> PathBuf {
    for ancestor in path.ancestors() {
        if let Ok(canonical) = std::fs::canonicalize(ancestor) {
            let rest = path.strip_prefix(ancestor).unwrap_or(Path::new(""));
            return if rest.as_os_str().is_empty() {
                canonical
            } else {
                canonical.join(rest)
            };
        }
    }
    path.to_path_buf()
}

#[cfg(test)]
#[path = "mount_source_tests.rs"]
mod tests;
