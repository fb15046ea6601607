//! `ags verify`: its arguments.

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
