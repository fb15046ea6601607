//! The git metadata of the workspace, inventoried before a launch and compared after it
//! (docs/security.md, "Git configuration and hooks in the workspace"). Git on the host runs
//! what a repository's config and hooks name, in every repository it enters: the one you `cd`
//! into, and each submodule `git status` recurses into (any gitlink of the index whose
//! directory holds a `.git`). The agent can make such a repository anywhere it can write — a
//! nested `.git`, a new `.git/modules/NAME/`, a `.git` file naming a git dir of its own, a
//! `commondir` redirect — or move one into place that was staged earlier or shipped as tracked
//! files; the read-only guards (`git::model::guard`) only cover what existed at launch.
//!
//! [`take`] walks the read-write trees of a launch before its container starts and records
//! every git dir (identity: device and inode), every `.git` file and link, and every piece git
//! reads to run a program — `config`, `config.worktree`, `commondir`, `hooks/` and its
//! entries, the files a config includes and the hooks of its `core.hooksPath` — each with its
//! identity, type and permissions and a SHA-256 of its content. [`check`] walks the same trees
//! once the container is gone and judges by comparing that state, never by a timestamp (a
//! renamed directory keeps the times of what is inside):
//! - a git dir absent from the inventory at its path, or another directory there now, is judged
//!   in full: all its pieces, whatever they are;
//! - otherwise each piece that is new, or whose identity, permissions or content differ;
//! - a `.git` file that is new or changed has its git dir judged in full, wherever it lies.
//!
//! Judged means what git would do with it: a config with a key that could run a program
//! (`git::model::config_keys`), that does not parse, or that is not a regular file; a hook (an
//! entry of `hooks/` not ending in `.sample`, or `hooks` not a directory); a `commondir` naming
//! anything but the git dir itself (or, in `worktrees/NAME/`, the repository's); a `.git`
//! symbolic link; a `.git` file naming a git dir outside the walked trees; a `core.worktree`
//! naming a directory outside them; a remote URL git hands to a `git-remote-*` program; an
//! operation in progress (`rebase-merge/`, `sequencer/`, …) whose continuation runs a command.
//!
//! Beyond what runs programs, what git trusts blindly: the caches of an index the launch
//! changed are dropped and its touched entries' stat data cleared (`index_recheck`), an object
//! file changed in place goes aside (`objects`), and the refs are compared so that the commits
//! the launch made can be read (`refs`, `workspace::git_commits`).
//!
//! A git dir is a directory named `.git`, or one holding `HEAD` and `objects` or `commondir`
//! (git accepts a bare repository found that way). The whole interior of every git dir is walked
//! (a git dir can hide anywhere in another one). Paths in `skip` (the read-only guards: the
//! agent could not write them) are never reported. Symbolic links are never followed. Pure
//! reading; the directories are listed on a few threads (`tree_walk`), judged on one.

mod index;
mod index_recheck;
mod judge;
mod objects;
mod programs;
mod refs;
mod state;
#[cfg(test)]
pub(crate) mod test_git;
mod tree_walk;

use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::git::model::config_keys::risky_keys;
use index_recheck::IndexState;
pub use index_recheck::{IndexRewrite, sha1};
pub use judge::CACHE_WHAT;
pub use objects::loose_matches;
pub use refs::MovedRefs;
use refs::Tips;
pub use state::packed_refs_without_replace;
use state::{Seen, State, gitfile_target, observe};
use tree_walk::{Kind, Listing, Met};

/// At most this many directory entries are looked at; beyond, the check is incomplete.
pub const MAX_ENTRIES: usize = 5_000_000;
/// Deepest directory level walked.
const MAX_DEPTH: usize = 200;
/// Largest config file judged (bigger counts as planted code).
const MAX_CONFIG_BYTES: u64 = 1024 * 1024;
/// Largest file digested: a bigger one is never proven unchanged.
const MAX_DIGEST_BYTES: u64 = 64 * 1024 * 1024;

