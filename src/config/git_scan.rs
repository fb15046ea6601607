//! Finding git configuration planted during a launch (docs/security.md, "Repositories the agent
//! creates"). Git on the host runs what a repository's config and hooks name, in every
//! repository it enters: the one you `cd` into, and each submodule `git status` recurses into
//! (any gitlink in the index whose directory holds a `.git`). The agent can create such a
//! repository anywhere it can write — a nested `.git`, a new `.git/modules/NAME/`, a `.git`
//! file naming a git dir of its own, a `commondir` redirect — and the read-only guards
//! (`config::git_guard`) only cover what existed at launch.
//!
//! [`scan`] walks the read-write mounts of a launch once the container is gone and reports
//! every git-executable piece *changed since the launch started*, judged by the inode change
//! time (`ctime`): creating, writing, renaming, linking or `chmod`ing a file sets it to the
//! current time, and nothing inside a container can set it back. What is reported:
//! - a `config` or `config.worktree` of a git dir with a key that could run a program
//!   (`config::git_config_keys`), or that does not parse, or that is not a regular file;
//! - a hook: an entry of `hooks/` not ending in `.sample`, or `hooks` itself as a link;
//! - a `commondir` naming anything but the git dir itself (or, in a linked worktree entry
//!   `worktrees/NAME/`, the repository's git dir);
//! - a `.git` that is a symbolic link, or a changed `.git` file naming a git dir that has any
//!   of the above (changed or not: inside the walked trees too, as the agent may have staged
//!   that git dir in an earlier launch where the walk does not look).
//!
//! A git dir is a directory named `.git`, or one holding `HEAD` and `objects` or `commondir`
//! (git accepts a bare repository found that way). Inside a git dir only `modules/` and
//! `worktrees/` are walked. Paths in `skip` (the read-only guards: the agent could not write
//! them) are never reported. Symbolic links are never followed. Pure reading.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::git_config_keys::risky_keys;

/// At most this many directory entries are looked at; beyond, the scan is incomplete.
pub const MAX_ENTRIES: usize = 5_000_000;
/// Deepest directory level walked.
const MAX_DEPTH: usize = 200;
/// Largest config file judged (bigger counts as planted code).
const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// One planted piece.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The file (or link, or directory) to move aside.
    pub path: PathBuf,
    /// What git would do with it.
    pub what: String,
}

/// The outcome of [`scan`].
#[derive(Debug, Default)]
pub struct Scan {
    /// Every planted piece, sorted by path.
    pub findings: Vec<Finding>,
    /// Where the walk stopped early (too many entries, too deep, unreadable).
    pub incomplete: Vec<String>,
}

/// The ctime (seconds, nanoseconds) from which a change counts as the launch's.
pub type Since = (i64, i64);

/// The current time as [`Since`], two seconds early (the kernel's file times are coarse).
pub fn since_now() -> Since {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    (now.as_secs() as i64 - 2, i64::from(now.subsec_nanos()))
}

/// Walk `roots` for git-executable pieces changed at or after `since`.
pub fn scan(roots: &[PathBuf], skip: &[PathBuf], since: Since) -> Scan {
    let mut walk = Walk {
        roots,
        skip,
        since,
        entries: 0,
        out: Scan::default(),
    };
    for root in roots {
        walk.dir(root, 0);
    }
    walk.out.findings.sort_by(|a, b| a.path.cmp(&b.path));
    walk.out.findings.dedup();
    walk.out
}

struct Walk<'a> {
    roots: &'a [PathBuf],
    skip: &'a [PathBuf],
    since: Since,
    entries: usize,
    out: Scan,
}

