//! The record socket's server: accepts connections from the container, splits each into lines
//! of at most [`MAX_LINE_BYTES`] (a longer line is cut off and recorded as invalid, the rest of
//! it skipped), and hands every line to the [`Sink`], which parses, checks, scrubs, stamps and
//! appends it. Nothing the container sends can stop the server: every failure is an entry.
//!
//! Bounds: at most [`MAX_CONNECTIONS`] connections at once (more wait to be accepted), a
//! connection idle for [`IDLE_TIMEOUT`] is closed, and a launch appends at most
//! 8 MiB: [`MAX_RECORD_BYTES`] of valid records and, apart from them,
//! [`MAX_INVALID_BYTES`] of invalid lines, so garbage cannot spend what the records need. Past
//! its budget a kind of line is counted and dropped, and the counts are recorded when the launch
//! ends. With the rotation at 10 MiB, one launch can therefore rotate the log at most once: it
//! cannot push the records of its own session, or anything written since the last rotation, out
//! of the log.
//!
//! When the launch ends the sink also records whether its record is complete
//! ([`super::complete`]): an `incomplete` entry names what is missing.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::watch;

use super::complete::Completeness;
use super::scrub::Scrubber;
use crate::agent_hooks::Event;
use crate::agent_hooks::calls::OpenCalls;
use crate::agent_hooks::record::{Decision, Kind, Record};
use crate::agent_hooks::record::{
    Entry, Incomplete, IncompleteKind, Invalid, Line, MAX_LINE_BYTES, RECORD_VERSION, RecordError, Unguarded,
    UnguardedKind, parse_line,
};
use crate::logfile::{Budget, LaunchLog};
use crate::socket_server::accept;

/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 64;

/// A connection that sends nothing for this long is closed.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// Bytes of valid records one launch may append (7 MiB).
pub const MAX_RECORD_BYTES: u64 = 7 * 1024 * 1024;

/// Bytes of invalid-line entries one launch may append (1 MiB), apart from its records.
pub const MAX_INVALID_BYTES: u64 = 1024 * 1024;

/// Bytes of log one launch may append in all (8 MiB; `crate::logfile` keeps the budgets below
/// its rotation size).
#[cfg(test)]
pub const MAX_LAUNCH_BYTES: u64 = MAX_RECORD_BYTES + MAX_INVALID_BYTES;

/// The budget of valid records.
const RECORDS: usize = 0;
/// The budget of invalid lines.
const INVALID: usize = 1;

/// How long the end of a launch waits for open connections to be read to their end.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// Where the lines of one launch go.
#[derive(Debug)]
pub struct Sink {
    launch_id: String,
    agent: String,
    scrubber: Scrubber,
    log: LaunchLog,
    seen: Mutex<Completeness>,
    exit: Mutex<Option<u8>>,
    calls: Arc<OpenCalls>,
}

/// What the end of a launch found about its record (the report's `agent_hook_record`).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct RecordSummary {
    /// What the record lacks (empty: complete).
    pub incomplete: Vec<String>,
    /// What was dropped past a budget, and why.
    pub dropped: Vec<String>,
}

impl Sink {
    /// A sink appending to `log` for the launch `launch_id` of `agent`.
    pub fn new(log: PathBuf, launch_id: String, agent: String, scrubber: Scrubber) -> Self {
        Self::with_limits(
            log,
            launch_id,
            agent,
            scrubber,
            [MAX_RECORD_BYTES, MAX_INVALID_BYTES],
        )
    }

    /// The same with budgets of `limits` bytes (records, invalid lines).
    pub(super) fn with_limits(
        log: PathBuf,
        launch_id: String,
        agent: String,
        scrubber: Scrubber,
        limits: [u64; 2],
    ) -> Self {
        let budgets = limits.into_iter().map(Budget::new).collect();
        let log = LaunchLog::new(log, launch_id.clone(), "agent hook log", budgets);
        Self {
            launch_id,
            agent,
            scrubber,
            log,
            seen: Mutex::new(Completeness::default()),
            exit: Mutex::new(None),
            calls: Arc::default(),
        }
    }

    /// The launch's open tool calls, which this sink opens and closes.
    pub fn calls(&self) -> Arc<OpenCalls> {
        self.calls.clone()
    }

    /// The call an event record opens (an allowed `pre_tool`) or closes (`post_tool`).
    fn call_of(&self, r: &Record) -> Option<String> {
        let tool = r.tool.as_deref().filter(|_| r.kind == Kind::Event)?;
        match r.event {
            Event::PreTool if r.decision != Some(Decision::Block) => Some(self.calls.open(tool)),
            Event::PostTool => self.calls.close(tool),
            _ => None,
        }
    }

    /// The agent's exit status, known once its container exited (before the server stops).
    pub fn set_exit(&self, exit: Option<u8>) {
        *self.exit.lock().unwrap_or_else(|e| e.into_inner()) = exit;
    }

    /// Record one line: `bytes` is what was kept of it, `len` its full length.
    pub fn line(&self, bytes: &[u8], len: usize) {
        let line = match (len > MAX_LINE_BYTES, parse_line(bytes)) {
            (true, _) => self.invalid(RecordError::LineTooLong { len }, len),
            (false, Ok(r)) if r.agent != self.agent => self.invalid(
                RecordError::WrongAgent {
                    launch: self.agent.clone(),
                },
                len,
            ),
            (false, Ok(mut r)) => {
                for s in r.strings_mut() {
                    self.scrubber.scrub(s);
                }
                self.seen.lock().unwrap_or_else(|e| e.into_inner()).observe(&r);
                let call = self.call_of(&r);
                return self.write(Line::Record(r), false, call);
            }
            (false, Err(e)) => self.invalid(e, len),
        };
        self.write(line, false, None);
    }

