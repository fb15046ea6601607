//! Grants in flight (`ags allow`): an allowlist entry added to running launches without a
//! restart, for a time or for one launch. Each grant is one small JSON file, written
//! atomically, in the user's private `$XDG_STATE_HOME/ags/grants/` (`Paths::egress_grants`;
//! no container mounts it).
//! The proxy reads the directory at each decision, so a grant works from the next connection and
//! stops at its expiry; a connection a grant admitted is cut at that expiry too.

use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::model::{AllowEntry, EgressOrigin, Rule};

/// Grants read at most (the newest by name win past it).
const MAX_GRANTS: usize = 256;
/// The size a grant file may have.
const MAX_SIZE: usize = 4096;

/// One grant as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grant {
    /// Its id (the file name without `.json`).
    pub id: String,
    /// The allowlist entry granted.
    pub entry: String,
    /// Only this launch, when set.
    pub launch: Option<String>,
    /// Who granted it: the user name and, when there is one, the terminal.
    pub by: String,
    /// When it was granted (RFC 3339).
    pub granted: String,
    /// Seconds since the epoch when it expires; none: when its launch ends.
    pub expires: Option<u64>,
}

impl Grant {
    /// A grant of `entry` made now, for `duration` and/or `launch` (one of them is needed).
    pub fn new(entry: &AllowEntry, launch: Option<String>, duration: Option<Duration>, by: String) -> Self {
        let now = SystemTime::now();
        let secs = now.duration_since(UNIX_EPOCH).unwrap_or_default();
        Self {
            id: format!("{}-{}", secs.as_secs(), random_hex()),
            entry: entry.entry.clone(),
            launch,
            by,
            granted: crate::time::rfc3339(now),
            expires: duration.map(|d| (secs + d).as_secs()),
        }
    }

    /// When it expires, if it does.
    pub fn deadline(&self) -> Option<SystemTime> {
        self.expires.map(|s| UNIX_EPOCH + Duration::from_secs(s))
    }

    /// Whether it holds at `now` for `launch`.
    fn holds(&self, launch: &str, now: SystemTime) -> bool {
        self.launch.as_deref().is_none_or(|l| l == launch) && self.deadline().is_none_or(|d| now < d)
    }

    /// What a log record or a listing says of it.
    pub fn shown(&self) -> String {
        format!("grant {} {}", self.id, self.terms())
    }

    /// Who granted it, for which launch, until when.
    fn terms(&self) -> String {
        let until = match self.deadline() {
            Some(d) => format!("until {}", crate::time::rfc3339(d)),
            None => "until the launch ends".into(),
        };
        let scope = match &self.launch {
            Some(l) => format!("launch {l}"),
            None => "every launch".into(),
        };
        format!("by {} for {scope} {until}", self.by)
    }
}

