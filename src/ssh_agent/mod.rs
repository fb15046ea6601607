//! The forwarded ssh-agent of a launch (issue 22, finding 7; docs/security.md "Git identity and
//! the ssh-agent"): the container never gets the host agent's socket, only the socket of a
//! filter the `ags` process serves for the length of the session, like the egress proxy.
//! Through it the container can list identities and sign (plus the session-bind extension),
//! with `[git] ssh_keys` only with those keys; it cannot empty, lock or load the agent.
//!
//! [`start`] creates the launch's private socket directory (0700) and serves the filter there;
//! the socket is bound at `git::plan::SSH_AUTH_SOCK_PATH`. [`SshFilter::stop`] ends it and
//! removes the directory (dropping it removes the directory too, so no failure path leaves it
//! behind; a crashed `ags` leaves it to the sweep of staging directories). [`protocol`] is the
//! framing and the parsing, [`filter`] the decisions (docs/decisions/0005-ssh-agent-filter.md
//! says why it is written here rather than taken from a crate).

pub mod filter;
pub mod protocol;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::egress::log::EgressLog;
use crate::git::plan::SshAgentPlan;

/// Errors setting up the filter.
#[derive(Debug, thiserror::Error)]
pub enum SshAgentError {
    /// A remote service cannot bind-mount this host's socket.
    #[error(
        "--ssh-agent forwards the agent through a unix socket bind-mounted from this host, which a remote Podman service ({url}) cannot see; use a local unix socket service, or run without --ssh-agent"
    )]
    Remote {
        /// The service URL.
        url: String,
    },
    /// The socket directory could not be created.
    #[error("--ssh-agent: cannot create the filter's socket directory {}: {source}", path.display())]
    SocketDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The filter could not listen.
    #[error("--ssh-agent: cannot listen on {}: {source}", path.display())]
    Listen {
        /// The socket path.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
}

/// The running filter of one launch.
#[derive(Debug)]
pub struct SshFilter {
    task: tokio::task::JoinHandle<()>,
    stop: tokio::sync::watch::Sender<bool>,
    dir: PathBuf,
}

impl Drop for SshFilter {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl SshFilter {
    /// The private socket directory (recorded for cleanup by the caller).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Stop serving (open connections are closed) and remove the socket directory.
    pub async fn stop(mut self) {
        let _ = self.stop.send(true);
        let _ = (&mut self.task).await;
    }
}

/// Start the filter of `plan` (the launch forwards an ssh-agent), recording refusals in `log`.
/// `remote` is the service URL when it is not a local unix socket.
pub fn start(
    plan: Option<&SshAgentPlan>,
    log: Arc<EgressLog>,
    remote: Option<&str>,
) -> Result<Option<SshFilter>, SshAgentError> {
    let Some(plan) = plan else { return Ok(None) };
    if let Some(url) = remote {
        return Err(SshAgentError::Remote { url: url.into() });
    }
    let dir = &plan.filter_dir;
    crate::fsutil::create_socket_dir(dir).map_err(|source| SshAgentError::SocketDir {
        path: dir.clone(),
        source,
    })?;
    let socket = plan.filter_socket();
    let listener = tokio::net::UnixListener::bind(&socket).map_err(|source| {
        let _ = std::fs::remove_dir_all(dir);
        SshAgentError::Listen {
            path: socket.clone(),
            source,
        }
    })?;
    let filter = Arc::new(filter::Filter {
        upstream: plan.host.socket.clone(),
        keys: plan.host.keys.clone(),
        log,
    });
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let task = tokio::spawn(filter::serve(listener, filter, stopped));
    Ok(Some(SshFilter {
        task,
        stop,
        dir: dir.clone(),
    }))
}
