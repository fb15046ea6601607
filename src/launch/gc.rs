//! Reconciliation of leftovers: containers and volumes labelled `io.ags.managed` whose owning
//! `ags` process (same host, pid and start time) is gone. Runs at the start of every launch and
//! on demand (`ags gc`). Resources of live launches and of other hosts are never touched. What
//! the removed containers said about their agent ([`SweptContainer`]) is kept for crash recovery
//! (`events::session::recover`).

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;

use super::identity;
use crate::events::spool;
use crate::plan::{
    ANNOTATION_SPOOL, LABEL_LAUNCH_ID, LABEL_MANAGED, LABEL_OWNER_HOST, LABEL_OWNER_PID, LABEL_OWNER_START,
};
use crate::podman::{Client, PodmanError};

/// What a sweep removed and what it could not.
#[derive(Debug, Default)]
pub struct GcReport {
    /// Containers removed (names).
    pub containers: Vec<String>,
    pub volumes: Vec<String>,
    /// Failures (resource and reason).
    pub errors: Vec<String>,
    /// The removed containers' state at removal time.
    pub swept: Vec<SweptContainer>,
}

/// A removed container's last state, for the finished hooks of its launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweptContainer {
    pub id: String,
    pub name: String,
    /// Its `io.ags.launch-id` label.
    pub launch_id: Option<String>,
    /// `created`, `running`, `exited`, … when it was removed.
    pub state: String,
    /// Exit code (meaningful when `state` is `exited`).
    pub exit_code: i32,
    /// Start time (seconds since the epoch; not positive when it never started).
    pub started_at: i64,
    /// Exit time (seconds since the epoch).
    pub exited_at: i64,
}

/// Whether the labels describe a launch whose owner on this host is gone.
pub fn is_orphan(labels: &BTreeMap<String, String>, host: &str) -> bool {
    if labels.get(LABEL_OWNER_HOST).map(String::as_str) != Some(host) {
        return false;
    }
    let pid = labels.get(LABEL_OWNER_PID).and_then(|v| v.parse::<u32>().ok());
    let start = labels.get(LABEL_OWNER_START).and_then(|v| v.parse::<u64>().ok());
    match (pid, start) {
        (Some(pid), Some(start)) => !identity::owner_alive(pid, start),
        _ => false,
    }
}

/// Remove orphaned containers and volumes (and, with `force_launch`, that launch's regardless of
/// its owner).
pub async fn sweep(client: &Client, force_launch: Option<&str>) -> Result<GcReport, PodmanError> {
    let host = identity::host_name();
    let wanted = |labels: &BTreeMap<String, String>| {
        is_orphan(labels, &host)
            || force_launch.is_some_and(|l| labels.get(LABEL_LAUNCH_ID).map(String::as_str) == Some(l))
    };
    let mut report = GcReport::default();
    let managed = format!("{LABEL_MANAGED}=true");
    for c in client.list(&[&managed]).await? {
        if wanted(&c.labels) {
            let name = c.names.first().cloned().unwrap_or_else(|| c.id.clone());
            let swept = SweptContainer {
                id: c.id.clone(),
                name: name.clone(),
                launch_id: c.labels.get(LABEL_LAUNCH_ID).cloned(),
                state: c.state.clone(),
                exit_code: c.exit_code,
                started_at: c.started_at,
                exited_at: c.exited_at,
            };
            record_sweep(client, &swept).await;
            match client.delete(&c.id, true, true).await {
                Ok(()) => {
                    report.containers.push(name);
                    report.swept.push(swept);
                }
                Err(e) if e.is_not_found() => {}
                Err(e) => report.errors.push(format!("container {name}: {e}")),
            }
        }
    }
    for v in client.volume_list(&[&managed]).await? {
        if wanted(&v.labels) {
            match client.volume_delete(&v.name).await {
                Ok(()) => report.volumes.push(v.name),
                // Gone, or still used by a container another `ags` is removing right now: the
                // next sweep takes it (volumes are never force-removed, see `volume_delete`).
                Err(e) if e.is_not_found() || e.is_conflict() => {}
                Err(e) => report.errors.push(format!("volume {}: {e}", v.name)),
            }
        }
    }
    Ok(report)
}