/// Six random hex digits, so two grants of one second get their own files.
fn random_hex() -> String {
    let mut bytes = [0u8; 3];
    getrandom::fill(&mut bytes).expect("the system random source");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Store `grant` (atomically, 0600, in a private directory).
pub fn write(dir: &Path, grant: &Grant) -> io::Result<()> {
    let private =
        |d: &Path| crate::fsutil::ensure_private_dir(d).map_err(|e| io::Error::other(e.to_string()));
    if let Some(parent) = dir.parent() {
        private(parent)?;
    }
    private(dir)?;
    let json = serde_json::to_vec_pretty(grant).expect("a grant serializes");
    crate::fsutil::atomic_write(&dir.join(format!("{}.json", grant.id)), &json, 0o600)
}

/// Remove the grant `id`; false when there is none.
pub fn revoke(dir: &Path, id: &str) -> io::Result<bool> {
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        return Ok(false);
    }
    match std::fs::remove_file(dir.join(format!("{id}.json"))) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// Remove the grants that can no longer hold: past their expiry, or for a launch whose `ags`
/// process is gone. Returns how many were removed (a file that cannot be removed stays).
pub fn sweep(dir: &Path) -> usize {
    let now = SystemTime::now();
    all(dir)
        .into_iter()
        .filter(|g| {
            g.deadline().is_some_and(|d| now >= d) || g.launch.as_deref().is_some_and(|l| !launch_alive(l))
        })
        .filter(|g| revoke(dir, &g.id).unwrap_or(false))
        .count()
}

/// Whether the launch `id` (`ags-PID-NANOS`) may still be running on this machine: its `ags`
/// process exists. A reused process id answers yes; the grant then waits for its expiry.
pub fn launch_alive(id: &str) -> bool {
    let pid = id.strip_prefix("ags-").and_then(|r| r.split('-').next());
    pid.and_then(|p| p.parse::<u32>().ok())
        .is_some_and(|p| crate::procfs::process_start_time(p).is_some())
}

/// Every stored grant, valid or not yet swept (unreadable files are passed over). Nothing
/// when the directory is missing or not private (owned by another user, writable by others).
pub fn all(dir: &Path) -> Vec<Grant> {
    if crate::fsutil::check_private_dir(dir).is_err() {
        return Vec::new();
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    names.sort();
    let skip = names.len().saturating_sub(MAX_GRANTS);
    names[skip..]
        .iter()
        .filter_map(|p| crate::fsutil::read_small_text_nofollow(p, MAX_SIZE).ok())
        .filter_map(|text| serde_json::from_str::<Grant>(&text).ok())
        .collect()
}

/// The grants holding now for `launch`, as allowlist rules with their deadline.
pub fn active(dir: &Path, launch: &str) -> Vec<(Rule, Option<SystemTime>)> {
    let now = SystemTime::now();
    all(dir)
        .into_iter()
        .filter(|g| g.holds(launch, now))
        .filter_map(|g| {
            let entry = AllowEntry::parse(&g.entry).ok().filter(|e| e.request.is_none())?;
            let rule = Rule {
                entry,
                origin: EgressOrigin::Grant(g.id.clone()),
                at: Some(g.terms()),
            };
            Some((rule, g.deadline()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_hold_for_their_launch_until_they_expire_and_can_be_revoked() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state/grants");
        let entry = AllowEntry::parse("example.org:8443").unwrap();
        let mine = Grant::new(&entry, Some("ags-1-2".into()), None, "u".into());
        let timed = Grant::new(&entry, None, Some(Duration::from_secs(600)), "u".into());
        let mut gone = Grant::new(&entry, None, Some(Duration::from_secs(1)), "u".into());
        gone.expires = Some(1);
        for g in [&mine, &timed, &gone] {
            write(&dir, g).unwrap();
        }
        assert_eq!(all(&dir).len(), 3);
        assert_eq!(active(&dir, "ags-1-2").len(), 2);
        let other = active(&dir, "ags-3-4");
        assert_eq!(other.len(), 1);
        assert!(other[0].1.is_some() && other[0].0.at.as_deref().unwrap().contains("every launch"));
        assert!(revoke(&dir, &timed.id).unwrap());
        assert!(!revoke(&dir, "../x").unwrap());
        assert!(active(&dir, "ags-3-4").is_empty());
        // A directory others may write is not trusted.
        std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
        assert!(all(&dir).is_empty());
    }

    #[test]
    fn a_sweep_removes_expired_grants_and_those_of_ended_launches() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state/grants");
        let entry = AllowEntry::parse("example.org").unwrap();
        let me = format!("ags-{}-5", std::process::id());
        let live = Grant::new(&entry, Some(me.clone()), None, "u".into());
        // No process has the largest pid the kernel could give.
        let ended = Grant::new(&entry, Some("ags-4194305-5".into()), None, "u".into());
        let mut expired = Grant::new(&entry, None, Some(Duration::from_secs(60)), "u".into());
        expired.expires = Some(1);
        let timed = Grant::new(&entry, None, Some(Duration::from_secs(600)), "u".into());
        for g in [&live, &ended, &expired, &timed] {
            write(&dir, g).unwrap();
        }
        assert!(launch_alive(&me) && !launch_alive("ags-4194305-5") && !launch_alive("x"));
        assert_eq!(sweep(&dir), 2);
        let mut left: Vec<String> = all(&dir).into_iter().map(|g| g.id).collect();
        left.sort();
        let mut want = vec![live.id, timed.id];
        want.sort();
        assert_eq!(left, want);
    }
}