/// One planted piece.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The file (or link, or directory) to move aside.
    pub path: PathBuf,
    /// What git would do with it.
    pub what: String,
}

/// The outcome of [`check`].
#[derive(Debug, Default)]
pub struct Scan {
    /// Every planted piece, sorted by path.
    pub findings: Vec<Finding>,
    /// Where the walk stopped early (too many entries, too deep, unreadable).
    pub incomplete: Vec<String>,
    /// Index entries the launch hid from `git status`, by index file.
    pub hidden: Vec<(PathBuf, Vec<String>)>,
    /// Protected paths the launch staged (new entries or other content), by index file.
    pub staged: Vec<(PathBuf, Vec<String>)>,
    /// Indexes the launch changed, to be written back without what git trusts blindly.
    pub index_rewrites: Vec<IndexRewrite>,
    /// Pack indexes the launch made (`GIT_DIR/objects/pack/pack-*.idx`), to be verified.
    pub new_packs: Vec<PathBuf>,
    /// Loose objects the launch made (`GIT_DIR/objects/ab/cdef…`), to be verified.
    pub new_loose: Vec<PathBuf>,
    /// Git dirs of the inventory whose refs gained object names (`workspace::git_commits`
    /// reads the commits).
    pub moved_refs: Vec<MovedRefs>,
}

/// The state of the walked trees before a launch ([`take`]).
///
/// It serializes (as JSON, maps as lists of pairs) for a check that runs in another process
/// than the inventory: the Quadlet export's `ags unit-check`.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Inventory {
    roots: Vec<PathBuf>,
    #[serde(with = "crate::workspace::pairs")]
    states: HashMap<(Seen, PathBuf), State>,
    /// What each index file held (`index_recheck`).
    #[serde(with = "crate::workspace::pairs")]
    indexes: HashMap<PathBuf, IndexState>,
    /// The object names each git dir's refs hold (`refs`).
    #[serde(with = "crate::workspace::pairs")]
    tips: HashMap<PathBuf, Tips>,
    /// Why this inventory is no baseline (another launch could write the trees while it was
    /// taken): every git dir is then judged in full.
    distrusted: Option<String>,
}

impl Inventory {
    /// The walked trees.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// How many git dirs and pieces were recorded.
    pub fn len(&self) -> usize {
        self.states.len()
    }

    /// Whether nothing was recorded (no git metadata in the trees).
    pub fn is_empty(&self) -> bool {
        self.states.is_empty()
    }

    /// Take this inventory as no proof of what the user had (attack3-1): another running
    /// launch could write the trees while it was taken, so what its agent planted, and hides
    /// before its own check, would pass as the user's. [`check`] then judges every git dir in
    /// full. `why` names the other launch.
    pub fn distrust(&mut self, why: String) {
        self.distrusted = Some(why);
    }

    /// Why this inventory is no baseline, if it is not ([`Inventory::distrust`]).
    pub fn distrusted(&self) -> Option<&str> {
        self.distrusted.as_deref()
    }
}

/// Record the git metadata under `roots` (before the container starts).
pub fn take(roots: &[PathBuf]) -> Inventory {
    let mut walk = Walk::new(roots, &[], None);
    for root in roots {
        walk.dir(root, 0);
    }
    Inventory {
        roots: roots.to_vec(),
        states: walk.states,
        indexes: walk.indexes,
        tips: walk.tips,
        distrusted: None,
    }
}

/// Walk the trees of `before` again (once the container is gone) and report every planted
/// piece that differs from it (every piece that can run a program when `before` is
/// [distrusted](Inventory::distrust)).
pub fn check(before: &Inventory, skip: &[PathBuf]) -> Scan {
    let mut walk = Walk::new(&before.roots, skip, Some(&before.states));
    walk.full = before.distrusted.is_some();
    walk.indexes_before = Some(&before.indexes);
    walk.tips_before = Some(&before.tips);
    for root in &before.roots {
        walk.dir(root, 0);
    }
    walk.out.findings.sort_by(|a, b| a.path.cmp(&b.path));
    walk.out.findings.dedup();
    walk.out
}

