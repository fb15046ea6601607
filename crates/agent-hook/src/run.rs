//! Running one handler, isolated: its own process (and process group), the normalised event as
//! JSON on stdin, a clean environment, bounded output, a timeout. Whatever the handler does —
//! exit non-zero, die by a signal, hang, print garbage — ends up as an [`Outcome`] and never
//! stops the dispatcher.
//!
//! The handler protocol: exit 0 and print nothing (allow) or one JSON object
//! `{"decision": "allow" | "block", "reason": "…"}`; or exit 2 to block with the first line of
//! stderr as the reason (as claude's and codex's command hooks do). Any other exit status is a
//! failure. Only `pre_tool` can be blocked; a block on another event is recorded and ignored.

use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::handlers::Handler;
use crate::input::truncate;
use crate::json::{self, Value};

/// Most of a handler's stdout that is read (an answer is one small object).
pub const STDOUT_MAX: usize = 64 * 1024;
/// Most of a handler's stderr that is read.
pub const STDERR_MAX: usize = 8 * 1024;
/// Longest reason passed on to the agent and the record.
pub const REASON_MAX: usize = 1024;
/// Variables a handler inherits from the agent's environment; no others (the agent's
/// environment holds its API keys).
pub const KEPT_ENV: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TZ", "TMPDIR", "TERM",
];
/// Largest payload written to a handler's stdin without a writer thread.
const INLINE_STDIN_MAX: usize = 16 * 1024;
/// How long output still open after the handler exited is waited for while a process of its
/// group lives (a background child holding the pipe).
const DRAIN_GRACE: Duration = Duration::from_millis(200);
/// How long it is waited for once no process of the group is left: what the handler wrote
/// before it exited is in the pipe, and the reader threads only have to run (on a loaded machine
/// that can take longer than [`DRAIN_GRACE`]). A process that left the group and holds the pipe
/// costs this much.
const DRAIN_MAX: Duration = Duration::from_secs(5);

/// How a handler run or an event ended (the record's `outcome`; the host reads records with
/// this type too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Exit 0 with an allow (or no) answer (for an event: every handler ran, the agent was
    /// answered).
    Ok,
    /// Exit status other than 0 and 2.
    Failed,
    /// Killed at its timeout.
    Timeout,
    /// Died by a signal, or could not be started.
    Crashed,
    /// Exit 0 with output that is not an answer.
    InvalidOutput,
    /// It blocked the tool call (for an event: the agent was told to block it).
    Blocked,
    /// Not run: its `tool` matcher did not match, or an earlier handler or the guard blocked.
    Skipped,
}

impl Outcome {
    /// Every outcome.
    pub const ALL: [Outcome; 7] = [
        Outcome::Ok,
        Outcome::Failed,
        Outcome::Timeout,
        Outcome::Crashed,
        Outcome::InvalidOutput,
        Outcome::Blocked,
        Outcome::Skipped,
    ];

    /// The record's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Failed => "failed",
            Outcome::Timeout => "timeout",
            Outcome::Crashed => "crashed",
            Outcome::InvalidOutput => "invalid_output",
            Outcome::Blocked => "blocked",
            Outcome::Skipped => "skipped",
        }
    }

    /// Whether the handler failed (what `on_failure` is about).
    pub fn is_failure(self) -> bool {
        matches!(
            self,
            Outcome::Failed | Outcome::Timeout | Outcome::Crashed | Outcome::InvalidOutput
        )
    }
}

/// The result of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// How it ended.
    pub outcome: Outcome,
    /// Its exit status, if it exited.
    pub exit_code: Option<i32>,
    /// Wall time.
    pub duration_ms: u64,
    /// What it decided about a `pre_tool` call.
    pub block: bool,
    /// Its reason, or what went wrong.
    pub reason: Option<String>,
}

/// The handler's command: a clean environment but for the kept variables and the hook's name
/// and event, piped, in a process group of its own, in the agent's directory when it exists.
fn command(h: &Handler, cwd: Option<&str>) -> Command {
    let mut cmd = Command::new(&h.command[0]);
    cmd.args(&h.command[1..])
        .env_clear()
        .envs(KEPT_ENV.iter().filter_map(|k| Some((*k, std::env::var_os(k)?))))
        .env("AGS_AGENT_HOOK_NAME", &h.name)
        .env("AGS_AGENT_HOOK_EVENT", &h.event)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if let Some(dir) = cwd.filter(|d| Path::new(d).is_dir()) {
        cmd.current_dir(dir);
    }
    cmd
}

/// Write the payload to the handler's stdin. A small payload fits the pipe's buffer (64 KiB on
/// Linux): written at once, no thread.
fn feed(mut stdin: std::process::ChildStdin, payload: &str) {
    if payload.len() <= INLINE_STDIN_MAX {
        let _ = stdin.write_all(payload.as_bytes());
    } else {
        let data = payload.as_bytes().to_vec();
        std::thread::spawn(move || {
            let _ = stdin.write_all(&data);
        });
    }
}

/// After the handler exited: wait for its output readers, at most `DRAIN_MAX`, and only past
/// `DRAIN_GRACE` while its process group is gone (a background process of the handler may
/// hold the pipes for long).
fn drain<T>(out: &Arc<T>, err: &Arc<T>, rx: &mpsc::Receiver<()>, group: u32) {
    let exited = Instant::now();
    let mut group_gone = false;
    while Arc::strong_count(out) + Arc::strong_count(err) > 2 {
        let waited = exited.elapsed();
        if waited >= DRAIN_MAX {
            break;
        }
        if waited >= DRAIN_GRACE && !group_gone {
            if group_lives(group) {
                break;
            }
            group_gone = true;
        }
        let _ = rx.recv_timeout(Duration::from_millis(5));
    }
}

