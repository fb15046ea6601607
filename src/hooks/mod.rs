//! Stage 2: prepare hooks — declare, trust, run, validate, resolve.

/// Errors of the hook stage.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    /// Placeholder until the stage lands.
    #[error("{0}")]
    Other(String),
}