impl Walk<'_> {
    fn fresh(&self, meta: &std::fs::Metadata) -> bool {
        (meta.ctime(), meta.ctime_nsec()) >= self.since
    }

    fn report(&mut self, path: PathBuf, what: String) {
        if !self.skip.iter().any(|s| path.starts_with(s)) {
            self.out.findings.push(Finding { path, what });
        }
    }

    /// Walk `dir`, `depth` levels below a root.
    fn dir(&mut self, dir: &Path, depth: usize) {
        if depth > MAX_DEPTH {
            // Git reaches a gitlink at any depth: what the launch made that deep goes aside.
            if std::fs::symlink_metadata(dir).is_ok_and(|m| self.fresh(&m)) {
                let what = format!("a directory deeper than {MAX_DEPTH} levels, not checked");
                self.report(dir.into(), what);
            } else {
                self.out
                    .incomplete
                    .push(format!("{}: deeper than {MAX_DEPTH} levels", dir.display()));
            }
            return;
        }
        if self.entries > MAX_ENTRIES {
            return;
        }
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) => {
                // Git reaches entries by name in a directory it cannot list (mode 0111), a
                // gitlink's `.git` below it included: one the launch made goes aside.
                if std::fs::symlink_metadata(dir).is_ok_and(|m| self.fresh(&m)) {
                    let what = format!("a directory that cannot be listed ({e}), not checked");
                    self.report(dir.into(), what);
                    return;
                }
                self.out
                    .incomplete
                    .push(format!("{} cannot be listed ({e})", dir.display()));
                let dot_git = dir.join(".git");
                if let Ok(meta) = std::fs::symlink_metadata(&dot_git) {
                    self.dot_git(&dot_git, meta.file_type());
                }
                if std::fs::symlink_metadata(dir.join("HEAD")).is_ok() {
                    self.git_dir(dir);
                }
                return;
            }
        };
        let mut subdirs = Vec::new();
        let (mut head, mut objects, mut commondir) = (false, false, false);
        for entry in entries.flatten() {
            self.entries += 1;
            if self.entries > MAX_ENTRIES {
                self.out.incomplete.push(format!(
                    "stopped after {MAX_ENTRIES} entries, in {}",
                    dir.display()
                ));
                return;
            }
            let Ok(kind) = entry.file_type() else { continue };
            let name = entry.file_name();
            match name.as_encoded_bytes() {
                b"HEAD" => head = true,
                // Git only asks `access(objects, X_OK)`: a link or an executable file will do.
                b"objects" => objects = true,
                b"commondir" => commondir = true,
                b".git" => {
                    self.dot_git(&entry.path(), kind);
                    continue;
                }
                _ => {}
            }
            if kind.is_dir() {
                subdirs.push(entry.path());
            }
        }
        let is_git_dir = head && (objects || commondir);
        if is_git_dir {
            self.git_dir(dir);
        }
        for sub in subdirs {
            let name = sub.file_name().map(|n| n.as_encoded_bytes().to_vec());
            let wanted = !is_git_dir || matches!(name.as_deref(), Some(b"modules" | b"worktrees"));
            if wanted {
                self.dir(&sub, depth + 1);
            }
        }
    }

    /// A `.git` entry: a directory is a git dir (walked like one), a file names one.
    fn dot_git(&mut self, path: &Path, kind: std::fs::FileType) {
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            return;
        };
        if kind.is_symlink() {
            if self.fresh(&meta) {
                self.report(path.into(), "a symbolic link git follows to a repository".into());
            }
        } else if kind.is_dir() {
            self.git_dir(path);
            for sub in ["modules", "worktrees"] {
                let p = path.join(sub);
                if std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir()) {
                    self.dir(&p, 1);
                }
            }
        } else if kind.is_file() && self.fresh(&meta) {
            let target = match gitfile_target(path) {
                Ok(Some(target)) => target,
                Ok(None) => return, // git refuses it too
                Err(e) => {
                    self.report(path.into(), format!("a .git file that cannot be judged ({e})"));
                    return;
                }
            };
            if self.roots.iter().any(|r| target.starts_with(r)) {
                // Inside: judged in full, whatever its change times. The `.git` file is new,
                // so is git's way into that git dir: the agent may have left it there in an
                // earlier launch, where the walk does not judge it (under `.git/objects/`),
                // and not touched it since (issue 22, attack2-3). Guards stay unreported.
                let since = std::mem::replace(&mut self.since, (i64::MIN, 0));
                self.git_dir(&target);
                self.since = since;
            } else {
                let mut outside = Walk {
                    roots: self.roots,
                    skip: &[],
                    since: (i64::MIN, 0),
                    entries: 0,
                    out: Scan::default(),
                };
                outside.git_dir(&target);
                if let Some(f) = outside.out.findings.first() {
                    let what = format!(
                        "a .git file naming {} outside the workspace ({}: {})",
                        target.display(),
                        f.path.display(),
                        f.what
                    );
                    self.report(path.into(), what);
                }
            }
        }
    }

    /// The executable pieces of the git dir `dir`.
    fn git_dir(&mut self, dir: &Path) {
        // A relative `core.hooksPath` is taken from where hooks run: the worktree's top.
        let top = match dir.file_name() {
            Some(n) if n == ".git" => dir.parent().unwrap_or(dir),
            _ => dir,
        };
        for name in ["config", "config.worktree"] {
            self.config(&dir.join(name), top, 0);
        }
        self.commondir(dir);
        self.hooks(&dir.join("hooks"));
    }

    /// The hooks in `hooks` (a git dir's, or a `core.hooksPath`) the launch changed.
    fn hooks(&mut self, hooks: &Path) {
        let hooks = hooks.to_path_buf();
        let Ok(meta) = std::fs::symlink_metadata(&hooks) else {
            return;
        };
        if !meta.is_dir() {
            if self.fresh(&meta) {
                self.report(hooks, "a hooks directory that is not a directory".into());
            }
            return;
        }
        let Ok(entries) = std::fs::read_dir(&hooks) else {
            if self.fresh(&meta) {
                self.report(hooks, "a hooks directory that cannot be listed".into());
            }
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let sample = entry.file_name().as_encoded_bytes().ends_with(b".sample");
            let fresh = std::fs::symlink_metadata(&path).is_ok_and(|m| self.fresh(&m));
            if !sample && fresh {
                let what = format!("a hook git runs ({})", entry.file_name().to_string_lossy());
                self.report(path, what);
            }
        }
    }

    /// A git configuration file (of a git dir whose worktree's top is `top`), and what it
    /// includes: `nesting` levels of `include.path` deep (git stops at 10).
    fn config(&mut self, path: &Path, top: &Path, nesting: usize) {
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            return;
        };
        self.named_by(path, &meta, top, nesting);
        if !self.fresh(&meta) {
            return;
        }
        if !meta.is_file() {
            self.report(path.into(), "git configuration that is not a regular file".into());
            return;
        }
        if meta.len() > MAX_CONFIG_BYTES {
            self.report(path.into(), "git configuration over 1 MiB".into());
            return;
        }
        let text = match read_nonblocking(path) {
            Ok(t) => t,
            Err(e) => {
                self.report(
                    path.into(),
                    format!("git configuration that cannot be read ({e})"),
                );
                return;
            }
        };
        let risky = risky_keys(&text);
        if !risky.is_empty() {
            self.report(
                path.into(),
                format!("git configuration that can run programs: {}", risky.join(", ")),
            );
        }
    }

    /// A configuration file — yours, unchanged or read-only to the launch — may name files the
    /// launch could change: an `include.path`/`includeIf.*.path` or a `core.hooksPath` inside the
    /// walked trees (a tracked `../.gitconfig`, husky's `.husky/_`). Those are judged too.
    fn named_by(&mut self, path: &Path, meta: &std::fs::Metadata, top: &Path, nesting: usize) {
        if !meta.is_file() || meta.len() > MAX_CONFIG_BYTES || nesting >= 10 {
            return;
        }
        let Ok(bytes) = read_nonblocking(path) else {
            return;
        };
        let base = path.parent().unwrap_or(Path::new("/"));
        for (key, value) in super::git_config_text::entries(&String::from_utf8_lossy(&bytes)) {
            let include = key == "include.path" || (key.starts_with("includeif.") && key.ends_with(".path"));
            if include {
                if let Some(p) =
                    self.inside(expand_home(&value).map_or_else(|| base.join(&value), Into::into))
                {
                    self.config(&p, top, nesting + 1);
                }
            } else if key == "core.hookspath" {
                let named = expand_home(&value).map_or_else(|| top.join(&value), Into::into);
                if let Some(p) = self.inside(named) {
                    self.hooks(&p);
                }
            }
        }
    }

    /// `path` (its directory resolved, as the kernel does for git) when it lies in one of the
    /// walked trees.
    fn inside(&self, path: PathBuf) -> Option<PathBuf> {
        let real = path.parent()?.canonicalize().ok()?.join(path.file_name()?);
        self.roots.iter().any(|r| real.starts_with(r)).then_some(real)
    }

    fn commondir(&mut self, dir: &Path) {
        let path = dir.join("commondir");
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            return;
        };
        if !self.fresh(&meta) {
            return;
        }
        let named = super::git_guard::common_dir(dir).ok();
        let own = dir.canonicalize().ok();
        let entry_of = dir
            .parent()
            .filter(|p| p.file_name().is_some_and(|n| n == "worktrees"))
            .and_then(Path::parent)
            .and_then(|p| p.canonicalize().ok());
        let expected = named.is_some() && (named == own || named == entry_of);
        if !meta.is_file() || !expected {
            let to = named.map_or("something unreadable".into(), |n| n.display().to_string());
            self.report(path, format!("a commondir sending git to {to}"));
        }
    }
}