/// Run `h` with `payload` on stdin in `cwd` (if it is a directory). `can_block`: the event is
/// `pre_tool`.
pub fn run(h: &Handler, payload: &str, cwd: Option<&str>, can_block: bool) -> Run {
    let start = Instant::now();
    let mut child = match command(h, cwd).spawn() {
        Ok(c) => c,
        Err(e) => {
            return finish(
                start,
                Outcome::Crashed,
                None,
                false,
                Some(format!("cannot start: {e}")),
            );
        }
    };
    if let Some(stdin) = child.stdin.take() {
        feed(stdin, payload);
    }
    let (tx, rx) = mpsc::channel::<()>();
    let out = capture(child.stdout.take(), STDOUT_MAX, tx.clone());
    let err = capture(child.stderr.take(), STDERR_MAX, tx);
    let deadline = start + Duration::from_secs(h.timeout_seconds);
    let mut pause = Duration::from_millis(1);
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) => {}
            Err(e) => {
                return finish(
                    start,
                    Outcome::Failed,
                    None,
                    false,
                    Some(format!("cannot wait: {e}")),
                );
            }
        }
        let now = Instant::now();
        if now >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            let reason = format!("killed after its timeout of {} s", h.timeout_seconds);
            return finish(start, Outcome::Timeout, None, false, Some(reason));
        }
        // Woken at once when a pipe closes (usually: the handler exited).
        match rx.recv_timeout(pause.min(deadline - now)) {
            Ok(()) => {}
            Err(RecvTimeoutError::Timeout) => pause = (pause * 2).min(Duration::from_millis(20)),
            Err(RecvTimeoutError::Disconnected) => std::thread::sleep(pause.min(deadline - now)),
        }
    };
    drain(&out, &err, &rx, child.id());
    let stdout = take(&out);
    let stderr = take(&err);
    judge(start, status, &stdout, &stderr, can_block)
}

/// Read `pipe` into a shared buffer (at most `max` bytes kept, the rest drained); the reader
/// thread drops its handle and signals `done` at end of file.
fn capture<R: Read + Send + 'static>(
    pipe: Option<R>,
    max: usize,
    done: mpsc::Sender<()>,
) -> Arc<Mutex<Vec<u8>>> {
    let buf = Arc::new(Mutex::new(Vec::new()));
    if let Some(mut pipe) = pipe {
        let mine = Arc::clone(&buf);
        std::thread::spawn(move || {
            let mut chunk = [0u8; 8192];
            while let Ok(n) = pipe.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                if let Ok(mut b) = mine.lock() {
                    let room = max.saturating_sub(b.len());
                    b.extend_from_slice(&chunk[..n.min(room)]);
                }
            }
            drop(mine);
            let _ = done.send(());
        });
    }
    buf
}

/// Whether a live (not zombie) process is in process group `pgid`, from `/proc`; true when that
/// cannot be read.
pub fn group_lives(pgid: u32) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return true;
    };
    let pgid = pgid.to_string();
    dir.flatten().any(|entry| {
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // After the ")" ending the command name: state, ppid, pgrp.
        let mut fields = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace())
            .into_iter()
            .flatten();
        let state = fields.next();
        state.is_some_and(|s| s != "Z" && s != "X") && fields.nth(1) == Some(pgid.as_str())
    })
}

fn take(buf: &Arc<Mutex<Vec<u8>>>) -> Vec<u8> {
    buf.lock().map(|b| b.clone()).unwrap_or_default()
}

fn finish(
    start: Instant,
    outcome: Outcome,
    exit_code: Option<i32>,
    block: bool,
    reason: Option<String>,
) -> Run {
    Run {
        outcome,
        exit_code,
        duration_ms: u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX),
        block,
        reason: reason.map(|r| truncate(&r, REASON_MAX)),
    }
}

/// The outcome of a handler that exited with `status` and printed `stdout`/`stderr`.
fn judge(start: Instant, status: ExitStatus, stdout: &[u8], stderr: &[u8], can_block: bool) -> Run {
    let first_line = |b: &[u8]| {
        let s = String::from_utf8_lossy(b);
        s.lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(str::to_owned)
    };
    let code = status.code();
    let blocked = |reason: Option<String>| {
        if can_block {
            let reason = reason.unwrap_or_else(|| "blocked by an ags agent hook handler".into());
            finish(start, Outcome::Blocked, code, true, Some(reason))
        } else {
            let note = "asked to block, but only pre_tool can be blocked";
            finish(start, Outcome::Ok, code, false, Some(note.into()))
        }
    };
    match code {
        None => {
            let sig = status.signal().unwrap_or(0);
            finish(
                start,
                Outcome::Crashed,
                None,
                false,
                Some(format!("killed by signal {sig}")),
            )
        }
        Some(2) => blocked(first_line(stderr)),
        Some(0) => {
            if stdout.iter().all(u8::is_ascii_whitespace) {
                return finish(start, Outcome::Ok, code, false, None);
            }
            let invalid = |why: &str| finish(start, Outcome::InvalidOutput, code, false, Some(why.into()));
            let Ok(v) = json::parse(stdout) else {
                return invalid("stdout is not one JSON object");
            };
            let reason = v.get("reason").and_then(Value::as_str).map(str::to_owned);
            match v.get("decision").and_then(Value::as_str) {
                Some("block") => blocked(reason),
                Some("allow") => finish(start, Outcome::Ok, code, false, reason),
                _ => invalid("the answer's decision is not \"allow\" or \"block\""),
            }
        }
        Some(c) => {
            let why =
                first_line(stderr).map_or(format!("exit status {c}"), |l| format!("exit status {c}: {l}"));
            finish(start, Outcome::Failed, code, false, Some(why))
        }
    }
}
