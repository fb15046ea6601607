//! Which host programs `ags` runs, and the `PATH` its hooks get (issue 22, finding 3;
//! docs/security.md, "Which host programs run").
//!
//! `ags` starts `ssh` (with the user's `SSH_AUTH_SOCK`) and `op` (with the 1Password tokens) on
//! the host, and hooks run with a `PATH` whose programs a `#!/usr/bin/env python3` line looks
//! up. A directory the agent can write that sits on `PATH` (direnv's `PATH_add bin`, an
//! activated `.venv/bin`, `node_modules/.bin`) would hand it all of these. [`resolve`] returns a
//! [`HostProgram`] only for a file outside every agent-writable root (this launch's read-write
//! mounts, those of running launches and of ended ones (`workspace::written`), the project
//! directory), owned by root or the user, with
//! neither the file nor its directory writable by group or others; PATH entries inside an
//! agent-writable root, relative and empty entries are passed over (and named in a note), never
//! searched. [`hook_path`] is `PATH` with the same entries removed.

use std::ffi::{OsStr, OsString};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::containment::WritableRoot;

/// A host program proven to lie outside every agent-writable root, with safe owners and modes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostProgram {
    path: PathBuf,
    skipped: Vec<String>,
}

impl HostProgram {
    /// The absolute, canonical path to execute.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Candidates passed over on `PATH` because the agent can write them (for a note on
    /// stderr): "`/w/bin/ssh` (inside this launch's workdir /w)".
    pub fn skipped(&self) -> &[String] {
        &self.skipped
    }
}

/// Why no program may run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostProgramError {
    /// The pinned path breaks a rule.
    #[error(
        "the {key} {path} may not run: {reason}; set {key} to a program outside the workspace that only root or you can change"
    )]
    Pinned {
        key: String,
        path: String,
        reason: String,
    },
    /// The first candidate on `PATH` outside the agent's reach breaks a rule.
    #[error(
        "the {name} found on PATH, {path}, may not run: {reason}; fix it, or set {key} to a program only root or you can change"
    )]
    Untrusted {
        name: String,
        key: String,
        path: String,
        reason: String,
    },
    /// Nothing usable on `PATH`.
    #[error(
        "{name} is not on PATH outside the directories the agent can write{skipped}; install it ({install}) or set {key} to its absolute path"
    )]
    NotFound {
        name: String,
        key: String,
        install: String,
        skipped: String,
    },
}

/// What to look for: the program's name, the config key that pins it, how to install it.
#[derive(Debug, Clone, Copy)]
pub struct Wanted<'a> {
    /// The file name looked up on `PATH` (`ssh`, `op`).
    pub name: &'a str,
    /// The global config key that pins it (`[ssh] path`).
    pub key: &'a str,
    /// How to install it, for the error.
    pub install: &'a str,
}

/// Find `wanted` for a process running as `uid`: `pinned` when set (checked by the same rules),
/// else the first executable `NAME` in an absolute `PATH` directory outside every root of
/// `writable`. Blocking (metadata calls).
pub fn resolve(
    wanted: Wanted<'_>,
    pinned: Option<&Path>,
    path: Option<&OsStr>,
    writable: &[WritableRoot],
    uid: u32,
) -> Result<HostProgram, HostProgramError> {
    let roots = canonical_roots(writable);
    if let Some(p) = pinned {
        let path = check(p, &roots, uid).map_err(|reason| HostProgramError::Pinned {
            key: wanted.key.into(),
            path: p.display().to_string(),
            reason,
        })?;
        return Ok(HostProgram {
            path,
            skipped: Vec::new(),
        });
    }
    let mut skipped = Vec::new();
    // Relative and empty entries are never searched (nor named: they hold nothing planted).
    for dir in std::env::split_paths(path.unwrap_or_default()).filter(|d| d.is_absolute()) {
        let file = dir.join(wanted.name);
        if !is_executable_file(&file) {
            continue;
        }
        if let Some(why) = unsafe_dir(&dir, &roots) {
            skipped.push(format!("{} ({why})", file.display()));
            continue;
        }
        let path = check(&file, &roots, uid).map_err(|reason| HostProgramError::Untrusted {
            name: wanted.name.into(),
            key: wanted.key.into(),
            path: file.display().to_string(),
            reason,
        })?;
        return Ok(HostProgram { path, skipped });
    }
    Err(HostProgramError::NotFound {
        name: wanted.name.into(),
        key: wanted.key.into(),
        install: wanted.install.into(),
        skipped: match skipped.is_empty() {
            true => String::new(),
            false => format!(" (passed over: {})", skipped.join(", ")),
        },
    })
}

