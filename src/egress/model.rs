//! `[network]`: the network mode and the egress allowlist (docs/network.md).
//!
//! Owns the mode ([`Network`]), the syntax of allowlist entries ([`AllowEntry`]: exact host,
//! `*.suffix`, IP or CIDR, optional port) and how the global config and a trusted project
//! overlay combine: an overlay may narrow (a stricter mode, fewer entries) but never widen.
//! Matching a destination against an entry is pure and lives here too, so the proxy and the
//! plan agree on one definition.

use std::fmt;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};
use toml::Spanned;

/// Container network mode, least strict first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Network {
    /// Podman's default network (bridge when rootful, slirp4netns/pasta when rootless).
    Open,
    /// No network: only the allowlisting proxy of `ags` is reachable, through the forwarder.
    Allowlist,
    /// No network except loopback.
    None,
}

impl Network {
    /// Parse a mode name (`default` is the old name of `open`).
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "open" | "default" => Some(Self::Open),
            "allowlist" => Some(Self::Allowlist),
            "none" => Some(Self::None),
            _ => None,
        }
    }
}

impl fmt::Display for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Open => "open",
            Self::Allowlist => "allowlist",
            Self::None => "none",
        })
    }
}

/// `[network]` as written.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkFile {
    /// `"open"`, `"allowlist"` or `"none"`.
    pub mode: Option<String>,
    /// Allowlist entries.
    pub allow: Option<Vec<Spanned<String>>>,
    /// Entries refused even when an allow entry matches (same syntax).
    pub deny: Option<Vec<Spanned<String>>>,
    /// Add the hosts of the launched agent's own API in allowlist mode (default true).
    pub agent_hosts: Option<bool>,
    /// Ports of the host's loopback the agent may reach, in any mode (global config only).
    pub host_loopback: Option<Vec<u16>>,
    /// The file this was read from and where its lines start, to name an entry's line.
    #[serde(skip)]
    pub source: Option<Source>,
}

impl NetworkFile {
    /// The global `[network]` with a matching `[[project]]`'s `network` over it: the project's
    /// mode and flags win, allow and deny entries and `host_loopback` ports add up.
    pub fn merged(global: Option<&Self>, project: Option<&Self>) -> Option<Self> {
        let Some(p) = project else { return global.cloned() };
        let g = global.cloned().unwrap_or_default();
        Some(Self {
            mode: p.mode.clone().or(g.mode),
            allow: concat(g.allow, &p.allow),
            deny: concat(g.deny, &p.deny),
            agent_hosts: p.agent_hosts.or(g.agent_hosts),
            host_loopback: concat(g.host_loopback, &p.host_loopback),
            source: g.source.or_else(|| p.source.clone()),
        })
    }
}

/// `a` then `b`; `None` when neither is set.
fn concat<T: Clone>(a: Option<Vec<T>>, b: &Option<Vec<T>>) -> Option<Vec<T>> {
    match (a, b) {
        (None, None) => None,
        (a, b) => Some(
            a.into_iter()
                .flatten()
                .chain(b.iter().flatten().cloned())
                .collect(),
        ),
    }
}

/// A config file's path and where its lines start.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Source {
    path: std::path::PathBuf,
    line_starts: Vec<usize>,
}

impl Source {
    /// The source of `text`, read from `path`.
    pub fn new(path: &std::path::Path, text: &str) -> Self {
        let starts = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1));
        Self {
            path: path.to_path_buf(),
            line_starts: starts.collect(),
        }
    }

    /// `path:line` of the byte `offset`.
    fn at(&self, offset: usize) -> String {
        let line = self.line_starts.partition_point(|&s| s <= offset);
        format!("{}:{line}", self.path.display())
    }
}

/// One allow or deny entry of the effective policy: where it came from and where it is written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rule {
    /// The entry.
    #[serde(flatten)]
    pub entry: AllowEntry,
    /// Where it came from.
    pub origin: EgressOrigin,
    /// The file and line that hold it (`path:line`), for entries read from a config file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
}

impl Rule {
    /// How a message names this rule: the entry, its layer and its place.
    pub fn shown(&self) -> String {
        match &self.at {
            Some(at) => format!("{} ({}, {at})", self.entry.entry, self.origin),
            None => format!("{} ({})", self.entry.entry, self.origin),
        }
    }
}

/// What an entry matches.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "kebab-case")]
pub enum Target {
    /// Exactly this host name (lowercase, no trailing dot).
    Host(String),
    /// Any name strictly below this domain (`*.example.com`: `a.example.com`, `a.b.example.com`,
    /// not `example.com`).
    Suffix(String),
    /// An address or network (a single address has the full prefix length).
    Net {
        /// Network address.
        addr: IpAddr,
        /// Prefix length.
        prefix: u8,
    },
}

/// One allowlist entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AllowEntry {
    /// The entry in its normalized written form.
    pub entry: String,
    /// What it matches.
    pub target: Target,
    /// The ports it allows (a bare entry: 443 and 80).
    pub ports: Vec<u16>,
    /// For a method and path rule: the requests it names (only those; see
    /// [`RequestRule`]). Such an entry never admits a destination wholesale.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request: Option<RequestRule>,
}

