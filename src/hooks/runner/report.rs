//! What the runner reports: per-hook outcomes and sizes for the run log, and the errors of a
//! failed phase (the first real cause first, peers' cancellations only listed).

use std::error::Error as StdError;
use std::fmt::Write as _;
use std::io;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::hooks::entrypoint::PreparedHook;
use crate::hooks::exec_copy::ExecCopyError;
use crate::hooks::trust::TrustError;
use crate::json::strict::{self, Node};
use crate::process::signal_name;
use crate::text::escape_controls;

/// How one hook execution ended (the run log's `outcome`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Exit 0 and an accepted response.
    Ok,
    /// Non-zero exit, death by signal, or an I/O failure talking to it.
    Failed,
    /// Its own timeout or the phase deadline.
    Timeout,
    /// Killed because a peer failed or the user interrupted.
    Cancelled,
    /// Never started (queued when the phase stopped).
    NotStarted,
    /// Exit 0 but the response was rejected.
    Rejected,
    /// Could not be started (copy, approval recheck, exec).
    SpawnError,
    /// Wrote more than the stdout cap.
    OutputTooLarge,
    /// Its approval disappeared before execution.
    NotApproved,
}

/// How the entrypoint process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitInfo {
    /// Exited with this code.
    Code(i32),
    /// Killed by this signal.
    Signal(i32),
}

/// What happened to one hook (for the run log): no output content, only sizes.
#[derive(Debug, Clone)]
pub struct HookReport {
    /// Hook name.
    pub name: String,
    /// Approval hash.
    pub hash: String,
    /// When it was started (None: never started).
    pub started_at: Option<SystemTime>,
    /// Spawn to reap.
    pub duration: Duration,
    /// Outcome.
    pub outcome: Outcome,
    /// How the entrypoint ended, when it was started and reaped.
    pub exit: Option<ExitInfo>,
    /// Bytes read from stdout.
    pub stdout_bytes: u64,
    /// Bytes read from stderr (including discarded ones).
    pub stderr_bytes: u64,
}

impl HookReport {
    /// The report of a hook that was not started (yet).
    pub(crate) fn not_started(hook: &PreparedHook) -> Self {
        Self {
            name: hook.decl.name.clone(),
            hash: hook.hash.clone(),
            started_at: None,
            duration: Duration::ZERO,
            outcome: Outcome::NotStarted,
            exit: None,
            stdout_bytes: 0,
            stderr_bytes: 0,
        }
    }
}

/// A successful hook: its report and what `parse` made of its stdout.
#[derive(Debug)]
pub struct HookRun<T> {
    /// The report.
    pub report: HookReport,
    /// The parsed response.
    pub value: T,
}

/// Why one hook failed (shown under [`RunError::Failed`], which names the hook).
#[derive(Debug, thiserror::Error)]
pub enum HookFailure {
    /// The approval token disappeared between the approval check and execution.
    #[error("its approval (hash {hash}) is gone; nothing was run. Rerun to approve it again")]
    NotApproved {
        /// The approval hash.
        hash: String,
    },
    /// Rechecking approval failed.
    #[error(transparent)]
    Trust(#[from] TrustError),
    /// The private execution copy failed.
    #[error(transparent)]
    ExecCopy(#[from] ExecCopyError),
    /// `exec` failed.
    #[error("cannot execute {}: {source}; {hint}", program.display())]
    Spawn {
        /// The execution copy.
        program: PathBuf,
        /// The OS error.
        source: io::Error,
        /// What to check.
        hint: String,
    },
    /// Its per-hook timeout expired.
    #[error("timed out after {seconds} s (its timeout_seconds); its process group was killed")]
    Timeout {
        /// The declared timeout.
        seconds: u32,
    },
    /// Non-zero exit.
    #[error("exited with code {code}{detail}")]
    NonZeroExit {
        /// Exit code.
        code: i32,
        /// `: <message>` from an `{"error": "..."}` stdout, or a note that there was none.
        detail: String,
    },
    /// Death by signal.
    #[error("killed by signal {signal} ({signal_name})")]
    Signaled {
        /// Signal number.
        signal: i32,
        /// Signal name (`SIGTERM`).
        signal_name: String,
    },
    /// More stdout than the cap.
    #[error("wrote more than {cap} bytes to stdout (the limit); it was killed")]
    OutputTooLarge {
        /// The cap.
        cap: usize,
    },
    /// Exit 0 but `parse` rejected the response.
    #[error("invalid response: {source}")]
    Rejected {
        /// The validator's error.
        source: Box<dyn StdError + Send + Sync>,
    },
    /// Talking to the process failed.
    #[error("{what} failed: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The OS error.
        source: io::Error,
    },
}

impl HookFailure {
    pub(super) fn outcome(&self) -> Outcome {
        match self {
            Self::NotApproved { .. } => Outcome::NotApproved,
            Self::Trust(_) | Self::ExecCopy(_) | Self::Spawn { .. } => Outcome::SpawnError,
            Self::Timeout { .. } => Outcome::Timeout,
            Self::OutputTooLarge { .. } => Outcome::OutputTooLarge,
            Self::Rejected { .. } => Outcome::Rejected,
            Self::NonZeroExit { .. } | Self::Signaled { .. } | Self::Io { .. } => Outcome::Failed,
        }
    }
}

/// The phase failed; every variant carries a report per hook, in declaration order.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A hook failed first; the others were cancelled.
    #[error("prepare hook {name} failed: {cause}{}", stopped_note(cancelled))]
    Failed {
        /// The first failing hook.
        name: String,
        /// Why.
        cause: Box<HookFailure>,
        /// Hooks killed or never started because of it.
        cancelled: Vec<String>,
        /// Per-hook reports.
        reports: Vec<HookReport>,
    },
    /// The phase deadline expired.
    #[error(
        "prepare hooks did not finish within the {deadline:?} phase deadline{}; make the hooks faster or declare fewer of them",
        stopped_note(unfinished)
    )]
    PhaseDeadline {
        /// The phase deadline.
        deadline: Duration,
        /// Hooks killed or never started.
        unfinished: Vec<String>,
        /// Per-hook reports.
        reports: Vec<HookReport>,
    },
    /// SIGINT/SIGTERM/SIGHUP (or the caller's interrupt) arrived.
    #[error("prepare hooks interrupted by signal {signal} ({}){}", signal_name(*signal), stopped_note(unfinished))]
    Interrupted {
        /// Signal number.
        signal: i32,
        /// Hooks killed or never started.
        unfinished: Vec<String>,
        /// Per-hook reports.
        reports: Vec<HookReport>,
    },
}