/// `~/REST` with the home directory, as git expands configured paths.
fn expand_home(value: &str) -> Option<PathBuf> {
    let rest = value.strip_prefix("~/")?;
    Some(PathBuf::from(std::env::var_os("HOME")?).join(rest))
}

/// The git dir a `.git` file names, read as git reads it (`read_gitfile_gently`: up to 1 MiB,
/// `gitdir: PATH`, any bytes): `None` when git refuses it too (too long, another content, a
/// path that does not resolve); an error when it cannot be read.
fn gitfile_target(path: &Path) -> std::io::Result<Option<PathBuf>> {
    let bytes = read_nonblocking(path)?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Ok(None);
    }
    let Some(named) = super::git_guard::gitfile_path(&bytes) else {
        return Ok(None);
    };
    match path.parent().unwrap_or(Path::new("/")).join(named).canonicalize() {
        Ok(target) => Ok(Some(target)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// A file's bytes, opened without following a link or blocking on a FIFO.
fn read_nonblocking(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY)
        .open(path)?;
    let mut bytes = Vec::new();
    file.take(MAX_CONFIG_BYTES + 1).read_to_end(&mut bytes)?;
    Ok(bytes)
}

#[cfg(test)]
#[path = "git_scan_tests.rs"]
mod tests;