/// Ports a bare entry allows.
pub const DEFAULT_PORTS: [u16; 2] = [443, 80];

impl AllowEntry {
    /// Parse `host`, `*.suffix`, `IP`, `[IPv6]`, `CIDR`, each with an optional `:PORT`
    /// (IPv6 with a port in brackets: `[::1]:8080`), optionally a method before it and a path
    /// after it (`GET github.com/myorg/*`: a method and path rule).
    pub fn parse(raw: &str) -> Result<Self, RuleError> {
        let s = raw.trim();
        if s.is_empty()
            || s.len() > 1024
            || s.chars()
                .any(|c| c.is_control() || (c.is_whitespace() && c != ' '))
        {
            return Err(RuleError::Empty);
        }
        let (request, s) = RequestRule::split(s)?;
        if s.len() > 260 {
            return Err(RuleError::TooLong);
        }
        if request.is_some() && s.contains('/') {
            return Err(RuleError::RuleOnNetwork);
        }
        let (target, port) = split_port(s)?;
        let target = parse_target(target)?;
        let ports = match port {
            Some(p) => vec![p],
            None => DEFAULT_PORTS.to_vec(),
        };
        let shown = match &target {
            Target::Host(h) => h.clone(),
            Target::Suffix(d) => format!("*.{d}"),
            Target::Net { addr, prefix } if *prefix == full_prefix(addr) => match addr {
                IpAddr::V6(_) if port.is_some() => format!("[{addr}]"),
                _ => addr.to_string(),
            },
            Target::Net { addr, prefix } => match addr {
                IpAddr::V6(_) if port.is_some() => format!("[{addr}/{prefix}]"),
                _ => format!("{addr}/{prefix}"),
            },
        };
        let mut entry = match port {
            Some(p) => format!("{shown}:{p}"),
            None => shown,
        };
        if let Some(r) = &request {
            entry = match &r.method {
                Some(m) => format!("{m} {entry}{}", r.path_shown()),
                None => format!("{entry}{}", r.path_shown()),
            };
        }
        Ok(Self {
            entry,
            target,
            ports,
            request,
        })
    }

    /// Whether the entry allows a name `host` (normalized, not an IP literal) on `port`
    /// wholesale (not a method and path rule).
    pub fn allows_name(&self, host: &str, port: u16) -> bool {
        self.request.is_none() && self.reaches_name(host, port)
    }

    /// Whether the entry's destination is the name `host` on `port`, whatever its request part.
    pub fn reaches_name(&self, host: &str, port: u16) -> bool {
        self.ports.contains(&port)
            && match &self.target {
                Target::Host(h) => h == host,
                Target::Suffix(d) => {
                    host.len() > d.len() + 1 && host.ends_with(d.as_str()) && {
                        host.as_bytes()[host.len() - d.len() - 1] == b'.'
                    }
                }
                Target::Net { .. } => false,
            }
    }

    /// Whether the entry allows the address `ip` on `port` wholesale (IP and CIDR entries
    /// only, not a method and path rule).
    pub fn allows_addr(&self, ip: IpAddr, port: u16) -> bool {
        self.request.is_none() && self.reaches_addr(ip, port)
    }

    /// Whether the entry's destination covers the address `ip` on `port`, whatever its
    /// request part.
    pub fn reaches_addr(&self, ip: IpAddr, port: u16) -> bool {
        self.ports.contains(&port)
            && match &self.target {
                Target::Net { addr, prefix } => in_net(ip, *addr, *prefix),
                _ => false,
            }
    }

    /// Whether this is an exact-host entry naming `host` (which lets `host` resolve to an
    /// internal address).
    pub fn names_exactly(&self, host: &str, port: u16) -> bool {
        matches!(&self.target, Target::Host(h) if h == host) && self.ports.contains(&port)
    }

    /// Whether this entry, read as a deny entry, matches the name `host` on `port`: a deny
    /// entry without a port matches every port.
    pub fn denies_name(&self, host: &str, port: u16) -> bool {
        self.allows_name(host, self.deny_port(port))
    }

    /// Whether this entry, read as a deny entry, matches the address `ip` on `port`.
    pub fn denies_addr(&self, ip: IpAddr, port: u16) -> bool {
        self.allows_addr(ip, self.deny_port(port))
    }

    /// `port` for an entry with one; for a bare entry, a port it holds (so any port matches).
    pub(crate) fn deny_port(&self, port: u16) -> u16 {
        match self.ports.as_slice() {
            [_] | [] => port,
            [first, ..] => *first,
        }
    }

    /// The port of the host's loopback this entry opens: an entry with an explicit port naming
    /// `host.ags.internal`, `localhost`, `127.0.0.1` or `[::1]` (not a method and path rule).
    pub fn host_port(&self) -> Option<u16> {
        if self.request.is_some() {
            return None;
        }
        let local = match &self.target {
            Target::Host(h) => h == HOST_NAME || h == "localhost",
            Target::Net { addr, prefix } => addr.is_loopback() && *prefix == full_prefix(addr),
            Target::Suffix(_) => false,
        };
        match self.ports.as_slice() {
            [port] if local => Some(*port),
            _ => None,
        }
    }
}

