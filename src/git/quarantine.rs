//! The git check around a launch: the inventory of the workspace's git metadata is taken on a
//! thread of its own before the container starts ([`begin`]); after the container is gone, and
//! before any finished hook runs, what differs from it and would run a program is moved aside
//! (`workspace::git_inventory` finds it), so that the next `git` on the host — yours, your shell
//! prompt's, a hook's — does not run it, and stderr says what each piece would have run and how
//! to put it back after reviewing it.
//!
//! Each piece is renamed to `NAME.ags-quarantine` in its own directory by
//! `workspace::quarantine` (no symbolic link followed from the walked root down, nothing
//! replaced, nothing deleted); what cannot be moved ends the launch with 125
//! ([`Quarantine::unmoved`]).

use std::path::{Path, PathBuf};

use crate::config::GitSettings;
use crate::containment::WritableRoot;
use crate::git::model::guard::GitGuard;
use crate::text::shell_word;
use crate::workspace::git_commits;
use crate::workspace::git_inventory::{self, Finding, Inventory};
use crate::workspace::host_programs::{self, Wanted};
use crate::workspace::protected::{Handling, Protection};
use crate::workspace::protected_state::shown;
use crate::workspace::quarantine::Naming;

/// What was found and done.
#[derive(Debug, Default)]
pub struct Quarantine {
    /// Notes for the roots whose permissions the agent had taken and `ags` gave back.
    pub restored: Vec<String>,
    /// Each planted piece, and where it went (or why it could not be moved).
    pub moved: Vec<(Finding, Result<PathBuf, String>)>,
    /// Where the scan stopped early.
    pub incomplete: Vec<String>,
    /// Index entries the launch hid from `git status`, by index file (named only).
    pub hidden: Vec<(PathBuf, Vec<String>)>,
    /// Protected paths the launch staged, by index file.
    pub staged: Vec<(PathBuf, Vec<String>)>,
    /// Why everything was judged (the inventory was no baseline: attack3-1).
    pub distrusted: Option<String>,
    /// The git dirs whose refs gained object names: their commits are read by [`commits`].
    pub moved_refs: Vec<git_inventory::MovedRefs>,
    /// Indexes the launch changed that could not be written back without the caches git
    /// trusts blindly, and why.
    pub unrewritten: Vec<(PathBuf, String)>,
    /// Pack indexes the launch made: verified by [`commits`].
    pub new_packs: Vec<PathBuf>,
    /// Loose objects the launch made: verified by [`commits`].
    pub new_loose: Vec<PathBuf>,
    /// The walked roots (where pieces are moved aside from).
    roots: Vec<PathBuf>,
}

/// What reading the commits of a launch needs: where `git` may come from.
#[derive(Debug, Default)]
pub struct CommitReading {
    /// `[git] path`.
    pub pinned: Option<PathBuf>,
    /// The directories the agent can write (this launch's and running launches' read-write
    /// mounts): `git` is never taken from them.
    pub writable: Vec<WritableRoot>,
    /// `[protect] allow`: protected paths the agent may change.
    pub allowed: Vec<&'static str>,
}

impl CommitReading {
    /// From the `[git]` settings, the agent-`writable` roots and the launch's `protection`.
    pub fn new(git: &GitSettings, writable: Vec<WritableRoot>, protection: &Protection) -> Self {
        let allowed = protection
            .paths
            .iter()
            .filter(|p| p.handling == Handling::Allowed);
        CommitReading {
            pinned: git.program.clone(),
            writable,
            allowed: allowed.map(|p| p.rel).collect(),
        }
    }
}

/// The host `git` (`workspace::host_programs`).
const GIT: Wanted<'static> = Wanted {
    name: "git",
    key: "[git] path",
    install: "Debian: apt-get install git",
};

/// After the git check `q` moved every planted piece aside (never while one is still in place:
/// git would run it): verify the packs the launch made, moving aside those whose entries do not
/// match their names (added to `q`), then read the commits the launch made
/// (`workspace::git_commits`) and name the protected files they touch. The stderr report
/// (empty when there is nothing to say).
pub async fn commits(q: &mut Quarantine, how: &CommitReading) -> String {
    if q.moved_refs.is_empty() && q.new_packs.is_empty() && q.new_loose.is_empty() {
        return String::new();
    }
    let mut out = loose_aside(q);
    if q.unmoved() > 0 {
        out.push_str("ags: warning: the commits and packs this launch made were not read: planted git configuration is still in place; remove it, then review them with `git log --stat` and `git fsck` before you push or check out\n");
        return out;
    }
    let path = std::env::var_os("PATH");
    let uid = nix::unistd::getuid().as_raw();
    let git = host_programs::resolve(GIT, how.pinned.as_deref(), path.as_deref(), &how.writable, uid)
        .map_err(|e| e.to_string());
    let git = git.as_ref().map(|g| g.path()).map_err(Clone::clone);
    match &git {
        Ok(g) => {
            for (idx, why) in git_commits::verify_packs(g, &q.new_packs).await {
                out.push_str(&pack_aside(q, &idx, &why));
            }
        }
        Err(e) if !q.new_packs.is_empty() => out.push_str(&format!(
            "ags: warning: the packs this launch made were not verified ({}); run `git fsck` before you check out or push\n",
            crate::text::escape_line(e)
        )),
        Err(_) => {}
    }
    if !q.moved_refs.is_empty() {
        let found = git_commits::read(git, &q.moved_refs, &how.allowed).await;
        out.push_str(&commits_message(&found));
    }
    out
}

