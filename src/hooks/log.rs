//! Stage 2 (record): the JSONL run log of hook executions, `$XDG_STATE_HOME/ags/hooks.jsonl`.
//!
//! Input: one [`Record`] per hook execution, built from a runner [`HookReport`] plus the
//! contributed keys and destinations named by the caller. Output: appended lines, the last N
//! records for `ags hooks log`, and a one-line text rendering. I/O: that file (0600, directory
//! 0700), appended and rotated to `hooks.jsonl.1` past 10 MiB by `crate::logfile`, like the other
//! host logs.
//!
//! The log never holds values or content: no env values, file contents, stdout or stderr —
//! only names, hashes, sizes, timings, outcomes, env keys and destination paths.

use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::runner::{ExitInfo, HookReport, Outcome};
use crate::config::{HookDecl, HookEvent, HookScope, Paths};
use crate::fsutil::{self, PrivateDirError};
use crate::text::escape_controls;
use crate::time::rfc3339;

/// One hook execution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Record {
    /// The launch id (for prepare hooks: the prepare phase's).
    pub launch_id: String,
    /// The hook's event; omitted for `prepare` (records predating lifecycle events lack it).
    #[serde(default = "prepare", skip_serializing_if = "is_prepare")]
    pub event: HookEvent,
    /// Hook name.
    pub name: String,
    /// `global` or `project`.
    pub scope: String,
    /// Canonical project root of a project hook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<PathBuf>,
    /// Approval hash.
    pub hash: String,
    /// Start time, RFC 3339 UTC (empty when never started).
    pub started_at: String,
    /// Spawn to reap, in milliseconds.
    pub duration_ms: u64,
    /// Outcome.
    pub outcome: Outcome,
    /// Exit code, when it exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Signal number, when killed by a signal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// Bytes written to stdout.
    pub stdout_bytes: u64,
    /// Bytes written to stderr.
    pub stderr_bytes: u64,
    /// Environment keys the hook contributed (names only).
    #[serde(default)]
    pub keys: Vec<String>,
    /// File/mount destinations the hook contributed (paths only).
    #[serde(default)]
    pub destinations: Vec<String>,
    /// The digest of the validated response of a prepare hook ([`response_digest`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<String>,
}

/// The SHA-256 of what a validated prepare response contributes, values left out: each env key
/// and whether it is a literal or an op reference, each file's destination and size, each
/// mount's source, destination and mode. A digest of a short value would let anyone holding
/// the log test guesses of it, so no value, reference or file content is digested.
pub fn response_digest(c: &crate::hooks::validate::Contribution) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for (key, value) in &c.env {
        h.update(format!("env\0{}\0{}\n", key.as_str(), value.kind_name()));
    }
    for f in &c.files {
        h.update(format!(
            "file\0{}\0{}\n",
            f.destination.as_path().display(),
            f.content.len()
        ));
    }
    for m in &c.mounts {
        let (src, dst) = (m.source.as_path().display(), m.destination.as_path().display());
        h.update(format!("mount\0{src}\0{dst}\0{:?}\n", m.mode));
    }
    format!("sha256:{}", hex::encode(h.finalize()))
}

impl Record {
    /// The record of `report` for `decl`; `keys`/`destinations` are names and paths, never values.
    pub fn new(
        launch_id: &str,
        decl: &HookDecl,
        report: &HookReport,
        keys: Vec<String>,
        destinations: Vec<String>,
    ) -> Self {
        let (scope, project) = match &decl.scope {
            HookScope::Global => ("global", None),
            HookScope::Project { root } => ("project", Some(root.clone())),
        };
        let (exit_code, signal) = match report.exit {
            Some(ExitInfo::Code(c)) => (Some(c), None),
            Some(ExitInfo::Signal(s)) => (None, Some(s)),
            None => (None, None),
        };
        Self {
            launch_id: launch_id.into(),
            event: decl.event,
            name: report.name.clone(),
            scope: scope.into(),
            project,
            hash: report.hash.clone(),
            started_at: report.started_at.map(rfc3339).unwrap_or_default(),
            duration_ms: report.duration.as_millis() as u64,
            outcome: report.outcome,
            exit_code,
            signal,
            stdout_bytes: report.stdout_bytes,
            stderr_bytes: report.stderr_bytes,
            keys,
            destinations,
            response: None,
        }
    }

