//! Stage 2: prepare hooks — declare, trust, run, validate, resolve.

pub mod json_de;
pub mod mount_source;
pub mod policy;
pub mod protocol;
pub mod resolve;
pub mod schema;
pub mod strict_json;
pub mod summary;
pub mod validate;

/// Errors of the hook stage.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    /// Placeholder until the stage lands.
    #[error("{0}")]
    Other(String),
    /// A hook response was refused.
    #[error(transparent)]
    Response(#[from] validate::ResponseError),
    /// A prepare context document was refused.
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
    MountSource(#[from] mount_source::MountSourceError),
}
