//! What the walk judges beyond a config's keys: a `core.worktree`, or a remote's or
//! submodule's local-path URL, naming a directory outside the walked trees
//! ([`Walk::outside`]: git checks files out, or pushes, and runs that repository's hooks
//! there), and an operation the launch left in progress in a git dir —
//! `rebase-merge/`, `rebase-apply/`, `sequencer/`, `BISECT_*`, `MERGE_AUTOSTASH` — whatever it
//! holds ([`Walk::in_progress`]). Also the files that change what git shows you or puts in your
//! commits ([`Walk::shown_differently`]).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::state::REPLACE;

use super::{Seen, Walk, observe};
use crate::git::model::guard;

impl Walk<'_> {
    /// A `commondir` that changed: it may only name the git dir itself or, in
    /// `worktrees/NAME/`, the repository's.
    pub(super) fn commondir(&mut self, dir: &Path) {
        let path = dir.join("commondir");
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            return;
        };
        if !self.changed(Seen::Piece, &path, observe(&path, &meta).0) {
            return;
        }
        let named = guard::common_dir(dir).ok();
        let own = dir.canonicalize().ok();
        let entry_of = guard::entry_common(dir).and_then(|p| p.canonicalize().ok());
        // Its own dir only as the guard of the next launch accepts it, `.` exactly: `./` passed
        // here and stopped every later launch (session-18 attack E3).
        let own = own.filter(|_| guard::is_self_commondir(&path));
        let expected = named.is_some() && (named == own || named == entry_of);
        if !meta.is_file() || !expected {
            let to = named.map_or("something unreadable".into(), |n| n.display().to_string());
            self.report(path, format!("a commondir sending git to {to}"));
        }
    }

    /// A submodule's git dir (`GIT_DIR/modules/NAME`) that is new to the inventory: `git
    /// submodule update` checks out the commit a gitlink names from it without fetching, and
    /// its history was never read (session-12 attack H7). Once it is gone, git clones the
    /// submodule afresh from the URL `.gitmodules` names.
    pub(super) fn module_made(&mut self, dir: &Path) {
        let module = dir.ancestors().skip(1).any(|a| {
            a.file_name().is_some_and(|n| n == "modules")
                && a.parent().is_some_and(|p| {
                    p.join("HEAD").exists() && (p.join("objects").exists() || p.join("commondir").exists())
                })
        });
        if module {
            let what = "a submodule's git dir the launch made: `git submodule update` checks out its commits, which were not read, without fetching them";
            self.report(dir.into(), what.into());
        }
    }

    /// For a worktree entry `target` (`COMMON/worktrees/NAME`): whether `COMMON` is a git dir
    /// the inventory held, unchanged. Git takes config, hooks and refs from there, and the agent
    /// can write an entry and a common dir of its own (without `HEAD`, which the walk would
    /// not take for a git dir: session-18 attack F1). Anything else is no worktree entry.
    pub(super) fn common_dir_known(&self, target: &Path) -> bool {
        let Some(common) = guard::entry_common(target) else {
            return true;
        };
        let Ok(meta) = std::fs::symlink_metadata(common) else {
            return false;
        };
        let now = observe(common, &meta).0;
        self.before
            .is_some_and(|b| b.get(&(Seen::GitDir, common.to_path_buf())) == Some(&now))
    }

    /// What the next launch's guard (`git::model::guard`) would refuse under `worktrees/`: a
    /// `worktrees` that is no directory, an entry's `gitdir`, `commondir` or `config.worktree`
    /// that is no regular file. New or changed, it goes aside; left, every later launch would
    /// stop (session-18 attack C6).
    pub(super) fn worktree_shapes(&mut self, dir: &Path) {
        let worktrees = dir.join("worktrees");
        let Ok(meta) = std::fs::symlink_metadata(&worktrees) else {
            return;
        };
        if !meta.is_dir() {
            if self.changed(Seen::Piece, &worktrees, observe(&worktrees, &meta).0) {
                let what = "a `worktrees` that is not a directory (no launch could guard it)";
                self.report(worktrees, what.into());
            }
            return;
        }
        let entries = std::fs::read_dir(&worktrees).into_iter().flatten().flatten();
        for entry in entries.filter(|e| e.file_type().is_ok_and(|t| t.is_dir())) {
            for name in ["gitdir", "commondir", "config.worktree"] {
                let path = entry.path().join(name);
                let Ok(meta) = std::fs::symlink_metadata(&path) else {
                    continue;
                };
                if !meta.is_file() && self.changed(Seen::Piece, &path, observe(&path, &meta).0) {
                    let what = format!(
                        "a linked worktree's {name} that is not a regular file (no launch could guard it)"
                    );
                    self.report(path, what);
                }
            }
        }
    }

    /// The operations in progress of the git dir `dir` the launch started or changed, whatever
    /// they hold: each names commits that `git rebase --abort`/`--continue`, `git cherry-pick
    /// --abort`, `git bisect reset` or `git merge --abort` checks out, moves a branch to,
    /// commits or applies (commits no ref holds, which the commit reader does not see), or
    /// commands they run (session-12 attacks H1–H8). An agent has no reason to leave one to you.
    pub(super) fn in_progress(&mut self, dir: &Path) {
        for (name, what) in IN_PROGRESS {
            let path = dir.join(name);
            if self.tree_changed(&path, 0) {
                let back = way_back(&path);
                self.report(path, format!("{what}{back}"));
            }
        }
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let what = match name.to_string_lossy().as_ref() {
                "MERGE_AUTOSTASH" => {
                    "a merge the launch left in progress: `git merge --abort` applies the stash this names"
                }
                n if n.starts_with("BISECT_") => {
                    "a bisection the launch left in progress: `git bisect reset` checks out the commit this names"
                }
                _ => continue,
            };
            let path = entry.path();
            if self.tree_changed(&path, 0) {
                self.report(path, what.into());
            }
        }
    }

    /// Whether `path` or anything below it (a few levels) is not what the inventory holds;
    /// while taking the inventory: record them all.
    fn tree_changed(&mut self, path: &Path, depth: usize) -> bool {
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            return false;
        };
        if self.changed(Seen::Piece, path, observe(path, &meta).0) || depth > 4 {
            return self.before.is_some();
        }
        let listed = meta.is_dir().then(|| std::fs::read_dir(path).ok()).flatten();
        for entry in listed.into_iter().flatten().flatten() {
            if self.tree_changed(&entry.path(), depth + 1) {
                return true;
            }
        }
        false
    }

    /// The files of the git dir `dir` that change what git shows you or puts in your commits
    /// without running anything (session-10 attack S10-6: a changed `Makefile` hidden from
    /// `git status`): `info/exclude`, `info/attributes`, `info/sparse-checkout`, `info/grafts`
    /// and `objects/info/alternates` with anything but comments, and every replace ref.
    pub(super) fn shown_differently(&mut self, dir: &Path) {
        for rel in HIDING_FILES {
            let path = dir.join(rel);
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            let (now, bytes) = observe(&path, &meta);
            if !self.changed(Seen::Piece, &path, now) {
                continue;
            }
            let said = bytes.map_or(true, |b| {
                String::from_utf8_lossy(&b)
                    .lines()
                    .any(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            });
            if said {
                let what = format!("a file that changes what git shows you or commits ({rel})");
                self.report(path, what);
            }
        }
        self.replace_refs(&dir.join("refs/replace"));
        // Refs in the reftable format, which nothing here reads: replace refs and moved
        // branches could hide in them (session-18 attack C5).
        let reftable = dir.join("reftable");
        if self.tree_changed(&reftable, 0) {
            let what = "refs in the reftable format the launch changed, which ags cannot read (a replace ref could hide there)";
            self.report(reftable, what.into());
        }
        self.packed_replace_refs(&dir.join("packed-refs"));
        // Recorded conflict resolutions: an `rr-cache` alone turns rerere on, and git replays
        // the agent's resolution into your next merge, rebase or cherry-pick (session-12
        // attack G4).
        let replayed = |name: &str| {
            Some(format!(
                "a recorded conflict resolution git replays at your next merge ({name})"
            ))
        };
        let rr_cache = dir.join("rr-cache");
        self.entries_in(&rr_cache, "rr-cache", replayed);
        // And inside each recorded conflict (`preimage`, `postimage`).
        let conflicts = std::fs::read_dir(&rr_cache).into_iter().flatten().flatten();
        for c in conflicts.filter(|c| c.file_type().is_ok_and(|t| t.is_dir())) {
            self.entries_in(&c.path(), "rr-cache", replayed);
        }
        // Caches git trusts over the objects they index (session-12 attack F2: a commit-graph
        // giving an old commit a new parent hid the launch's commits from `git log` and from
        // the commit reader). Git rebuilds them; without one it reads the objects.
        for rel in CACHES {
            let path = dir.join(rel);
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if self.changed(Seen::Piece, &path, observe(&path, &meta).0) {
                let what = format!("{CACHE_WHAT} ({rel}), rebuilt by `git gc`");
                self.report(path, what);
            }
        }
    }

    /// Every replace ref below `top` (`refs/replace`) that differs: git reads them at any depth,
    /// the object id from the last component (session-18 attack A2: `refs/replace/x/<oid>`).
    /// Each ref is a finding of its own, so that each is renamed. At most
    /// [`MAX_REPLACE_DIRS`] directories are read; past that the check says it stopped.
    fn replace_refs(&mut self, top: &Path) {
        let what = |name: &str| {
            Some(format!(
                "a replace ref: git shows and commits another object in place of {name}"
            ))
        };
        let (mut todo, mut read) = (vec![top.to_path_buf()], 0);
        while let Some(dir) = todo.pop() {
            read += 1;
            if read > MAX_REPLACE_DIRS {
                self.incomplete(format!(
                    "{}: more than {MAX_REPLACE_DIRS} directories of replace refs, not all read",
                    top.display()
                ));
                return;
            }
            self.entries_in(&dir, "refs/replace", what);
            let subdirs = std::fs::read_dir(&dir).into_iter().flatten().flatten();
            todo.extend(
                subdirs
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| e.path()),
            );
        }
    }

    /// `packed-refs` when it differs and holds a replace ref (session-18 attack A2: `git
    /// pack-refs` after `git replace` leaves no loose ref). Read line by line, unbounded in
    /// length but never through a link; unreadable counts as holding one.
    fn packed_replace_refs(&mut self, path: &Path) {
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            return;
        };
        if !self.changed(Seen::Piece, path, observe(path, &meta).0) {
            return;
        }
        let holds = crate::fsutil::open_nonblocking(path, false).map_or(true, |f| {
            use std::io::BufRead;
            std::io::BufReader::new(f).split(b'\n').any(|line| {
                // Anywhere in the line: git takes any blank after the object id (session-18
                // attack C3: a tab).
                line.map_or(true, |l| l.windows(REPLACE.len()).any(|w| w == REPLACE))
            })
        });
        if holds {
            let what = "packed refs holding a replace ref: git shows and commits another object in place of one of yours (your branches and tags packed in it go aside with it)";
            self.report(path.into(), what.into());
        }
    }

    /// The entries of the directory `dir` (`kind`: what it is, for the reports) that differ,
    /// each judged by `what` (`None`: harmless).
    pub(super) fn entries_in(&mut self, dir: &Path, kind: &str, what: impl Fn(&str) -> Option<String>) {
        let dir = dir.to_path_buf();
        let Ok(meta) = std::fs::symlink_metadata(&dir) else {
            return;
        };
        let changed = self.changed(Seen::Piece, &dir, observe(&dir, &meta).0);
        let listed = meta.is_dir().then(|| std::fs::read_dir(&dir).ok()).flatten();
        let Some(entries) = listed else {
            if changed {
                self.report(
                    dir,
                    format!("a {kind} directory that is not a listable directory"),
                );
            }
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if self.changed(Seen::Piece, &path, observe(&path, &meta).0)
                && let Some(what) = what(&entry.file_name().to_string_lossy())
            {
                self.report(path, what);
            }
        }
    }

    /// The settings of the config at `path` naming a directory outside the walked trees where
    /// git would run programs of that directory: `core.worktree` (git checks files out and runs
    /// the repository's hooks there), and a remote's or submodule's URL that is a local path or
    /// `file://` (`git push` runs the hooks of the repository it names: a bare repository the
    /// agent built in its state volume, session-15 attack R8-1). A relative `core.worktree` is
    /// taken from the git dir; a relative URL from where git runs, each of `tops` (session-18
    /// attack E1: not from the git dir's parent, which a `.git` file can put anywhere).
    pub(super) fn outside(&self, path: &Path, text: &[u8], tops: &[PathBuf]) -> Vec<String> {
        let Some(dir) = path.parent() else {
            return Vec::new();
        };
        let entries = crate::git::model::config_keys::entries(text).unwrap_or_default();
        let mut out = Vec::new();
        for (key, value) in entries {
            let Some(value) = value else { continue };
            let named: Vec<PathBuf> = if key == "core.worktree" {
                vec![dir.join(OsStr::from_bytes(&value))]
            } else if crate::git::model::config_keys::is_url(&key)
                && let Some(local) = local_path(&value)
            {
                if local.as_os_str().as_bytes().first() == Some(&b'~') {
                    // `~user/…`: git expands another user's home.
                    out.push(format!("{key} naming a home directory outside the workspace"));
                    continue;
                }
                let base = dir.parent().unwrap_or(dir);
                std::iter::once(base)
                    .chain(tops.iter().map(PathBuf::as_path))
                    .map(|b| b.join(&local))
                    .collect()
            } else {
                continue;
            };
            out.extend(named.iter().find_map(|n| self.path_problem(&key, n)));
        }
        out
    }

    /// What is wrong with `named`, which config key `key` names, if anything: a link in the
    /// workspace or `..` after a missing part on the way, nothing there yet, or outside.
    fn path_problem(&self, key: &str, named: &Path) -> Option<String> {
        let real = match super::state::strict(named) {
            Ok(real) => real,
            // A later launch decides where it leads (session-18 attacks A4, C2: a push URL
            // naming a link into the agent's state volume).
            Err(at) => {
                let shown = crate::text::escape_line(&at.display().to_string());
                return Some(format!(
                    "{key} naming a path through {shown}, a link in the workspace or a missing directory followed by `..`"
                ));
            }
        };
        let shown = crate::text::escape_line(&real.display().to_string());
        let inside = self.roots.iter().any(|r| real.starts_with(r));
        if inside && std::fs::symlink_metadata(&real).is_err() {
            // Not there yet: a later launch can make it a link out of the workspace, and this
            // config, unchanged then, is not judged again.
            Some(format!("{key} naming {shown}, which does not exist (yet)"))
        } else if !inside {
            Some(format!("{key} naming {shown} outside the workspace"))
        } else {
            None
        }
    }
}

