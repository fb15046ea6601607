//! The decisions of the egress proxy of one launch: the allowlist (or open mode), the deny
//! entries, the opened ports of the host's loopback and the grants in flight, each naming the
//! rule that decided (docs/network.md). Pure except for reading the grants directory.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use super::request::Host;
use crate::config::{canonical, is_internal};
use crate::egress::model::{HOST_NAME, request_path, shorten};
use crate::egress::plan::PlanAllow;

/// The policy of one launch: the allowlist (or open mode) and the credentials it substitutes.
#[derive(Debug, Default)]
pub struct Policy {
    entries: Vec<PlanAllow>,
    /// Open mode: every destination but this host's own (loopback, link-local).
    pub(super) open: bool,
    pub(super) vault: Option<Arc<crate::credentials::Vault>>,
    /// Ports of this host's loopback the launch reaches (docs/network.md).
    host_ports: Vec<u16>,
    /// `[network] deny`: refused whatever else matches.
    deny: Vec<PlanAllow>,
    /// Grants in flight: their directory and this launch's id (allowlist mode).
    grants: Option<(PathBuf, String)>,
}

/// Why an attempt is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(pub String);

impl Policy {
    /// A policy allowing `entries`.
    pub fn new(entries: Vec<PlanAllow>) -> Self {
        Self {
            entries,
            ..Self::default()
        }
    }

    /// Open mode, substituting the credentials of `vault`.
    pub fn open(vault: Option<Arc<crate::credentials::Vault>>) -> Self {
        Self {
            open: true,
            vault,
            ..Self::default()
        }
    }

    /// This policy substituting the credentials of `vault`.
    pub fn with_vault(self, vault: Option<Arc<crate::credentials::Vault>>) -> Self {
        Self { vault, ..self }
    }

    /// This policy reaching `ports` of this host's loopback.
    pub fn with_host_ports(self, ports: Vec<u16>) -> Self {
        Self {
            host_ports: ports,
            ..self
        }
    }

    /// This policy reading the grants in flight of `launch` from `dir` at each decision.
    pub fn with_grants(self, dir: PathBuf, launch: String) -> Self {
        Self {
            grants: Some((dir, launch)),
            ..self
        }
    }

    /// The grants holding now, as rules with their deadlines (none in open mode).
    fn granted(&self) -> Vec<(PlanAllow, Option<SystemTime>)> {
        match &self.grants {
            Some((dir, launch)) if !self.open => super::grants::active(dir, launch),
            _ => Vec::new(),
        }
    }

    /// The launch these grants are for, for the refusal's advice.
    pub fn launch(&self) -> Option<&str> {
        self.grants.as_ref().map(|(_, l)| l.as_str())
    }

    /// This policy refusing what `deny` matches, before anything else is looked at.
    pub fn with_deny(self, deny: Vec<PlanAllow>) -> Self {
        Self { deny, ..self }
    }

    /// The deny entry matching `host:port`, as a refusal. The host's loopback is one place
    /// under every spelling: a deny entry naming `localhost`, `host.ags.internal`,
    /// `127.0.0.1` or `::1` refuses all of them.
    fn denied(&self, host: &Host, port: u16) -> Option<Refusal> {
        let found = self.deny.iter().find(|d| {
            let e = &d.entry;
            hits(host, |n| e.denies_name(n, port), |ip| e.denies_addr(ip, port))
        })?;
        Some(Refusal(format!(
            "{} port {port} is denied by the deny entry {}; a deny entry beats every allow entry",
            host.shown(),
            found.shown()
        )))
    }

    /// The address on this host's loopback when `host:port` names an opened port of it
    /// (`host.ags.internal`, `localhost`, `127.0.0.1` or `::1`: always the host's
    /// `127.0.0.1:PORT`), with the deadline of the grant that opened it, if a grant did.
    pub fn host_loopback_until(&self, host: &Host, port: u16) -> Option<(SocketAddr, Option<SystemTime>)> {
        if !is_loopback_target(host) {
            return None;
        }
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        if self.host_ports.contains(&port) {
            return Some((addr, None));
        }
        let granted = self
            .granted()
            .into_iter()
            .find(|(r, _)| r.entry.host_port() == Some(port));
        granted.map(|(_, until)| (addr, until))
    }

