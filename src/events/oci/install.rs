//! What `ags setup oci-hooks` changes: the two hook definitions in a hooks directory, and that
//! directory in the service's `hooks_dir`. [`plan`] computes every file change without writing
//! (so the command can show them and ask), [`apply`] writes them atomically.
//!
//! The program the definitions name runs as the service's user for every `ags` container — as
//! root for a rootful service. [`plan`] therefore refuses a program that anyone but that user
//! (or root) could replace: the program, and every directory above it, must be owned by root or
//! the user and not writable by group or others (sticky directories like /tmp excepted).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::conf::{self, ConfEnv, ConfError, ServiceKind};
use super::definitions::render;
use crate::fsutil;

/// What to install where.
#[derive(Debug, Clone)]
pub struct InstallOptions {
    /// The service whose configuration changes.
    pub kind: ServiceKind,
    /// Where its configuration is read from.
    pub env: ConfEnv,
    /// `--hooks-dir` (default: [`conf::default_hooks_dir`]).
    pub hooks_dir: Option<PathBuf>,
    /// The `ags-oci-hook` program the definitions run (absolute).
    pub program: PathBuf,
}

/// One file to create or replace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    pub path: PathBuf,
    /// Its content now (None: it does not exist).
    pub old: Option<String>,
    /// Its content after the change.
    pub new: String,
}

/// Everything `ags setup oci-hooks` would change.
#[derive(Debug, Clone)]
pub struct InstallPlan {
    pub hooks_dir: PathBuf,
    /// The program the definitions run.
    pub program: PathBuf,
    /// Files to write (empty: already installed).
    pub changes: Vec<FileChange>,
    /// Warnings to show with the changes.
    pub notes: Vec<String>,
}

/// Installing is refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The hook program is unusable or unsafe.
    #[error("hook program {}: {reason}", path.display())]
    Program {
        path: PathBuf,
        /// What is wrong and what to do.
        reason: String,
    },
    /// The hooks directory is unusable.
    #[error("hooks directory {}: {reason}", path.display())]
    HooksDir { path: PathBuf, reason: String },
    /// containers.conf cannot be read or edited.
    #[error(transparent)]
    Conf(#[from] ConfError),
    /// Writing a file failed.
    #[error("writing {}: {source}", path.display())]
    Write { path: PathBuf, source: std::io::Error },
}

/// Compute the changes; writes nothing.
pub fn plan(opts: &InstallOptions) -> Result<InstallPlan, SetupError> {
    check_program(&opts.program, nix::unistd::geteuid().as_raw())?;
    let hooks_dir = opts
        .hooks_dir
        .clone()
        .unwrap_or_else(|| conf::default_hooks_dir(opts.kind, &opts.env));
    if !hooks_dir.is_absolute() || hooks_dir.is_file() {
        return Err(SetupError::HooksDir {
            path: hooks_dir,
            reason: "must be an absolute directory path".into(),
        });
    }
    let mut changes = Vec::new();
    for (name, new) in render(&opts.program) {
        let path = hooks_dir.join(name);
        let old = conf::read(&path)?;
        changes.push(FileChange { path, old, new });
    }
    let mut notes = Vec::new();
    let effective = conf::effective_hooks_dirs(opts.kind, &opts.env)?;
    if !effective.contains(&hooks_dir) {
        let target = conf::target_file(opts.kind, &opts.env);
        let old = conf::read(&target)?;
        let base = old.clone().unwrap_or_else(|| header(opts.kind));
        let dirs: Vec<PathBuf> = effective.iter().cloned().chain([hooks_dir.clone()]).collect();
        let new = conf::set_hooks_dir(&target, &base, &dirs)?;
        notes.extend(overriding_files(opts, &target)?);
        changes.push(FileChange {
            path: target,
            old,
            new,
        });
    }
    changes.retain(|c| c.old.as_deref() != Some(c.new.as_str()));
    Ok(InstallPlan {
        hooks_dir,
        program: opts.program.clone(),
        changes,
        notes,
    })
}

