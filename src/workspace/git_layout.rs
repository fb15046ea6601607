//! Which git data outside a launch's read-write mounts may be mounted so that git works in the
//! container (`[git] repository`, on by default; docs/security.md, "Git configuration and hooks
//! in the workspace"), decided from files the agent may have written: the workdir's `.git`, or
//! the `.git` of a repository found by walking up from it.
//!
//! A `.git` file in the workdir is the agent's to write (`gitdir: ~/.local/bin` would otherwise
//! have that directory mounted read-write at its host path). Git data is mounted only when git
//! itself would accept the pair, proven from state outside the agent's reach:
//! - a linked worktree: the `.git` file names `C/worktrees/NAME`, whose `commondir` resolves to
//!   `C` and whose `gitdir` names this `.git` file; `C` is a git dir (`HEAD`, `objects`, `refs`);
//! - a submodule's checkout: the `.git` file names a git dir (`HEAD`, `objects`, `refs`, no
//!   `commondir`) whose `core.worktree` resolves to the checkout, and which lies in the
//!   `modules/` of another git dir;
//! - a subdirectory of a repository: the nearest ancestor with a `.git` (a git dir, or a `.git`
//!   file proven as above for that ancestor).
//!
//! And every proven place — the common dir, the worktree entry or module dir, the ancestor
//! whose `.git` was found — must lie outside every directory an agent can write (this launch's
//! read-write mounts, and at the late check the read-write mounts of running `ags` containers):
//! there, the agent could have written the proof itself. Otherwise nothing outside is mounted and
//! the reason says why.
//!
//! One exception keeps parallel launches in the linked worktrees of one repository working: a
//! worktree entry and its common dir inside a *running* launch's read-write mount (the common
//! dir is mounted read-write for that launch) are trusted when that launch holds them fixed
//! ([`RunningLaunch`]): every directory from its read-write mount down to the entry is a mount
//! point in its container (pinned: not renameable), the entry's `gitdir` and `commondir` are
//! bound read-only there (`git::model::guard` binds them in every launch that pins the entry),
//! and each has a single link (no other name the agent could write it through). They are then
//! what they were when that launch started; an entry its agent created since is not pinned and
//! proves nothing. Only this module builds a [`TrustedGitLayout`]; the guards in it are
//! those of `git::model::guard`, with nothing created in the user's repository.
//!
//! I/O: reads `.git` entries, `commondir`, `gitdir` and module `config` files (short regular
//! files, opened without following links or blocking: `git::model::guard::read_small`).

use std::path::{Path, PathBuf};

use crate::containment::WritableRoot;
use crate::git::model::guard::{
    Create, GitGuard, GitGuardError, common_dir, guard_git_dir, linked_git_dir, module_checkout, read_only,
    read_small, trim_line_ends,
};
use crate::safepath;

/// Git data outside the read-write mounts that git itself would accept for a checkout and
/// that no agent can have written: the guards (mounts) to add for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustedGitLayout {
    guards: Vec<GitGuard>,
}

impl TrustedGitLayout {
    /// The guards to mount (empty when the checkout needs nothing outside the mounts).
    pub fn into_guards(self) -> Vec<GitGuard> {
        self.guards
    }
}

/// A running `ags` launch as its container's inspect data shows it: what its agent cannot
/// change in the directories it can write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunningLaunch {
    /// The container's name (for messages).
    pub container: String,
    /// Its bind mounts: host source, container destination, writable.
    pub binds: Vec<(PathBuf, PathBuf, bool)>,
}

impl RunningLaunch {
    fn binds(&self, source: &Path, dest: &Path, rw: Option<bool>) -> bool {
        self.binds
            .iter()
            .any(|(s, d, w)| s == source && d == dest && rw.is_none_or(|rw| rw == *w))
    }

