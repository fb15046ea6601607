//! What of the host's git setup the plan gives the agent: the identity as git configuration in
//! the environment (`GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n`, which git reads
//! like command-line `-c` settings: neither a host file nor the host's whole configuration
//! enters the container), and the forwarded ssh-agent: the socket of its filter (served by the
//! `ags` process, `crate::ssh_agent`; the host agent's own socket never enters the container)
//! bound at [`SSH_AUTH_SOCK_PATH`] and a known_hosts file read-only at [`KNOWN_HOSTS_PATH`].

use std::path::Path;

use crate::git::model::identity::GitIdentity;
use crate::plan::types::{MountKind, Origin, PlanMount};
pub use crate::plan::types::{SshAgent, SshAgentPlan};

/// Where the ssh-agent filter's socket is bound in the container (`SSH_AUTH_SOCK`).
pub const SSH_AUTH_SOCK_PATH: &str = "/run/ags-ssh-agent.sock";
/// Where the known_hosts file is bound (ssh's system-wide file, read by every user).
pub const KNOWN_HOSTS_PATH: &str = "/etc/ssh/ssh_known_hosts";

/// The environment that carries `identity` (`(key, value)`, plain: nothing in it is secret).
pub fn identity_env(identity: &GitIdentity) -> Vec<(String, String)> {
    let config = identity.config();
    let mut out = vec![("GIT_CONFIG_COUNT".to_string(), config.len().to_string())];
    for (i, (key, value)) in config.into_iter().enumerate() {
        out.push((format!("GIT_CONFIG_KEY_{i}"), key.to_string()));
        out.push((format!("GIT_CONFIG_VALUE_{i}"), value));
    }
    out
}

/// The forwarded ssh-agent of a launch whose private staging directory is `host_stage_dir`:
/// the filter's socket directory is its sibling with `-ssh` appended (swept like it).
pub fn ssh_plan(ssh: &SshAgent, host_stage_dir: &Path) -> SshAgentPlan {
    let mut name = host_stage_dir.file_name().unwrap_or_default().to_os_string();
    name.push("-ssh");
    SshAgentPlan {
        host: ssh.clone(),
        filter_dir: host_stage_dir.with_file_name(name),
    }
}

/// The mounts of the forwarded ssh-agent: the filter's socket, the known_hosts file.
pub fn ssh_mounts(ssh: &SshAgentPlan) -> Vec<PlanMount> {
    let bind = |source: &Path, dest: &str| PlanMount {
        destination: dest.into(),
        kind: MountKind::Bind {
            source: source.into(),
        },
        read_only: true,
        origin: Origin::Default,
    };
    // A socket is connected to through a read-only bind too (connect is not a write to the
    // file system).
    std::iter::once(bind(&ssh.filter_socket(), SSH_AUTH_SOCK_PATH))
        .chain(ssh.host.known_hosts.iter().map(|k| bind(k, KNOWN_HOSTS_PATH)))
        .collect()
}
