//! What the containment checks need from the service: the bind mounts of the other `ags`
//! containers that are not over (their agents may be writing right now), and where the service
//! keeps its storage.
//!
//! Part of stage 4 (`podman`): list + inspect per container, `GET /libpod/info` for storage.
//! [`local_running_roots`] asks every service of this machine `ags` knows, for the host programs
//! (`workspace::host_programs`): an agent of any local launch may have planted a program.

use std::path::PathBuf;
use std::time::Duration;

use super::endpoint::Endpoint;
use super::error::Result;
use super::transport::Client;
use crate::containment::WritableRoot;

/// How long one local service may take to list its live `ags` containers.
const LIST_TIMEOUT: Duration = Duration::from_secs(5);

/// The read-write bind sources of every live `ags` container of this machine: on `client` when
/// it is a local socket, on the local service `CONTAINER_HOST` names, and on the default local
/// services (the user's rootless one, the rootful one), each asked once. A service that does not exist or answer counts none: it runs
/// no container a launch could be harmed by.
pub async fn local_running_roots(client: Option<&Client>) -> Vec<WritableRoot> {
    let euid = nix::unistd::geteuid().as_raw();
    let runtime = std::env::var("XDG_RUNTIME_DIR").ok();
    let mut urls: Vec<String> = client
        .filter(|c| c.is_unix())
        .map(|c| c.url().to_string())
        .into_iter()
        .collect();
    // `CONTAINER_HOST` names the service the user's launches go to by default.
    let container_host = std::env::var("CONTAINER_HOST").ok();
    let defaults = super::candidates(None, None, runtime.as_deref(), euid);
    let chosen = super::candidates(None, container_host.as_deref(), None, euid);
    for c in chosen.into_iter().chain(defaults) {
        if !urls.contains(&c.url) {
            urls.push(c.url);
        }
    }
    let mut out = Vec::new();
    for url in urls {
        let Ok(endpoint @ Endpoint::Unix(_)) = Endpoint::parse(&url) else {
            continue;
        };
        if let Endpoint::Unix(socket) = &endpoint
            && !socket.exists()
        {
            continue;
        }
        let service = Client::new(endpoint);
        let Ok(Ok(mounts)) = tokio::time::timeout(LIST_TIMEOUT, service.live_rw_binds()).await else {
            continue;
        };
        out.extend(mounts.into_iter().map(|m| WritableRoot {
            path: m.source,
            owner: format!("running ags container {}", m.container),
            running: true,
        }));
    }
    out
}

/// A read-write bind mount of another live container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeighbourMount {
    /// The container's name.
    pub container: String,
    /// The host source of the bind.
    pub source: PathBuf,
}

/// Container states whose agent runs or may start at any moment.
const LIVE_STATES: &[&str] = &[
    "created",
    "initialized",
    "configured",
    "running",
    "paused",
    "stopping",
];

/// A live container and all its bind mounts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Neighbour {
    /// The container's name.
    pub container: String,
    /// Its bind mounts: host source, container destination, writable.
    pub binds: Vec<(PathBuf, PathBuf, bool)>,
}

/// The labels of the containers whose agent may write this host's files: `ags`'s launches, and
/// the containers of its exports (a Quadlet unit's, a played Pod's), which carry no owner
/// labels so that `ags gc` leaves them alone (session-24 unit-check attack, F3).
pub const AGENT_LABELS: &[&str] = &[
    "io.ags.managed=true",
    "io.ags.export=quadlet",
    "io.ags.export=kube",
];

impl Client {
    /// Every live container of an agent ([`AGENT_LABELS`]) with its bind mounts. A container
    /// that vanished between list and inspect is skipped.
    pub async fn live_neighbours(&self) -> Result<Vec<Neighbour>> {
        let mut out: Vec<Neighbour> = Vec::new();
        let mut seen = Vec::new();
        for label in AGENT_LABELS {
            for summary in self.list(&[label]).await? {
                if !LIVE_STATES.contains(&summary.state.as_str()) || seen.contains(&summary.id) {
                    continue;
                }
                seen.push(summary.id.clone());
                let inspect = match self.inspect(&summary.id).await {
                    Ok(i) => i,
                    Err(e) if e.is_vanished_container() => continue,
                    Err(e) => return Err(e),
                };
                out.push(Neighbour {
                    container: inspect.name.trim_start_matches('/').to_string(),
                    binds: inspect
                        .mounts
                        .iter()
                        .filter(|m| m.kind == "bind" && !m.source.is_empty())
                        .map(|m| (PathBuf::from(&m.source), PathBuf::from(&m.destination), m.rw))
                        .collect(),
                });
            }
        }
        Ok(out)
    }

    /// The read-write bind mounts of every live container of an agent ([`AGENT_LABELS`]).
    pub async fn live_rw_binds(&self) -> Result<Vec<NeighbourMount>> {
        Ok(self
            .live_neighbours()
            .await?
            .into_iter()
            .flat_map(|n| {
                n.binds
                    .into_iter()
                    .filter(|(_, _, rw)| *rw)
                    .map(move |(source, _, _)| NeighbourMount {
                        container: n.container.clone(),
                        source,
                    })
            })
            .collect())
    }

    /// The service's storage directories (graph root, run root, volume path) from `GET /info`.
    pub async fn storage_dirs(&self) -> Result<Vec<PathBuf>> {
        let store = self.info().await?.store;
        Ok([store.graph_root, store.run_root, store.volume_path]
            .into_iter()
            .filter(|s| s.starts_with('/'))
            .map(PathBuf::from)
            .collect())
    }
}
