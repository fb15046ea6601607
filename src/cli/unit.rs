//! `ags unit-check …` arguments: the check a Quadlet unit runs around its container.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

/// `ags unit-check`.
#[derive(Debug, Args)]
pub struct UnitCheckArgs {
    /// `before` the container starts (the unit's `ExecStartPre=`): take the inventory of the
    /// workspace's git metadata and protected files; `after` it is gone (`ExecStopPost=`):
    /// compare, move aside what the agent planted, and report.
    pub phase: UnitPhase,
    /// The unit's record, written by `ags plan --format quadlet` into ags's state directory.
    #[arg(value_name = "RECORD")]
    pub record: PathBuf,
}

/// When `ags unit-check` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum UnitPhase {
    /// Before the unit's container starts.
    Before,
    /// After the unit's container is gone.
    After,
}