/// `PATH` for hooks: `path` without relative or empty entries and without the directories
/// inside an agent-writable root (a hook's `#!/usr/bin/env python3` would otherwise run the
/// agent's `bin/python3`).
pub fn hook_path(path: &OsStr, writable: &[WritableRoot]) -> OsString {
    let roots = canonical_roots(writable);
    let kept: Vec<PathBuf> = std::env::split_paths(path)
        .filter(|d| unsafe_dir(d, &roots).is_none())
        .collect();
    std::env::join_paths(kept).unwrap_or_default()
}

/// Each root as named and as its symlinks resolve (a root that no longer exists as named),
/// with the read-write mounts of ended launches (`workspace::written`).
fn canonical_roots(writable: &[WritableRoot]) -> Vec<(PathBuf, String)> {
    let ended = crate::config::Paths::from_env()
        .map(|p| super::written::roots(&p))
        .unwrap_or_default();
    let mut out = Vec::new();
    for w in writable.iter().chain(&ended) {
        out.push((w.path.clone(), w.owner.clone()));
        if let Ok(real) = std::fs::canonicalize(&w.path)
            && real != w.path
        {
            out.push((real, w.owner.clone()));
        }
    }
    out
}

/// Why a `PATH` directory is never searched: relative or empty, or inside (or equal to) an
/// agent-writable root as named or as resolved.
fn unsafe_dir(dir: &Path, roots: &[(PathBuf, String)]) -> Option<String> {
    if !dir.is_absolute() {
        return Some("a relative PATH entry".into());
    }
    let real = std::fs::canonicalize(dir).ok();
    for candidate in [Some(dir), real.as_deref()].into_iter().flatten() {
        if let Some((root, owner)) = roots.iter().find(|(r, _)| candidate.starts_with(r)) {
            return Some(format!(
                "inside {owner} {}, which the agent can write",
                root.display()
            ));
        }
    }
    None
}

/// The rules for one file, as named and as resolved: absolute, outside every root, a regular
/// executable file owned by root or `uid`, it and its directory not writable by group or others.
fn check(program: &Path, roots: &[(PathBuf, String)], uid: u32) -> Result<PathBuf, String> {
    if !program.is_absolute() {
        return Err("the path is not absolute".into());
    }
    let canonical = std::fs::canonicalize(program).map_err(|e| format!("it cannot be resolved ({e})"))?;
    for path in [program, canonical.as_path()] {
        if let Some((root, owner)) = roots.iter().find(|(r, _)| path.starts_with(r)) {
            return Err(format!(
                "{} lies inside {owner} {}, which the agent can write",
                path.display(),
                root.display()
            ));
        }
    }
    let meta = std::fs::metadata(&canonical).map_err(|e| format!("cannot stat it ({e})"))?;
    if !meta.is_file() || meta.mode() & 0o111 == 0 {
        return Err(format!("{} is not an executable file", canonical.display()));
    }
    safe_owner_and_mode(&canonical, &meta, uid)?;
    for file in [program, canonical.as_path()] {
        let dir = file.parent().unwrap_or(Path::new("/"));
        let meta = std::fs::metadata(dir).map_err(|e| format!("cannot stat {} ({e})", dir.display()))?;
        safe_owner_and_mode(dir, &meta, uid)?;
    }
    Ok(canonical)
}

fn safe_owner_and_mode(path: &Path, meta: &std::fs::Metadata, uid: u32) -> Result<(), String> {
    if meta.mode() & 0o022 != 0 {
        return Err(format!(
            "{} is writable by group or others (mode {:o})",
            path.display(),
            meta.mode() & 0o7777
        ));
    }
    if meta.uid() != 0 && meta.uid() != uid {
        return Err(format!(
            "{} is owned by uid {}, neither root nor you",
            path.display(),
            meta.uid()
        ));
    }
    Ok(())
}

fn is_executable_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.mode() & 0o111 != 0)
}

#[cfg(test)]
#[path = "host_programs_tests.rs"]
mod tests;
