//! The network part of the plan: the effective mode (config, overlay floor, `--network`), the
//! effective allowlist with the origin of each entry, and, in allowlist mode, what the launch
//! adds to the container for the egress proxy: two read-only binds, the proxy environment and
//! the forwarder in front of the command (docs/decisions/0003-egress.md). Pure.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::agents::AgentProfile;
use crate::config::{AllowEntry, Config, EgressOrigin, Network};
use crate::egress::model::HOST_NAME;

/// Where the forwarder listens inside the container.
pub const PROXY_LISTEN: &str = "127.0.0.1:3128";
/// The proxy URL the agent is given.
pub const PROXY_URL: &str = "http://127.0.0.1:3128";
/// Destinations the agent reaches without the proxy (its own loopback).
pub const NO_PROXY: &str = "localhost,127.0.0.1,::1";
/// Where the launch's socket directory is mounted (read-only) inside the container.
pub const EGRESS_MOUNT: &str = "/run/ags-egress";
/// The proxy socket's file name in that directory.
pub const SOCKET_NAME: &str = "proxy.sock";
/// Where the forwarder executable is mounted (read-only) inside the container.
pub const FORWARDER_MOUNT: &str = "/run/ags-egress-fwd";
/// File name of the installed forwarder under `<cache>/egress/`, named by its content.
pub const FORWARDER_FILE: &str = concat!("ags-egress-fwd-", env!("AGS_EGRESS_FWD_ID"));
/// Environment keys `ags` sets in allowlist mode (reserved: no hook or `--env` may set them).
pub const PROXY_ENV_KEYS: [&str; 6] = [
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
];

/// What the command line asks of the network: `--network` and `--allow`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Requested<'a> {
    /// `--network`.
    pub network: Option<Network>,
    /// `--allow` entries, added to the allowlist (origin `cli`) in allowlist mode.
    pub allow: &'a [AllowEntry],
}

/// One effective allowlist or deny entry.
pub use crate::egress::model::Rule as PlanAllow;

/// The host side of the egress proxy of one launch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProxyPlan {
    /// Private per-launch directory (0700) holding the proxy socket; removed after the launch.
    pub socket_dir: PathBuf,
    /// The installed forwarder executable.
    pub forwarder: PathBuf,
    /// Where the forwarder listens inside the container.
    pub listen: String,
    /// The JSONL log of egress attempts.
    pub log: PathBuf,
    /// The directory of grants in flight (`ags allow`), read at each decision.
    pub grants: PathBuf,
}

impl ProxyPlan {
    /// The socket path on the host.
    pub fn socket(&self) -> PathBuf {
        self.socket_dir.join(SOCKET_NAME)
    }
}

/// The effective network policy of a launch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EgressPlan {
    /// The mode.
    pub mode: Network,
    /// Where the mode came from.
    pub mode_origin: EgressOrigin,
    /// The allowlist (empty unless the mode is `allowlist`).
    pub allow: Vec<PlanAllow>,
    /// Entries refused even when an allow entry matches (`[network] deny`).
    pub deny: Vec<PlanAllow>,
    /// The proxy (allowlist mode, and open mode when a credential goes through it).
    pub proxy: Option<ProxyPlan>,
    /// Whether the proxy substitutes credentials (docs/credentials.md); in open mode it then
    /// admits every destination but this host's own (loopback, link-local).
    pub credentials: bool,
    /// Ports of the host's loopback the agent reaches (`host_loopback`, and allowlist entries
    /// naming the host's loopback with a port): the forwarder listens on each at the
    /// container's `127.0.0.1` and the proxy connects them to the host's; `host.ags.internal`
    /// names them too (docs/network.md).
    pub host_ports: Vec<u16>,
    /// The destinations whose requests the proxy reads, terminating TLS with the launch's CA:
    /// those of method and path rules naming a host (allowlist mode; docs/network.md).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub inspected: Vec<AllowEntry>,
}