    /// Whether `dir`, inside this launch's read-write bind `source` (at `dest`), and its
    /// `files` cannot be changed by its agent: `dir` and every directory up to `source` are
    /// mount points (pinned), each of `files` is a read-only bind of itself with one link.
    fn holds(&self, source: &Path, dest: &Path, dir: &Path, files: &[&str]) -> bool {
        let at = |p: &Path| p.strip_prefix(source).map(|rel| dest.join(rel)).ok();
        let pinned = dir
            .ancestors()
            .take_while(|a| *a != source)
            .all(|a| at(a).is_some_and(|d| self.binds(a, &d, None)));
        pinned
            && files.iter().all(|f| {
                let file = dir.join(f);
                let single = std::fs::symlink_metadata(&file).is_ok_and(|m| {
                    use std::os::unix::fs::MetadataExt;
                    m.is_file() && m.nlink() == 1
                });
                single && at(&file).is_some_and(|d| self.binds(&file, &d, Some(false)))
            })
    }
}

/// What `prove` checks places against: this launch's read-write mounts, every directory an
/// agent can write, and the running launches whose mounts are among the latter.
struct Reach<'a> {
    roots: &'a [PathBuf],
    writable: &'a [WritableRoot],
    running: &'a [RunningLaunch],
}

impl Reach<'_> {
    /// `p` lies in no directory an agent can write — or, with `held`, only in running launches'
    /// read-write mounts whose every launch holds `p` and its `held` files fixed.
    fn check(&self, what: &'static str, p: &Path, held: Option<&[&str]>) -> Result<(), GitLayoutError> {
        let own = self
            .roots
            .iter()
            .map(|r| (r.as_path(), "this launch's read-write mount", false));
        let all = self
            .writable
            .iter()
            .map(|w| (w.path.as_path(), w.owner.as_str(), w.running))
            .chain(own);
        for (w, owner, running) in all.filter(|(w, _, _)| p.starts_with(w)) {
            let trusted = running && held.is_some_and(|files| self.held(w, p, files));
            if !trusted {
                return Err(GitLayoutError::Writable {
                    what,
                    path: p.into(),
                    root: w.into(),
                    owner: owner.into(),
                });
            }
        }
        Ok(())
    }

    /// Some running launch has `source` as a read-write bind, and each such bind holds `p`.
    fn held(&self, source: &Path, p: &Path, files: &[&str]) -> bool {
        let mut holders = self.running.iter().flat_map(|r| {
            r.binds
                .iter()
                .filter(|(s, _, rw)| *rw && s == source)
                .map(move |(_, d, _)| (r, d))
        });
        let mut any = false;
        holders.all(|(r, d)| {
            any = true;
            r.holds(source, d, p, files)
        }) && any
    }
}

/// The files of a worktree entry that decide which checkout and common dir it belongs to.
const ENTRY_FILES: &[&str] = &["gitdir", "commondir"];

/// Why git data outside the mounts is not mounted for a checkout.
#[derive(Debug, thiserror::Error)]
pub enum GitLayoutError {
    /// A `.git` entry or a file it leads to cannot be read as git would.
    #[error("{}: {reason}", safepath::display(path))]
    Unreadable {
        /// The offending path.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// What a `.git` file names is not a git dir.
    #[error(
        "the `.git` file {} names {}, which is not a git dir (it has no {missing}); ags mounts nothing it names (an agent may have written it): remove {} if you did not create it",
        safepath::display(dot_git),
        safepath::display(named),
        safepath::display(dot_git)
    )]
    NotAGitDir {
        /// The `.git` file (or ancestor `.git` directory).
        dot_git: PathBuf,
        /// What it names.
        named: PathBuf,
        /// The first missing piece (`HEAD`, `objects`, `refs`).
        missing: &'static str,
    },
    /// A `.git` file names a git dir that does not belong to this checkout.
    #[error(
        "the `.git` file {} names {}, which {why}; git accepts a `.git` file only for a worktree entry `…/.git/worktrees/NAME` whose `gitdir` names that file, or a submodule git dir whose `core.worktree` is its directory, so ags mounts nothing it names (an agent may have written it): remove it if you did not create it, or make the worktree or submodule with git on the host",
        safepath::display(dot_git),
        safepath::display(named)
    )]
    NotThisCheckout {
        /// The `.git` file.
        dot_git: PathBuf,
        /// The git dir it names.
        named: PathBuf,
        /// Which rule it breaks.
        why: String,
    },
    /// A place the proof rests on lies inside a directory an agent can write.
    #[error(
        "{what} {} lies inside {owner} {}, which an agent can write: it could have written the files that make it look like this checkout's git data, so ags does not mount it; launch when that mount is gone, or pass the repository as an --add-dir if you trust it",
        safepath::display(path),
        safepath::display(root)
    )]
    Writable {
        /// What it is ("the common git dir").
        what: &'static str,
        /// The place.
        path: PathBuf,
        /// The writable directory.
        root: PathBuf,
        /// Whose mount it is.
        owner: String,
    },
    /// At the late check: git data decided at the start of the launch is no longer proven.
    #[error(
        "the git data {} that this launch was to mount outside its read-write mounts is no longer proven: {why}",
        safepath::display(path)
    )]
    NoLongerProven {
        /// The git dir or repository.
        path: PathBuf,
        /// Why (the reason the proof fails now).
        why: String,
    },
}

