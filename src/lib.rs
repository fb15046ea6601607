//! `ags` runs AI coding agents inside rootless Podman containers.
//!
//! Data flows one way through the stages; each stage is one module:
//!
//! ```text
//! cli (clap, no I/O)
//!   → config   (global config + trusted project overlay → Config)
//!   → hooks    (declare, trust, run, validate, resolve → Resolved contributions;
//!               started/finished hooks observe the launch, `hooks::events`)
//!   → plan     (pure data, Serialize, no I/O → LaunchPlan)
//!   → podman   (REST client: the only socket code)
//!   → launch   (create → init → stage → attach → start → exit code → cleanup)
//! ```
//!
//! `commands` is the only module that calls several stages. Process spawning lives in
//! `process` (and in the `ags-oci-hook` program, `oci_hooks::record`, which spawns nothing
//! but runs from Podman); socket I/O lives in `podman::transport`. `spool` holds what crash
//! recovery needs (docs/lifecycle.md).

pub mod agent_hooks;
pub mod cli;
pub mod commands;
pub mod config;
pub mod containment;
pub mod egress;
pub mod error;
pub mod fsutil;
pub mod hardening;
pub mod hooks;
pub mod image;
pub mod json;
pub mod launch;
pub mod oci_hooks;
pub mod op;
pub mod plan;
pub mod podman;
pub mod process;
pub mod procfs;
pub mod prompt;
pub mod safepath;
pub mod spool;
pub mod text;
pub mod time;
pub mod trace;

pub use error::Error;

/// Run one `ags` invocation and return the process exit code.
pub fn run(cli: cli::Cli) -> Result<u8, Error> {
    commands::dispatch(cli)
}
