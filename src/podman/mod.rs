//! Stage 4: the libpod REST client.

/// Errors talking to Podman.
#[derive(Debug, thiserror::Error)]
pub enum PodmanError {
    /// Placeholder until the stage lands.
    #[error("{0}")]
    Other(String),
}