/// Decide the mode and the allowlist. `cli` is `--network`; it cannot go below a project
/// overlay's mode. `host_stage_dir` is the launch's private staging directory; the socket
/// directory is its sibling with `-egress` appended (swept like it). `credentials`: a
/// credential goes through the proxy, which then runs in open mode too. `local`: the service
/// runs on this host (only then are ports of its loopback opened; a remote or exported
/// launch has no host loopback of this machine to reach).
pub fn plan(
    config: &Config,
    cli: Requested<'_>,
    agent: &AgentProfile,
    host_stage_dir: &Path,
    credentials: bool,
    local: bool,
) -> EgressPlan {
    let floor = config.egress.floor.unwrap_or(Network::Open);
    let (mode, mode_origin) = match cli.network {
        Some(m) if m >= floor => (m, EgressOrigin::Cli),
        Some(_) => (floor, EgressOrigin::ProjectConfig),
        None => (config.network, config.egress.mode_origin.clone()),
    };
    let credentials = credentials && mode != Network::None;
    let deny: Vec<PlanAllow> = match mode {
        Network::None => Vec::new(),
        _ => config.egress.deny.clone(),
    };
    if mode != Network::Allowlist {
        let host_ports = match mode {
            Network::Open if local => host_ports(&config.egress.host_loopback, &[], &deny),
            _ => Vec::new(),
        };
        return EgressPlan {
            mode,
            mode_origin,
            allow: Vec::new(),
            deny,
            proxy: (credentials || !host_ports.is_empty()).then(|| proxy_plan(config, host_stage_dir)),
            credentials,
            host_ports,
            inspected: Vec::new(),
        };
    }
    let mut allow: Vec<PlanAllow> = config.egress.allow.clone();
    for entry in cli.allow {
        if !allow.iter().any(|a| a.entry == *entry) {
            allow.push(PlanAllow {
                entry: entry.clone(),
                origin: EgressOrigin::Cli,
                at: None,
            });
        }
    }
    if config.egress.agent_hosts {
        for raw in agent.egress {
            let entry = AllowEntry::parse(raw).unwrap_or_else(|e| panic!("agent table entry {raw}: {e}"));
            if !allow.iter().any(|a| a.entry == entry) {
                let origin = EgressOrigin::Agent(agent.name.into());
                allow.push(PlanAllow {
                    entry,
                    origin,
                    at: None,
                });
            }
        }
    }
    let host_ports = host_ports(&config.egress.host_loopback, &allow, &deny);
    let inspected = inspected(&allow, &deny);
    EgressPlan {
        mode,
        mode_origin,
        allow,
        deny,
        proxy: Some(proxy_plan(config, host_stage_dir)),
        credentials,
        host_ports,
        inspected,
    }
}

/// The destinations of the method and path rules naming a host (not an address: the launch
/// CA certifies names), once each.
fn inspected(allow: &[PlanAllow], deny: &[PlanAllow]) -> Vec<AllowEntry> {
    let mut out: Vec<AllowEntry> = Vec::new();
    for rule in allow.iter().chain(deny) {
        let e = &rule.entry;
        if e.request.is_some()
            && !matches!(e.target, crate::egress::model::Target::Net { .. })
            && !out.iter().any(|o| o.target == e.target && o.ports == e.ports)
        {
            out.push(e.clone());
        }
    }
    out
}

/// The host-loopback ports: `configured` and those of `allow`'s entries, sorted, without the
/// forwarder's own port and those a `deny` entry names.
fn host_ports(configured: &[u16], allow: &[PlanAllow], deny: &[PlanAllow]) -> Vec<u16> {
    let own = PROXY_LISTEN.rsplit(':').next().and_then(|p| p.parse().ok());
    let denied = |p: u16| {
        deny.iter().any(|d| {
            d.entry.denies_addr([127, 0, 0, 1].into(), p)
                || d.entry.denies_addr(std::net::Ipv6Addr::LOCALHOST.into(), p)
                || [HOST_NAME, "localhost"].iter().any(|n| d.entry.denies_name(n, p))
        })
    };
    let mut ports: Vec<u16> = configured
        .iter()
        .copied()
        .chain(allow.iter().filter_map(|a| a.entry.host_port()))
        .filter(|p| Some(*p) != own && !denied(*p))
        .collect();
    ports.sort_unstable();
    ports.dedup();
    ports
}

fn proxy_plan(config: &Config, host_stage_dir: &Path) -> ProxyPlan {
    let mut dir_name = host_stage_dir.file_name().unwrap_or_default().to_os_string();
    dir_name.push("-egress");
    ProxyPlan {
        socket_dir: host_stage_dir.with_file_name(dir_name),
        forwarder: config.paths.cache_dir().join("egress").join(FORWARDER_FILE),
        listen: PROXY_LISTEN.into(),
        log: config.paths.egress_log(),
        grants: config.paths.egress_grants(),
    }
}

impl EgressPlan {
    /// The container command: the forwarder in front of `command` when the proxy runs.
    pub fn wrap(&self, command: Vec<String>) -> Vec<String> {
        let Some(p) = &self.proxy else { return command };
        let mut args: Vec<String> = [FORWARDER_MOUNT, "--listen", &p.listen, "--socket"]
            .into_iter()
            .map(String::from)
            .collect();
        args.push(format!("{EGRESS_MOUNT}/{SOCKET_NAME}"));
        for port in &self.host_ports {
            args.extend(["--forward".to_string(), port.to_string()]);
        }
        args.push("--".into());
        args.extend(command);
        args
    }

    /// Whether the agent is given the proxy variables: in allowlist mode, and when credentials
    /// go through the proxy (not for host-loopback ports alone, which need no proxy variable).
    pub fn proxy_env(&self) -> bool {
        self.proxy.is_some() && (self.mode == Network::Allowlist || self.credentials)
    }
}