    /// One line for `ags hooks log` (control characters escaped).
    pub fn render(&self) -> String {
        let outcome = serde_json::to_value(self.outcome)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default();
        let exit = match (self.exit_code, self.signal) {
            (Some(c), _) => format!(" exit={c}"),
            (None, Some(s)) => format!(" signal={s}"),
            _ => String::new(),
        };
        let scope = match &self.project {
            Some(p) => format!("project:{}", p.display()),
            None => self.scope.clone(),
        };
        let name = match self.event {
            HookEvent::Prepare => self.name.clone(),
            event => format!("{event}:{}", self.name),
        };
        let line = format!(
            "{} {} {} [{}] {}{} {}ms out={}B err={}B hash={} keys=[{}] destinations=[{}]",
            if self.started_at.is_empty() {
                "-"
            } else {
                &self.started_at
            },
            self.launch_id,
            name,
            scope,
            outcome,
            exit,
            self.duration_ms,
            self.stdout_bytes,
            self.stderr_bytes,
            self.hash.chars().take(12).collect::<String>(),
            self.keys.join(","),
            self.destinations.join(","),
        );
        escape_controls(&line).replace('\n', "\\n")
    }
}

fn prepare() -> HookEvent {
    HookEvent::Prepare
}

fn is_prepare(event: &HookEvent) -> bool {
    *event == HookEvent::Prepare
}

/// The run log cannot be written or read.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// The state directory failed a safety check.
    #[error("hook run log directory {}: {source}", dir.display())]
    Dir {
        /// The directory.
        dir: PathBuf,
        /// What is wrong, with the fix.
        source: PrivateDirError,
    },
    /// The log file has group/other permissions or another owner.
    #[error("hook run log {} must be an owner-only file of yours (mode {mode:04o}, uid {owner}); run `chmod 600 {}` or remove it", path.display(), path.display())]
    Unsafe {
        /// The log file.
        path: PathBuf,
        /// Its mode.
        mode: u32,
        /// Its owner.
        owner: u32,
    },
    /// Reading or writing failed.
    #[error("hook run log {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
}

/// The hook run log.
#[derive(Debug, Clone, Copy)]
pub struct RunLog;

impl RunLog {
    /// Append records, one JSON line each (`crate::logfile`: one write under a lock, rotated
    /// past 10 MiB). An existing log that is not private to you is refused.
    pub fn append_all(paths: &Paths, records: &[Record]) -> Result<(), LogError> {
        let path = paths.hook_log();
        let dir = paths.state_dir();
        fsutil::ensure_private_dir(&dir).map_err(|source| LogError::Dir { dir, source })?;
        let io_err = |source| LogError::Io {
            path: path.clone(),
            source,
        };
        match fs::symlink_metadata(&path) {
            Ok(meta) => check_private(&path, &meta)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err(e)),
        }
        for record in records {
            let mut line = serde_json::to_vec(record).expect("a log record serializes");
            line.push(b'\n');
            crate::logfile::append_chained(&path, &record.launch_id, &line).map_err(io_err)?;
        }
        Ok(())
    }

    /// The last `n` records, oldest first (reading the rotated file too when needed). Lines that
    /// do not parse (a torn or foreign line) are skipped.
    pub fn read_last(paths: &Paths, n: usize) -> Result<Vec<Record>, LogError> {
        let path = paths.hook_log();
        crate::logfile::read_last(&path, n).map_err(|source| LogError::Io { path, source })
    }

    /// Every record of launch `launch_id`, oldest first (the rotated file included).
    pub fn for_launch(paths: &Paths, launch_id: &str) -> Result<Vec<Record>, LogError> {
        let path = paths.hook_log();
        let mut records: Vec<Record> =
            crate::logfile::read_all(&path).map_err(|source| LogError::Io { path, source })?;
        records.retain(|r| r.launch_id == launch_id);
        Ok(records)
    }
}

fn check_private(path: &Path, meta: &fs::Metadata) -> Result<(), LogError> {
    match fsutil::exposure(meta) {
        None => Ok(()),
        Some(_) => Err(LogError::Unsafe {
            path: path.into(),
            mode: meta.mode() & 0o7777,
            owner: meta.uid(),
        }),
    }
}