/// The report of one piece moved aside (or not). A piece renamed inside a directory that went
/// aside too is named where it lies once that directory is put back (its line comes after the
/// directory's), so the `mv` lines work in order.
fn moved_line(f: &Finding, to: &Result<PathBuf, String>) -> String {
    let from = crate::text::escape_line(&f.path.display().to_string());
    let what = crate::text::escape_line(&f.what);
    match to {
        Ok(to) => {
            let inside_moved = to.parent() != f.path.parent();
            let to = to
                .file_name()
                .map_or_else(|| to.clone(), |n| f.path.with_file_name(n));
            let when = match inside_moved {
                true => " (after putting back the directory above)",
                false => "",
            };
            format!(
                "ags:   {from}: {what}\nags:     review it, and only if you trust it{when}: mv {} {}\n",
                shell_word(&crate::text::escape_line(&to.display().to_string())),
                shell_word(&from),
            )
        }
        Err(e) => {
            format!("ags:   {from}: {what}\nags:     NOT MOVED ({e}): remove it before you run git there\n")
        }
    }
}

/// Verify the loose objects the launch made or touched by their own content, and move aside
/// those that do not hash to their name (recorded in `q`): the report.
fn loose_aside(q: &mut Quarantine) -> String {
    let mut out = String::new();
    for path in q.new_loose.clone() {
        match git_inventory::loose_matches(&path) {
            Ok(true) => {}
            Ok(false) => {
                let what = "a loose object whose content does not match its name: it stands in for an object you had".to_string();
                let finding = Finding { path: path.clone(), what };
                let to = move_aside(&q.roots, &path);
                out.push_str(&format!("ags: warning: the launch left a forged object; moved aside:\n{}", moved_line(&finding, &to)));
                q.moved.push((finding, to));
            }
            Err(e) => out.push_str(&format!(
                "ags: warning: the object {} was not verified ({}); run `git fsck` there before you check out or push\n",
                crate::text::escape_line(&path.display().to_string()),
                crate::text::escape_line(&e)
            )),
        }
    }
    out
}

/// Move the pack of `idx` aside (each `NAME.*` of its directory), recorded in `q`: its report.
fn pack_aside(q: &mut Quarantine, idx: &Path, why: &str) -> String {
    let what = format!(
        "a pack whose objects do not match their names (git verify-pack: {why}): it shadows objects you had"
    );
    let stem = idx.with_extension("");
    let mut out = "ags: warning: the launch left a forged pack; moved aside:\n".to_string();
    for ext in ["idx", "pack", "rev", "bitmap", "mtimes", "keep", "promisor"] {
        let path = stem.with_extension(ext);
        if std::fs::symlink_metadata(&path).is_err() {
            continue;
        }
        let finding = Finding {
            path: path.clone(),
            what: what.clone(),
        };
        let to = move_aside(&q.roots, &path);
        out.push_str(&moved_line(&finding, &to));
        q.moved.push((finding, to));
    }
    out
}

fn commits_message(found: &git_commits::Commits) -> String {
    let mut out = String::new();
    for t in found.touched.iter().take(20) {
        let short = &t.commit[..t.commit.len().min(12)];
        out.push_str(&format!(
            "ags: warning: commit {short} of this launch changes {} in {}, which {} runs on its own; review it before you push or check it out (`git show {short} -- {}`)\n",
            crate::text::escape_line(&t.path),
            crate::text::escape_line(&t.git_dir),
            t.tool,
            shell_word(&crate::text::escape_line(&t.path)),
        ));
    }
    if found.touched.len() > 20 {
        out.push_str(&format!(
            "ags: warning: and {} more such changes in the commits of this launch; review them with `git log --stat` before you push\n",
            found.touched.len() - 20
        ));
    }
    for u in &found.unread {
        out.push_str(&format!(
            "ags: warning: the commits this launch made were not read in full: {}; review them with `git log --stat` before you push\n",
            crate::text::escape_line(u)
        ));
    }
    out
}