    fn invalid(&self, error: RecordError, len: usize) -> Line {
        let mut text = error.to_string();
        self.scrubber.scrub(&mut text);
        Line::Invalid(Invalid::new(text, len))
    }

    /// Stamp and append, within the budget of its kind (`note`s are always written).
    fn write(&self, line: Line, note: bool, call: Option<String>) {
        let kind = match &line {
            Line::Record(_) => RECORDS,
            Line::Invalid(_) | Line::Incomplete(_) | Line::Unguarded(_) => INVALID,
        };
        let entry = Entry {
            time: crate::time::rfc3339(SystemTime::now()),
            launch_id: self.launch_id.clone(),
            call,
            line,
        };
        let mut bytes = serde_json::to_vec(&entry).expect("an entry serializes");
        bytes.push(b'\n');
        match note {
            true => self.log.note(&bytes),
            false => {
                self.log.write(kind, &bytes);
            }
        }
    }

    /// Before the container starts: record the programs the agent's configuration starts
    /// outside tool calls (`agent_hooks::outside`).
    pub fn unguarded(&self, programs: Vec<String>) {
        let entry = Unguarded {
            v: RECORD_VERSION,
            kind: UnguardedKind::Unguarded,
            agent: self.agent.clone(),
            programs,
        };
        self.write(Line::Unguarded(entry), true, None);
    }

    /// At the end of the launch: record how many lines were dropped, if any, and what the
    /// record lacks, if anything.
    pub fn finish(&self) {
        for message in self.summary().dropped {
            self.write(Line::Invalid(Invalid::new(message, 0)), true, None);
        }
        let missing = self.summary().incomplete;
        if !missing.is_empty() {
            let verdict = Incomplete {
                v: RECORD_VERSION,
                kind: IncompleteKind::Incomplete,
                agent: self.agent.clone(),
                missing,
            };
            self.write(Line::Incomplete(verdict), true, None);
        }
    }

    /// What was dropped and what is missing, as it stands.
    pub fn summary(&self) -> RecordSummary {
        let mut dropped = Vec::new();
        let (r, i) = (self.log.budget(RECORDS), self.log.budget(INVALID));
        if r.dropped > 0 {
            dropped.push(format!(
                "{} records ({} bytes) of this launch were dropped: a launch may append at most {} bytes of records",
                r.dropped, r.dropped_bytes, r.limit
            ));
        }
        if i.dropped > 0 {
            dropped.push(format!(
                "{} invalid lines ({} bytes) of this launch were dropped: a launch may append at most {} bytes of invalid lines (its valid records have a budget of their own)",
                i.dropped, i.dropped_bytes, i.limit
            ));
        }
        let exit = *self.exit.lock().unwrap_or_else(|e| e.into_inner());
        let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        RecordSummary {
            incomplete: seen.missing(&self.agent, exit),
            dropped,
        }
    }
}

/// Serve `listener` until `stopped` turns true, then serve the connections already queued, read
/// open connections to their end (for at most a grace period) and record what was dropped.
pub async fn serve(listener: UnixListener, sink: Arc<Sink>, mut stopped: watch::Receiver<bool>) {
    let mut conns = accept(&listener, MAX_CONNECTIONS, &mut stopped, |stream| {
        connection(stream, sink.clone())
    })
    .await;
    // Connections queued when the stop came were made while the agent ran (e.g. the records of
    // its last hook, sent just before it exited; the stop can win the race on a loaded machine):
    // serve them too.
    if let Ok(queued) = listener.into_std() {
        while let Ok((stream, _)) = queued.accept() {
            let Ok(stream) = stream
                .set_nonblocking(true)
                .and_then(|()| UnixStream::from_std(stream))
            else {
                continue;
            };
            if !conns.try_spawn(connection(stream, sink.clone())) {
                break;
            }
        }
    }
    let _ = tokio::time::timeout(STOP_GRACE, conns.join()).await;
    conns.abort().await;
    sink.finish();
}

/// Read one connection line by line.
async fn connection(stream: UnixStream, sink: Arc<Sink>) {
    let mut reader = BufReader::with_capacity(16 * 1024, stream);
    let mut line: Vec<u8> = Vec::new();
    let mut len = 0usize;
    loop {
        let buf = match tokio::time::timeout(IDLE_TIMEOUT, reader.fill_buf()).await {
            Ok(Ok(buf)) => buf,
            // Idle, or a read error: what was received of an unfinished line is recorded.
            _ => break,
        };
        if buf.is_empty() {
            break;
        }
        let newline = buf.iter().position(|b| *b == b'\n');
        let chunk = &buf[..newline.unwrap_or(buf.len())];
        let room = (MAX_LINE_BYTES + 1).saturating_sub(line.len());
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        len += chunk.len();
        let consumed = chunk.len() + usize::from(newline.is_some());
        reader.consume(consumed);
        if newline.is_some() {
            finish_line(&sink, &line, len);
            line.clear();
            len = 0;
        }
    }
    finish_line(&sink, &line, len);
}

/// Hand a line to the sink; blank lines (a stray newline) are not records.
fn finish_line(sink: &Sink, line: &[u8], len: usize) {
    if len <= MAX_LINE_BYTES && line.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    sink.line(line, len);
}

#[cfg(test)]
#[path = "server_tests.rs"]
mod tests;
