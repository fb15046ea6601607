//! The agent hook log on the host, `$XDG_STATE_HOME/ags/agent-hooks.jsonl` (0600 in a 0700
//! directory, never mounted into a container): one [`Entry`] per line, appended by the `ags`
//! process of each launch, read by `ags log`.
//!
//! Lines are appended and rotated (past [`ROTATE_BYTES`], to `agent-hooks.jsonl.1`) by
//! `crate::logfile`, as the egress log's are.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::agent_hooks::record::{Entry, Line};

pub use crate::logfile::{ROTATE_BYTES, rotated};

/// Append one entry as one line.
#[cfg(test)]
pub fn append(path: &Path, entry: &Entry) -> io::Result<()> {
    let mut line = serde_json::to_vec(entry).map_err(io::Error::other)?;
    line.push(b'\n');
    crate::logfile::append_chained(path, &entry.launch_id, &line)
}

/// Every entry of the rotated file, then of the current one, oldest first. Lines that do not
/// parse (a file damaged by hand) are skipped.
pub fn read_all(path: &Path) -> io::Result<Vec<Entry>> {
    crate::logfile::read_all(path)
}

/// Which entries `ags log` shows.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only records (and incomplete verdicts) of this agent (invalid lines have none and are
    /// left out).
    pub agent: Option<String>,
    /// Only entries of this launch.
    pub launch: Option<String>,
}

impl Filter {
    /// Whether `e` passes.
    pub fn matches(&self, e: &Entry) -> bool {
        let agent = match &e.line {
            Line::Record(r) => Some(&r.agent),
            Line::Incomplete(i) => Some(&i.agent),
            Line::Unguarded(u) => Some(&u.agent),
            Line::Invalid(_) => None,
        };
        let agent_ok = match (&self.agent, agent) {
            (None, _) => true,
            (Some(a), Some(b)) => b == a,
            (Some(_), None) => false,
        };
        agent_ok && self.launch.as_ref().is_none_or(|l| e.launch_id == *l)
    }
}

/// The last `n` entries passing `filter`, oldest first.
pub fn read_last(path: &Path, filter: &Filter, n: usize) -> io::Result<Vec<Entry>> {
    let mut entries: Vec<Entry> = read_all(path)?
        .into_iter()
        .filter(|e| filter.matches(e))
        .collect();
    let skip = entries.len().saturating_sub(n);
    Ok(entries.split_off(skip))
}

/// Reads entries as they are appended (`ags log --follow`), across rotations: it keeps the
/// file it has open until it has read it to the end, then moves to the new one.
#[derive(Debug)]
pub struct Follower {
    path: PathBuf,
    file: Option<File>,
    partial: Vec<u8>,
}

impl Follower {
    /// Follow `path` from its current end (what [`read_last`] showed is not repeated).
    pub fn from_end(path: &Path) -> io::Result<Self> {
        let file = match File::open(path) {
            Ok(mut f) => {
                f.seek(SeekFrom::End(0))?;
                Some(f)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        Ok(Self {
            path: path.to_path_buf(),
            file,
            partial: Vec::new(),
        })
    }

    /// The entries appended since the last call.
    pub fn poll(&mut self) -> io::Result<Vec<Entry>> {
        let mut out = Vec::new();
        loop {
            if let Some(f) = &mut self.file {
                f.read_to_end(&mut self.partial)?;
            }
            if let Some(end) = self.partial.iter().rposition(|b| *b == b'\n') {
                out.extend(crate::logfile::parse_lines::<Entry>(&self.partial[..end]));
                self.partial.drain(..=end);
            }
            // Rotated (or created): switch once the old file is read to its end.
            let now = match std::fs::metadata(&self.path) {
                Ok(m) => Some((m.dev(), m.ino())),
                Err(e) if e.kind() == io::ErrorKind::NotFound => None,
                Err(e) => return Err(e),
            };
            let held = match &self.file {
                Some(f) => Some(f.metadata().map(|m| (m.dev(), m.ino()))?),
                None => None,
            };
            if now.is_none() || now == held {
                return Ok(out);
            }
            self.file = Some(File::open(&self.path)?);
            self.partial.clear();
        }
    }
}

/// The header of the table `ags log` prints.
pub fn header() -> String {
    let columns = [
        "TIME", "LAUNCH", "AGENT", "EVENT", "HANDLER", "OUTCOME", "DECISION", "MS",
    ];
    row(columns, "DETAIL")
}

/// One row of the table: for a record its tool and command (or path) and the reason; for an
/// invalid line what was wrong; for an incomplete launch what its record lacks. Text from the container is escaped (it cannot drive the
/// terminal or break the row).
pub fn render(e: &Entry) -> String {
    let esc = |s: &str| crate::text::escape_line(s);
    let launch = esc(&e.launch_id);
    match &e.line {
        Line::Record(r) => {
            let mut detail = Vec::new();
            if let Some(t) = &r.tool {
                detail.push(esc(t));
            }
            if let Some(s) = &r.tool_input_summary {
                detail.push(esc(s));
            }
            if let Some(c) = r.exit_code {
                detail.push(format!("exit={c}"));
            }
            if let Some(why) = &r.reason {
                detail.push(format!("({})", esc(why)));
            }
            let handler = r.handler.as_deref().map(esc).unwrap_or_else(|| "-".into());
            let decision = r
                .decision
                .as_ref()
                .map(crate::plan::text::word)
                .unwrap_or_else(|| "-".into());
            let columns = [
                &e.time,
                &launch,
                &esc(&r.agent),
                r.event.as_str(),
                &handler,
                r.outcome.as_str(),
                &decision,
                &r.duration_ms.to_string(),
            ];
            row(columns, &detail.join(" "))
        }
        Line::Invalid(i) => row(
            [&e.time, &launch, "-", "-", "-", "invalid", "-", "-"],
            &format!("{} bytes: {}", i.bytes, esc(&i.error)),
        ),
        Line::Incomplete(i) => host_row(
            e,
            &i.agent,
            "incomplete",
            "the record of this launch is incomplete",
            &i.missing,
        ),
        Line::Unguarded(u) => host_row(
            e,
            &u.agent,
            "unguarded",
            "programs the agent's configuration starts outside tool calls (no hook sees them)",
            &u.programs,
        ),
    }
}

/// A row of an entry the host writes about a launch: its `kind` in the outcome column, then
/// `what` and the `items`, escaped.
fn host_row(e: &Entry, agent: &str, kind: &str, what: &str, items: &[String]) -> String {
    let esc = |s: &str| crate::text::escape_line(s);
    let items = items.iter().map(|m| esc(m)).collect::<Vec<_>>().join("; ");
    let columns = [&e.time, &esc(&e.launch_id), &esc(agent), "-", "-", kind, "-", "-"];
    row(columns, &format!("{what}: {items}"))
}

/// The columns (time, launch, agent, event, handler, outcome, decision, milliseconds) aligned,
/// then the detail.
fn row(c: [&str; 8], detail: &str) -> String {
    format!(
        "{:<24} {:<28} {:<8} {:<13} {:<12} {:<14} {:<8} {:>7} {detail}",
        c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]
    )
}

#[cfg(test)]
#[path = "file_tests.rs"]
mod tests;
