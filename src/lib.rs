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
//!   → op       (1Password lookups of the plan's references: the final handoff)
//!   → podman   (REST client: the only socket code)
//!   → launch   (create → init → stage → attach → start → exit code → cleanup)
//!   → events   (started/finished bookkeeping and crash recovery around a launch)
//! ```
//!
//! Each optional capability owns one folder with its types, rules and execution (`git`,
//! `egress`, `agent_hooks`, `events`; docs/decisions/0009-capability-folders.md): its
//! configuration and rules as data (`git::model`, `egress::model`), what it adds to the plan
//! (`git::plan`, `egress::plan`, `agent_hooks::plan`), and its execution, each at its own layer.
//!
//! `commands` is the only module that calls several stages; `error` gathers the stages' errors.
//! Leaf and data modules (`agents` — the agent table —, `agent_hooks`, `containment`, `exit`,
//! `fsutil`, `git::model`, `egress::model`, `hardening`, `json`, `limits`, `process`, `procfs`, `prompt`, `safepath`, `socket_server`, `text`,
//! `time`, `trace`) may be used by every stage and use only each other. Process spawning lives in
//! `process` (and in the `ags-oci-hook` program, `events::oci::record`, which spawns nothing
//! but runs from Podman); socket I/O lives in `podman::transport` and in the three per-launch
//! servers of the `ags` process, `egress` (the proxy), `agent_hooks::log` (the agent hook record) and
//! `ssh_agent` (the filter in front of the forwarded ssh-agent), which share `socket_server`.
//! `events::spool` holds what crash recovery needs (docs/lifecycle.md).
//!
//! `tests/offline/architecture.rs` checks this shape on every `cargo test`: it reads `src/`, resolves
//! every `crate::`/`super::`/`self::` path to the module file it names, and fails on any import
//! cycle between module files and on any module importing a later layer of its `LAYERS` table
//! (printing the offending edge with file and line).

pub mod agent_hooks;
pub mod agents;
pub mod cli;
pub mod commands;
pub mod config;
pub mod containment;
pub mod credentials;
pub mod egress;
pub mod error;
pub mod events;
pub mod exit;
pub mod fsutil;
pub mod git;
pub mod hardening;
pub mod hooks;
pub mod image;
pub mod json;
pub mod launch;
pub mod limits;
pub mod logfile;
pub mod op;
pub mod plan;
pub mod podman;
pub mod process;
pub mod procfs;
pub mod prompt;
pub mod receipt;
pub mod safepath;
pub mod secret;
pub mod socket_server;
pub mod ssh_agent;
pub mod text;
pub mod time;
pub mod trace;
pub mod workspace;

pub use error::Error;

/// Run one `ags` invocation and return the process exit code.
pub fn run(cli: cli::Cli) -> Result<u8, Error> {
    commands::dispatch(cli)
}