/// Tell the launch's spool (named by the container's `io.ags.spool` annotation) how its leftover
/// container ended before removing it, so that whichever `ags` recovers the launch knows, even
/// when another `ags` swept it. Best effort: a spool this process may not write is skipped.
async fn record_sweep(client: &Client, c: &SweptContainer) {
    let Some(launch_id) = &c.launch_id else { return };
    let Ok(inspect) = client.inspect(&c.id).await else {
        return;
    };
    let Some(dir) = inspect
        .config
        .annotations
        .get(ANNOTATION_SPOOL)
        .map(std::path::Path::new)
    else {
        return;
    };
    // Only a spool of our own: never create files in another user's.
    let euid = nix::unistd::geteuid().as_raw();
    if !std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir() && m.uid() == euid) {
        return;
    }
    let exited = c.state == "exited" || c.state == "stopped";
    let now = std::time::SystemTime::now();
    let end = match exited && c.exited_at > 0 {
        true => std::time::UNIX_EPOCH + std::time::Duration::from_secs(c.exited_at as u64),
        false => now,
    };
    let line = spool::EventLine {
        version: spool::SPOOL_VERSION,
        launch_id: launch_id.clone(),
        container_id: c.id.clone(),
        stage: spool::OciStage::Swept,
        time: crate::time::rfc3339(end),
        unix_ms: end
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis() as u64,
        pid: None,
        exit_code: exited.then_some(c.exit_code),
        state: Some(c.state.clone()),
    };
    if let Ok(path) = spool::events_path(dir, launch_id) {
        let _ = spool::append_event(&path, &line);
    }
}

/// Name of a launch's private host staging directory: `stage-<pid>-<start>-<suffix>`, so a
/// sweep can tell whether its owner is alive.
pub fn stage_dir_name(id: &crate::plan::LaunchIdentity) -> String {
    format!("stage-{}-{}-{}", id.pid, id.start_time, id.suffix)
}

/// Remove host staging directories under `root` whose owning process is gone. Returns the
/// directories removed.
pub fn sweep_host(root: &std::path::Path) -> Vec<std::path::PathBuf> {
    // A root another user made (`/dev/shm/ags-<uid>` taken first) is not ours to read.
    if crate::fsutil::private_root_problem(root).is_some() {
        return Vec::new();
    }
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let mut parts = name.strip_prefix("stage-").unwrap_or("").split('-');
        let pid = parts.next().and_then(|p| p.parse::<u32>().ok());
        let start = parts.next().and_then(|s| s.parse::<u64>().ok());
        if let (Some(pid), Some(start)) = (pid, start)
            && !identity::owner_alive(pid, start)
            && std::fs::remove_dir_all(entry.path()).is_ok()
        {
            removed.push(entry.path());
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_sweep_removes_only_dead_owners() {
        let root = tempfile::tempdir().unwrap();
        std::fs::set_permissions(root.path(), std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
        let me = identity::current();
        let live = root.path().join(stage_dir_name(&me));
        let dead = root
            .path()
            .join(format!("stage-{}-{}-ffff", me.pid, me.start_time + 1));
        let other = root.path().join("unrelated");
        for d in [&live, &dead, &other] {
            std::fs::create_dir_all(d.join("files")).unwrap();
        }
        assert_eq!(sweep_host(root.path()), std::slice::from_ref(&dead));
        assert!(live.exists() && other.exists() && !dead.exists());
        // A root another user could have made first is not swept.
        std::fs::set_permissions(root.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        std::fs::create_dir_all(dead.join("files")).unwrap();
        assert!(sweep_host(root.path()).is_empty() && dead.exists());
    }

    fn labels(host: &str, pid: u32, start: u64) -> BTreeMap<String, String> {
        BTreeMap::from([
            (LABEL_OWNER_HOST.to_string(), host.to_string()),
            (LABEL_OWNER_PID.to_string(), pid.to_string()),
            (LABEL_OWNER_START.to_string(), start.to_string()),
        ])
    }

    #[test]
    fn orphans_are_dead_owners_on_this_host_only() {
        let me = identity::current();
        let host = identity::host_name();
        assert!(
            !is_orphan(&labels(&host, me.pid, me.start_time), &host),
            "live owner"
        );
        assert!(
            is_orphan(&labels(&host, me.pid, me.start_time + 7), &host),
            "pid reused"
        );
        assert!(!is_orphan(&labels("elsewhere", 1, 1), &host), "other host");
        assert!(!is_orphan(&BTreeMap::new(), &host), "no owner labels");
    }
}
