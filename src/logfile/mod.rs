//! The host's append-only JSONL logs (the prepare-hook run log, `hooks::log`; the agent hook
//! record, `agent_hooks::log`; the egress log, `egress::log`): how a line is appended and rotated, how
//! records are read back, and how much one launch may append (issue 22, finding 6).
//!
//! Appending: each line is one `write` on an `O_APPEND` descriptor held under an exclusive
//! `flock`, so the lines of concurrent launches never interleave and only one of them rotates:
//! past [`ROTATE_BYTES`] the file moves to `NAME.1` (replacing the previous one) and a new file
//! starts.
//!
//! The chain: a record of a launch is appended with [`append_chained`], which adds its link in
//! the launch's hash chain of that log under the same lock ([`chain`], issue 29).
//!
//! The budget: a launch writes through a [`LaunchLog`], which gives each kind of line its own
//! [`Budget`] of bytes. Past it, lines of that kind are counted, not written, and the caller
//! writes one summary line at the end ([`LaunchLog::note`], outside every budget). With the
//! budgets of a launch summing to less than [`ROTATE_BYTES`], one launch can rotate the log at
//! most once: what other launches wrote since the last rotation, and the launch's own earlier
//! lines, stay in the log. A kind with its own budget cannot be starved by a flood of another
//! kind (the egress log keeps the agent's allowed connections apart from its refusals).

use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::de::DeserializeOwned;

pub mod chain;

/// Rotate a log to `NAME.1` once it is larger than this (10 MiB).
pub const ROTATE_BYTES: u64 = 10 * 1024 * 1024;

/// Append `line` (one record and its newline) as one write, rotating first when the file is
/// past [`ROTATE_BYTES`].
pub fn append_line(path: &Path, line: &[u8]) -> io::Result<()> {
    with_lock(path, |file| file.write_all(line))
}

/// Append `line` (one JSON object and its newline) as a record of `launch`: with its link in
/// the launch's chain of this log ([`chain`]), the chain's head moved on under the same lock.
pub fn append_chained(path: &Path, launch: &str, line: &[u8]) -> io::Result<()> {
    chained(path, launch, line, false).map(drop)
}

/// Append `line` as `launch`'s last chained record in this log (the receipt's closing record)
/// and end the chain under the same lock: later records of the launch carry no link. The
/// chain's head after it (`None` when the launch was not chained).
pub fn end_chain(path: &Path, launch: &str, line: &[u8]) -> io::Result<Option<chain::Head>> {
    chained(path, launch, line, true)
}

fn chained(path: &Path, launch: &str, line: &[u8], end: bool) -> io::Result<Option<chain::Head>> {
    with_lock(path, |file| {
        let extended = match chain::extend(path, launch, line, end) {
            Ok(extended) => extended,
            Err(e) => {
                // The record is kept, without its link (`ags verify` reports the broken chain).
                file.write_all(line)?;
                return Err(io::Error::other(format!(
                    "{e}; the record was written without its chain link, which `ags verify` will report"
                )));
            }
        };
        if let Err(e) = file.write_all(&extended.line) {
            if let Some(was) = extended.was {
                let _ = chain::rewind(path, launch, was);
            }
            return Err(e);
        }
        Ok(extended.now)
    })
}

/// Run `write` on the log at `path` opened for appending under its exclusive lock, rotating
/// first when the file is past [`ROTATE_BYTES`].
fn with_lock<T>(path: &Path, write: impl FnOnce(&mut std::fs::File) -> io::Result<T>) -> io::Result<T> {
    if let Some(dir) = path.parent() {
        crate::fsutil::ensure_private_dir(dir).map_err(|e| io::Error::other(e.to_string()))?;
    }
    // A few rounds at most: another process may rotate between our open and our lock.
    for _ in 0..4 {
        let mut file = crate::fsutil::open_private_append(path)?;
        rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)?;
        let held = file.metadata()?;
        let current = std::fs::symlink_metadata(path);
        if !current.is_ok_and(|m| m.ino() == held.ino() && m.dev() == held.dev()) {
            continue; // rotated away while we waited: open the new file
        }
        if held.len() > ROTATE_BYTES {
            std::fs::rename(path, rotated(path))?;
            continue;
        }
        return write(&mut file);
    }
    Err(io::Error::other("the log kept being rotated by other processes"))
}

/// The rotated file next to `path`.
pub fn rotated(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".1");
    PathBuf::from(s)
}

/// The records of `bytes`, one JSON value a line; lines that do not parse (torn, foreign or
/// damaged by hand) are skipped.
pub fn parse_lines<T: DeserializeOwned>(bytes: &[u8]) -> Vec<T> {
    bytes
        .split(|b| *b == b'\n')
        .filter_map(|line| serde_json::from_slice(&chain::split(line).0).ok())
        .collect()
}

