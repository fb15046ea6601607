//! Stage 2: hooks — declare, trust, run, validate, resolve. Prepare hooks contribute to the launch;
//! `started` and `finished` hooks ([`events`]) observe it.

pub mod approve;
pub mod entrypoint;
pub mod events;
pub mod exec_copy;
pub mod leading_text;
pub mod log;
pub mod mount_source;
pub mod policy;
pub mod prepare;
pub mod protocol;
pub mod reapproval;
pub mod resolve;
pub mod runner;
pub mod schema;
pub mod schema_fields;
pub mod summary;
pub mod trust;
pub mod validate;

/// Errors of the hook stage.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    /// A hook response was refused.
    #[error(transparent)]
    Response(#[from] validate::ResponseError),
    /// A prepare, started or finished context document was refused.
    #[error(transparent)]
    Context(#[from] protocol::ContextError),
    /// Contributions conflict after precedence.
    #[error(transparent)]
    Resolve(#[from] resolve::ResolveError),
    /// `--lockdown` refused surviving contributions.
    #[error(transparent)]
    Lockdown(#[from] resolve::LockdownError),
    /// A hook mount source is unusable on this host.
    #[error(transparent)]
    MountSource(#[from] Box<crate::containment::ContainmentError>),
    /// An entrypoint cannot be read.
    #[error(transparent)]
    Entrypoint(#[from] entrypoint::EntrypointError),
    /// The approval store is unusable.
    #[error(transparent)]
    Trust(#[from] trust::TrustError),
    /// Approval is missing or was refused.
    #[error(transparent)]
    Approval(#[from] approve::ApprovalError),
    /// The prepare phase failed.
    #[error(transparent)]
    Run(#[from] runner::RunError),
    /// The run log cannot be written or read.
    #[error(transparent)]
    Log(#[from] log::LogError),
}