impl RunError {
    /// Per-hook reports, in declaration order (for the run log).
    pub fn reports(&self) -> &[HookReport] {
        match self {
            Self::Failed { reports, .. }
            | Self::PhaseDeadline { reports, .. }
            | Self::Interrupted { reports, .. } => reports,
        }
    }
}

fn stopped_note(names: &[String]) -> String {
    if names.is_empty() {
        return String::new();
    }
    format!("; stopped without result: {}", names.join(", "))
}

/// `: <message>` from a non-zero exit's `{"error": "..."}` stdout (escaped, at most 1000
/// characters), or a note that stdout held no such object. Anything else a failing hook printed
/// is described only by its JSON type (or the strict parser's content-free error), never quoted:
/// it may be a secret the hook was about to deliver.
pub(super) fn error_detail(stdout: &[u8]) -> String {
    const MAX_CHARS: usize = 1000;
    if stdout.iter().all(u8::is_ascii_whitespace) {
        return String::new();
    }
    let found = match strict::parse(stdout) {
        Ok(Node::Object(members)) => match members.iter().find(|(k, _)| k == "error") {
            Some((_, Node::Str(error))) => {
                let mut msg: String = error.chars().take(MAX_CHARS).collect();
                if error.chars().count() > MAX_CHARS {
                    msg.push('…');
                }
                let mut out = String::from(": ");
                let _ = write!(out, "{}", escape_controls(&msg).replace('\n', "\\n"));
                return out;
            }
            Some((_, other)) => format!("an object whose `error` is {}", other.kind()),
            None => "an object without an `error` member".into(),
        },
        Ok(other) => other.kind().into(),
        Err(e) => format!("not valid JSON ({})", e.kind),
    };
    format!(" (stdout is {found}, not an {{\"error\": \"...\"}} object; its content is not shown)")
}

#[cfg(test)]
mod tests {
    use super::error_detail;

    #[test]
    fn failing_stdout_is_described_by_type_never_quoted() {
        let secret = "SECRET-7f3a";
        let cases = [
            (format!("\"{secret}\""), "a string"),
            (format!("[\"{secret}\"]"), "an array"),
            ("4242424242".to_string(), "a number"),
            (
                format!("{{\"token\": \"{secret}\"}}"),
                "an object without an `error` member",
            ),
            (
                format!("{{\"error\": [\"{secret}\"]}}"),
                "an object whose `error` is an array",
            ),
            (
                "{\"error\": 4242424242}".to_string(),
                "an object whose `error` is a number",
            ),
            (
                format!("{secret}\n"),
                "not valid JSON (invalid JSON: expected value at line 1 column 1",
            ),
            (
                format!("{{\"error\": \"x\", \"error\": \"{secret}\"}}"),
                "not valid JSON (duplicate object key",
            ),
        ];
        for (stdout, expected) in cases {
            let detail = error_detail(stdout.as_bytes());
            assert!(detail.contains(expected), "{stdout}: {detail}");
            assert!(
                !detail.contains(secret) && !detail.contains("4242"),
                "{stdout}: {detail}"
            );
        }
        assert_eq!(error_detail(b"{\"error\": \"no \\u001b db\"}"), ": no \\u{1b} db");
        assert_eq!(error_detail(b" \n"), "");
    }
}
