//! `ags explain HOST[:PORT]`: would the launch's network policy let the agent reach this
//! destination, and which rule decides. The answer comes from the proxy's own decision
//! ([`Policy::admit`], then [`Policy::usable`] on the host's resolution of a name), so it
//! cannot drift from what a launch does.

use std::net::{SocketAddr, ToSocketAddrs};

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

/// Parse `HOST[:PORT]` (`[v6]:PORT` for IPv6; 443 without a port).
pub fn parse_target(raw: &str) -> Result<(Host, u16), String> {
    let (host, port) = match raw.strip_prefix('[') {
        Some(rest) => {
            let (h, tail) = rest
                .split_once(']')
                .ok_or("an IPv6 address needs its closing ']'")?;
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
            .ok_or_else(|| format!("port {p:?} must be a number from 1 to 65535"))?,
    };
    let host = Host::parse(host).ok_or_else(|| format!("{host:?} is not a host name or IP address"))?;
    Ok((host, port))
}

/// Decide `host:port` under `plan`, resolving a name on this host like the proxy.
pub fn explain(plan: &EgressPlan, host: &Host, port: u16) -> Verdict {
    let refuse = |why: String| Verdict { allowed: false, why };
    let mut policy = super::policy(plan, None);
    if let Some(proxy) = &plan.proxy {
        // Grants for every launch count; those for one launch are that launch's.
        policy = policy.with_grants(proxy.grants.clone(), "-".into());
    }
    let local = policy.host_loopback(host, port).is_some();
    match plan.mode {
        Network::None => return refuse("network mode none: the container has only its own loopback".into()),
        Network::Open if !local && !is_loopback(host) => {
            return Verdict {
                allowed: true,
                why: format!(
                    "open mode ({}): the agent reaches it over Podman's network, not through the proxy ([network] deny applies only to what goes through the proxy)",
                    plan.mode_origin
                ),
            };
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
        return Verdict {
            allowed: true,
            why: admitted,
        };
    };
    if local {
        return Verdict {
            allowed: true,
            why: admitted,
        };
    }
    let found: Vec<SocketAddr> = match (name.as_str(), port).to_socket_addrs() {
        Ok(a) => a.collect(),
        Err(e) => {
            return Verdict {
                allowed: true,
                why: format!(
                    "{admitted}; but {name} does not resolve on this host now ({e}), so the proxy would answer 502"
                ),
            };
        }
    };
    match policy.usable(name, port, &found) {
        Ok(_) => Verdict {
            allowed: true,
            why: admitted,
        },
        Err(Refusal(why)) => refuse(why),
    }
}

fn is_loopback(host: &Host) -> bool {
    match host {
        Host::Ip(ip) => crate::config::canonical(*ip).is_loopback(),
        Host::Name(n) => n == "localhost" || n == crate::egress::model::HOST_NAME,
    }
}
