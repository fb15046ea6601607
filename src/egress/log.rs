//! The egress log: one JSON line per connection attempt through the proxy of any launch, and
//! per message the ssh-agent filter refused (`crate::ssh_agent`),
//! `$XDG_STATE_HOME/ags/egress.jsonl` (0600 in a 0700 directory, never mounted into a
//! container). Refusals are written when they happen, allowed connections when they close
//! (with their byte counts). No request contents: host, port, decision, counts.
//!
//! Lines are appended and rotated by `crate::logfile` (one write under a lock; past 10 MiB the
//! file moves to `egress.jsonl.1`). A launch has three budgets there (issue 22, finding 6):
//! its allowed connections ([`MAX_LAUNCH_CONNECTION_BYTES`]), its failed ones and its refusals
//! ([`MAX_LAUNCH_REFUSAL_BYTES`] each). Past a budget records are counted, not written, and
//! [`EgressLog::finish`] writes one `dropped` line per budget saying how many. Allowed
//! connections past their budget are also summed per destination (count, bytes up and down;
//! at most [`MAX_OVERFLOW_DESTINATIONS`] of them, the rest as one), one `dropped` line each at
//! the end: many short connections cannot hide where a later upload went or how big it was
//! (session-18 attack B1). So an agent flooding the proxy can neither rotate away other
//! launches' records (its lines stay below the rotation size) nor keep its own allowed
//! connections from being recorded.

use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::agent_hooks::calls::OpenCalls;
pub use crate::logfile::ROTATE_BYTES;
use crate::logfile::{Budget, LaunchLog};
use std::sync::Arc;

/// Bytes of allowed connections one launch may append (5 MiB).
pub const MAX_LAUNCH_CONNECTION_BYTES: u64 = 5 * 1024 * 1024;
/// Bytes of refusals (refused, invalid, refused ssh-agent messages) one launch may append
/// (2 MiB), and the same again of failed connections. With the connections' budget and the
/// per-destination sums, below the rotation size.
pub const MAX_LAUNCH_REFUSAL_BYTES: u64 = 2 * 1024 * 1024;

/// The budget of allowed connections.
const CONNECTIONS: usize = 0;
/// The budget of refusals.
const REFUSALS: usize = 1;
/// The budget of failed connections (an unresolvable name costs the agent nothing).
const FAILURES: usize = 2;
/// Destinations whose allowed connections past the budget are summed one by one.
pub const MAX_OVERFLOW_DESTINATIONS: usize = 1024;

/// Allowed connections to one destination past the budget.
#[derive(Debug, Default, Clone, Copy)]
struct Overflow {
    count: u64,
    up: u64,
    down: u64,
}

/// Version of the record format.
pub const EGRESS_LOG_VERSION: u32 = 1;

/// What the proxy did with an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// A summary: records of this launch past its budget, counted and not written.
    Dropped,
    /// A request carried a credential's placeholder to a host the credential is not for:
    /// refused (403) and recorded (docs/credentials.md).
    Tripwire,
    /// A grant in flight was made (`ags allow`): the entry, who, for which launch, until when.
    Granted,
}

/// One attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EgressRecord {
    /// Format version.
    pub version: u32,
    /// When the attempt was decided, RFC 3339 UTC.
    pub time: String,
    /// The launch whose agent made it.
    pub launch_id: String,
    /// The record's id: the launch id, a dot and its number in the launch (`ags explain ID`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
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
    /// For a `dropped` summary: how many records were not written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropped: Option<u64>,
    /// Requests that got a credential's real value, by variable (never a value).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub substituted: std::collections::BTreeMap<String, u64>,
    /// The agent's tool calls open when the connection was made, by the ids the agent hook
    /// record gave them (`crate::agent_hooks::calls`): one, the call that made it; several,
    /// calls running in parallel; none, made outside a tool call or without agent hooks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<String>,
}