impl From<GitGuardError> for GitLayoutError {
    fn from(e: GitGuardError) -> Self {
        GitLayoutError::Unreadable {
            path: e.path,
            reason: e.reason,
        }
    }
}

/// The git data outside `roots` (the read-write mounts keeping their host path) that the
/// checkout at `root` needs, proven, with nothing of it inside `writable` (every directory an
/// agent can write; `roots` count too) but for a linked worktree's entry and common dir that
/// the `running` launches hold fixed (see the module doc).
pub fn prove(
    root: &Path,
    roots: &[PathBuf],
    writable: &[WritableRoot],
    running: &[RunningLaunch],
) -> Result<TrustedGitLayout, GitLayoutError> {
    let inside = |p: &Path| roots.iter().any(|r| p.starts_with(r));
    let reach = Reach {
        roots,
        writable,
        running,
    };
    let reachable = |what: &'static str, p: &Path| reach.check(what, p, None);
    let mut guards = Vec::new();
    let mut checkout = root.to_path_buf();
    let mut dot_git = root.join(".git");
    if std::fs::symlink_metadata(&dot_git).is_err() {
        let Some(top) = root
            .ancestors()
            .skip(1)
            .find(|a| std::fs::symlink_metadata(a.join(".git")).is_ok())
        else {
            return Ok(TrustedGitLayout { guards });
        };
        if inside(top) {
            return Ok(TrustedGitLayout { guards }); // a nested mount: its repository is mounted already
        }
        // Its `.git` could have been planted by an agent that can write `top`.
        reachable("the repository found above the workdir", top)?;
        guards.push(read_only(top));
        checkout = top.to_path_buf();
        dot_git = top.join(".git");
    }
    let meta = std::fs::symlink_metadata(&dot_git).map_err(|e| unreadable(&dot_git, e.to_string()))?;
    if meta.is_dir() {
        // Proven by `top` (checked above): what is inside only decides what in it is guarded
        // (a running launch pinning it cannot swap those: `commands::guard_neighbours`).
        if !inside(&dot_git) {
            git_dir_shape(&dot_git, &dot_git)?;
            guard_git_dir(&dot_git, Create::Nothing, roots, &mut guards)?;
        }
        return Ok(TrustedGitLayout { guards });
    }
    if !meta.is_file() {
        return Err(unreadable(
            &dot_git,
            "it is neither a directory nor a file".into(),
        ));
    }
    let git_dir = linked_git_dir(&dot_git)?;
    let common = common_dir(&git_dir)?;
    if inside(&git_dir) && inside(&common) {
        return Ok(TrustedGitLayout { guards });
    }
    // A linked worktree's entry (`common/worktrees/NAME`) and its common dir may be held fixed
    // by a running launch; a submodule's git dir may not.
    let entry = git_dir.parent() == Some(common.join("worktrees").as_path());
    let held = |files: &'static [&'static str]| entry.then_some(files);
    reach.check(
        "the git dir named by the `.git` file",
        &git_dir,
        held(ENTRY_FILES),
    )?;
    reach.check("the common git dir", &common, held(&[]))?;
    git_dir_shape(&dot_git, &common)?;
    if git_dir == common {
        submodule_of(&dot_git, &checkout, &git_dir)?;
    } else {
        worktree_of(&dot_git, &git_dir, &common)?;
    }
    guard_git_dir(&common, Create::Nothing, roots, &mut guards)?;
    Ok(TrustedGitLayout { guards })
}

