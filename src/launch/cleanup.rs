//! Teardown: every resource a launch creates is recorded here as soon as it exists, and removed
//! in reverse order at the end — on success, on failure and after a signal. Removal keeps going
//! after an error and reports every failure; a resource that is already gone counts as removed.

use std::path::PathBuf;

use crate::podman::{Client, PodmanError};

/// One thing to remove.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resource {
    /// A container (by id or name).
    Container(String),
    /// A named volume.
    Volume(String),
    /// A private host directory (staged files).
    HostDir(PathBuf),
}

/// Resources of one launch, in creation order.
#[derive(Debug, Default)]
pub struct Cleanup {
    resources: Vec<Resource>,
}

/// A resource that could not be removed.
#[derive(Debug, thiserror::Error)]
#[error("could not remove {resource:?}: {message}; run `ags gc` to retry")]
pub struct CleanupError {
    /// What was left.
    pub resource: Resource,
    pub message: RemoveError,
}

/// Why a resource could not be removed.
#[derive(Debug, thiserror::Error)]
pub enum RemoveError {
    #[error(transparent)]
    Podman(#[from] PodmanError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl Cleanup {
    /// Record a resource that now exists.
    pub fn push(&mut self, r: Resource) {
        self.resources.push(r);
    }

    /// Drop a resource that was removed already (the launch's own early removal).
    pub fn forget(&mut self, r: &Resource) {
        self.resources.retain(|x| x != r);
    }

    /// Remove everything, newest first. Returns every failure.
    pub async fn run(mut self, client: &Client) -> Vec<CleanupError> {
        let mut errors = Vec::new();
        while let Some(r) = self.resources.pop() {
            if let Err(message) = remove(client, &r).await {
                errors.push(CleanupError { resource: r, message });
            }
        }
        errors
    }
}

async fn remove(client: &Client, r: &Resource) -> Result<(), RemoveError> {
    let gone = |e: PodmanError| {
        if e.is_not_found() { Ok(()) } else { Err(e.into()) }
    };
    match r {
        Resource::Container(id) => client.delete(id, true, true).await.or_else(gone),
        Resource::Volume(name) => client.volume_delete(name).await.or_else(gone),
        Resource::HostDir(dir) => match std::fs::remove_dir_all(dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
            _ => Ok(()),
        },
    }
}
