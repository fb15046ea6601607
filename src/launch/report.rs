//! The machine-readable result of one launch, for CI (`ags --report PATH|-`): launch id, image,
//! exit code, phase timings, every hook run (the hook log's records of this launch: names,
//! hashes, outcomes, env keys and destinations — never values) and the leftovers cleanup could
//! not remove. Written once, after the launch (atomically for a path), also when it failed.
//!
//! I/O: the report file or standard output, and reading the hook run log.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use super::cleanup::{CleanupError, Resource};
use crate::agent_hooks::log::RecordSummary;
use crate::config::Paths;
use crate::containment::WritableRoot;
use crate::hooks::log::{Record, RunLog};
use crate::workspace::user_paths::{self, CheckedHostPath, UserPathError};

/// Version of the report format (bumped when a field changes meaning or goes away).
pub const REPORT_VERSION: u32 = 1;

/// Where the report goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// Standard output, after everything the agent printed (`--report -`).
    Stdout,
    /// A file, replaced atomically.
    File(PathBuf),
}

/// `--report` refused before anything runs.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The report's directory does not exist (or is not a directory).
    #[error(
        "--report {}: the directory {} does not exist; create it or give another path (or `-` for standard output)",
        path.display(), dir.display()
    )]
    NoDirectory { path: PathBuf, dir: PathBuf },
    /// The path is a directory.
    #[error("--report {}: is a directory; give a file path (or `-` for standard output)", path.display())]
    IsDirectory { path: PathBuf },
    /// Writing the report failed (the launch itself is over).
    #[error("--report {}: writing the launch report failed: {source}", path.display())]
    Write { path: PathBuf, source: std::io::Error },
    /// The path is refused or changed (a symlink an agent could have planted on the way).
    #[error(transparent)]
    Path(#[from] UserPathError),
    /// Writing failed and a file is at the path: not this launch's report (the one there
    /// before was removed when the launch began), so possibly the agent's.
    #[error(
        "--report {}: {source}; the file there now is not ags's report (ags removed the old one \
         when the launch began, and the agent may have written this one): delete it, and give \
         a path outside the directories the agent can write",
        path.display()
    )]
    NotOurs { path: PathBuf, source: Box<ReportError> },
}

impl Destination {
    /// Parse and check `--report`: `-`, or a file path whose directory exists.
    pub fn parse(arg: &Path) -> Result<Self, ReportError> {
        if arg == Path::new("-") {
            return Ok(Destination::Stdout);
        }
        if arg.is_dir() {
            return Err(ReportError::IsDirectory { path: arg.into() });
        }
        let dir = arg
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if !dir.is_dir() {
            return Err(ReportError::NoDirectory {
                path: arg.into(),
                dir: dir.into(),
            });
        }
        Ok(Destination::File(arg.into()))
    }
}

/// `--report PATH` checked for writing against the directories an agent can write.
pub fn check_path(path: &Path, writable: &[WritableRoot]) -> Result<CheckedHostPath, UserPathError> {
    let what = format!("--report {}", crate::safepath::display(path));
    user_paths::check_new_file(&what, path, writable)
}

/// Check `path` before the launch and remove the report a previous launch left there, so that
/// whatever is at the path after a failed write is known not to be this launch's
/// ([`ReportError::NotOurs`]: the agent can write a report path inside the workspace).
pub fn clear_path(path: &Path, writable: &[WritableRoot]) -> Result<(), ReportError> {
    let checked = check_path(path, writable)?;
    match std::fs::remove_file(checked.physical()) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(ReportError::Write {
            path: path.into(),
            source: e,
        }),
        _ => Ok(()),
    }
}

/// What the launch learns as it goes, for the report.
#[derive(Debug, Default)]
pub struct Facts {
    /// When the launch began (before approval and the prepare hooks).
    pub began: Option<Instant>,
    /// The launch id, once known.
    pub launch_id: Option<String>,
    /// The image, once the plan exists.
    pub image: Option<String>,
    /// The agent.
    pub agent: Option<String>,
    /// The state directory holding the hook run log.
    pub paths: Option<Paths>,
    /// What cleanup could not remove.
    pub leftovers: Vec<Leftover>,
    /// The end of the agent hook record, when the launch had agent hooks.
    pub agent_hook_record: Option<RecordSummary>,
    /// The egress log's tripwire records of this launch.
    pub tripwires: Vec<crate::egress::log::EgressRecord>,
    /// The directories an agent can write, as far as the launch learnt them: the report's
    /// path must not pass through a symlink planted there (`workspace::user_paths`).
    pub writable: Vec<WritableRoot>,
    /// The launch's run receipt, once closed.
    pub receipt: Option<crate::receipt::Sealed>,
}