/// The inventory being taken: a launch refused before its container starts does not wait for it.
#[derive(Debug)]
pub struct Pending(std::thread::JoinHandle<Inventory>);

/// Start taking the inventory of `roots`.
pub fn begin(roots: Vec<PathBuf>) -> Pending {
    Pending(std::thread::spawn(move || git_inventory::take(&roots)))
}

impl Pending {
    /// The inventory, once taken.
    pub async fn finish(self) -> Inventory {
        let joined = tokio::task::spawn_blocking(move || self.0.join())
            .await
            .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
        joined.unwrap_or_else(|p| std::panic::resume_unwind(p))
    }
}

/// `inventory`, distrusted when one of the `running` local ags containers holds a read-write
/// mount overlapping a walked tree: its agent could have planted something while the inventory
/// was taken, and hide it until this launch ran (attack3-1); the check then judges every git
/// dir.
pub fn against(mut inventory: Inventory, running: &[WritableRoot]) -> Inventory {
    let shared = running.iter().find_map(|r| {
        let overlap = |w: &PathBuf| w.starts_with(&r.path) || r.path.starts_with(w);
        inventory
            .roots()
            .iter()
            .find(|w| overlap(w))
            .map(|w| (w.clone(), r))
    });
    if let Some((root, r)) = shared {
        inventory.distrust(format!("{} was also writable by the {}", root.display(), r.owner));
    }
    inventory
}

/// Compare the trees of `before` with it (the read-only `guards` excepted: the agent could not
/// write them — but not a read-only repository around a root) and move every planted piece
/// aside.
pub fn run(before: &Inventory, guards: &[GitGuard]) -> Quarantine {
    let roots = before.roots();
    let restored = crate::workspace::quarantine::restore_access(roots);
    let skip: Vec<PathBuf> = guards
        .iter()
        .filter(|g| g.read_only && !roots.iter().any(|r| r.starts_with(&g.path)))
        .map(|g| g.path.clone())
        .collect();
    let scan = git_inventory::check(before, &skip);
    // Sorted: a directory comes before what lies in it, which goes aside with it.
    let mut moved: Vec<(Finding, Result<PathBuf, String>)> = Vec::new();
    for f in scan.findings {
        // A piece in a directory that already went aside is renamed where it now lies: a
        // directory moved whole keeps working under its new name for whatever points at it (a
        // `.git` file through a link made to dangle during the check: session-18 attack A3).
        let within = moved
            .iter()
            .filter_map(|(m, to)| Some((m.path.as_path(), to.as_ref().ok()?)))
            .filter_map(|(m, to)| f.path.strip_prefix(m).ok().map(|rest| (m, to.join(rest))))
            .max_by_key(|(m, _)| m.as_os_str().len())
            .map(|(_, now)| now);
        let to = move_aside(roots, within.as_deref().unwrap_or(&f.path));
        if within.is_none()
            && let Ok(aside) = &to
        {
            packed_refs_back(roots, &f.path, aside);
        }
        moved.push((f, to));
    }
    // Not in what went aside whole (a git dir judged in full).
    let rewritten = scan
        .index_rewrites
        .iter()
        .filter(|r| {
            !moved
                .iter()
                .any(|(f, to)| to.is_ok() && r.path.starts_with(&f.path))
        })
        .filter_map(|r| rewrite_index(roots, r).err().map(|e| (r.path.clone(), e)))
        .collect();
    Quarantine {
        restored,
        moved,
        unrewritten: rewritten,
        incomplete: scan.incomplete,
        hidden: scan.hidden,
        staged: scan.staged,
        distrusted: before.distrusted().map(str::to_string),
        moved_refs: scan.moved_refs,
        new_packs: scan.new_packs,
        new_loose: scan.new_loose,
        roots: roots.to_vec(),
    }
}

impl Quarantine {
    /// How many planted pieces are still in place.
    pub fn unmoved(&self) -> usize {
        self.moved.iter().filter(|(_, to)| to.is_err()).count()
    }

