//! The egress log: one JSON line per connection attempt through the proxy of any launch,
//! `$XDG_STATE_HOME/ags/egress.jsonl` (0600 in a 0700 directory, never mounted into a
//! container). Refusals are written when they happen, allowed connections when they close
//! (with their byte counts). Each line is one `write` on an `O_APPEND` descriptor, so lines of
//! concurrent launches never interleave. No request contents: host, port, decision, counts.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

/// Rotate the log to `egress.jsonl.1` once it is larger than this (10 MiB).
pub const ROTATE_BYTES: u64 = 10 * 1024 * 1024;

/// Version of the record format.
pub const EGRESS_LOG_VERSION: u32 = 1;

/// What the proxy did with an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Decision {
    /// Connected and relayed.
    Allowed,
    /// Refused by the policy (403).
    Refused,
    /// Allowed, but the destination could not be reached (502).
    Failed,
    /// Not a request the proxy understands (400).
    Invalid,
}

/// One attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EgressRecord {
    /// Format version.
    pub version: u32,
    /// When the attempt was decided, RFC 3339 UTC.
    pub time: String,
    /// The launch whose agent made it.
    pub launch_id: String,
    /// `connect` (a tunnel) or `http` (a plain-HTTP request).
    pub kind: String,
    /// Destination host as asked (validated; `?` when malformed).
    pub host: String,
    /// Destination port.
    pub port: u16,
    /// The decision.
    pub decision: Decision,
    /// Why (for refusals and failures) or the entry that allowed it.
    pub reason: String,
    /// The address connected to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// Bytes from the agent to the destination.
    pub bytes_up: u64,
    /// Bytes from the destination to the agent.
    pub bytes_down: u64,
    /// From the decision to the close, in milliseconds.
    pub duration_ms: u64,
}

/// Appends records for one launch.
#[derive(Debug)]
pub struct EgressLog {
    path: PathBuf,
    launch_id: String,
}

impl EgressLog {
    /// A log at `path` for `launch_id`.
    pub fn new(path: PathBuf, launch_id: String) -> Self {
        Self { path, launch_id }
    }

    /// The launch id records carry.
    pub fn launch_id(&self) -> &str {
        &self.launch_id
    }

    /// Append one record. A log that cannot be written is reported on stderr once per attempt;
    /// the decision stands either way.
    pub fn append(&self, record: &EgressRecord) {
        if let Err(e) = append(&self.path, record) {
            eprintln!("ags: egress log {}: {e}", self.path.display());
        }
    }

    /// A record stamped now.
    pub fn record(
        &self,
        kind: &str,
        host: &str,
        port: u16,
        decision: Decision,
        reason: String,
    ) -> EgressRecord {
        EgressRecord {
            version: EGRESS_LOG_VERSION,
            time: crate::time::rfc3339(SystemTime::now()),
            launch_id: self.launch_id.clone(),
            kind: kind.into(),
            host: host.into(),
            port,
            decision,
            reason,
            address: None,
            bytes_up: 0,
            bytes_down: 0,
            duration_ms: 0,
        }
    }
}

fn append(path: &Path, record: &EgressRecord) -> io::Result<()> {
    if let Some(dir) = path.parent() {
        crate::fsutil::ensure_private_dir(dir).map_err(|e| io::Error::other(e.to_string()))?;
    }
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && m.len() > ROTATE_BYTES) {
        std::fs::rename(path, rotated(path))?;
    }
    let mut line = serde_json::to_vec(record).map_err(io::Error::other)?;
    line.push(b'\n');
    let mut file = crate::fsutil::open_private_append(path)?;
    file.write_all(&line)
}

fn rotated(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".1");
    PathBuf::from(s)
}

/// The last `n` records, oldest first (reading the rotated file too when needed); lines that do
/// not parse are skipped.
pub fn read_last(path: &Path, n: usize) -> io::Result<Vec<EgressRecord>> {
    let mut records = read_all(path)?;
    if records.len() < n {
        let mut older = read_all(&rotated(path))?;
        older.append(&mut records);
        records = older;
    }
    let skip = records.len().saturating_sub(n);
    Ok(records.split_off(skip))
}

fn read_all(path: &Path) -> io::Result<Vec<EgressRecord>> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    Ok(bytes
        .split(|b| *b == b'\n')
        .filter_map(|line| serde_json::from_slice(line).ok())
        .collect())
}

/// One line of text for `ags log --egress`.
pub fn render(r: &EgressRecord) -> String {
    let decision = serde_json::to_value(r.decision)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default();
    format!(
        "{} {} {:<7} {:<8} {}:{} up={} down={} {}ms {}",
        r.time,
        r.launch_id,
        r.kind,
        decision,
        r.host.escape_debug(),
        r.port,
        r.bytes_up,
        r.bytes_down,
        r.duration_ms,
        r.reason.escape_debug()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_append_rotate_and_read_back_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let path = state.join("egress.jsonl");
        let log = EgressLog::new(path.clone(), "ags-1-2".into());
        for port in [1, 2, 3] {
            log.append(&log.record("connect", "a.example", port, Decision::Refused, "no".into()));
        }
        let got = read_last(&path, 2).unwrap();
        assert_eq!(got.iter().map(|r| r.port).collect::<Vec<_>>(), [2, 3]);
        assert!(render(&got[0]).contains("refused") && got[0].launch_id == "ags-1-2");
        // Past the limit the file moves to .1 and reading spans both files.
        let f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        f.set_len(ROTATE_BYTES + 1).unwrap();
        log.append(&log.record("http", "b.example", 4, Decision::Allowed, "ok".into()));
        assert!(rotated(&path).exists());
        let got = read_last(&path, 2).unwrap();
        assert_eq!(got.iter().map(|r| r.port).collect::<Vec<_>>(), [3, 4]);
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
}