/// Appends records for one launch, within its budgets.
#[derive(Debug)]
pub struct EgressLog {
    log: LaunchLog,
    launch_id: String,
    /// Allowed connections past the budget, by destination (`("", 0)`: the others).
    overflow: std::sync::Mutex<std::collections::BTreeMap<(String, u16), Overflow>>,
    /// The launch's tripwire records, for its report (the first [`MAX_TRIPWIRES`]).
    tripwires: std::sync::Mutex<Vec<EgressRecord>>,
    /// The number of the next record.
    next: std::sync::atomic::AtomicU64,
    /// The launch's open tool calls, when it has agent hooks.
    calls: Option<Arc<OpenCalls>>,
}

/// Tripwire records kept for the report.
const MAX_TRIPWIRES: usize = 100;

impl EgressLog {
    /// A log at `path` for `launch_id`.
    pub fn new(path: PathBuf, launch_id: String) -> Self {
        Self::with_limits(
            path,
            launch_id,
            MAX_LAUNCH_CONNECTION_BYTES,
            MAX_LAUNCH_REFUSAL_BYTES,
        )
    }

    /// The same with other budgets (tests).
    pub fn with_limits(path: PathBuf, launch_id: String, connections: u64, refusals: u64) -> Self {
        let budgets = vec![
            Budget::new(connections),
            Budget::new(refusals),
            Budget::new(refusals),
        ];
        Self {
            log: LaunchLog::new(path, launch_id.clone(), "egress log", budgets),
            launch_id,
            overflow: Default::default(),
            tripwires: Default::default(),
            next: std::sync::atomic::AtomicU64::new(1),
            calls: None,
        }
    }

