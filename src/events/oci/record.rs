//! What the `ags-oci-hook` program does for one OCI hook call: read the container's state, append
//! one event line to the launching user's spool, remove the launch's host staging leftovers. It
//! only records: it never calls Podman, never runs user hooks, and never fails the container.
//!
//! Input: the stage (`poststart`/`poststop`, from the hook definition's args) and the OCI state
//! JSON the runtime writes on stdin (`id`, `status`, `pid`, `bundle`, `annotations`).
//! Ref: <https://github.com/opencontainers/runtime-spec/blob/main/runtime.md#state>,
//! <https://github.com/containers/common/blob/main/pkg/hooks/docs/oci-hooks.5.md>.
//! Output: the files it touched, or an [`OciHookError`]. I/O: the spool directory and the staging
//! directory named by the container's annotations.
//!
//! Who runs it: the user running the Podman service — root for a rootful service (for every
//! user's containers), the user for a rootless one. Podman 4.3.1 runs poststart from the OCI
//! runtime and poststop from the container's cleanup (even when the API service is gone), with
//! an empty environment for poststop. As root it first drops to the owner of the spool directory
//! (supplementary groups, gid, uid: irrevocably), so the annotation of a container can never make
//! it write or remove anything that user could not; files it creates are that user's, 0600.
//!
//! The exit status is not in the OCI state, and on Podman 4.3.1 conmon's exit file is already
//! gone when poststop runs (observed), so poststop records no exit code: crash recovery takes it
//! from the leftover container instead.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Deserialize;

use crate::events::spool::{self, EventLine, OciStage, SPOOL_VERSION, SpoolError};
use crate::plan::{ANNOTATION_LAUNCH, ANNOTATION_SPOOL, ANNOTATION_STAGE};
use crate::time::rfc3339;

/// Largest accepted state document (1 MiB).
pub const MAX_STATE_BYTES: usize = 1024 * 1024;

/// The OCI state, as far as the hook reads it.
#[derive(Debug, Deserialize)]
struct OciState {
    id: String,
    #[serde(default)]
    pid: Option<i64>,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
}

/// Why a call recorded nothing (or only part).
#[derive(Debug, thiserror::Error)]
pub enum OciHookError {
    /// Called with a stage other than poststart/poststop.
    #[error(
        "unknown stage {0:?}; the hook definitions pass `poststart` or `poststop` (reinstall them with `ags setup oci-hooks`)"
    )]
    UnknownStage(String),
    /// The state on stdin is not an OCI state document.
    #[error("the OCI state on stdin is not usable: {0}")]
    State(String),
    /// The container does not carry the launch annotation: not an `ags` container.
    #[error("container {0} has no {ANNOTATION_LAUNCH} annotation; nothing to record")]
    NotOurs(String),
    /// An annotation value is refused.
    #[error("annotation {key}: {rule}")]
    Annotation { key: &'static str, rule: &'static str },
    /// The spool directory is missing or unsafe.
    #[error("spool directory {}: {reason}", path.display())]
    SpoolDir { path: PathBuf, reason: String },
    /// Dropping to the spool owner's identity failed.
    #[error("cannot switch to uid {uid} (owner of the spool): {source}")]
    Identity { uid: u32, source: nix::errno::Errno },
    /// Appending the event failed.
    #[error(transparent)]
    Spool(#[from] SpoolError),
    /// Removing the staging directory failed.
    #[error("removing the staging directory {}: {source}", path.display())]
    RemoveStage { path: PathBuf, source: io::Error },
}

impl OciHookError {
    /// Whether the container simply was not an `ags` container (the definitions select by
    /// annotation, so this only happens when they are installed with a wider condition).
    pub fn is_not_ours(&self) -> bool {
        matches!(self, Self::NotOurs(_))
    }
}

/// What one call did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// The events file appended to.
    pub events_file: PathBuf,
    /// The staging directory removed, if the launch had one and it was still there.
    pub stage_removed: Option<PathBuf>,
}