/// [`read_all`], each record with whether it carried a chain link.
pub fn read_all_linked<T: DeserializeOwned>(path: &Path) -> io::Result<Vec<(T, bool)>> {
    let mut records = Vec::new();
    for file in [rotated(path), path.to_path_buf()] {
        let bytes = match std::fs::read(&file) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        records.extend(bytes.split(|b| *b == b'\n').filter_map(|line| {
            let (record, link) = chain::split(line);
            serde_json::from_slice(&record).ok().map(|r| (r, link.is_some()))
        }));
    }
    Ok(records)
}

/// The records of one file (none when it does not exist).
pub fn read_file<T: DeserializeOwned>(path: &Path) -> io::Result<Vec<T>> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(parse_lines(&bytes)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// Every record of the rotated file, then of the current one, oldest first.
pub fn read_all<T: DeserializeOwned>(path: &Path) -> io::Result<Vec<T>> {
    Ok(read_all_linked(path)?.into_iter().map(|(r, _)| r).collect())
}

/// The last `n` records, oldest first (the rotated file read only when the current one holds
/// fewer).
pub fn read_last<T: DeserializeOwned>(path: &Path, n: usize) -> io::Result<Vec<T>> {
    let mut records = read_file(path)?;
    if records.len() < n {
        let mut older = read_file(&rotated(path))?;
        older.append(&mut records);
        records = older;
    }
    let skip = records.len().saturating_sub(n);
    Ok(records.split_off(skip))
}

/// The bytes one kind of line of one launch may take, and what was dropped past them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Bytes that may be written.
    pub limit: u64,
    /// Bytes written so far.
    pub written: u64,
    /// Lines counted, not written.
    pub dropped: u64,
    /// Their bytes.
    pub dropped_bytes: u64,
}

impl Budget {
    /// A budget of `limit` bytes.
    pub const fn new(limit: u64) -> Self {
        Self {
            limit,
            written: 0,
            dropped: 0,
            dropped_bytes: 0,
        }
    }

    /// Whether a line of `len` bytes fits; it is counted either way.
    pub fn admit(&mut self, len: u64) -> bool {
        if self.written + len > self.limit {
            self.dropped += 1;
            self.dropped_bytes += len;
            return false;
        }
        self.written += len;
        true
    }
}

/// One launch's writer of a log: a [`Budget`] per kind of line (the index into the budgets
/// given to [`LaunchLog::new`]).
#[derive(Debug)]
pub struct LaunchLog {
    path: PathBuf,
    launch: String,
    what: &'static str,
    budgets: Mutex<Vec<Budget>>,
    reported: AtomicBool,
}

impl LaunchLog {
    /// A writer of `launch`'s records to `path` (called `what` in the one error message a
    /// failing log gets).
    pub fn new(path: PathBuf, launch: String, what: &'static str, budgets: Vec<Budget>) -> Self {
        Self {
            path,
            launch,
            what,
            budgets: Mutex::new(budgets),
            reported: AtomicBool::new(false),
        }
    }

    /// Append `line` (with its newline) within the budget of `kind` (which counts each line with
    /// the most its link adds); past it the line is counted instead. Whether it was written (or tried: a failing log is reported on
    /// stderr once).
    pub fn write(&self, kind: usize, line: &[u8]) -> bool {
        {
            let mut budgets = self.budgets.lock().unwrap_or_else(|e| e.into_inner());
            if !budgets[kind].admit(line.len() as u64 + chain::MAX_LINK_BYTES) {
                return false;
            }
        }
        self.append(line);
        true
    }

    /// Append `line` outside every budget (the summaries of what was dropped).
    pub fn note(&self, line: &[u8]) {
        self.append(line);
    }

    /// The budget of `kind` as it stands.
    pub fn budget(&self, kind: usize) -> Budget {
        self.budgets.lock().unwrap_or_else(|e| e.into_inner())[kind]
    }