impl Facts {
    /// A launch that ended without a receipt (refused before its plan) drops its chain heads.
    pub fn abandon_chains(&self) {
        if let (Some(paths), Some(id), None) = (&self.paths, &self.launch_id, &self.receipt) {
            crate::receipt::abandon(paths, id);
        }
    }
}

/// Something the launch created and could not remove (`ags gc` retries).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Leftover {
    /// `container`, `volume` or `host-directory`.
    pub kind: &'static str,
    /// Its id, name or path.
    pub name: String,
    /// Why it is still there.
    pub error: String,
}

impl From<&CleanupError> for Leftover {
    fn from(e: &CleanupError) -> Self {
        let (kind, name) = match &e.resource {
            Resource::Container(id) => ("container", id.clone()),
            Resource::Volume(name) => ("volume", name.clone()),
            Resource::HostDir(dir) => ("host-directory", dir.display().to_string()),
        };
        Leftover {
            kind,
            name,
            error: e.message.to_string(),
        }
    }
}

/// Milliseconds spent in each phase; `null` for a phase the launch did not reach.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Phases {
    /// Approval and the prepare hooks.
    pub hooks: Option<u64>,
    /// Staging and state volumes and the container's creation.
    pub create: Option<u64>,
    /// Attach, staging upload and start, up to the agent running.
    pub start: Option<u64>,
    /// The agent's run, up to its exit code being known.
    pub exit: Option<u64>,
    /// Removing what the launch created.
    pub cleanup: Option<u64>,
}

impl Phases {
    /// The phases from the launch's trace marks (`crate::trace`).
    pub fn from_marks(began: Option<Instant>) -> Self {
        use crate::trace::reached;
        let span = |from: Option<Instant>, to: &str| {
            let (from, to) = (from?, reached(to)?);
            Some(to.saturating_duration_since(from).as_millis() as u64)
        };
        Phases {
            hooks: span(began, "hooks done"),
            create: span(reached("secrets"), "created"),
            start: span(reached("created"), "started"),
            exit: span(reached("started"), "exit code known"),
            cleanup: span(reached("exit code known"), "cleaned up"),
        }
    }
}

/// How a launch ended, for a CI job to branch on (docs/ci.md); the exit code stays
/// `podman run`'s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// The agent exited 0.
    Success,
    /// The agent exited non-zero (its own code; 126/127: its command could not be run).
    AgentFailure,
    /// `--timeout` stopped the agent (exit 124).
    Timeout,
    /// The kernel killed the agent for its memory limit (Podman's `OOMKilled`; exit 137).
    OutOfMemory,
    /// A prepare hook was not approved, failed or answered something invalid (exit 125).
    HookRefusal,
    /// A protection of `ags` refused the launch: a path, a mount, the git layout, the
    /// workspace's state, a pinned plan that drifted (exit 125).
    PolicyRefusal,
    /// A command-line option or the configuration is invalid (exit 125).
    InvalidInput,
    /// Podman, 1Password, the host or `ags` itself failed (exit 125).
    Infrastructure,
    /// `ags` was interrupted before the agent started (exit 129, 130 or 143).
    Interrupted,
}

impl Outcome {
    /// The outcome of a launch that returned `code` (the agent's, or 124 for a timeout).
    pub fn of_exit(code: u8) -> Self {
        if crate::trace::reached(OOM_MARK).is_some() {
            return Outcome::OutOfMemory;
        }
        match code {
            0 => Outcome::Success,
            _ if crate::trace::reached(TIMEOUT_MARK).is_some() => Outcome::Timeout,
            _ => Outcome::AgentFailure,
        }
    }
}

/// The trace mark set when Podman says the kernel killed the agent for its memory limit.
pub const OOM_MARK: &str = "oom killed";
/// The trace mark set when `--timeout` stopped the agent.
pub const TIMEOUT_MARK: &str = "timed out";

