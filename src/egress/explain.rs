//! `ags explain HOST[:PORT]`: would the launch's network policy let the agent reach this
//! destination, and which rule decides. The answer comes from the proxy's own decision
//! ([`Policy::admit`], then [`Policy::usable`] on the host's resolution of a name), so it
//! cannot drift from what a launch does.

use std::net::{SocketAddr, ToSocketAddrs};

use super::model::RuleError;
use super::plan::EgressPlan;
use super::proxy::{Host, Refusal};
use crate::config::Network;

/// The answer: allowed or not, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Whether the agent reaches the destination.
    pub allowed: bool,
    /// Why, naming the rule, its layer and where it is written.
    pub why: String,
}

/// A request to ask about: the method and the path (with any query).
pub type Asked = (String, String);

/// Parse `[METHOD ]HOST[:PORT][/PATH]` (`[v6]:PORT` for IPv6; 443 without a port; `GET` for
/// a path without a method).
pub fn parse_request(raw: &str) -> Result<(Host, u16, Option<Asked>), RuleError> {
    let (method, rest) = match raw.split_once(' ') {
        Some((m, rest)) if !m.is_empty() && m.bytes().all(|b| b.is_ascii_uppercase()) => {
            (Some(m), rest.trim())
        }
        Some(_) => return Err(RuleError::RequestMethod),
        None => (None, raw),
    };
    let from = rest.find(']').map_or(0, |i| i + 1);
    let (dest, path) = match rest[from..].find('/') {
        Some(i) => rest.split_at(from + i),
        None => (rest, ""),
    };
    let (host, port) = parse_target(dest)?;
    let asked = match (method, path) {
        (None, "") => None,
        (m, p) => Some((
            m.unwrap_or("GET").to_string(),
            if p.is_empty() {
                "/".to_string()
            } else {
                p.to_string()
            },
        )),
    };
    Ok((host, port, asked))
}

/// Parse `HOST[:PORT]` (`[v6]:PORT` for IPv6; 443 without a port).
pub fn parse_target(raw: &str) -> Result<(Host, u16), RuleError> {
    let (host, port) = match raw.strip_prefix('[') {
        Some(rest) => {
            let (h, tail) = rest.split_once(']').ok_or(RuleError::Ipv6)?;
            (h, tail.strip_prefix(':'))
        }
        None => match raw.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') => (h, Some(p)),
            _ => (raw, None),
        },
    };
    let port = match port {
        None => 443,
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| RuleError::Port(p.into()))?,
    };
    let host = Host::parse(host).ok_or_else(|| RuleError::Host(host.into()))?;
    Ok((host, port))
}

/// Decide `host:port` (and the request `asked`, when given) under `plan`, resolving a name
/// on this host like the proxy, then applying the method and path rules like it.
pub fn explain(plan: &EgressPlan, host: &Host, port: u16, asked: Option<&Asked>) -> Verdict {
    let verdict = explain_plain(plan, host, port);
    if !verdict.allowed || plan.mode != Network::Allowlist {
        return verdict;
    }
    let policy = asking(plan);
    let Some((method, path)) = asked else {
        // Asked as a destination: as a tunnel to it.
        return match policy.tunnel_refusal(host, port) {
            Some(Refusal(why)) => Verdict { allowed: false, why },
            None => verdict,
        };
    };
    match policy.check_request(host, port, (method, path, false)) {
        Ok(None) => verdict,
        Ok(Some(why)) => Verdict { allowed: true, why },
        Err(Refusal(why)) => Verdict { allowed: false, why },
    }
}

/// The proxy's policy for `plan`, with the grants that hold for every launch (those for one
/// launch are that launch's).
fn asking(plan: &EgressPlan) -> super::proxy::Policy {
    let policy = super::policy(plan, None);
    match &plan.proxy {
        Some(proxy) => policy.with_grants(proxy.grants.clone(), "-".into()),
        None => policy,
    }
}

/// Decide the destination `host:port` as a whole (for plain HTTP: before its request is read).
pub fn explain_plain(plan: &EgressPlan, host: &Host, port: u16) -> Verdict {
    let refuse = |why: String| Verdict { allowed: false, why };
    let allow = |why: String| Verdict { allowed: true, why };
    let policy = asking(plan);
    let local = policy.host_loopback(host, port).is_some();
    match plan.mode {
        Network::None => return refuse("network mode none: the container has only its own loopback".into()),
        Network::Open if !local && !is_loopback(host) => {
            return allow(format!(
                "open mode ({}): the agent reaches it over Podman's network, not through the proxy ([network] deny applies only to what goes through the proxy)",
                plan.mode_origin
            ));
        }
        _ => {}
    }
    let admitted = match policy.admit(host, port) {
        Ok(reason) => reason,
        Err(Refusal(why)) => return refuse(why),
    };
    if plan.mode == Network::Open && !local {
        return refuse(format!(
            "port {port} of the host's loopback is not open to this launch; open it with host_loopback = [{port}] under [network] in the global config"
        ));
    }
    let Host::Name(name) = host else {
        return allow(admitted);
    };
    if local {
        return allow(admitted);
    }
    let found: Vec<SocketAddr> = match (name.as_str(), port).to_socket_addrs() {
        Ok(a) => a.collect(),
        Err(e) => {
            return allow(format!(
                "{admitted}; but {name} does not resolve on this host now ({e}), so the proxy would answer 502"
            ));
        }
    };
    match policy.usable(name, port, &found) {
        Ok(_) => allow(admitted),
        Err(Refusal(why)) => refuse(why),
    }
}

fn is_loopback(host: &Host) -> bool {
    match host {
        Host::Ip(ip) => crate::config::canonical(*ip).is_loopback(),
        Host::Name(n) => n == "localhost" || n == crate::egress::model::HOST_NAME,
    }
}