/// Where a mode or an allowlist entry came from (shown by `ags plan`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "source", content = "name", rename_all = "kebab-case")]
pub enum EgressOrigin {
    /// Built in.
    Default,
    /// The global config (or the one named by `--config`).
    Config,
    /// The trusted project overlay.
    ProjectConfig,
    /// The command line.
    Cli,
    /// The agent table: the hosts this agent's API needs.
    Agent(String),
    /// A grant in flight (`ags allow`), by its id.
    Grant(String),
}

impl std::fmt::Display for EgressOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Default => f.write_str("default"),
            Self::Config => f.write_str("config"),
            Self::ProjectConfig => f.write_str("project config"),
            Self::Cli => f.write_str("command line"),
            Self::Agent(name) => write!(f, "agent {name}"),
            Self::Grant(id) => write!(f, "grant {id}"),
        }
    }
}

/// The resolved `[network]` settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EgressSettings {
    /// Where [`Config::network`](crate::config::Config::network) came from.
    pub mode_origin: EgressOrigin,
    /// The project overlay's mode: the command line cannot go below it.
    pub floor: Option<Network>,
    /// Configured entries, global first.
    pub allow: Vec<Rule>,
    /// Deny entries of the global config and the overlay (the overlay only adds).
    pub deny: Vec<Rule>,
    /// Whether the agent's own API hosts are added in allowlist mode.
    pub agent_hosts: bool,
    /// `host_loopback`: ports of the host's loopback opened in any mode.
    pub host_loopback: Vec<u16>,
}

impl Default for EgressSettings {
    fn default() -> Self {
        Self {
            mode_origin: EgressOrigin::Default,
            floor: None,
            allow: Vec::new(),
            deny: Vec::new(),
            agent_hosts: true,
            host_loopback: Vec::new(),
        }
    }
}

fn split_port(s: &str) -> Result<(&str, Option<u16>), RuleError> {
    let port = |p: &str| match p.parse::<u16>() {
        Ok(n) if n > 0 => Ok(Some(n)),
        _ => Err(RuleError::Port(p.into())),
    };
    if let Some(rest) = s.strip_prefix('[') {
        let (inner, after) = rest.split_once(']').ok_or(RuleError::Bracket)?;
        return match after {
            "" => Ok((inner, None)),
            _ => Ok((
                inner,
                port(after.strip_prefix(':').ok_or(RuleError::PortAfterBracket)?)?,
            )),
        };
    }
    match s.matches(':').count() {
        0 => Ok((s, None)),
        1 => {
            let (t, p) = s.split_once(':').unwrap_or((s, ""));
            Ok((t, port(p)?))
        }
        // A bare IPv6 address or network; write `[addr]:port` for a port.
        _ => Ok((s, None)),
    }
}

fn parse_target(t: &str) -> Result<Target, RuleError> {
    if let Some((addr, prefix)) = t.split_once('/') {
        let addr: IpAddr = addr.parse().map_err(|_| RuleError::NotIp(addr.into()))?;
        let prefix: u8 = prefix
            .parse()
            .ok()
            .filter(|p| *p <= full_prefix(&addr))
            .ok_or_else(|| RuleError::Prefix {
                prefix: prefix.into(),
                addr,
            })?;
        return Ok(Target::Net {
            addr: network_of(addr, prefix),
            prefix,
        });
    }
    if let Ok(addr) = t.parse::<IpAddr>() {
        return Ok(Target::Net {
            addr,
            prefix: full_prefix(&addr),
        });
    }
    let name = t.trim_end_matches('.').to_ascii_lowercase();
    if let Some(domain) = name.strip_prefix("*.") {
        check_name(domain)?;
        if !domain.contains('.') {
            return Err(RuleError::TooWide(domain.into()));
        }
        return Ok(Target::Suffix(domain.to_string()));
    }
    check_name(&name)?;
    Ok(Target::Host(name))
}

fn check_name(name: &str) -> Result<(), RuleError> {
    let ok = !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        });
    if ok {
        Ok(())
    } else {
        Err(RuleError::HostName(name.into()))
    }
}

/// At most this many host-loopback ports (each is a listener in the container).
pub const MAX_HOST_PORTS: usize = 16;

/// The name under which the agent reaches the host's loopback (docs/network.md).
pub const HOST_NAME: &str = "host.ags.internal";

#[path = "model_resolve.rs"]
mod resolve;
pub use resolve::{FieldError, resolve};

#[path = "model_request.rs"]
mod request;
pub use request::{OVERRIDES, RequestRule, RuleError, request_path, shorten};

#[path = "model_addr.rs"]
mod addr;
pub use addr::{canonical, is_internal};
use addr::{full_prefix, in_net, network_of};

#[cfg(test)]
#[path = "model_tests.rs"]
mod tests;