    /// [`Self::host_loopback_until`] without the deadline.
    pub fn host_loopback(&self, host: &Host, port: u16) -> Option<SocketAddr> {
        self.host_loopback_until(host, port).map(|(a, _)| a)
    }

    /// Decide a destination before resolving it: the entry that allows it, or why not.
    pub fn admit(&self, host: &Host, port: u16) -> Result<String, Refusal> {
        self.admit_until(host, port).map(|(reason, _)| reason)
    }

    /// [`Self::admit`], with the deadline of the grant that admitted it. A destination only
    /// method and path rules reach is admitted here; its requests are then each decided by
    /// [`Self::check_request`].
    pub fn admit_until(&self, host: &Host, port: u16) -> Result<(String, Option<SystemTime>), Refusal> {
        match self.admit_whole(host, port) {
            Err(refusal) if self.denied(host, port).is_none() => {
                let rules = self.request_rules(false, host, port);
                if rules.is_empty() {
                    return Err(refusal);
                }
                let shown: Vec<String> = rules.iter().map(|r| r.shown()).collect();
                Ok((format!("only requests matching {}", shown.join(", ")), None))
            }
            other => other,
        }
    }

    /// Whether `host:port` is admitted only for the requests method and path rules name.
    pub fn by_requests(&self, host: &Host, port: u16) -> bool {
        // The rules first: the admission reads the grants directory.
        !self.request_rules(false, host, port).is_empty() && self.admit_whole(host, port).is_err()
    }

    /// Why a tunnel to `host:port` is refused although the destination is admitted: method and
    /// path rules decide there (allow rules alone, or a deny rule), and the proxy cannot read
    /// a tunnel to an address (the launch CA certifies names; session-22 attack F2).
    pub fn tunnel_refusal(&self, host: &Host, port: u16) -> Option<Refusal> {
        let ruled = || !self.request_rules(true, host, port).is_empty() || self.by_requests(host, port);
        (matches!(host, Host::Ip(_)) && ruled()).then(|| {
            Refusal(format!(
                "{} port {port} has method and path rules, which the proxy reads in plain HTTP, not inside a tunnel to an address: send plain HTTP, or name a host",
                host.shown()
            ))
        })
    }

    /// Whether the proxy reads the requests of a tunnel to `host:port` (terminating its TLS
    /// with the launch CA) to decide them: a method and path rule decides there (a deny rule,
    /// or allow rules alone). Names only: the launch CA certifies names.
    pub fn inspects(&self, host: &Host, port: u16) -> bool {
        matches!(host, Host::Name(_))
            && (!self.request_rules(true, host, port).is_empty() || self.by_requests(host, port))
    }

    /// Decide one request (`method`, its origin-form `target`) to `host:port`, when method and
    /// path rules reach that destination: `Ok(None)` when none does (the destination's
    /// admission decides alone), the rule that allows it, or why not. A deny rule beats
    /// everything; one matches without regard to case.
    /// `overrides`: the request carries a header some servers take as another method or path
    /// (`X-HTTP-Method-Override`, `X-Original-URL`, …): refused where rules read requests.
    pub fn check_request(
        &self,
        host: &Host,
        port: u16,
        (method, target, overrides): (&str, &str, bool),
    ) -> Result<Option<String>, Refusal> {
        let denies = self.request_rules(true, host, port);
        let allows = self.request_rules(false, host, port);
        if denies.is_empty() && allows.is_empty() {
            return Ok(None);
        }
        if overrides {
            return Err(Refusal(format!(
                "the request carries a header that overrides its method or path (X-HTTP-Method-Override, X-Original-URL, X-Rewrite-URL), which {} port {port}'s method and path rules do not let through",
                host.shown()
            )));
        }
        let path = request_path(target).map_err(|why| {
            Refusal(format!(
                "{why} ({} port {port} has method and path rules)",
                host.shown()
            ))
        })?;
        let shown = format!("{method} {}{}", host.shown(), shorten(&path));
        let matching = |rules: &[&PlanAllow], fold: bool| {
            rules
                .iter()
                .find(|r| {
                    r.entry
                        .request
                        .as_ref()
                        .is_some_and(|q| q.matches(method, &path, fold))
                })
                .map(|r| r.shown())
        };
        if let Some(rule) = matching(&denies, true) {
            return Err(Refusal(format!(
                "{shown} is denied by the deny entry {rule}; a deny entry beats every allow entry"
            )));
        }
        if let Ok((reason, _)) = self.admit_whole(host, port) {
            return Ok(Some(reason));
        }
        match matching(&allows, false) {
            Some(rule) => Ok(Some(format!("allowed by {rule}"))),
            None => {
                let listed: Vec<String> = allows.iter().map(|r| r.shown()).collect();
                Err(Refusal(format!(
                    "{shown} matches none of the method and path rules for {} port {port}: {}",
                    host.shown(),
                    listed.join(", ")
                )))
            }
        }
    }