    /// The tripwire records of this launch so far (docs/credentials.md).
    pub fn tripwires(&self) -> Vec<EgressRecord> {
        self.tripwires.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The launch id records carry.
    pub fn launch_id(&self) -> &str {
        &self.launch_id
    }

    /// Append one record within the budget of its kind (past it, it is counted). A log that
    /// cannot be written is reported on stderr once; the decision stands either way.
    pub fn append(&self, record: &EgressRecord) {
        let line = line(record);
        match record.decision {
            Decision::Allowed => {
                if !self.log.write(CONNECTIONS, &line) {
                    self.sum_past_budget(record);
                }
            }
            Decision::Failed => drop(self.log.write(FAILURES, &line)),
            Decision::Refused | Decision::Invalid => {
                let _ = self.log.write(REFUSALS, &line);
            }
            Decision::Tripwire => {
                let _ = self.log.write(REFUSALS, &line);
                let mut kept = self.tripwires.lock().unwrap_or_else(|e| e.into_inner());
                if kept.len() < MAX_TRIPWIRES {
                    kept.push(record.clone());
                }
            }
            Decision::Dropped | Decision::Granted => self.log.note(&line),
        }
    }

    /// Count an allowed connection past the budget under its destination.
    fn sum_past_budget(&self, record: &EgressRecord) {
        let mut map = self.overflow.lock().unwrap_or_else(|e| e.into_inner());
        let mut key = (record.host.clone(), record.port);
        if !map.contains_key(&key) && map.len() >= MAX_OVERFLOW_DESTINATIONS {
            key = (String::new(), 0);
        }
        let o = map.entry(key).or_default();
        o.count += 1;
        o.up = o.up.saturating_add(record.bytes_up);
        o.down = o.down.saturating_add(record.bytes_down);
    }

    /// At the end of the launch: one `dropped` record per budget that was exceeded. A summary
    /// names no tool call: the calls open at the end are not the ones its connections were
    /// made in.
    pub fn finish(&self) {
        let map = std::mem::take(&mut *self.overflow.lock().unwrap_or_else(|e| e.into_inner()));
        for ((host, port), o) in map {
            let to = match host.is_empty() {
                true => format!("destinations beyond the first {MAX_OVERFLOW_DESTINATIONS}"),
                false => "this destination".to_string(),
            };
            let reason = format!(
                "{} allowed connections to {to} past this launch's budget: not written one by one, their bytes summed",
                o.count
            );
            let host = if host.is_empty() { "*" } else { &host };
            let mut record = self.record("dropped", host, port, Decision::Dropped, reason);
            (record.dropped, record.bytes_up, record.bytes_down) = (Some(o.count), o.up, o.down);
            record.calls.clear();
            self.append(&record);
        }
        for (budget, what) in [
            (CONNECTIONS, "allowed connections"),
            (REFUSALS, "refused or invalid attempts"),
            (FAILURES, "failed connections"),
        ] {
            let b = self.log.budget(budget);
            if b.dropped == 0 {
                continue;
            }
            let reason = format!(
                "{} records of {what} of this launch ({} bytes) were counted, not written: a launch may append at most {} bytes of them",
                b.dropped, b.dropped_bytes, b.limit
            );
            let mut record = self.record("dropped", "-", 0, Decision::Dropped, reason);
            (record.dropped, record.calls) = (Some(b.dropped), Vec::new());
            self.append(&record);
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
            id: format!(
                "{}.{}",
                self.launch_id,
                self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            ),
            kind: kind.into(),
            host: host.into(),
            port,
            decision,
            reason,
            address: None,
            bytes_up: 0,
            bytes_down: 0,
            duration_ms: 0,
            dropped: None,
            substituted: Default::default(),
            calls: self.calls.as_ref().map(|c| c.current()).unwrap_or_default(),
        }
    }

    /// Stamp each record with the tool calls open when it is made (the agent hook record's).
    pub fn with_calls(mut self, calls: Option<Arc<OpenCalls>>) -> Self {
        self.calls = calls;
        self
    }
}

/// A record as one line.
fn line(record: &EgressRecord) -> Vec<u8> {
    let mut line = serde_json::to_vec(record).expect("a record serializes");
    line.push(b'\n');
    line
}

/// The last `n` records, oldest first (reading the rotated file too when needed); lines that do
/// not parse are skipped.
pub fn read_last(path: &Path, n: usize) -> io::Result<Vec<EgressRecord>> {
    crate::logfile::read_last(path, n)
}

/// One line of text for `ags log --egress`.
pub fn render(r: &EgressRecord) -> String {
    let decision = crate::plan::text::word(&r.decision);
    let head = format!("{} {} {:<7} {decision:<8}", r.time, shown_id(r), r.kind);
    if let Some(n) = r.dropped.filter(|_| r.host == "-") {
        let reason = crate::text::escape_line(&r.reason);
        return format!("{head} {n} records not written: {reason}");
    }
    if r.decision == Decision::Granted {
        let (host, reason) = (
            crate::text::escape_line(&r.host),
            crate::text::escape_line(&r.reason),
        );
        return format!("{head} {host} {reason}");
    }
    let substituted: String = r.substituted.iter().map(|(k, n)| format!(" {k}x{n}")).collect();
    let call = match r.calls.is_empty() {
        true => String::new(),
        false => format!(" call={}", crate::text::escape_line(&r.calls.join(","))),
    };
    format!(
        "{head} {}:{} up={} down={} {}ms {}{}{call}",
        crate::text::escape_line(&r.host),
        r.port,
        r.bytes_up,
        r.bytes_down,
        r.duration_ms,
        crate::text::escape_line(&r.reason),
        match substituted.is_empty() {
            true => String::new(),
            false => format!(" (substituted:{})", crate::text::escape_line(&substituted)),
        }
    )
}

/// The record's id, or its launch's for a record written before records had ids.
fn shown_id(r: &EgressRecord) -> &str {
    match r.id.is_empty() {
        true => &r.launch_id,
        false => &r.id,
    }
}

/// The column names above the rows [`render`] prints.
pub fn header() -> String {
    format!(
        "{} {} {:<7} {:<8} DESTINATION, BYTES, DURATION, REASON",
        "TIME", "RECORD", "KIND", "DECISION"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_prints_apostrophes_as_is_and_escapes_controls() {
        let dir = tempfile::tempdir().unwrap();
        let log = EgressLog::new(dir.path().join("egress.jsonl"), "ags-1-2".into());
        let reason = "x.example port 443 is not on this launch's allowlist\n\x1b[2J".to_string();
        let row = render(&log.record("connect", "x.example", 443, Decision::Refused, reason));
        assert!(row.contains("this launch's allowlist\\n\\u{1b}[2J"), "{row}");
        assert!(header().starts_with("TIME RECORD KIND"));
    }

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
        assert!(crate::logfile::rotated(&path).exists());
        let got = read_last(&path, 2).unwrap();
        assert_eq!(got.iter().map(|r| r.port).collect::<Vec<_>>(), [3, 4]);
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }

    #[test]
    fn allowed_connections_past_the_budget_are_summed_per_destination() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/egress.jsonl");
        let log = EgressLog::with_limits(path.clone(), "ags-b1".into(), 2048, 2048);
        let allowed = |host: &str, up: u64| {
            let mut r = log.record("connect", host, 443, Decision::Allowed, "ok".into());
            r.bytes_up = up;
            r
        };
        // Session-18 attack B1: short connections spend the budget, then the upload.
        for _ in 0..200 {
            log.append(&allowed("noise.example", 1));
        }
        log.append(&allowed("upload.example", 5_000_000));
        // Failed connections (unresolvable names) have a budget of their own.
        for _ in 0..200 {
            log.append(&log.record("connect", "nx.example", 443, Decision::Failed, "no".into()));
        }
        log.finish();
        let all = read_last(&path, 10_000).unwrap();
        let upload = all
            .iter()
            .find(|r| r.host == "upload.example")
            .expect("the upload's destination is recorded");
        assert_eq!(
            (upload.decision, upload.dropped, upload.bytes_up),
            (Decision::Dropped, Some(1), 5_000_000)
        );
        assert!(
            render(upload).contains("upload.example:443 up=5000000"),
            "{}",
            render(upload)
        );
        let noise = all
            .iter()
            .find(|r| r.host == "noise.example" && r.decision == Decision::Dropped)
            .unwrap();
        let written = all
            .iter()
            .filter(|r| r.host == "noise.example" && r.decision == Decision::Allowed)
            .count();
        assert_eq!(noise.dropped, Some(200 - written as u64));
        assert!(all.iter().any(|r| r.decision == Decision::Failed));
    }