    fn append(&self, line: &[u8]) {
        if let Err(e) = append_chained(&self.path, &self.launch, line)
            && !self.reported.swap(true, Ordering::Relaxed)
        {
            eprintln!("ags: {} {}: {e}", self.what, self.path.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_has_its_own_budget_and_notes_are_outside_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/x.jsonl");
        chain::open(&dir.path().join("state"), "ags-t").unwrap();
        let log = LaunchLog::new(
            path.clone(),
            "ags-t".into(),
            "x log",
            vec![Budget::new(246), Budget::new(120)],
        );
        assert!(log.write(0, b"{\"a\":\"aa\"}\n") && log.write(0, b"{\"b\":\"bb\"}\n"));
        assert!(!log.write(0, b"{\"c\":1}\n"));
        // A full kind 0 does not stop kind 1.
        assert!(log.write(1, b"{\"d\":1}\n") && !log.write(1, b"{\"e\":1}\n"));
        log.note(b"{\"note\":1}\n");
        let lines: Vec<serde_json::Value> = read_file(&path).unwrap();
        let keys: Vec<&str> = lines
            .iter()
            .map(|v| v.as_object().unwrap().keys().next().unwrap().as_str())
            .collect();
        assert_eq!(keys, ["a", "b", "d", "note"]);
        // Each carries its link: numbered, and naming the digest of the one before.
        let text = std::fs::read_to_string(&path).unwrap();
        let raw: Vec<&str> = text.lines().collect();
        for (i, line) in raw.iter().enumerate() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(v["chain"]["seq"], i as u64);
            let prev = if i == 0 {
                chain::GENESIS.to_string()
            } else {
                chain::digest(raw[i - 1].as_bytes())
            };
            assert_eq!(v["chain"]["prev"], prev.as_str());
        }
        let head = chain::head(&path, "ags-t").unwrap();
        assert_eq!((head.count, head.head), (4, chain::digest(raw[3].as_bytes())));
        let b = log.budget(0);
        assert_eq!((b.written, b.dropped, b.dropped_bytes), (246, 1, 120));
        assert_eq!(log.budget(1).dropped, 1);
    }

    #[test]
    fn a_chain_goes_on_across_writers_and_rotation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/x.jsonl");
        for launch in ["ags-a", "ags-b"] {
            chain::open(&dir.path().join("state"), launch).unwrap();
        }
        append_chained(&path, "ags-a", b"{\"n\":0}\n").unwrap();
        append_chained(&path, "ags-b", b"{\"n\":0}\n").unwrap();
        let f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        f.set_len(ROTATE_BYTES + 1).unwrap();
        append_chained(&path, "ags-a", b"{\"n\":1}\n").unwrap();
        let first = std::fs::read_to_string(rotated(&path)).unwrap();
        let first = first.lines().next().unwrap();
        let now: serde_json::Value =
            serde_json::from_str(std::fs::read_to_string(&path).unwrap().trim()).unwrap();
        assert_eq!(now["chain"]["seq"], 1);
        assert_eq!(now["chain"]["prev"], chain::digest(first.as_bytes()).as_str());
        assert!(append_chained(&path, "ags-a", b"{}\n").is_err());
        // A launch that is not chained (no `open`, or not a launch id): its lines as they are.
        for launch in ["ags-c", "../x", "*"] {
            append_chained(&path, launch, b"{\"n\":0}\n").unwrap();
            let text = std::fs::read_to_string(&path).unwrap();
            assert_eq!(text.lines().last(), Some("{\"n\":0}"));
        }
        assert!(!dir.path().join("state/chains/ags-c").exists());
        // A damaged head: the record is still written (unlinked), and the error says so.
        std::fs::write(dir.path().join("state/chains/ags-a/x.jsonl"), b"garbage").unwrap();
        let e = append_chained(&path, "ags-a", b"{\"n\":2}\n").unwrap_err();
        assert!(e.to_string().contains("written without its chain link"), "{e}");
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().last(), Some("{\"n\":2}"));
    }

    #[test]
    fn a_file_past_the_limit_is_rotated_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/x.jsonl");
        append_line(&path, b"old\n").unwrap();
        let f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        f.set_len(ROTATE_BYTES + 1).unwrap();
        append_line(&path, b"new\n").unwrap();
        append_line(&path, b"newer\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new\nnewer\n");
        assert!(std::fs::read(rotated(&path)).unwrap().starts_with(b"old\n"));
    }

    /// A record racing `forget` (the receipt closing) is never chained again: no new head file
    /// appears in the chain's directory while it is being removed.
    #[test]
    fn a_record_racing_forget_never_starts_a_second_chain() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let path = state.join("x.jsonl");
        for round in 0..400 {
            let launch = format!("ags-r{round}");
            chain::open(&state, &launch).unwrap();
            append_chained(&path, &launch, b"{\"n\":0}\n").unwrap();
            end_chain(&path, &launch, b"{\"end\":1}\n").unwrap();
            let done = AtomicBool::new(false);
            std::thread::scope(|s| {
                s.spawn(|| {
                    while !done.load(Ordering::Relaxed) {
                        append_chained(&path, &launch, b"{\"late\":1}\n").unwrap();
                    }
                });
                std::thread::sleep(std::time::Duration::from_micros(200));
                chain::forget(&state, &launch);
                std::thread::sleep(std::time::Duration::from_micros(200));
                done.store(true, Ordering::Relaxed);
            });
            let text = std::fs::read_to_string(&path).unwrap();
            let late = text
                .lines()
                .filter(|l| l.contains("late") && l.contains("\"chain\""));
            assert_eq!(
                late.count(),
                0,
                "round {round}: a record after the end was chained"
            );
            assert!(!state.join("chains").join(&launch).exists(), "round {round}");
            std::fs::remove_file(&path).unwrap();
        }
    }
}
