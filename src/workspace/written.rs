//! The directories launches have mounted read-write, remembered after they end (issue 22, the
//! session-9 attack; docs/security.md, "Which host programs run").
//!
//! An agent's launch ends; what it planted stays. A `bin/ssh` it left in an `--add-dir` that is
//! also on your `PATH` would run with your `SSH_AUTH_SOCK` at a later `ssh://` launch from
//! another project, and a hook's `#!/usr/bin/env python3` would run its `python3`. So every
//! launch records its read-write roots (workdir, `--add-dir`s, `[[mount]]`s, git dirs) in
//! `<state>/ags/written-dirs`, one absolute path per line, before its container is created, and
//! the host-program resolver and the hooks' `PATH` (`workspace::host_programs`) pass over them
//! as they do over running launches' mounts — until you have looked at one and say so with
//! `ags gc --forget DIR`.
//!
//! Only `PATH` lookups use the record. Mounting an earlier workdir again (`--add-dir`, a hook)
//! stays allowed: that is an everyday habit, and the containment rules already refuse what an
//! agent can plant there (symbolic links, for the launch that mounts them).
//!
//! Appends are single `write(2)` calls on an `O_APPEND` file, so concurrent launches never lose
//! each other's lines; forgetting rewrites the file atomically (temporary file and rename).

use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::config::Paths;
use crate::containment::WritableRoot;

/// Who the record says owns a remembered directory (in notes and errors).
pub const OWNER: &str = "an earlier launch's read-write mount (`ags gc --forget` it once reviewed)";

/// The record file.
pub fn file(paths: &Paths) -> PathBuf {
    paths.state_dir().join("written-dirs")
}

/// The remembered directories (an unreadable or missing record: none).
pub fn remembered(paths: &Paths) -> Vec<PathBuf> {
    let Ok(bytes) = std::fs::read(file(paths)) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = bytes
        .split(|b| *b == b'\n')
        .filter(|l| l.first() == Some(&b'/'))
        .map(|l| PathBuf::from(std::ffi::OsStr::from_bytes(l)))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The remembered directories as writable roots, for [`super::host_programs`].
pub fn roots(paths: &Paths) -> Vec<WritableRoot> {
    remembered(paths)
        .into_iter()
        .map(|path| WritableRoot {
            path,
            owner: OWNER.into(),
            running: false,
        })
        .collect()
}

/// Why a launch's directories could not be remembered (the launch is refused: a program its
/// agent leaves there would later run from `PATH`).
#[derive(Debug, thiserror::Error)]
#[error(
    "recording this launch's read-write directories in {}: {source}; ags remembers them so that a program the agent leaves there never runs from PATH; make that file writable, or launch from a directory without a newline in its name",
    file.display()
)]
pub struct RecordError {
    /// The record file.
    pub file: PathBuf,
    /// What failed.
    #[source]
    pub source: std::io::Error,
}

/// [`record`], as an error of the launch.
pub fn remember(paths: &Paths, own: &[WritableRoot]) -> Result<(), RecordError> {
    record(paths, own).map_err(|source| RecordError {
        file: file(paths),
        source,
    })
}

/// Remember this launch's own read-write roots (those of running launches are theirs to
/// record). A path with a newline cannot be recorded and is refused.
pub fn record(paths: &Paths, own: &[WritableRoot]) -> std::io::Result<()> {
    let known = remembered(paths);
    let mut lines = Vec::new();
    for root in own.iter().filter(|r| !r.running && !known.contains(&r.path)) {
        let bytes = root.path.as_os_str().as_bytes();
        if bytes.contains(&b'\n') || !root.path.is_absolute() {
            return Err(std::io::Error::other(format!(
                "{} cannot be recorded (a newline in its name)",
                crate::text::escape_line(&root.path.display().to_string())
            )));
        }
        lines.extend_from_slice(bytes);
        lines.push(b'\n');
    }
    if lines.is_empty() {
        return Ok(());
    }
    // Created owner-only; an existing directory is taken as it is (the spool's check warns).
    std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
        .create(paths.state_dir())?;
    crate::fsutil::open_private_append(&file(paths))?.write_all(&lines)
}

/// Forget `dir` (as recorded, or as it resolves): whether it was remembered.
pub fn forget(paths: &Paths, dir: &Path) -> std::io::Result<bool> {
    let known = remembered(paths);
    let real = std::fs::canonicalize(dir).ok();
    let keep: Vec<&PathBuf> = known
        .iter()
        .filter(|p| p.as_path() != dir && Some(p.as_path()) != real.as_deref())
        .collect();
    if keep.len() == known.len() {
        return Ok(false);
    }
    let mut text = Vec::new();
    for p in keep {
        text.extend_from_slice(p.as_os_str().as_bytes());
        text.push(b'\n');
    }
    crate::fsutil::atomic_write(&file(paths), &text, 0o600)?;
    Ok(true)
}

#[cfg(test)]
#[path = "written_tests.rs"]
mod tests;