    /// The method and path rules (of the deny list, or the allowlist) whose destination is
    /// `host:port`. A deny rule without a port covers every port; the host's loopback is one
    /// place under every spelling (session-22 attack F4, F5).
    fn request_rules(&self, deny: bool, host: &Host, port: u16) -> Vec<&PlanAllow> {
        let rules = if deny { &self.deny } else { &self.entries };
        rules
            .iter()
            .filter(|r| {
                let e = &r.entry;
                let p = if deny { e.deny_port(port) } else { port };
                e.request.is_some() && hits(host, |n| e.reaches_name(n, p), |ip| e.reaches_addr(ip, p))
            })
            .collect()
    }

    /// The decision of the configured rules and the grants, for the destination as a whole.
    fn admit_whole(&self, host: &Host, port: u16) -> Result<(String, Option<SystemTime>), Refusal> {
        match self.admit_static(host, port) {
            Err(Refusal(why)) if self.denied(host, port).is_none() => {
                let matches = |r: &PlanAllow| {
                    (is_loopback_target(host) && r.entry.host_port() == Some(port))
                        || match host {
                            Host::Ip(ip) => r.entry.allows_addr(*ip, port),
                            Host::Name(n) => r.entry.allows_name(n, port),
                        }
                };
                let found = self.granted().into_iter().find(|(r, _)| matches(r));
                match found {
                    Some((rule, until)) => Ok((format!("allowed by {}", rule.shown()), until)),
                    None => Err(Refusal(why)),
                }
            }
            other => other.map(|reason| (reason, None)),
        }
    }

    /// The decision of the configured rules alone.
    fn admit_static(&self, host: &Host, port: u16) -> Result<String, Refusal> {
        if let Some(refusal) = self.denied(host, port) {
            return Err(refusal);
        }
        if self.host_ports.contains(&port) && is_loopback_target(host) {
            let by = match self.entries.iter().find(|e| e.entry.host_port() == Some(port)) {
                Some(rule) => rule.shown(),
                None => "[network] host_loopback (config)".into(),
            };
            return Ok(format!(
                "the host's loopback port {port} is open to this launch, by {by}"
            ));
        }
        if matches!(host, Host::Name(n) if n == HOST_NAME) {
            return Err(Refusal(format!(
                "port {port} of the host's loopback is not open to this launch; open it with an allowlist entry \"127.0.0.1:{port}\" or with host_loopback = [{port}] under [network] in the global config"
            )));
        }
        if self.open {
            return Ok("open mode".into());
        }
        let found = match host {
            Host::Ip(ip) => self.entries.iter().find(|e| e.entry.allows_addr(*ip, port)),
            Host::Name(n) => self.entries.iter().find(|e| e.entry.allows_name(n, port)),
        };
        found.map(|e| format!("allowed by {}", e.shown())).ok_or_else(|| {
            Refusal(match host {
                Host::Ip(ip) => format!(
                    "the address {ip} port {port} is not on this launch's allowlist (a raw IP needs an IP or CIDR entry; no entry matched, and allowlist mode refuses the rest: built in)"
                ),
                Host::Name(n) => format!(
                    "{n} port {port} is not on this launch's allowlist (no entry matched, and allowlist mode refuses the rest: built in)"
                ),
            })
        })
    }

    /// Of the addresses `name` resolved to, those that may be used: public ones, and internal
    /// ones only when an entry names that exact host or covers the address.
    pub fn usable(&self, name: &str, port: u16, addrs: &[SocketAddr]) -> Result<Vec<SocketAddr>, Refusal> {
        self.usable_until(name, port, addrs).map(|(ok, _)| ok)
    }

