//! The spool: what a later `ags` needs to finish a launch whose `ags` was killed.
//!
//! Directory `$XDG_STATE_HOME/ags/spool/` (0700, survives reboots), one launch per file name:
//!
//! ```text
//! <launch_id>.launch.json                    LaunchRecord: written by ags (atomic, 0600) before the
//!                                            container is created when finished hooks are declared,
//!                                            rewritten with the container id once it started
//! <launch_id>.claimed-<pid>-<start>.json     the same record, claimed by the process <pid> that runs
//!                                            its finished hooks (crash recovery)
//! <launch_id>.events.jsonl                   events: appended by `ags-oci-hook` (poststart, poststop)
//!                                            and by the `ags` whose reconciliation removed the
//!                                            launch's leftover container (swept)
//! ```
//!
//! Exactly once: a record is claimed by an atomic `rename` before its hooks run, so two
//! recovering processes never both run them; the claim is removed (with the events) when they
//! are done. A claimer that died mid-way leaves its claim behind, and a later recovery takes it
//! over: only a crash during the hooks themselves can run them twice.
//!
//! Nothing here holds secrets: declarations, hashes, paths, ids and times only.
//! I/O: that directory. Used by `ags` and by the `ags-oci-hook` program (events only).

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::config::{HookDecl, HookEvent, HookScope, Paths};
use crate::fsutil::{self, PrivateDirError};

/// Version of the record and event formats.
pub const SPOOL_VERSION: u32 = 1;
/// Longest accepted launch id.
pub const MAX_LAUNCH_ID: usize = 128;
/// Event files without a launch record are removed once this old.
pub const STALE_EVENTS: Duration = Duration::from_secs(24 * 3600);

/// The process that owns a launch (or a claim): pid and start time on `host`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    pub pid: u32,
    /// Start time in clock ticks since boot (tells a reused pid apart).
    pub start_time: u64,
    pub host: String,
}

/// A finished hook as declared at launch time (its approval is checked again before it runs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedHook {
    pub name: String,
    /// Declared entrypoint.
    pub executable: PathBuf,
    pub args: Vec<String>,
    /// Effective timeout.
    pub timeout_seconds: u32,
    /// Canonical project root of a project hook; `None` for a global hook.
    pub project: Option<PathBuf>,
    /// The declaring config file.
    pub config_path: PathBuf,
    /// The approval hash at launch time.
    pub hash: String,
}

impl RecordedHook {
    /// The record of a finished hook declaration and its hash.
    pub fn new(decl: &HookDecl, hash: &str) -> Self {
        Self {
            name: decl.name.clone(),
            executable: decl.executable.clone(),
            args: decl.args.clone(),
            timeout_seconds: decl.timeout_seconds,
            project: match &decl.scope {
                HookScope::Global => None,
                HookScope::Project { root } => Some(root.clone()),
            },
            config_path: decl.config_path.clone(),
            hash: hash.into(),
        }
    }

    /// The declaration again (event `finished`).
    pub fn decl(&self) -> HookDecl {
        HookDecl {
            event: HookEvent::Finished,
            name: self.name.clone(),
            executable: self.executable.clone(),
            args: self.args.clone(),
            timeout_seconds: self.timeout_seconds,
            scope: match &self.project {
                None => HookScope::Global,
                Some(root) => HookScope::Project { root: root.clone() },
            },
            config_path: self.config_path.clone(),
        }
    }
}

/// What a later `ags` needs to run a launch's finished hooks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchRecord {
    /// [`SPOOL_VERSION`].
    pub version: u32,
    pub launch_id: String,
    /// The launching `ags`.
    pub owner: Owner,
    pub project: PathBuf,
    /// Canonical workdir (the hooks' cwd).
    pub workdir: PathBuf,
    pub agent: String,
    pub container_name: String,
    /// Container id, once the container has started (the agent ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_id: Option<String>,
    /// When the container started, in milliseconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_unix_ms: Option<u64>,
    /// The finished hooks to run.
    pub hooks: Vec<RecordedHook>,
}

/// What an event line records: an OCI hook stage, or the reconciliation that removed the
/// launch's leftover container.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OciStage {
    /// The container's process started (OCI poststart hook).
    Poststart,
    /// The container stopped and was cleaned up by Podman (OCI poststop hook).
    Poststop,
    /// An `ags` reconciliation removed the leftover container (whichever `ags` swept it).
    Swept,
}

/// One line of `<launch_id>.events.jsonl`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventLine {
    /// [`SPOOL_VERSION`].
    pub version: u32,
    /// The launch id (the `io.ags.launch` annotation).
    pub launch_id: String,
    /// The container id from the OCI state.
    pub container_id: String,
    pub stage: OciStage,
    /// When, RFC 3339 UTC.
    pub time: String,
    /// When, milliseconds since the Unix epoch.
    pub unix_ms: u64,
    /// The container's host pid (poststart only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<i64>,
    /// The exit status, when known (Podman 4.3.1 gives the poststop hook none; a sweep of an
    /// exited container knows it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Podman's state of the container when it was swept (`swept` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
}