fn unreadable(path: &Path, reason: String) -> GitLayoutError {
    GitLayoutError::Unreadable {
        path: path.into(),
        reason,
    }
}

/// `dir` holds what git requires of a git dir: `HEAD`, `objects/`, `refs/` (not followed).
fn git_dir_shape(dot_git: &Path, dir: &Path) -> Result<(), GitLayoutError> {
    match missing_piece(dir) {
        Some(missing) => Err(GitLayoutError::NotAGitDir {
            dot_git: dot_git.into(),
            named: dir.into(),
            missing,
        }),
        None => Ok(()),
    }
}

fn missing_piece(dir: &Path) -> Option<&'static str> {
    let meta = |name: &str| std::fs::symlink_metadata(dir.join(name));
    if !meta("HEAD").is_ok_and(|m| m.is_file()) {
        return Some("`HEAD` file");
    }
    if !meta("objects").is_ok_and(|m| m.is_dir()) {
        return Some("`objects` directory");
    }
    if !meta("refs").is_ok_and(|m| m.is_dir()) {
        return Some("`refs` directory");
    }
    None
}

/// `git_dir` is the linked worktree entry `common/worktrees/NAME` of the `.git` file
/// `dot_git`: its `gitdir` file names `dot_git`.
fn worktree_of(dot_git: &Path, git_dir: &Path, common: &Path) -> Result<(), GitLayoutError> {
    let fail = |why: String| GitLayoutError::NotThisCheckout {
        dot_git: dot_git.into(),
        named: git_dir.into(),
        why,
    };
    if git_dir.parent() != Some(common.join("worktrees").as_path()) {
        return Err(fail(format!(
            "is not an entry of the `worktrees/` of its common git dir {}",
            safepath::display(common)
        )));
    }
    let file = git_dir.join("gitdir");
    let bytes = read_small(&file).map_err(|e| fail(format!("has no readable `gitdir` file ({e})")))?;
    let named = <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(trim_line_ends(&bytes));
    let names = git_dir.join(named).canonicalize().ok();
    let ours = dot_git.canonicalize().ok();
    if names.is_none() || names != ours {
        return Err(fail(format!(
            "is the worktree entry of {}, not of this `.git` file",
            String::from_utf8_lossy(trim_line_ends(&bytes))
        )));
    }
    Ok(())
}

/// `git_dir` is a submodule's git dir (in the `modules/` of a git dir) whose `core.worktree`
/// is `checkout`.
fn submodule_of(dot_git: &Path, checkout: &Path, git_dir: &Path) -> Result<(), GitLayoutError> {
    let fail = |why: &str| GitLayoutError::NotThisCheckout {
        dot_git: dot_git.into(),
        named: git_dir.into(),
        why: why.into(),
    };
    let in_modules = git_dir
        .ancestors()
        .skip(1)
        .filter(|a| a.file_name() == Some(std::ffi::OsStr::new("modules")))
        .any(|m| m.parent().is_some_and(|p| missing_piece(p).is_none()));
    if !in_modules {
        return Err(fail(
            "is a repository of its own, neither a linked worktree entry nor a submodule's git dir (in the `modules/` of a git dir)",
        ));
    }
    let here = checkout.canonicalize().ok();
    if here.is_none() || module_checkout(git_dir) != here {
        return Err(fail(
            "is a submodule's git dir whose `core.worktree` is not this directory",
        ));
    }
    Ok(())
}

/// The outermost of `guards` outside every root: what the containment rules must accept.
pub fn tops<'a>(guards: &'a [GitGuard], roots: &[PathBuf]) -> Vec<&'a GitGuard> {
    let outside: Vec<&GitGuard> = guards
        .iter()
        .filter(|g| !roots.iter().any(|r| g.path.starts_with(r)))
        .collect();
    outside
        .iter()
        .filter(|g| {
            !outside
                .iter()
                .any(|o| o.path != g.path && g.path.starts_with(&o.path))
        })
        .copied()
        .collect()
}

#[cfg(test)]
#[path = "git_layout_tests.rs"]
mod tests;