/// Write every change atomically (missing directories are created 0755; files are 0644: Podman
/// must be able to read them, and they hold no secrets).
pub fn apply(plan: &InstallPlan) -> Result<(), SetupError> {
    for c in &plan.changes {
        let write_err = |source| SetupError::Write {
            path: c.path.clone(),
            source,
        };
        if let Some(parent) = c.path.parent() {
            std::fs::create_dir_all(parent).map_err(write_err)?;
        }
        fsutil::atomic_write(&c.path, c.new.as_bytes(), 0o644).map_err(write_err)?;
    }
    Ok(())
}

/// A line diff of one change: `---`/`+++` headers, then the changed middle with `-`/`+`.
pub fn diff(c: &FileChange) -> String {
    let old: Vec<&str> = c.old.as_deref().map(|t| t.lines().collect()).unwrap_or_default();
    let new: Vec<&str> = c.new.lines().collect();
    let prefix = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let suffix = old[prefix..]
        .iter()
        .rev()
        .zip(new[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let what = if c.old.is_some() { "" } else { " (new file)" };
    let mut out = format!("--- {}{what}\n+++ {}\n", c.path.display(), c.path.display());
    for l in &old[prefix..old.len() - suffix] {
        out.push_str(&format!("-{l}\n"));
    }
    for l in &new[prefix..new.len() - suffix] {
        out.push_str(&format!("+{l}\n"));
    }
    out
}

fn header(kind: ServiceKind) -> String {
    match kind {
        ServiceKind::Rootful => "# Written by `ags setup oci-hooks`: the directories Podman reads OCI hooks \
                                 from, ags's included.\n"
            .into(),
        ServiceKind::Rootless => String::new(),
    }
}

/// Files read after `target` that set `hooks_dir` themselves (they would win).
fn overriding_files(opts: &InstallOptions, target: &Path) -> Result<Vec<String>, SetupError> {
    let order = conf::read_order(opts.kind, &opts.env);
    let after = order.iter().skip_while(|p| p.as_path() != target).skip(1);
    let mut notes = Vec::new();
    for path in after {
        if let Some(text) = conf::read(path)?
            && conf::hooks_dir_in(path, &text)?.is_some()
        {
            notes.push(format!(
                "{} is read after {} and sets hooks_dir too, so it wins: add the hooks directory there",
                path.display(),
                target.display()
            ));
        }
    }
    Ok(notes)
}

/// Refuse a program that is missing, not executable, or replaceable by anyone but `uid`/root.
fn check_program(program: &Path, uid: u32) -> Result<(), SetupError> {
    let refuse = |reason: String| SetupError::Program {
        path: program.into(),
        reason,
    };
    if !program.is_absolute() {
        return Err(refuse("must be an absolute path".into()));
    }
    let meta = std::fs::metadata(program).map_err(|e| refuse(e.to_string()))?;
    if !meta.is_file() || meta.mode() & 0o111 == 0 {
        return Err(refuse("not an executable file".into()));
    }
    let fix = format!(
        "install it somewhere only {} can change, e.g. `install -D -m 0755 {} /usr/local/libexec/ags/ags-oci-hook`, and pass --hook-program",
        if uid == 0 { "root" } else { "you (or root)" },
        program.display()
    );
    let canonical = program.canonicalize().map_err(|e| refuse(e.to_string()))?;
    for p in canonical.ancestors() {
        let m = std::fs::metadata(p).map_err(|e| refuse(e.to_string()))?;
        let sticky_dir = m.is_dir() && m.mode() & 0o1000 != 0;
        let writable_by_others = m.mode() & 0o022 != 0 && !sticky_dir;
        if (m.uid() != 0 && m.uid() != uid) || writable_by_others {
            return Err(refuse(format!(
                "{} can be changed by another user (owner uid {}, mode {:04o}), and the hook runs as {} for every ags container; {fix}",
                p.display(),
                m.uid(),
                m.mode() & 0o7777,
                if uid == 0 { "root" } else { "you" }
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "install_tests.rs"]
mod tests;
