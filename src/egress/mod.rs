//! The egress proxy of an allowlist-mode launch (docs/decisions/0003-egress.md,
//! docs/network.md), run inside the `ags` process for the length of the session.
//!
//! [`start`] installs the static forwarder (once per content), creates the launch's private
//! socket directory and serves the proxy there; [`Egress::stop`] ends it and removes the
//! directory. [`proxy`] holds the protocol handling and the decisions, [`log`] the JSONL record
//! of every attempt. `forwarder.rs` is the separate program that runs inside the container.

pub mod explain;
pub mod grants;
pub mod log;
pub mod model;
pub mod plan;
mod policy;
pub mod proxy;
mod request;
mod substitute;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::egress::plan::EgressPlan;
use crate::socket_server::BindError;

/// The statically linked forwarder built by `build.rs`.
pub const FORWARDER: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/ags-egress-fwd"));

/// Errors setting up the egress proxy.
#[derive(Debug, thiserror::Error)]
pub enum EgressError {
    /// A remote service cannot bind-mount this host's socket directory.
    #[error(
        "network mode allowlist serves its proxy on a unix socket bind-mounted from this host, which a remote Podman service ({url}) cannot see; use a local unix socket service, or --network none|open"
    )]
    Remote { url: String },
    /// The forwarder could not be installed.
    #[error("egress: cannot install the forwarder at {}: {source}; check that the cache directory is writable", path.display())]
    Forwarder { path: PathBuf, source: io::Error },
    /// The socket directory could not be created.
    #[error("egress: cannot create the proxy socket directory {}: {source}", path.display())]
    SocketDir { path: PathBuf, source: io::Error },
    /// The proxy could not listen.
    #[error("egress: cannot listen on {}: {source}", path.display())]
    Listen { path: PathBuf, source: io::Error },
}

/// A running proxy: its stop ends every open connection (each recorded with its byte counts)
/// and removes the socket directory.
pub type Egress = crate::socket_server::Served;

/// Start the proxy of `plan` (allowlist mode, or open mode substituting the credentials of
/// `vault`), or do nothing when the plan has no proxy. It records into
/// `log`, the launch's writer of the egress log (shared with the ssh-agent filter: one set of
/// budgets per launch; the caller calls [`log::EgressLog::finish`] once both have stopped).
/// `remote` is the service URL when it is not a local unix socket.
pub fn start(
    plan: &EgressPlan,
    log: Arc<log::EgressLog>,
    remote: Option<&str>,
    vault: Option<Arc<crate::credentials::Vault>>,
) -> Result<Option<Egress>, EgressError> {
    let Some(proxy) = &plan.proxy else { return Ok(None) };
    if let Some(url) = remote {
        return Err(EgressError::Remote { url: url.into() });
    }
    install_forwarder(&proxy.forwarder)?;
    let policy = policy(plan, vault).with_grants(proxy.grants.clone(), log.launch_id().to_string());
    let policy = Arc::new(policy);
    let (dir, path) = (&proxy.socket_dir, proxy.socket());
    let served = Egress::start(dir, &path, |listener, stop| {
        proxy::serve(listener, policy, log, stop)
    });
    served.map(Some).map_err(|e| match e {
        BindError::Dir(source) => EgressError::SocketDir {
            path: dir.clone(),
            source,
        },
        BindError::Listen(source) => EgressError::Listen { path, source },
    })
}

/// The proxy's policy for `plan`, substituting the credentials of `vault`.
pub fn policy(plan: &EgressPlan, vault: Option<Arc<crate::credentials::Vault>>) -> proxy::Policy {
    let policy = match plan.mode {
        crate::config::Network::Allowlist => proxy::Policy::new(plan.allow.clone()).with_vault(vault),
        _ => proxy::Policy::open(vault),
    };
    policy
        .with_host_ports(plan.host_ports.clone())
        .with_deny(plan.deny.clone())
}

/// Write the forwarder to `path` unless an identical copy is there (the name carries a hash of
/// the content): 0555 in a 0700 directory, written atomically.
fn install_forwarder(path: &Path) -> Result<(), EgressError> {
    crate::fsutil::install_program(path, FORWARDER).map_err(|source| EgressError::Forwarder {
        path: path.to_path_buf(),
        source,
    })
}