struct Walk<'a> {
    roots: &'a [PathBuf],
    skip: &'a [PathBuf],
    /// `None` while taking the inventory (nothing is judged, states are recorded).
    before: Option<&'a HashMap<(Seen, PathBuf), State>>,
    /// In a git dir judged in full: every piece counts as changed.
    full: bool,
    entries: usize,
    states: HashMap<(Seen, PathBuf), State>,
    indexes: HashMap<PathBuf, IndexState>,
    indexes_before: Option<&'a HashMap<PathBuf, IndexState>>,
    tips: HashMap<PathBuf, Tips>,
    tips_before: Option<&'a HashMap<PathBuf, Tips>>,
    /// The `objects` directories of the git dirs seen (`objects`).
    object_dirs: std::collections::HashSet<PathBuf>,
    /// The programs git runs seen in this walk (`programs`), each compared once.
    programs: std::collections::HashSet<PathBuf>,
    out: Scan,
}

impl<'a> Walk<'a> {
    fn new(
        roots: &'a [PathBuf],
        skip: &'a [PathBuf],
        before: Option<&'a HashMap<(Seen, PathBuf), State>>,
    ) -> Self {
        Walk {
            roots,
            skip,
            before,
            full: false,
            entries: 0,
            states: HashMap::new(),
            indexes: HashMap::new(),
            indexes_before: None,
            tips: HashMap::new(),
            tips_before: None,
            object_dirs: Default::default(),
            programs: Default::default(),
            out: Scan::default(),
        }
    }

    /// Whether `path` (seen as `seen`) is not what the inventory holds, so is judged; while
    /// taking the inventory: record it.
    fn changed(&mut self, seen: Seen, path: &Path, now: State) -> bool {
        let Some(before) = self.before else {
            self.states.insert((seen, path.into()), now);
            return false;
        };
        self.full || now.unproven() || before.get(&(seen, path.to_path_buf())) != Some(&now)
    }

    fn report(&mut self, path: PathBuf, what: String) {
        // Once: a piece reached from two worktrees' tops is moved aside once.
        if self.out.findings.iter().any(|f| f.path == path) {
            return;
        }
        if !self.skip.iter().any(|s| path.starts_with(s)) {
            self.out.findings.push(Finding { path, what });
        }
    }

    fn incomplete(&mut self, what: String) {
        if self.before.is_some() {
            self.out.incomplete.push(what);
        }
    }

    /// Walk `dir`, `depth` levels below a root (`tree_walk`), and judge what it met, in the
    /// order of a depth-first walk.
    fn dir(&mut self, dir: &Path, depth: usize) {
        let (records, entries) = tree_walk::walk(dir, depth, self.entries);
        self.entries = entries;
        for record in records {
            let (dir, depth) = (record.path, record.depth);
            match record.met {
                Met::Listed(listing) => self.listed(&dir, listing),
                Met::Unlisted(e) => self.unlisted(&dir, depth, &e),
                Met::Deep => self.deep(&dir),
                Met::Stopped => {
                    let what = format!("stopped after {MAX_ENTRIES} entries, in {}", dir.display());
                    self.incomplete(what);
                }
            }
        }
    }

    /// A directory deeper than [`MAX_DEPTH`] levels.
    fn deep(&mut self, dir: &Path) {
        // Git reaches a gitlink at any depth: a deep directory not in the inventory goes aside.
        if let Ok(meta) = std::fs::symlink_metadata(dir)
            && self.changed(Seen::Deep, dir, observe(dir, &meta).0)
        {
            let what = format!("a directory deeper than {MAX_DEPTH} levels, not checked");
            self.report(dir.into(), what);
            return;
        }
        self.incomplete(format!("{}: deeper than {MAX_DEPTH} levels", dir.display()));
    }

