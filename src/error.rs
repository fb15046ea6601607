//! The crate error: one variant per pipeline stage, and the exit-code policy.
//!
//! Exit codes follow `podman run`: 125 when `ags` itself fails, 126 when the agent command
//! cannot be invoked, 127 when it cannot be found, otherwise the agent's own exit code.

use crate::hooks::approve::ApprovalError;
use crate::hooks::runner::RunError;
use crate::{
    config::ConfigError, hooks::HookError, launch::LaunchError, plan::PlanError, podman::PodmanError,
};

mod command;

pub use crate::exit::{EXIT_AGS_FAILURE, EXIT_CANNOT_INVOKE, EXIT_NOT_FOUND};
pub use command::CommandError;

/// Any failure of an `ags` invocation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Configuration could not be loaded.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Prepare hooks failed or were refused.
    #[error(transparent)]
    Hooks(#[from] HookError),
    /// An image command failed before or around the Podman API.
    #[error(transparent)]
    Image(#[from] crate::image::ImageError),
    /// The launch plan could not be built.
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// A 1Password lookup failed.
    #[error(transparent)]
    Op(#[from] crate::op::OpError),
    /// Talking to Podman failed.
    #[error(transparent)]
    Podman(#[from] PodmanError),
    /// The container launch failed.
    #[error(transparent)]
    Launch(#[from] LaunchError),
    /// The egress proxy of an allowlist-mode launch could not be set up.
    #[error(transparent)]
    Egress(#[from] crate::egress::EgressError),
    /// The launch's credentials could not be made ready for the proxy.
    #[error(transparent)]
    Credentials(#[from] crate::credentials::CredentialError),
    /// The agent hook record socket could not be set up.
    #[error(transparent)]
    AgentLog(#[from] crate::agent_hooks::log::AgentLogError),
    /// The ssh-agent filter could not be set up.
    #[error(transparent)]
    SshAgent(#[from] crate::ssh_agent::SshAgentError),
    /// `ags setup` refused or failed.
    #[error(transparent)]
    Setup(#[from] crate::events::oci::install::SetupError),
    /// A host path may not be mounted (workdir, `--add-dir`).
    #[error(transparent)]
    Containment(#[from] Box<crate::containment::ContainmentError>),

    /// Git data outside the mounts no longer proven at the late check (`workspace::git_layout`).
    #[error(transparent)]
    GitLayout(#[from] crate::workspace::git_layout::GitLayoutError),
    /// The agent hook dispatcher could not be installed.
    #[error(transparent)]
    AgentHooks(#[from] crate::agent_hooks::install::InstallError),
    /// A path the user named for ags to read or write is refused (`--env-file`, `--report`).
    #[error(transparent)]
    UserPath(#[from] crate::workspace::user_paths::UserPathError),
    /// A protected project file cannot be protected, or `[protect] allow` names an unknown path.
    #[error(transparent)]
    Protected(#[from] crate::workspace::protected::ProtectedError),
    /// Planted files could not be moved aside after the launch (`workspace::quarantine`).
    #[error(transparent)]
    LeftInPlace(#[from] crate::workspace::quarantine::LeftInPlace),
    /// This launch's read-write directories could not be remembered (`workspace::written`).
    #[error(transparent)]
    Written(#[from] crate::workspace::written::RecordError),
    /// A subcommand refused a value or could not read what it was given.
    #[error(transparent)]
    Command(#[from] CommandError),
    /// The async runtime could not be started.
    #[error("starting the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// The signal handlers (interrupt, terminal resize) could not be installed.
    #[error("installing signal handlers: {0}")]
    Signals(#[source] std::io::Error),
    /// Writing output (to stdout or a file the user named) failed.
    #[error("writing output: {0}")]
    Output(#[source] std::io::Error),
}

impl From<crate::containment::ContainmentError> for Error {
    fn from(e: crate::containment::ContainmentError) -> Self {
        Error::Containment(Box::new(e))
    }
}

impl Error {
    /// The process exit code for this failure.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::Launch(e) => e.exit_code(),
            Error::Hooks(HookError::Run(RunError::Interrupted { signal, .. }))
            | Error::Hooks(HookError::Approval(ApprovalError::Interrupted { signal, .. }))
            | Error::Config(ConfigError::OverlayTrustInterrupted { signal, .. }) => {
                crate::launch::signals::exit_code_for(*signal)
            }
            _ => EXIT_AGS_FAILURE,
        }
    }

    /// The report's outcome of a launch that failed with this error (docs/ci.md).
    pub fn outcome(&self) -> Outcome {
        use crate::launch::LaunchError as L;
        if matches!(self.exit_code(), 129 | 130 | 143) {
            return Outcome::Interrupted;
        }
        match self {
            Error::Launch(L::Start { .. }) => Outcome::AgentFailure,
            Error::Launch(L::PlanDrifted { .. }) => Outcome::PolicyRefusal,
            Error::Launch(L::NameInUse { .. } | L::Report(_)) => Outcome::InvalidInput,
            Error::Hooks(_) | Error::AgentHooks(_) => Outcome::HookRefusal,
            Error::Containment(_)
            | Error::GitLayout(_)
            | Error::UserPath(_)
            | Error::Protected(_)
            | Error::LeftInPlace(_)
            | Error::Written(_) => Outcome::PolicyRefusal,
            Error::Config(_) | Error::Plan(_) | Error::Command(_) => Outcome::InvalidInput,
            _ => Outcome::Infrastructure,
        }
    }
}

pub use crate::launch::report::Outcome;

/// Render an error with its cause chain (`a: b: c`), skipping causes already in the message,
/// for a terminal: terminal controls escaped ([`crate::text::escape_controls`]). Every error
/// shown to the user goes through here, so no error type can forget to escape text the agent
/// controls (a path it named with escape sequences, issue 22, finding 8).
pub fn render(err: &dyn std::error::Error) -> String {
    crate::text::escape_controls(&chain(err))
}

/// The cause chain of `err` as text, unescaped.
fn chain(err: &dyn std::error::Error) -> String {
    let mut out = err.to_string();
    let mut cur = err.source();
    while let Some(e) = cur {
        let s = e.to_string();
        if !out.contains(&s) {
            out.push_str(": ");
            out.push_str(&s);
        }
        cur = e.source();
    }
    out
}

#[cfg(test)]
mod tests;
