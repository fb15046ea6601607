//! `ags gc --state`: find, and on the user's word remove, the agents' state volumes (logins,
//! sessions, history) of projects whose directory no longer exists on this machine. State
//! volumes are kept per project and are never launch leftovers, so nothing else removes them; a
//! deleted or moved project leaves its volumes (and the logins in them) behind until this runs.
//!
//! A volume is a candidate only when all of these hold:
//! - its `io.ags.state-workdir` label is an absolute path where nothing is (not even a
//!   dangling symlink), while its parent directory is there (a missing parent may be a disk
//!   that is not mounted now);
//! - its name is the one `ags` gives that agent's state in that directory
//!   ([`crate::agents::AgentProfile::state_volume`]), so a label that does not say the project
//!   exactly (a directory name that is not UTF-8, a hand-made volume) keeps it;
//! - it lies under the directory the user named, if any (`--under`).
//!
//! `shared` volumes (`[sandbox] shared_state`), workdirs this process cannot look at and volumes
//! a container still uses are kept. The service must be on this machine (a unix socket): a
//! remote service's volumes name that machine's directories. An empty mount point (an fstab disk
//! not mounted now) looks like a parent that is there: that is why the command lists what it
//! would remove and asks first.

use std::path::Path;

use crate::agents;
use crate::plan::{LABEL_STATE_AGENT, LABEL_STATE_WORKDIR};
use crate::podman::{Client, PodmanError};

/// A state volume whose project is gone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub name: String,
    pub agent: String,
    /// The project directory that no longer exists.
    pub workdir: String,
}

/// What removing the candidates did.
#[derive(Debug, Default)]
pub struct StateReport {
    pub removed: Vec<Candidate>,
    /// Candidates kept because a container still uses them.
    pub in_use: Vec<String>,
    /// Failures (volume and reason).
    pub errors: Vec<String>,
    /// The user pressed Ctrl-C at the question: nothing was removed.
    pub interrupted: bool,
}

/// The project directory of a state volume's `workdir` label when that directory is gone: an
/// absolute path where nothing is at all, while its parent directory is there. Anything at the
/// path keeps the volume, a dangling symlink included: the label is a canonical path, so a
/// symlink there was put in the project's place (by an agent working in a parent project, say).
/// `None` for `shared`, relative paths, a missing parent, and paths that cannot be checked.
pub fn vanished_project(workdir: &str) -> Option<&str> {
    let path = Path::new(workdir);
    let parent_here = path.parent().is_some_and(|p| p.is_dir());
    let nothing_there =
        || matches!(std::fs::symlink_metadata(path), Err(e) if e.kind() == std::io::ErrorKind::NotFound);
    (path.is_absolute() && parent_here && nothing_there()).then_some(workdir)
}

/// Whether `name` is the volume `ags` gives `agent`'s state for the project `workdir`.
pub fn is_agents_volume(name: &str, agent: &str, workdir: &str) -> bool {
    agents::find(agent).is_some_and(|profile| {
        profile
            .state
            .iter()
            .any(|dir| profile.state_volume(dir, Some(Path::new(workdir))) == name)
    })
}

/// The state volumes of vanished projects (under `under`, when given) on `client`'s service.
pub async fn candidates(client: &Client, under: Option<&Path>) -> Result<Vec<Candidate>, PodmanError> {
    let mut found = Vec::new();
    for v in client.volume_list(&[LABEL_STATE_WORKDIR]).await? {
        let label = |key: &str| v.labels.get(key).map(String::as_str).unwrap_or("");
        let (workdir, agent) = (label(LABEL_STATE_WORKDIR), label(LABEL_STATE_AGENT));
        let wanted = vanished_project(workdir).is_some()
            && is_agents_volume(&v.name, agent, workdir)
            && under.is_none_or(|u| Path::new(workdir).starts_with(u));
        if wanted {
            found.push(Candidate {
                name: v.name.clone(),
                agent: agent.to_owned(),
                workdir: workdir.to_owned(),
            });
        }
    }
    Ok(found)
}

/// Remove `candidates` (never forced: a volume in use is kept and said so).
pub async fn remove(client: &Client, candidates: Vec<Candidate>) -> StateReport {
    let mut report = StateReport::default();
    for c in candidates {
        match client.volume_delete(&c.name).await {
            Ok(()) => report.removed.push(c),
            Err(e) if e.is_not_found() => {}
            Err(e) if e.is_conflict() => report.in_use.push(c.name),
            Err(e) => report.errors.push(format!("volume {}: {e}", c.name)),
        }
    }
    report
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
        // A dangling symlink in the project's place, or a file: something is there, kept.
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &link).unwrap();
        assert_eq!(vanished_project(link.to_str().unwrap()), None);
        let file = dir.path().join("file");
        std::fs::write(&file, b"").unwrap();
        assert_eq!(vanished_project(file.to_str().unwrap()), None);
    }

    #[test]
    fn the_name_must_be_the_one_ags_gives_that_project() {
        let claude = agents::find("claude").unwrap();
        let name = claude.state_volume("/home/dev/.claude", Some(Path::new("/src/a")));
        assert!(is_agents_volume(&name, "claude", "/src/a"));
        assert!(
            !is_agents_volume(&name, "claude", "/src/b"),
            "another project's label"
        );
        assert!(!is_agents_volume(&name, "codex", "/src/a"), "another agent");
        assert!(!is_agents_volume(&name, "nosuchagent", "/src/a"));
        assert!(
            !is_agents_volume("my-volume", "claude", "/src/a"),
            "a hand-made volume"
        );
        // A directory whose name is not UTF-8 is labelled lossily: the label's path hashes to
        // another name, so its volume is never a candidate.
        use std::os::unix::ffi::OsStrExt;
        let raw = Path::new(std::ffi::OsStr::from_bytes(b"/src/caf\xe9"));
        let real = claude.state_volume("/home/dev/.claude", Some(raw));
        let label = raw.display().to_string();
        assert!(!is_agents_volume(&real, "claude", &label));
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