/// The path a URL names when git reaches it on this machine: `file://[HOST]/PATH` (git drops
/// the host and decodes `%XX`), or a value with no scheme (`://`) and no `host:` before its
/// first `/` (git's scp-like ssh form). `~/` is expanded; `~user/` is left as it is.
fn local_path(url: &[u8]) -> Option<std::path::PathBuf> {
    let text = std::str::from_utf8(url).ok()?;
    if let Some(rest) = text.strip_prefix("file://") {
        let path = rest.find('/').map_or("/", |at| &rest[at..]);
        return Some(OsStr::from_bytes(&percent_decoded(path)).into());
    }
    let scp_host = text.split('/').next().is_some_and(|head| head.contains(':'));
    if text.contains("://") || scp_host || text.is_empty() {
        return None;
    }
    match text.strip_prefix("~/") {
        Some(rest) => Some(std::path::PathBuf::from(std::env::var_os("HOME")?).join(rest)),
        None => Some(text.into()),
    }
}

/// `text` with each `%XX` decoded, as git decodes a `file://` URL.
fn percent_decoded(text: &str) -> Vec<u8> {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = b.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (b[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// How a cache of [`CACHES`] is named: the report tells it from planted state by this.
pub const CACHE_WHAT: &str = "a cache git trusts over the objects it indexes";

/// The files of a git dir that change what git shows without running anything.
/// Object-store caches a launch may not leave changed: commit-graphs (parents, generations),
/// multi-pack indexes (where each object is).
const CACHES: &[&str] = &[
    "objects/info/commit-graph",
    "objects/info/commit-graphs",
    "objects/pack/multi-pack-index",
    "objects/pack/multi-pack-index.d",
];

/// How many directories below `refs/replace` are read.
const MAX_REPLACE_DIRS: usize = 10_000;

const HIDING_FILES: &[&str] = &[
    "info/exclude",
    "info/attributes",
    "info/sparse-checkout",
    "info/grafts",
    "objects/info/alternates",
];

/// How to leave a rebase whose state went aside (session-13 FP2: `git rebase --abort` then
/// says there is none): the branch it names in `head-name`, when that is a plain name.
fn way_back(state: &Path) -> String {
    let head = std::fs::read(state.join("head-name")).unwrap_or_default();
    let head = String::from_utf8_lossy(&head);
    let Some(branch) = head.trim().strip_prefix("refs/heads/") else {
        return String::new();
    };
    let plain = branch.len() < 200
        && branch
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._/-".contains(&b));
    match plain && !branch.starts_with('-') {
        true => {
            format!("; your branch {branch} is where it was: `git reset --merge && git checkout {branch}`")
        }
        false => String::new(),
    }
}

/// The directories of operations in progress, and what they are.
const IN_PROGRESS: &[(&str, &str)] = &[
    (
        "rebase-merge",
        "a rebase the launch left in progress: `git rebase --continue` or `--abort` acts on the commits it names",
    ),
    (
        "rebase-apply",
        "a rebase or `git am` the launch left in progress: `--continue` or `--abort` acts on the commits it names",
    ),
    (
        "sequencer",
        "a cherry-pick or revert the launch left in progress: `--continue` or `--abort` acts on the commits it names",
    ),
];
