//! The host's append-only JSONL logs (the prepare-hook run log, `hooks::log`; the agent hook
//! record, `agent_hooks::log`; the egress log, `egress::log`): how a line is appended and rotated, how
//! records are read back, and how much one launch may append (issue 22, finding 6).
//!
//! Appending: each line is one `write` on an `O_APPEND` descriptor held under an exclusive
//! `flock`, so the lines of concurrent launches never interleave and only one of them rotates:
//! past [`ROTATE_BYTES`] the file moves to `NAME.1` (replacing the previous one) and a new file
//! starts.
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

/// Rotate a log to `NAME.1` once it is larger than this (10 MiB).
pub const ROTATE_BYTES: u64 = 10 * 1024 * 1024;

/// Append `line` (one record and its newline) as one write, rotating first when the file is
/// past [`ROTATE_BYTES`].
pub fn append_line(path: &Path, line: &[u8]) -> io::Result<()> {
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
        return file.write_all(line);
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
        .filter_map(|line| serde_json::from_slice(line).ok())
        .collect()
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
    let mut records = read_file(&rotated(path))?;
    records.extend(read_file(path)?);
    Ok(records)
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
    what: &'static str,
    budgets: Mutex<Vec<Budget>>,
    reported: AtomicBool,
}

impl LaunchLog {
    /// A writer of `path` (called `what` in the one error message a failing log gets).
    pub fn new(path: PathBuf, what: &'static str, budgets: Vec<Budget>) -> Self {
        Self {
            path,
            what,
            budgets: Mutex::new(budgets),
            reported: AtomicBool::new(false),
        }
    }

    /// The log file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Append `line` (with its newline) within the budget of `kind`; past it the line is
    /// counted instead. Whether it was written (or tried: a failing log is reported on
    /// stderr once).
    pub fn write(&self, kind: usize, line: &[u8]) -> bool {
        {
            let mut budgets = self.budgets.lock().unwrap_or_else(|e| e.into_inner());
            if !budgets[kind].admit(line.len() as u64) {
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
        if let Err(e) = append_line(&self.path, line)
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
        let log = LaunchLog::new(path.clone(), "x log", vec![Budget::new(10), Budget::new(4)]);
        assert!(log.write(0, b"aaaa\n") && log.write(0, b"bbbb\n"));
        assert!(!log.write(0, b"c\n"));
        // A full kind 0 does not stop kind 1.
        assert!(log.write(1, b"dd\n") && !log.write(1, b"ee\n"));
        log.note(b"note\n");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "aaaa\nbbbb\ndd\nnote\n");
        let b = log.budget(0);
        assert_eq!((b.written, b.dropped, b.dropped_bytes), (10, 1, 2));
        assert_eq!(log.budget(1).dropped, 1);
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
}