    /// What the walk kept of a directory it listed: its `.git` files and links, its object
    /// files when it is part of an object store, and itself when it is a git dir.
    fn listed(&mut self, dir: &Path, listing: Listing) {
        let store = self.in_object_store(dir);
        for entry in listing.entries {
            let path = dir.join(std::ffi::OsStr::from_bytes(&entry.name));
            if *entry.name == *b".git" {
                self.dot_git(&path, entry.kind);
            } else if store && let Some(stat) = &entry.stat {
                self.object_file(path, stat);
            }
        }
        let Listing {
            head,
            objects,
            commondir,
            refs,
            ..
        } = listing;
        let dot_git = dir.file_name().is_some_and(|n| n == ".git");
        // A common dir needs no `HEAD`, only `objects` and `refs` (session-18 attack F1).
        // Git only asks `access(objects, X_OK)`: a link or an executable file will do.
        if dot_git || head && (objects || commondir) || objects && refs {
            self.git_dir(dir);
        }
    }

    /// A directory that cannot be listed: git still reaches entries by name (mode 0111), a
    /// gitlink's `.git` below it included. One not in the inventory as such goes aside.
    fn unlisted(&mut self, dir: &Path, depth: usize, e: &std::io::Error) {
        let Ok(meta) = std::fs::symlink_metadata(dir) else {
            return;
        };
        if self.changed(Seen::Unlisted, dir, observe(dir, &meta).0) {
            let what = format!("a directory that cannot be listed ({e}), not checked");
            self.report(dir.into(), what);
            return;
        }
        self.incomplete(format!("{} cannot be listed ({e})", dir.display()));
        let dot_git = dir.join(".git");
        if let Ok(meta) = std::fs::symlink_metadata(&dot_git) {
            if meta.is_dir() {
                self.dir(&dot_git, depth + 1);
            } else {
                self.dot_git(&dot_git, Kind::of_std(meta.file_type()));
            }
        }
        if std::fs::symlink_metadata(dir.join("HEAD")).is_ok() {
            self.git_dir(dir);
        }
    }