    #[test]
    fn past_the_destination_cap_the_rest_are_summed_as_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/egress.jsonl");
        let log = EgressLog::with_limits(path.clone(), "ags-cap".into(), 0, 0);
        for i in 0..(MAX_OVERFLOW_DESTINATIONS + 10) {
            let mut r = log.record(
                "connect",
                &format!("h{i}.example"),
                443,
                Decision::Allowed,
                "ok".into(),
            );
            r.bytes_up = 1;
            log.append(&r);
        }
        log.finish();
        let all = read_last(&path, 10_000).unwrap();
        let rest = all.iter().find(|r| r.host == "*").unwrap();
        assert_eq!((rest.dropped, rest.bytes_up), (Some(10), 10));
        assert_eq!(
            all.iter().filter(|r| r.decision == Decision::Dropped).count(),
            MAX_OVERFLOW_DESTINATIONS + 2
        );
    }

    #[test]
    fn a_flood_of_refusals_is_counted_and_cannot_crowd_out_allowed_connections() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/egress.jsonl");
        let other = EgressLog::new(path.clone(), "ags-other".into());
        other.append(&other.record("connect", "a.example", 443, Decision::Allowed, "ok".into()));
        let log = EgressLog::with_limits(path.clone(), "ags-flood".into(), 4096, 4096);
        let long = "x".repeat(200);
        for port in 1..=100 {
            log.append(&log.record("connect", &long, port, Decision::Refused, "no".into()));
        }
        log.append(&log.record("connect", "b.example", 443, Decision::Allowed, "ok".into()));
        log.finish();
        let all = read_last(&path, 1000).unwrap();
        assert_eq!(all[0].launch_id, "ags-other");
        let written = all.iter().filter(|r| r.decision == Decision::Refused).count() as u64;
        assert!((1..100).contains(&written), "{written}");
        assert!(
            all.iter()
                .any(|r| r.host == "b.example" && r.launch_id == "ags-flood")
        );
        let summary = all.last().unwrap();
        assert_eq!(
            (summary.decision, summary.dropped),
            (Decision::Dropped, Some(100 - written))
        );
        assert!(render(summary).contains(&format!("{} records not written", 100 - written)));
        let size = std::fs::metadata(&path).unwrap().len();
        assert!(size < 4096 * 2 + 1024, "{size}");
    }
}
