//! The git data a checkout needs that lies outside the launch's read-write mounts (`[git]
//! repository`, on by default), so that `git status` and `git commit` work in the container:
//! - a linked worktree (`.git` is a file naming `…/.git/worktrees/NAME`): the repository's
//!   common git dir, read-write;
//! - a submodule's checkout (`.git` names `…/.git/modules/NAME`): that git dir, read-write;
//! - a subdirectory of a repository: the repository's top level, read-only (git compares the
//!   whole tree: with only `.git`, every file outside the workdir would show as deleted and
//!   `git add -A` would stage the deletions), its `.git` read-write, or what its `.git` file
//!   names as above.
//!
//! Each git dir gets the read-only guards of `config::git_guard` (config, hooks, commondir,
//! config.worktree, linked worktree entries, submodules), and nothing is ever created in it —
//! it is your repository, outside the workdir. Every directory mounted here keeps its host
//! path (the `.git` files name them by path), is checked by the containment rules like an
//! `--add-dir` (`Role::GitDir`, in `commands`), and is walked for planted git configuration
//! after the launch (`workspace::git_inventory`).
//!
//! I/O: reads `.git` entries and `commondir` files.

use std::path::{Path, PathBuf};

use super::git_guard::{
    Create, GitGuard, GitGuardError, common_dir, guard_file, guard_git_dir, is_plain_file, linked_git_dir,
    pinned, read_only,
};

/// What to mount for `root`'s checkout outside `roots` (empty when it needs nothing there).
pub fn outside(root: &Path, roots: &[PathBuf]) -> Result<Vec<GitGuard>, GitGuardError> {
    let inside = |p: &Path| roots.iter().any(|r| p.starts_with(r));
    let mut out = Vec::new();
    let mut dot_git = root.join(".git");
    if std::fs::symlink_metadata(&dot_git).is_err() {
        let Some(top) = root
            .ancestors()
            .skip(1)
            .find(|a| std::fs::symlink_metadata(a.join(".git")).is_ok())
        else {
            return Ok(out);
        };
        if inside(top) {
            return Ok(out); // a nested mount: its repository is mounted already
        }
        out.push(read_only(top));
        dot_git = top.join(".git");
    }
    let meta = std::fs::symlink_metadata(&dot_git).map_err(|e| GitGuardError {
        path: dot_git.clone(),
        reason: e.to_string(),
    })?;
    if meta.is_dir() {
        if !inside(&dot_git) {
            guard_git_dir(&dot_git, Create::Nothing, roots, &mut out)?;
        }
        return Ok(out);
    }
    if !meta.is_file() {
        return Err(GitGuardError {
            path: dot_git,
            reason: "it is neither a directory nor a file".into(),
        });
    }
    let git_dir = linked_git_dir(&dot_git)?;
    let common = common_dir(&git_dir)?;
    if !inside(&common) {
        guard_git_dir(&common, Create::Nothing, roots, &mut out)?;
    }
    if !inside(&git_dir) && !git_dir.starts_with(&common) {
        out.push(pinned(&git_dir));
        if is_plain_file(&git_dir.join("commondir"))? {
            out.push(read_only(&git_dir.join("commondir")));
        }
        guard_file(&git_dir.join("config.worktree"), None, &mut out)?;
    }
    Ok(out)
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
#[path = "git_outside_tests.rs"]
mod tests;