    /// [`Self::usable`], with the deadline of the grant that made an internal address usable
    /// (the configured rules first; a grant only when they do not suffice).
    pub fn usable_until(
        &self,
        name: &str,
        port: u16,
        addrs: &[SocketAddr],
    ) -> Result<(Vec<SocketAddr>, Option<SystemTime>), Refusal> {
        let kept: Vec<SocketAddr> = addrs
            .iter()
            .copied()
            .filter(|a| self.denied(&Host::Ip(canonical(a.ip())), port).is_none())
            .collect();
        if kept.is_empty() && !addrs.is_empty() {
            return Err(self
                .denied(&Host::Ip(canonical(addrs[0].ip())), port)
                .expect("denied"));
        }
        if self.open {
            return open_usable(name, &kept).map(|ok| (ok, None));
        }
        let ok = usable_by(&self.entries, name, port, &kept);
        if !ok.is_empty() {
            return Ok((ok, None));
        }
        for (rule, until) in self.granted() {
            let ok = usable_by(std::slice::from_ref(&rule), name, port, &kept);
            if !ok.is_empty() {
                return Ok((ok, until));
            }
        }
        let shown: Vec<String> = kept.iter().map(|a| a.ip().to_string()).collect();
        Err(Refusal(format!(
            "{name} resolves to an internal address ({}); only an entry naming exactly {name} or that address may reach it",
            shown.join(", ")
        )))
    }

    /// The entries, for refusal messages.
    pub fn summary(&self) -> String {
        if self.entries.is_empty() {
            return "(nothing)".into();
        }
        self.entries
            .iter()
            .map(|e| e.entry.entry.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Of `addrs`, those `rules` let `name` use: public ones, internal ones when a rule names
/// `name` exactly or covers the address.
fn usable_by(rules: &[PlanAllow], name: &str, port: u16, addrs: &[SocketAddr]) -> Vec<SocketAddr> {
    let exact = rules.iter().any(|e| e.entry.names_exactly(name, port));
    addrs
        .iter()
        .copied()
        .filter(|a| {
            let ip = canonical(a.ip());
            !is_internal(ip) || exact || rules.iter().any(|e| e.entry.allows_addr(ip, port))
        })
        .collect()
}

/// Whether `host` passes `by_name` or `by_addr`; a target on this host's loopback also passes
/// when any of the loopback's names or addresses does (one place under every spelling).
fn hits(host: &Host, by_name: impl Fn(&str) -> bool, by_addr: impl Fn(IpAddr) -> bool) -> bool {
    let direct = match host {
        Host::Ip(ip) => by_addr(*ip),
        Host::Name(n) => by_name(n),
    };
    direct
        || (is_loopback_target(host)
            && ([HOST_NAME, "localhost"].into_iter().any(&by_name)
                || by_addr(IpAddr::from([127, 0, 0, 1]))
                || by_addr(IpAddr::from(std::net::Ipv6Addr::LOCALHOST))))
}

/// Whether `host` names the host's loopback: `host.ags.internal`, `localhost`, `127.0.0.1`
/// or `::1` (not the rest of `127.0.0.0/8`).
fn is_loopback_target(host: &Host) -> bool {
    match host {
        Host::Name(n) => n == HOST_NAME || n == "localhost",
        Host::Ip(ip) => is_host_loopback(canonical(*ip)),
    }
}

/// Exactly `127.0.0.1` or `::1`: the addresses an opened host-loopback port is reached at
/// (not the rest of `127.0.0.0/8`, where other services may listen).
fn is_host_loopback(ip: IpAddr) -> bool {
    ip == IpAddr::from([127, 0, 0, 1]) || ip == IpAddr::from(std::net::Ipv6Addr::LOCALHOST)
}

/// In open mode the proxy, on the host, reaches what the container could: not this host's
/// own loopback or link-local addresses (nor unspecified or multicast ones).
pub(super) fn open_usable(name: &str, addrs: &[SocketAddr]) -> Result<Vec<SocketAddr>, Refusal> {
    let own = |ip: IpAddr| match canonical(ip) {
        IpAddr::V4(v4) => v4.is_loopback() || v4.is_link_local() || v4.is_unspecified() || v4.is_multicast(),
        IpAddr::V6(v6) => {
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (v6.segments()[0] & 0xffc0) == 0xfe80
        }
    };
    let ok: Vec<SocketAddr> = addrs.iter().copied().filter(|a| !own(a.ip())).collect();
    if ok.is_empty() {
        return Err(Refusal(format!(
            "{name} is a loopback or link-local address, which the proxy (on the host) does not reach in open mode"
        )));
    }
    Ok(ok)
}
