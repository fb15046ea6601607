//! The agent hook record of a launch on the host (docs/agent-hooks.md "The record"), run inside
//! the `ags` process for the length of the session, like the egress proxy.
//!
//! [`start`] creates the launch's private socket directory (0700, bind-mounted read-only at
//! `/run/ags-agent-hooks/sock` in the container) and serves `record.sock` there from before the
//! container starts; [`RecordServer::stop`] ends it after the container is gone, records what
//! was dropped and what the record lacks ([`complete`]), and removes the directory (dropping the server removes it too, so no failure path
//! leaves it behind; a crashed `ags` leaves it to the sweep of staging directories).
//!
//! Every line that arrives becomes one entry of the log ([`file`]): a valid record stamped with
//! the time and the launch id and scrubbed of every value the launch staged ([`scrub`]), or an
//! `invalid` entry saying what was wrong. The container only has the socket: it can add entries
//! but has no path to the log, so it cannot rewrite or delete earlier ones.

pub mod complete;
pub mod file;
pub mod scrub;
mod server;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use scrub::Scrubber;
pub use server::{IDLE_TIMEOUT, MAX_CONNECTIONS, MAX_INVALID_BYTES, MAX_RECORD_BYTES, RecordSummary};

use crate::plan::LaunchPlan;
use crate::socket_server::{BindError, Served};

/// Errors setting up the record socket.
#[derive(Debug, thiserror::Error)]
pub enum AgentLogError {
    /// A remote service cannot bind-mount this host's socket directory.
    #[error(
        "agent hooks record through a unix socket bind-mounted from this host, which a remote Podman service ({url}) cannot see; use a local unix socket service"
    )]
    Remote {
        /// The service URL.
        url: String,
    },
    /// The socket directory could not be created.
    #[error("agent hooks: cannot create the record socket directory {}: {source}", path.display())]
    SocketDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The server could not listen.
    #[error("agent hooks: cannot listen on {}: {source}", path.display())]
    Listen {
        /// The socket path.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
}

/// The running record server of one launch.
#[derive(Debug)]
pub struct RecordServer {
    served: Served,
    sink: Arc<server::Sink>,
}

impl RecordServer {
    /// The launch's open tool calls, for the egress log to stamp its records with.
    pub fn calls(&self) -> Arc<crate::agent_hooks::calls::OpenCalls> {
        self.sink.calls()
    }

    /// The private socket directory (recorded for cleanup by the caller).
    pub fn dir(&self) -> &Path {
        self.served.dir()
    }

    /// Record the programs the agent's configuration starts outside tool calls.
    pub fn unguarded(&self, programs: Vec<String>) {
        self.sink.unguarded(programs);
    }

    /// Stop serving once the agent exited with `exit` (`None`: unknown): read open connections
    /// to their end, record what was dropped and what the record lacks, remove the socket
    /// directory. Returns what was dropped and lacking.
    pub async fn stop(self, exit: Option<u8>) -> RecordSummary {
        self.sink.set_exit(exit);
        self.served.stop().await;
        self.sink.summary()
    }
}

/// Start the record server of `plan` when it has agent hooks (else nothing). `staged` scrubs
/// the records; `remote` is the service URL when it is not a local unix socket.
pub fn start(
    plan: &LaunchPlan,
    staged: Scrubber,
    remote: Option<&str>,
) -> Result<Option<RecordServer>, AgentLogError> {
    let Some(record) = &plan.agent_hook_record else {
        return Ok(None);
    };
    if let Some(url) = remote {
        return Err(AgentLogError::Remote { url: url.into() });
    }
    let sink = Arc::new(server::Sink::new(
        record.log.clone(),
        plan.launch_id.clone(),
        plan.agent.clone(),
        staged,
    ));
    let (dir, path) = (&record.socket_dir, record.socket());
    let for_server = sink.clone();
    let served = Served::start(dir, &path, |listener, stop| {
        server::serve(listener, for_server, stop)
    });
    let served = served.map_err(|e| match e {
        BindError::Dir(source) => AgentLogError::SocketDir {
            path: dir.clone(),
            source,
        },
        BindError::Listen(source) => AgentLogError::Listen { path, source },
    })?;
    Ok(Some(RecordServer { served, sink }))
}