    /// The stderr report (empty when there is nothing to say).
    pub fn message(&self) -> String {
        let mut out = self.restored.concat();
        // Caches git rebuilds (an agent's `git gc` writes a commit-graph): a note, not an alarm
        // (session-13 FP1).
        let (caches, planted): (Vec<_>, Vec<_>) = self
            .moved
            .iter()
            .partition(|(f, to)| to.is_ok() && f.what.starts_with(git_inventory::CACHE_WHAT));
        if !planted.is_empty() {
            out.push_str("ags: warning: the launch left git state that would run programs or bring in commits nobody reviewed when git runs on this host (your `git status` included); moved aside:\n");
            if let Some(why) = &self.distrusted {
                out.push_str(&format!(
                    "ags:   (all of it, yours included: {}, so what was there when this launch started is no proof of what you had; run one launch at a time on a tree to keep yours in place)\n",
                    crate::text::escape_line(why)
                ));
            }
            for (f, to) in planted {
                out.push_str(&moved_line(f, to));
            }
        }
        for (f, to) in caches {
            if let Ok(to) = to {
                out.push_str(&format!(
                    "ags: note: the launch rewrote {}, a cache git rebuilds by itself (a forged one could hide commits from `git log`); moved aside, delete it: rm -r {}\n",
                    crate::text::escape_line(&f.path.display().to_string()),
                    shell_word(&crate::text::escape_line(&to.display().to_string())),
                ));
            }
        }
        for (index, entries) in &self.hidden {
            out.push_str(&format!(
                "ags: warning: the launch hid files from `git status` and `git diff` in the index {}: {}; review them before you commit, push or run them (show one with `git update-index --no-skip-worktree --no-assume-unchanged -- FILE`)\n",
                crate::text::escape_line(&index.display().to_string()),
                shown(entries)
            ));
        }
        for (index, paths) in &self.staged {
            out.push_str(&format!(
                "ags: warning: the launch staged files host tools run in the index {}: {}; `git checkout .`, `git restore .` and `git commit` take them from there even when the file is not on disk: review with `git diff --cached`, drop with `git restore --staged -- FILE`\n",
                crate::text::escape_line(&index.display().to_string()),
                shown(paths)
            ));
        }
        for (index, why) in &self.unrewritten {
            out.push_str(&format!(
                "ags: warning: the index {} changed in the launch and could not be rechecked ({}): `git status` and `git commit` may trust what the launch wrote there; run `git update-index --really-refresh` and review `git diff HEAD` before you commit\n",
                crate::text::escape_line(&index.display().to_string()),
                crate::text::escape_line(why)
            ));
        }
        for i in &self.incomplete {
            out.push_str(&format!(
                "ags: warning: the check for planted git configuration is incomplete: {}\n",
                crate::text::escape_line(i)
            ));
        }
        out
    }
}

/// Write an index back without what git trusts blindly (`workspace::quarantine`), from the
/// inventory root that holds it (none: from `/`, no symbolic link on the way).
fn rewrite_index(roots: &[PathBuf], r: &git_inventory::IndexRewrite) -> Result<(), String> {
    let root = root_of(roots, &r.path);
    let rel = r
        .path
        .strip_prefix(root)
        .map_err(|_| "not an absolute path".to_string())?;
    crate::workspace::quarantine::replace_index(root, rel, r.read, &r.bytes).map_err(|e| e.to_string())
}

/// When `path` was a `packed-refs` moved aside to `aside` (it held a replace ref), put a copy
/// without the replace refs in its place, so that your packed branches and tags stay (and
/// putting the original back is not the only way to get them). Best effort: without it your
/// packed refs are only in `aside`, which the report names.
fn packed_refs_back(roots: &[PathBuf], path: &Path, aside: &Path) {
    if path.file_name().is_none_or(|n| n != "packed-refs") {
        return;
    }
    let Ok(out) = crate::workspace::git_inventory::packed_refs_without_replace(aside) else {
        return;
    };
    let root = root_of(roots, path);
    if let Ok(rel) = path.strip_prefix(root) {
        let _ = crate::workspace::quarantine::create_new(root, rel, &out);
    }
}

/// The inventory root that holds `path` (the longest), `/` when none does.
fn root_of<'r>(roots: &'r [PathBuf], path: &Path) -> &'r Path {
    roots
        .iter()
        .filter(|r| path.starts_with(r))
        .max_by_key(|r| r.as_os_str().len())
        .map_or(Path::new("/"), PathBuf::as_path)
}

/// Move `path` aside (`workspace::quarantine`), walking from the inventory root that holds it
/// (from `/` when none does: then no symbolic link may lie anywhere on its way).
fn move_aside(roots: &[PathBuf], path: &Path) -> Result<PathBuf, String> {
    if roots.iter().any(|r| r == path) {
        return Err("a root of the launch is never moved; look into it yourself".into());
    }
    let root = root_of(roots, path);
    let rel = path
        .strip_prefix(root)
        .map_err(|_| "not an absolute path".to_string())?;
    let parts: Vec<_> = path.iter().collect();
    let in_modules = parts.iter().any(|p| *p == "modules") && path.is_dir();
    let naming = if parts.windows(2).any(|w| w[0] == "refs" && w[1] == "replace") {
        Naming::Prefix
    } else if in_modules {
        Naming::Random
    } else {
        Naming::Suffix
    };
    crate::workspace::quarantine::move_aside_as(root, rel, naming).map_err(|e| e.to_string())
}
#[cfg(test)]
#[path = "quarantine_tests.rs"]
mod tests;
