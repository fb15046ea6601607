//! `ags gc --state`: remove the agents' state volumes (logins, sessions, history) of projects
//! whose directory no longer exists on this machine. State volumes are kept per project and are
//! never launch leftovers, so nothing else removes them; a deleted or moved project leaves its
//! volumes (and the logins in them) behind until this runs.
//!
//! Only a volume labelled with an absolute workdir that is definitely gone from a parent
//! directory that is still there qualifies: `shared` volumes (`[sandbox] shared_state`), a
//! workdir whose parent is missing too (a disk not mounted now), one this process cannot look at
//! (permission denied) and anything not absolute are kept. The service must be on this machine (a unix socket): a
//! remote service's volumes name that machine's directories.

use std::path::Path;

use crate::plan::{LABEL_STATE_AGENT, LABEL_STATE_WORKDIR};
use crate::podman::{Client, PodmanError};

/// What `ags gc --state` did.
#[derive(Debug, Default)]
pub struct StateReport {
    /// Removed volumes: (name, agent, the project directory that is gone).
    pub removed: Vec<(String, String, String)>,
    /// Volumes of vanished projects kept because a container still uses them.
    pub in_use: Vec<String>,
    /// Failures (volume and reason).
    pub errors: Vec<String>,
}

/// The project directory of a state volume's `workdir` label when that directory is gone: an
/// absolute path that does not exist (a symlink counts as existing only if its target does)
/// while its parent directory does. A missing parent may be a disk that is not mounted now, so
/// that project is kept. `None` for `shared`, relative paths, and paths that cannot be checked.
pub fn vanished_project(workdir: &str) -> Option<&str> {
    let path = Path::new(workdir);
    let parent_here = path.parent().is_some_and(|p| p.is_dir());
    match path.is_absolute() && parent_here {
        true => matches!(path.try_exists(), Ok(false)).then_some(workdir),
        false => None,
    }
}

/// Remove the state volumes of vanished projects through `client` (a service on this machine).
pub async fn sweep_state(client: &Client) -> Result<StateReport, PodmanError> {
    let mut report = StateReport::default();
    for v in client.volume_list(&[LABEL_STATE_WORKDIR]).await? {
        let workdir = v
            .labels
            .get(LABEL_STATE_WORKDIR)
            .map(String::as_str)
            .unwrap_or("");
        let Some(gone) = vanished_project(workdir) else {
            continue;
        };
        let agent = v.labels.get(LABEL_STATE_AGENT).cloned().unwrap_or_default();
        match client.volume_delete(&v.name).await {
            Ok(()) => report.removed.push((v.name, agent, gone.to_owned())),
            Err(e) if e.is_not_found() => {}
            Err(e) if e.is_conflict() => report.in_use.push(v.name),
            Err(e) => report.errors.push(format!("volume {}: {e}", v.name)),
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_absolute_workdirs_that_are_gone_qualify() {
        let dir = tempfile::tempdir().unwrap();
        let here = dir.path().to_str().unwrap().to_owned();
        let gone = dir.path().join("deleted-project");
        let gone = gone.to_str().unwrap();
        assert_eq!(vanished_project(gone), Some(gone));
        assert_eq!(vanished_project(&here), None, "exists");
        assert_eq!(vanished_project("shared"), None);
        assert_eq!(vanished_project("relative/project"), None);
        assert_eq!(vanished_project(""), None);
        assert_eq!(vanished_project("/"), None);
        // Its parent missing too (a disk that is not mounted now): kept.
        let unmounted = dir.path().join("media/disk/project");
        assert_eq!(vanished_project(unmounted.to_str().unwrap()), None);
        // A symlink to a deleted directory: the project is gone.
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &link).unwrap();
        assert_eq!(vanished_project(link.to_str().unwrap()), link.to_str());
    }

    #[test]
    fn a_workdir_that_cannot_be_checked_is_kept() {
        if nix::unistd::geteuid().is_root() {
            return; // root searches any directory
        }
        let dir = tempfile::tempdir().unwrap();
        let locked = dir.path().join("locked");
        std::fs::create_dir(&locked).unwrap();
        let inside = locked.join("project");
        std::fs::set_permissions(&locked, std::os::unix::fs::PermissionsExt::from_mode(0o000)).unwrap();
        let kept = vanished_project(inside.to_str().unwrap());
        std::fs::set_permissions(&locked, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
        assert_eq!(kept, None);
    }
}