/// The report document.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Report {
    /// [`REPORT_VERSION`].
    pub version: u32,
    /// How the launch ended.
    pub outcome: Outcome,
    /// The launch id (`null` when the launch failed before it had one).
    pub launch_id: Option<String>,
    /// The image (`null` when the launch failed before its plan existed).
    pub image: Option<String>,
    /// The agent.
    pub agent: Option<String>,
    /// `ags`'s exit code: the agent's, or 125/126/127 like `podman run`.
    pub exit_code: u8,
    /// Why the launch failed, when `ags` itself failed (the message it printed).
    pub error: Option<String>,
    /// Phase timings in milliseconds.
    pub phases_ms: Phases,
    /// Every hook run of this launch, as in the hook run log (no values).
    pub hooks: Vec<Record>,
    /// What cleanup could not remove (empty when nothing was left).
    pub leftovers: Vec<Leftover>,
    /// With agent hooks: what the agent hook record lacks (`incomplete`, empty when complete)
    /// and what was dropped past its budgets (`null` without agent hooks).
    pub agent_hook_record: Option<RecordSummary>,
    /// A credential's placeholder seen going to a host it is not for: the egress log's
    /// `tripwire` records of this launch (docs/credentials.md); empty when none.
    pub tripwires: Vec<crate::egress::log::EgressRecord>,
    /// The launch's run receipt (docs/receipts.md): its path and the SHA-256 of the file. Keep
    /// the digest away from this host: `ags verify ID --digest DIGEST` then also proves that
    /// the receipt was not rewritten (`null` when the launch ended before its plan existed).
    pub receipt: Option<crate::receipt::Sealed>,
}

impl Report {
    /// The report of a launch that ended with `exit_code` (and `error` when `ags` failed) and
    /// `outcome`.
    pub fn new(facts: Facts, (exit_code, outcome): (u8, Outcome), error: Option<String>) -> Self {
        let hooks = match (&facts.paths, &facts.launch_id) {
            (Some(paths), Some(id)) => RunLog::for_launch(paths, id).unwrap_or_else(|e| {
                eprintln!("ags: warning: --report: reading the hook run log: {e}");
                Vec::new()
            }),
            _ => Vec::new(),
        };
        Report {
            version: REPORT_VERSION,
            outcome,
            phases_ms: Phases::from_marks(facts.began),
            launch_id: facts.launch_id,
            image: facts.image,
            agent: facts.agent,
            exit_code,
            error,
            hooks,
            leftovers: facts.leftovers,
            agent_hook_record: facts.agent_hook_record,
            tripwires: facts.tripwires,
            receipt: facts.receipt,
        }
    }

    /// Write the report to `dest`: atomically for a file (mode 0644), never through a symlink
    /// in a directory of `writable` ([`check_path`]), else to standard output.
    pub fn write(&self, dest: &Destination, writable: &[WritableRoot]) -> Result<(), ReportError> {
        let mut json = serde_json::to_vec_pretty(self).expect("a report serializes");
        json.push(b'\n');
        match dest {
            Destination::File(path) => {
                let written = check_path(path, writable).and_then(|c| c.write_atomic(&json, 0o644));
                match written {
                    Ok(()) => Ok(()),
                    Err(e) if std::fs::symlink_metadata(path).is_ok() => Err(ReportError::NotOurs {
                        path: path.into(),
                        source: Box::new(e.into()),
                    }),
                    Err(e) => Err(e.into()),
                }
            }
            Destination::Stdout => {
                use std::io::Write;
                let mut out = std::io::stdout().lock();
                out.write_all(&json)
                    .and_then(|()| out.flush())
                    .map_err(|source| ReportError::Write {
                        path: "-".into(),
                        source,
                    })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The report's JSON Schema (draft 2020-12), pretty, newline-terminated: what
    /// `docs/schemas/report.schema.json` holds (a test keeps it current).
    fn schema_text() -> String {
        let schema = schemars::generate::SchemaSettings::draft2020_12()
            .into_generator()
            .into_root_schema_for::<Report>();
        let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
        text.push('\n');
        text
    }

    /// Compare (or, with `AGS_BLESS=1`, rewrite) `docs/schemas/report.schema.json`.
    #[test]
    fn the_committed_report_schema_is_current() {
        crate::fsutil::check_committed(
            "docs/schemas/report.schema.json",
            &schema_text(),
            "cargo test --lib launch::report",
        );
    }

    #[test]
    fn destination_checks_the_directory() {
        assert_eq!(Destination::parse(Path::new("-")).unwrap(), Destination::Stdout);
        let dir = tempfile::tempdir().unwrap();
        let ok = dir.path().join("r.json");
        assert_eq!(Destination::parse(&ok).unwrap(), Destination::File(ok));
        assert!(matches!(
            Destination::parse(&dir.path().join("missing/r.json")),
            Err(ReportError::NoDirectory { .. })
        ));
        assert!(matches!(
            Destination::parse(dir.path()),
            Err(ReportError::IsDirectory { .. })
        ));
    }
}
