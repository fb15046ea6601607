//! What the walk judges beyond a config's keys: a `core.worktree` naming a directory outside
//! the walked trees ([`Walk::worktree_outside`]: git checks files out and runs that
//! repository's hooks there), and an operation git left in progress in a git dir —
//! `rebase-merge/`, `rebase-apply/`, `sequencer/` — by what it runs when you continue it
//! (`git rebase --continue`, `git cherry-pick --continue`, which `git status` tells you to
//! type): the `exec` lines of its todo list run a shell command each, and a merge strategy
//! other than git's own runs a `git-merge-<name>` program found on `PATH`. [`judge`] is pure:
//! bytes in, a verdict out. Also the files that change what git shows you or puts in your
//! commits ([`Walk::shown_differently`]).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::{Seen, Walk, observe};
use crate::config::git_guard;

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
        let named = git_guard::common_dir(dir).ok();
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

    /// The files of an operation in progress that can run something when you continue it.
    pub(super) fn in_progress(&mut self, dir: &Path) {
        for name in FILES {
            let path = dir.join(name);
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            let (now, bytes) = observe(&path, &meta);
            if !self.changed(Seen::Piece, &path, now) {
                continue;
            }
            let what = match bytes {
                Ok(bytes) => judge(name, &bytes),
                Err(e) => Some(format!(
                    "a file of an operation in progress that cannot be read ({e})"
                )),
            };
            if let Some(what) = what {
                self.report(dir.into(), what);
                return; // the directory goes aside whole
            }
        }
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
        self.entries_in(&dir.join("refs/replace"), "refs/replace", |name| {
            Some(format!(
                "a replace ref: git shows and commits another object in place of {name}"
            ))
        });
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
                let what =
                    format!("a cache git trusts over the objects it indexes ({rel}), rebuilt by `git gc`");
                self.report(path, what);
            }
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

    /// A `core.worktree` of the config at `path` naming a directory outside the walked trees:
    /// git would check files out and run the repository's hooks there.
    pub(super) fn worktree_outside(&self, path: &Path, text: &[u8]) -> Option<String> {
        let dir = path.parent()?;
        let entries = crate::config::git_config_keys::entries(text).ok()?;
        let value = entries.into_iter().rev().find(|(k, _)| k == "core.worktree")?.1?;
        let named = dir.join(OsStr::from_bytes(&value));
        let real = named
            .canonicalize()
            .unwrap_or_else(|_| crate::safepath::normalize(&named));
        let inside = self.roots.iter().any(|r| real.starts_with(r));
        (!inside).then(|| format!("core.worktree naming {} outside the workspace", real.display()))
    }
}

/// The files of a git dir that change what git shows without running anything.
/// Object-store caches a launch may not leave changed: commit-graphs (parents, generations),
/// multi-pack indexes (where each object is).
const CACHES: &[&str] = &[
    "objects/info/commit-graph",
    "objects/info/commit-graphs",
    "objects/pack/multi-pack-index",
    "objects/pack/multi-pack-index.d",
];

const HIDING_FILES: &[&str] = &[
    "info/exclude",
    "info/attributes",
    "info/sparse-checkout",
    "info/grafts",
    "objects/info/alternates",
];

/// The files of such a directory that can run something.
pub(super) const FILES: &[&str] = &["git-rebase-todo", "todo", "strategy", "opts"];

/// The directories.
pub(super) const IN_PROGRESS_DIRS: &[&str] = &["rebase-merge", "rebase-apply", "sequencer"];

/// The strategies git carries itself (`resolve` and `octopus` in its own exec path).
const OWN_STRATEGIES: &[&str] = &["ort", "recursive", "resolve", "octopus", "ours", "subtree"];

/// What the file `name` of an operation in progress would run, when anything.
pub(super) fn judge(name: &str, bytes: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(bytes);
    match name {
        "git-rebase-todo" | "todo" => text
            .lines()
            .map(str::trim_start)
            .find(|l| matches!(l.split_whitespace().next(), Some("exec" | "x")))
            .map(|_| "a todo list with exec lines, run by `git rebase --continue`".to_string()),
        "strategy" => foreign_strategy(text.trim()),
        "opts" => match crate::config::git_config_keys::entries(bytes) {
            Ok(entries) => entries
                .iter()
                .filter(|(k, _)| k == "options.strategy")
                .find_map(|(_, v)| foreign_strategy(String::from_utf8_lossy(v.as_deref()?).trim())),
            Err(e) => Some(format!("sequencer options git may read otherwise ({e})")),
        },
        _ => None,
    }
}

fn foreign_strategy(name: &str) -> Option<String> {
    (!name.is_empty() && !OWN_STRATEGIES.contains(&name))
        .then(|| "a merge strategy that runs a git-merge-* program when you continue".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_lines_and_foreign_strategies_are_found() {
        assert!(judge("git-rebase-todo", b"pick 123 x\n  exec touch /tmp/p\n").is_some());
        assert!(judge("todo", b"pick 1 a\nx make\n").is_some());
        assert!(judge("git-rebase-todo", b"pick 123 exec\n# exec x\n").is_none());
        assert!(judge("strategy", b"evil\n").is_some());
        assert!(judge("strategy", b"ort\n").is_none());
        assert!(judge("opts", b"[options]\n\tstrategy = evil\n").is_some());
        assert!(judge("opts", b"[options]\n\tstrategy = recursive\n\tsignoff = true\n").is_none());
    }
}
