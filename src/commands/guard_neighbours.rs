//! The git guards against a race with another live `ags` container (docs/security.md, "Git
//! configuration and hooks"). A guard is a bind mount of a path inside the workspace onto
//! itself, and Podman resolves that path again when it binds it: a container that can rename
//! the path could swap it for a symbolic link right then, and the guard would mount the link's
//! target — `.git/hooks -> ~/.ssh`, read-only, or a pinned `.git/worktrees/NAME -> ~/.ssh`,
//! read-write. Another launch's container cannot rename what it has mounted itself (`EBUSY`),
//! so a guard path inside a live container's read-write mount is accepted only when that
//! container has a mount at the path and at every directory between it and the read-write
//! mount; otherwise the launch is refused until that container ends. Pure: the neighbours come
//! from the Podman API (`podman::Client::live_neighbours`).

use std::path::{Path, PathBuf};

use crate::git::model::guard::{GitGuard, GitGuardError};
use crate::podman::Neighbour;

/// Refuse a guard that a live neighbour could swap while this launch binds it.
pub(super) fn check(guards: &[GitGuard], neighbours: &[Neighbour]) -> Result<(), GitGuardError> {
    for g in guards {
        for n in neighbours {
            if let Some(path) = swappable(&g.path, n) {
                return Err(GitGuardError {
                    path: g.path.clone(),
                    reason: format!(
                        "running ags container {} can write {} and could replace it by a symbolic link while this launch mounts it (it does not have {} mounted); wait for that container to end",
                        n.container,
                        path.display(),
                        path.display()
                    ),
                });
            }
        }
    }
    Ok(())
}

/// The first host path between `path` and a read-write bind of `n` (that bind excluded) that is
/// not a mount point in `n`, when `path` lies strictly inside such a bind.
fn swappable(path: &Path, n: &Neighbour) -> Option<PathBuf> {
    let mount_points: Vec<&Path> = n.binds.iter().map(|(_, dest, _)| dest.as_path()).collect();
    n.binds
        .iter()
        .filter(|(source, _, rw)| *rw && path != source && path.starts_with(source))
        .find_map(|(source, dest, _)| {
            path.ancestors()
                .take_while(|p| *p != source)
                .find(|p| {
                    let rel = p.strip_prefix(source).unwrap_or(p);
                    !mount_points.contains(&dest.join(rel).as_path())
                })
                .map(Path::to_path_buf)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(p: &str) -> GitGuard {
        GitGuard {
            path: p.into(),
            read_only: true,
            create: None,
        }
    }

    fn neighbour(binds: &[(&str, &str, bool)]) -> Neighbour {
        Neighbour {
            container: "ags-sibling".into(),
            binds: binds
                .iter()
                .map(|(s, d, rw)| (PathBuf::from(s), PathBuf::from(d), *rw))
                .collect(),
        }
    }

    #[test]
    fn a_sibling_that_mounts_the_same_guards_cannot_swap_them() {
        let sibling = neighbour(&[
            ("/w", "/w", true),
            ("/w/.git", "/w/.git", true),
            ("/w/.git/config", "/w/.git/config", false),
            ("/w/.git/hooks", "/w/.git/hooks", false),
        ]);
        let guards = [guard("/w/.git"), guard("/w/.git/config"), guard("/w/.git/hooks")];
        check(&guards, std::slice::from_ref(&sibling)).unwrap();
        // Outside the sibling's mounts: nothing it can do.
        check(&[guard("/other/.git/config")], std::slice::from_ref(&sibling)).unwrap();
    }

    #[test]
    fn a_guard_the_sibling_has_not_mounted_is_refused() {
        // The sibling started before the linked worktree existed: it can rename the entry.
        let sibling = neighbour(&[
            ("/w", "/w", true),
            ("/w/.git", "/w/.git", true),
            ("/w/.git/worktrees", "/w/.git/worktrees", true),
        ]);
        let e = check(&[guard("/w/.git/worktrees/wt/commondir")], &[sibling])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("ags-sibling")
                && e.contains("can write /w/.git/worktrees/wt/commondir")
                && e.contains("wait"),
            "{e}"
        );
        // A sibling without git guards (protect_git = false, or no .git when it started).
        let bare = neighbour(&[("/w", "/w", true)]);
        assert!(check(&[guard("/w/.git")], std::slice::from_ref(&bare)).is_err());
        // At another container path: the destinations count, not the sources.
        let moved = neighbour(&[("/w", "/workspace", true), ("/w/.git", "/workspace/.git", true)]);
        check(&[guard("/w/.git")], std::slice::from_ref(&moved)).unwrap();
        assert!(check(&[guard("/w/.git/config")], &[moved]).is_err());
    }
}