/// The spool is unusable.
#[derive(Debug, thiserror::Error)]
pub enum SpoolError {
    /// The directory failed a safety check or cannot be created.
    #[error("spool directory {}: {source}", dir.display())]
    Dir {
        dir: PathBuf,
        /// What is wrong, with the fix.
        source: PrivateDirError,
    },
    /// Reading or writing a spool file failed.
    #[error("spool file {}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
    /// A launch id that cannot name a spool file.
    #[error("launch id {0:?} cannot name a spool file (1 to 128 of A-Z a-z 0-9 _ -)")]
    LaunchId(String),
}

type Result<T> = std::result::Result<T, SpoolError>;

/// Whether `id` can be a launch id in a spool file name.
pub fn is_launch_id(id: &str) -> bool {
    (1..=MAX_LAUNCH_ID).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The events file of `launch_id` in `dir`.
pub fn events_path(dir: &Path, launch_id: &str) -> Result<PathBuf> {
    spool_file(dir, launch_id, "events.jsonl")
}

/// The spool file `<launch_id>.<suffix>` in `dir`.
fn spool_file(dir: &Path, launch_id: &str, suffix: &str) -> Result<PathBuf> {
    if !is_launch_id(launch_id) {
        return Err(SpoolError::LaunchId(launch_id.into()));
    }
    Ok(dir.join(format!("{launch_id}.{suffix}")))
}

/// Append one event line to `path` (created 0600; a symlink or a file of another owner is
/// refused). One `write` per line, so concurrent appends never interleave.
pub fn append_event(path: &Path, line: &EventLine) -> Result<()> {
    let io_err = |source| SpoolError::Io {
        path: path.into(),
        source,
    };
    let mut file = fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
        .map_err(io_err)?;
    let meta = file.metadata().map_err(io_err)?;
    if !meta.is_file() || meta.uid() != nix::unistd::geteuid().as_raw() {
        return Err(io_err(io::Error::other("not a regular file of this user")));
    }
    let mut bytes = serde_json::to_vec(line).expect("an event line serializes");
    bytes.push(b'\n');
    file.write_all(&bytes).map_err(io_err)
}

/// A record whose launch (or claimer) is gone: ready to be claimed.
#[derive(Debug, Clone)]
pub struct Pending {
    path: PathBuf,
    pub record: LaunchRecord,
}

/// A record claimed by this process.
#[derive(Debug)]
pub struct Claimed {
    path: PathBuf,
    pub record: LaunchRecord,
}

/// The spool directory of one user.
#[derive(Debug, Clone)]
pub struct Spool {
    dir: PathBuf,
}

impl Spool {
    /// Open the spool, creating it (0700) if missing; a symlinked, foreign or group/other
    /// accessible directory is refused.
    pub fn open(paths: &Paths) -> Result<Self> {
        let dir = paths.spool_dir();
        // `ags`'s state directory first: created on the way, it would get the umask's mode.
        for d in [paths.state_dir(), dir.clone()] {
            fsutil::ensure_private_dir(&d).map_err(|source| SpoolError::Dir {
                dir: d.clone(),
                source,
            })?;
        }
        Ok(Self { dir })
    }

    /// Open the spool only if it exists (recovery never creates it).
    pub fn existing(paths: &Paths) -> Result<Option<Self>> {
        let dir = paths.spool_dir();
        match fs::symlink_metadata(&dir) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            _ => {
                fsutil::check_private_dir(&dir).map_err(|source| SpoolError::Dir {
                    dir: dir.clone(),
                    source,
                })?;
                Ok(Some(Self { dir }))
            }
        }
    }

    /// Write (or replace) the record of a live launch.
    pub fn write_record(&self, record: &LaunchRecord) -> Result<()> {
        let path = self.file(&record.launch_id, "launch.json")?;
        let json = serde_json::to_vec_pretty(record).expect("a launch record serializes");
        fsutil::atomic_write(&path, &json, 0o600).map_err(|source| SpoolError::Io { path, source })
    }

    /// Remove what the spool holds for `launch_id` (its record and events): the launch is over.
    pub fn forget(&self, launch_id: &str) -> Result<()> {
        for suffix in ["launch.json", "events.jsonl"] {
            remove(&self.file(launch_id, suffix)?)?;
        }
        Ok(())
    }

    /// The OCI events recorded for `launch_id`, oldest first (torn lines are skipped).
    pub fn events(&self, launch_id: &str) -> Vec<EventLine> {
        let Ok(path) = self.file(launch_id, "events.jsonl") else {
            return Vec::new();
        };
        let bytes = fs::read(path).unwrap_or_default();
        bytes
            .split(|b| *b == b'\n')
            .filter_map(|l| serde_json::from_slice::<EventLine>(l).ok())
            .filter(|e| e.launch_id == launch_id)
            .collect()
    }

    /// Records whose owner, or claimer, is a dead process on `host`. `alive(pid, start)` says
    /// whether a process still runs. Unreadable records are skipped.
    pub fn pending(&self, host: &str, alive: impl Fn(u32, u64) -> bool) -> Vec<Pending> {
        let mut out = Vec::new();
        for (path, name) in self.entries() {
            let (id, claimer) = match spool_name(&name) {
                Some((id, Kind::Record)) => (id, None),
                Some((id, Kind::Claim { pid, start })) => (id, Some((pid, start))),
                _ => continue,
            };
            let Some(record) = read_record(&path).filter(|r| r.launch_id == id) else {
                continue;
            };
            let (pid, start) = claimer.unwrap_or((record.owner.pid, record.owner.start_time));
            if record.owner.host == host && !alive(pid, start) {
                out.push(Pending { path, record });
            }
        }
        out.sort_by(|a, b| a.record.launch_id.cmp(&b.record.launch_id));
        out
    }

    /// Claim `pending` for the process `me` by renaming it; `None` when another process took it.
    pub fn claim(&self, pending: Pending, me: &Owner) -> Result<Option<Claimed>> {
        let name = format!("claimed-{}-{}.json", me.pid, me.start_time);
        let path = self.file(&pending.record.launch_id, &name)?;
        match fs::rename(&pending.path, &path) {
            Ok(()) => Ok(Some(Claimed {
                path,
                record: pending.record,
            })),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(SpoolError::Io {
                path: pending.path,
                source,
            }),
        }
    }

    /// The claimed launch is done: remove the claim and the launch's events.
    pub fn complete(&self, claimed: Claimed) -> Result<()> {
        remove(&claimed.path)?;
        remove(&self.file(&claimed.record.launch_id, "events.jsonl")?)
    }

    /// Remove event files that have no record (launches without finished hooks) once their
    /// launching process is gone (`pid_alive` of the pid in `ags-<pid>-…`) or they are older
    /// than [`STALE_EVENTS`]. Returns the files removed.
    pub fn sweep_events(&self, pid_alive: impl Fn(u32) -> bool) -> Vec<PathBuf> {
        let entries = self.entries();
        let has_record = |id: &str| {
            entries.iter().any(
                |(_, n)| matches!(spool_name(n), Some((i, Kind::Record | Kind::Claim { .. })) if i == id),
            )
        };
        let mut removed = Vec::new();
        for (path, name) in &entries {
            let Some((id, Kind::Events)) = spool_name(name) else {
                continue;
            };
            let pid = id.split('-').nth(1).and_then(|p| p.parse::<u32>().ok());
            let old = fs::symlink_metadata(path)
                .and_then(|m| m.modified())
                .is_ok_and(|t| SystemTime::now().duration_since(t).unwrap_or_default() > STALE_EVENTS);
            let gone = pid.is_some_and(|p| !pid_alive(p));
            if !has_record(id) && (gone || old) && fs::remove_file(path).is_ok() {
                removed.push(path.clone());
            }
        }
        removed
    }

    fn file(&self, launch_id: &str, suffix: &str) -> Result<PathBuf> {
        spool_file(&self.dir, launch_id, suffix)
    }

    fn entries(&self) -> Vec<(PathBuf, String)> {
        let Ok(dir) = fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        dir.flatten()
            .filter_map(|e| Some((e.path(), e.file_name().into_string().ok()?)))
            .collect()
    }
}

/// What a spool file is, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Record,
    Claim { pid: u32, start: u64 },
    Events,
}

fn spool_name(name: &str) -> Option<(&str, Kind)> {
    let (id, rest) = name.split_once('.')?;
    if !is_launch_id(id) {
        return None;
    }
    let kind = match rest {
        "launch.json" => Kind::Record,
        "events.jsonl" => Kind::Events,
        _ => {
            let claim = rest.strip_prefix("claimed-")?.strip_suffix(".json")?;
            let (pid, start) = claim.split_once('-')?;
            Kind::Claim {
                pid: pid.parse().ok()?,
                start: start.parse().ok()?,
            }
        }
    };
    Some((id, kind))
}

fn read_record(path: &Path) -> Option<LaunchRecord> {
    let meta = fs::symlink_metadata(path).ok()?;
    if !meta.is_file() || meta.uid() != nix::unistd::geteuid().as_raw() {
        return None;
    }
    let record: LaunchRecord = serde_json::from_slice(&fs::read(path).ok()?).ok()?;
    (record.version == SPOOL_VERSION && is_launch_id(&record.launch_id)).then_some(record)
}

fn remove(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(SpoolError::Io {
            path: path.into(),
            source: e,
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
#[path = "spool_tests.rs"]
mod tests;