    /// A `.git` that is not a directory: a link, or a file naming a git dir.
    fn dot_git(&mut self, path: &Path, kind: Kind) {
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            return;
        };
        let (now, _) = observe(path, &meta);
        if !self.changed(Seen::Piece, path, now) {
            return;
        }
        if kind == Kind::Link {
            self.report(path.into(), "a symbolic link git follows to a repository".into());
            return;
        }
        if kind != Kind::File {
            return; // git refuses it
        }
        let target = match gitfile_target(path) {
            Ok(Some(target)) => target,
            Ok(None) => return, // git refuses it too
            Err(e) => {
                self.report(path.into(), format!("a .git file that cannot be judged ({e})"));
                return;
            }
        };
        if std::fs::symlink_metadata(&target).is_err() {
            // Git takes it once it exists: a later launch could make it anywhere the agent can
            // write (its state volume included), after this check (session-10 attack S10-9).
            let what = format!(
                "a .git file naming {}, which does not exist (yet)",
                target.display()
            );
            self.report(path.into(), what);
        } else if self.roots.iter().any(|r| target.starts_with(r)) {
            // Only the pairs git makes itself: otherwise the directory becomes a checkout of a
            // repository whose hooks and relative paths nothing compared from here (session-18
            // attacks E1, E2: `gitdir: ../.git`).
            // The file goes aside, and git reaches that git dir from here no more; the git dir
            // itself is judged where the walk meets it, by its own changes (judging it in full
            // from here moved the user's own hooks aside).
            if !state::names_back(path, &target) || !self.common_dir_known(&target) {
                let what = format!(
                    "a .git file naming {}, which is neither a worktree entry nor a submodule's git dir naming this directory back",
                    target.display()
                );
                self.report(path.into(), what);
                return;
            }
            // Inside: judged in full, wherever it hides.
            let full = std::mem::replace(&mut self.full, true);
            self.git_dir(&target);
            self.full = full;
        } else {
            let empty = HashMap::new();
            let mut outside = Walk::new(self.roots, &[], Some(&empty));
            outside.full = true;
            outside.git_dir(&target);
            // New or changed, it sends git (and the hooks of that repository, run with this
            // directory as their worktree) elsewhere: aside whatever it names.
            let why = match outside.out.findings.first() {
                Some(f) => format!(": {}: {}", f.path.display(), f.what),
                None => String::new(),
            };
            let what = format!(
                "a .git file naming {} outside the workspace{why}",
                target.display()
            );
            self.report(path.into(), what);
        }
    }

    /// The executable pieces of the git dir `dir`: all of them judged when the directory is
    /// not the one the inventory holds at this path.
    fn git_dir(&mut self, dir: &Path) {
        let Ok(meta) = std::fs::symlink_metadata(dir) else {
            return;
        };
        let outer = self.full;
        let now = observe(dir, &meta).0;
        let made = self
            .before
            .is_some_and(|b| b.get(&(Seen::GitDir, dir.to_path_buf())) != Some(&now));
        self.full = self.changed(Seen::GitDir, dir, now);
        if made {
            self.module_made(dir);
        }
        self.object_store(dir);
        // A relative `core.hooksPath` is taken from where hooks run: each worktree's top.
        let tops = self.tops(dir);
        for name in ["config", "config.worktree"] {
            self.config(&dir.join(name), &tops, 0);
        }
        self.commondir(dir);
        self.worktree_shapes(dir);
        self.hooks(&dir.join("hooks"));
        for top in &tops {
            self.hook_programs(&dir.join("hooks"), top);
        }
        // Remotes of old: git fetches from and pushes to a URL in `remotes/NAME` or
        // `branches/NAME` when the config has no such remote (`git remote -v` shows none).
        for kind in ["remotes", "branches"] {
            self.entries_in(&dir.join(kind), kind, |name| {
                Some(format!("a remote git fetches and pushes with ({kind}/{name})"))
            });
        }
        self.shown_differently(dir);
        self.index(&dir.join("index"));
        self.refs(dir);
        self.in_progress(dir);
        self.full = outer;
    }

    /// The hooks in `hooks` (a git dir's, or a `core.hooksPath`) that differ.
    fn hooks(&mut self, hooks: &Path) {
        self.entries_in(hooks, "hooks", |name| {
            (!name.ends_with(".sample")).then(|| format!("a hook git runs ({name})"))
        });
    }

    /// A git configuration file (of a git dir whose worktrees' tops are `tops`), and what it
    /// includes: `nesting` levels of `include.path` deep (git stops at 10).
    fn config(&mut self, path: &Path, tops: &[PathBuf], nesting: usize) {
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            return;
        };
        let (now, bytes) = observe(path, &meta);
        if let Ok(bytes) = &bytes
            && nesting < 10
        {
            self.named_by(path, bytes, tops, nesting);
        }
        if !self.changed(Seen::Piece, path, now) {
            return;
        }
        let what = if !meta.is_file() {
            "git configuration that is not a regular file".to_string()
        } else if meta.len() > MAX_CONFIG_BYTES {
            "git configuration over 1 MiB".to_string()
        } else {
            match bytes {
                Err(e) => format!("git configuration that cannot be read ({e})"),
                Ok(text) => {
                    let mut risky = risky_keys(&text);
                    risky.extend(self.outside(path, &text, tops));
                    if risky.is_empty() {
                        return;
                    }
                    format!("git configuration that can run programs: {}", risky.join(", "))
                }
            }
        };
        self.report(path.into(), what);
    }
}

#[cfg(test)]
#[path = "git_inventory_tests.rs"]
mod tests;
