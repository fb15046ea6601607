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
use std::path::PathBuf;
use std::sync::Arc;

use crate::egress::log::EgressLog;
use crate::git::plan::SshAgentPlan;
use crate::socket_server::BindError;

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

/// The running filter of one launch; its stop closes open connections.
pub type SshFilter = crate::socket_server::Served;

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
    let filter = Arc::new(filter::Filter {
        upstream: plan.host.socket.clone(),
        keys: plan.host.keys.clone(),
        log,
    });
    let (dir, path) = (&plan.filter_dir, plan.filter_socket());
    let served = SshFilter::start(dir, &path, |listener, stop| filter::serve(listener, filter, stop));
    served.map(Some).map_err(|e| match e {
        BindError::Dir(source) => SshAgentError::SocketDir {
            path: dir.clone(),
            source,
        },
        BindError::Listen(source) => SshAgentError::Listen { path, source },
    })
}
