//! Stage 2: prepare hooks — declare, trust, run, validate, resolve.

pub mod approve;
pub mod entrypoint;
pub mod exec_copy;
pub mod log;
pub mod runner;
pub mod trust;

/// Errors of the hook stage.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    /// Placeholder until the stage lands.
    #[error("{0}")]
    Other(String),
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
