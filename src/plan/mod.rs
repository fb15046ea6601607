//! Stage 3: the launch plan — plain data, no I/O.
//!
//! [`build`] turns the resolved configuration, the run settings, facts about the Podman service
//! and the resolved hook contributions into a [`LaunchPlan`]. The plan is everything the
//! `launch` stage needs and everything `ags plan --json` prints; secret values are wrapped in
//! [`crate::secret::Secret`] so serializing or debug-printing a plan never shows them.

mod build;
pub mod check;
pub mod digest;
mod egress_entries;
pub mod from_hooks;
pub mod host_env;
mod input;
pub mod kube;
mod mounts;
pub mod quadlet;
pub mod text;
pub mod types;

pub use build::{build, check_agent_hook_args, container_name, slug};
pub use input::{HookLayer, LaunchIdentity, PlanInput, RunSettings, UserMount};
pub use types::*;

/// Errors of the plan stage.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// `--agent` names no known agent.
    #[error("--agent {name:?}: unknown agent; {suggestion}known agents: {known}")]
    UnknownAgent {
        name: String,
        suggestion: String,
        known: String,
    },
    /// `--name` is not a valid container name.
    #[error(
        "--name {name:?}: a container name starts with a letter or digit, followed by letters, digits, '_', '.' or '-'"
    )]
    BadName { name: String },
    /// A `--publish` value is malformed.
    #[error("--publish {arg:?}: {rule}; use [[IP:]HOST_PORT:]CONTAINER_PORT[/tcp|udp], e.g. -p 1455:1455")]
    BadPublish { arg: String, rule: String },
    /// `--publish` without a network.
    #[error(
        "--publish needs a network, but the network mode is none (--network or [network] mode); remove --publish or use --network open"
    )]
    PublishWithoutNetwork,
    /// The image reference is malformed.
    #[error(
        "image {image:?}: not a valid image reference ({rule}); use e.g. localhost/ags-agent:latest (--image or [sandbox] image)"
    )]
    BadImage { image: String, rule: &'static str },
    /// The environment from the host (`--env`, `--env-file`, passthrough) is unusable.
    #[error(transparent)]
    HostEnv(#[from] host_env::HostEnvError),
    /// A `--label` value is malformed or reserved.
    #[error("--label {arg}: {rule}")]
    BadLabel { arg: String, rule: &'static str },
    /// Two mounts want the same or nested destinations.
    #[error("mount {a} ({a_origin}) and mount {b} ({b_origin}) overlap; choose independent destinations")]
    MountOverlap {
        a: String,
        a_origin: String,
        b: String,
        b_origin: String,
    },
    /// The agent's arguments switch its hook wiring off.
    #[error(transparent)]
    WiringSwitchedOff(#[from] crate::agent_hooks::plan::SwitchedOff),
    /// An `--add-dir` or `[[mount]]` is unusable.
    #[error("{what}: {rule}")]
    BadMount { what: String, rule: &'static str },
    /// The launch cannot be exported to Kubernetes as asked.
    #[error(transparent)]
    Kube(#[from] kube::KubeError),
    /// The Quadlet export refused the plan.
    #[error(transparent)]
    Quadlet(#[from] quadlet::QuadletError),
}
