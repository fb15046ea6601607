//! The host-side services of one launch, served from this process while the agent runs: the
//! agent-hook record socket, the egress proxy and the ssh-agent filter, with the egress log they
//! write. Started by the caller (each from its own plan part), stopped together here, in order.

use std::path::PathBuf;
use std::sync::Arc;

use crate::agent_hooks::log::{RecordServer, RecordSummary};
use crate::egress::Egress;
use crate::egress::log::{EgressLog, EgressRecord};
use crate::ssh_agent::SshFilter;

/// The running services; each is absent when the plan does not ask for it.
pub struct HostServices {
    /// The agent-hook record socket (its directory is removed when it is dropped).
    pub records: Option<RecordServer>,
    /// The egress log's one writer for the launch (the proxy and the ssh-agent filter share
    /// its budgets).
    pub egress_log: Arc<EgressLog>,
    /// The egress proxy (allowlist mode).
    pub egress: Option<Egress>,
    /// The ssh-agent filter.
    pub ssh_filter: Option<SshFilter>,
}

impl HostServices {
    /// The private socket directories, removed with the launch's other resources.
    pub fn dirs(&self) -> Vec<PathBuf> {
        [
            self.egress.as_ref().map(|e| e.dir()),
            self.records.as_ref().map(|r| r.dir()),
            self.ssh_filter.as_ref().map(|s| s.dir()),
        ]
        .into_iter()
        .flatten()
        .map(|d| d.to_path_buf())
        .collect()
    }

    /// Stop every service once the container is gone; the record's summary, when there was one,
    /// and the egress log's tripwire records.
    pub async fn stop(self, exit: Option<u8>) -> (Option<RecordSummary>, Vec<EgressRecord>) {
        if let Some(e) = self.egress {
            e.stop().await;
        }
        if let Some(s) = self.ssh_filter {
            s.stop().await;
        }
        self.egress_log.finish();
        let tripwires = self.egress_log.tripwires();
        match self.records {
            Some(r) => (Some(r.stop(exit).await), tripwires),
            None => (None, tripwires),
        }
    }
}
