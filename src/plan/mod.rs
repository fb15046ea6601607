//! Stage 3: the launch plan, pure data.

/// Errors of the plan stage.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// Placeholder until the stage lands.
    #[error("{0}")]
    Other(String),
}
