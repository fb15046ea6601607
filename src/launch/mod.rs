//! Stage 5: the container lifecycle.

pub mod identity;
pub mod terminal;

/// Errors of the launch stage.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// Placeholder until the stage lands.
    #[error("{0}")]
    Other(String),
}

impl LaunchError {
    /// Exit code for this failure.
    pub fn exit_code(&self) -> u8 {
        crate::error::EXIT_AGS_FAILURE
    }
}