/// Handle one hook call: see the module docs.
pub fn run(stage: &str, state: &[u8], now: SystemTime) -> Result<Recorded, OciHookError> {
    let stage = match stage {
        "poststart" => OciStage::Poststart,
        "poststop" => OciStage::Poststop,
        other => return Err(OciHookError::UnknownStage(other.chars().take(64).collect())),
    };
    if state.len() > MAX_STATE_BYTES {
        return Err(OciHookError::State(format!("over {MAX_STATE_BYTES} bytes")));
    }
    let state: OciState = serde_json::from_slice(state).map_err(|e| OciHookError::State(e.to_string()))?;
    let launch_id = state
        .annotations
        .get(ANNOTATION_LAUNCH)
        .ok_or_else(|| OciHookError::NotOurs(state.id.chars().take(64).collect()))?;
    if !spool::is_launch_id(launch_id) {
        return Err(OciHookError::Annotation {
            key: ANNOTATION_LAUNCH,
            rule: "must be 1 to 128 of A-Z a-z 0-9 _ -",
        });
    }
    let spool_dir =
        annotated_path(&state.annotations, ANNOTATION_SPOOL)?.ok_or(OciHookError::Annotation {
            key: ANNOTATION_SPOOL,
            rule: "missing; the launching ags names its spool there",
        })?;
    let stage_dir = annotated_path(&state.annotations, ANNOTATION_STAGE)?;
    if let Some(dir) = &stage_dir
        && !dir
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("stage-"))
    {
        return Err(OciHookError::Annotation {
            key: ANNOTATION_STAGE,
            rule: "must name a `stage-…` directory",
        });
    }
    become_owner_of(&spool_dir)?;
    let unix_ms = now.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis() as u64;
    let line = EventLine {
        version: SPOOL_VERSION,
        launch_id: launch_id.clone(),
        container_id: state.id.chars().take(128).collect(),
        stage,
        time: rfc3339(now),
        unix_ms,
        pid: state.pid.filter(|_| stage == OciStage::Poststart),
        exit_code: None,
        state: None,
    };
    let events_file = spool::events_path(&spool_dir, launch_id)?;
    spool::append_event(&events_file, &line)?;
    let stage_removed = match stage_dir {
        Some(dir) => remove_stage(&dir)?,
        None => None,
    };
    Ok(Recorded {
        events_file,
        stage_removed,
    })
}

/// An absolute, normalized path from an annotation (no `.`/`..`, NUL or empty segments).
fn annotated_path(
    annotations: &BTreeMap<String, String>,
    key: &'static str,
) -> Result<Option<PathBuf>, OciHookError> {
    let Some(value) = annotations.get(key) else {
        return Ok(None);
    };
    let path = Path::new(value);
    let normal = path.is_absolute()
        && !value.contains('\0')
        && !value.contains("//")
        && !value.ends_with('/')
        && path
            .components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
    if !normal {
        return Err(OciHookError::Annotation {
            key,
            rule: "must be an absolute, normalized path",
        });
    }
    Ok(Some(path.to_path_buf()))
}

/// Check the spool directory (a real directory, not writable by group or others) and, when
/// running as root for another user's launch, become that user for good.
fn become_owner_of(dir: &Path) -> Result<(), OciHookError> {
    let unsafe_dir = |reason: String| OciHookError::SpoolDir {
        path: dir.into(),
        reason,
    };
    let meta = fs::symlink_metadata(dir).map_err(|e| unsafe_dir(e.to_string()))?;
    if meta.file_type().is_symlink() || !meta.is_dir() {
        return Err(unsafe_dir("not a directory (symbolic links are refused)".into()));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(unsafe_dir(format!(
            "mode {:04o} lets others write; ags creates it 0700",
            meta.mode() & 0o7777
        )));
    }
    let euid = nix::unistd::geteuid().as_raw();
    let (uid, gid) = (meta.uid(), meta.gid());
    if uid == euid {
        return Ok(());
    }
    if euid != 0 {
        return Err(unsafe_dir(format!(
            "owned by uid {uid}, but this hook runs as uid {euid}"
        )));
    }
    use nix::unistd::{Gid, Uid, setgroups, setresgid, setresuid};
    let id_err = |source| OciHookError::Identity { uid, source };
    setgroups(&[Gid::from_raw(gid)]).map_err(id_err)?;
    setresgid(Gid::from_raw(gid), Gid::from_raw(gid), Gid::from_raw(gid)).map_err(id_err)?;
    setresuid(Uid::from_raw(uid), Uid::from_raw(uid), Uid::from_raw(uid)).map_err(id_err)?;
    Ok(())
}

/// Remove the staging directory if it is still there (ags normally removes it itself once the
/// container is initialized; it is left behind only when ags died in between).
fn remove_stage(dir: &Path) -> Result<Option<PathBuf>, OciHookError> {
    match fs::symlink_metadata(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Ok(meta) if meta.is_dir() => match fs::remove_dir_all(dir) {
            Ok(()) => Ok(Some(dir.into())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(OciHookError::RemoveStage {
                path: dir.into(),
                source,
            }),
        },
        Ok(_) => Err(OciHookError::Annotation {
            key: ANNOTATION_STAGE,
            rule: "names something that is not a directory",
        }),
        Err(source) => Err(OciHookError::RemoveStage {
            path: dir.into(),
            source,
        }),
    }
}

#[cfg(test)]
#[path = "record_tests.rs"]
mod tests;
