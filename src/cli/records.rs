//! `ags log` and `ags verify`: their arguments.

use std::path::PathBuf;

use clap::Args;

/// `ags verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The launch (its id, `ags-PID-NANOS`, as `ags log` and `--report` show it); the latest
    /// receipt when left out.
    #[arg(value_name = "LAUNCH")]
    pub launch: Option<String>,
    /// The receipt's digest as `--report` printed it (`sha256:…`), kept away from this host:
    /// then a receipt rewritten together with its records is caught too.
    #[arg(long, value_name = "DIGEST")]
    pub digest: Option<String>,
    /// Read the launch and the digest from this `--report` file.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["launch", "digest"])]
    pub report: Option<PathBuf>,
}

/// `ags log`.
#[derive(Debug, Args)]
pub struct LogArgs {
    /// The egress log instead: every connection attempt through the proxy of allowlist-mode
    /// launches.
    #[arg(long, conflicts_with_all = ["agent", "follow"])]
    pub egress: bool,
    /// Only records of this agent (claude, codex, gemini, opencode, pi, shell).
    #[arg(long, value_name = "AGENT")]
    pub agent: Option<String>,
    /// Only records of this launch (its id, `ags-PID-NANOS`, as the log shows it). Alone (no
    /// `--agent`, `--follow` or `--egress`): the launch's records of the hook run log, the agent
    /// hook log and the egress log as one timeline, each request under its tool call.
    #[arg(long, value_name = "ID")]
    pub launch: Option<String>,
    /// Show the last N records.
    #[arg(short = 'n', default_value_t = 20)]
    pub n: usize,
    /// Keep printing records as they are appended (until interrupted).
    #[arg(short = 'f', long)]
    pub follow: bool,
    /// Print the raw JSON lines.
    #[arg(long)]
    pub json: bool,
}
