//! The allowlisting HTTP proxy: `CONNECT host:port` tunnels and absolute-URI plain-HTTP
//! requests, each allowed only to an allowlisted host:port. Names are resolved here, on the
//! host; an address that is loopback, private, link-local, unique-local or multicast is used
//! only when an entry names it (by IP/CIDR, or that exact host name). Anything else gets a
//! `403` with a text body saying why. Only the request line and headers are read; bodies and
//! tunnels are relayed untouched and never logged.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixListener, UnixStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

use zeroize::Zeroizing;

use super::log::{Decision, EgressLog};
pub use super::request::Host;
pub(super) use super::request::Request;
use super::request::{parse_head, read_head};
use crate::config::{canonical, is_internal};
use crate::egress::model::HOST_NAME;
use crate::egress::plan::PlanAllow;

/// Connections served at once (two descriptors each; the default soft limit is 1024).
pub const MAX_CONNECTIONS: usize = 256;
/// How long a client may take to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
/// How long resolving and connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// The policy of one launch: the allowlist (or open mode) and the credentials it substitutes.
#[derive(Debug)]
pub struct Policy {
    entries: Vec<PlanAllow>,
    /// Open mode: every destination but this host's own (loopback, link-local).
    open: bool,
    vault: Option<Arc<crate::credentials::Vault>>,
    /// Ports of this host's loopback the launch reaches (docs/network.md).
    host_ports: Vec<u16>,
    /// `[network] deny`: refused whatever else matches.
    deny: Vec<PlanAllow>,
}

/// Why an attempt is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(pub String);

impl Policy {
    /// A policy allowing `entries`.
    pub fn new(entries: Vec<PlanAllow>) -> Self {
        Self {
            entries,
            open: false,
            vault: None,
            host_ports: Vec::new(),
            deny: Vec::new(),
        }
    }

    /// Open mode, substituting the credentials of `vault`.
    pub fn open(vault: Option<Arc<crate::credentials::Vault>>) -> Self {
        Self {
            entries: Vec::new(),
            open: true,
            vault,
            host_ports: Vec::new(),
            deny: Vec::new(),
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

    /// This policy refusing what `deny` matches, before anything else is looked at.
    pub fn with_deny(self, deny: Vec<PlanAllow>) -> Self {
        Self { deny, ..self }
    }

    /// The deny entry matching `host:port`, as a refusal.
    fn denied(&self, host: &Host, port: u16) -> Option<Refusal> {
        let found = self.deny.iter().find(|d| match host {
            Host::Ip(ip) => d.entry.denies_addr(*ip, port),
            Host::Name(n) => d.entry.denies_name(n, port),
        })?;
        Some(Refusal(format!(
            "{} port {port} is denied by the deny entry {}; a deny entry beats every allow entry",
            host.shown(),
            found.shown()
        )))
    }

    /// The address on this host's loopback when `host:port` names an opened port of it
    /// (`host.ags.internal`, `localhost` or a loopback address).
    pub fn host_loopback(&self, host: &Host, port: u16) -> Option<SocketAddr> {
        if !self.host_ports.contains(&port) {
            return None;
        }
        let ip = match host {
            Host::Name(n) if n == HOST_NAME || n == "localhost" => IpAddr::from([127, 0, 0, 1]),
            Host::Ip(ip) if is_host_loopback(canonical(*ip)) => canonical(*ip),
            _ => return None,
        };
        Some(SocketAddr::new(ip, port))
    }

    /// Decide a destination before resolving it: the entry that allows it, or why not.
    pub fn admit(&self, host: &Host, port: u16) -> Result<String, Refusal> {
        if let Some(refusal) = self.denied(host, port) {
            return Err(refusal);
        }
        if self.host_loopback(host, port).is_some() {
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
        let addrs = &kept[..];
        if self.open {
            return open_usable(name, addrs);
        }
        let exact = self.entries.iter().any(|e| e.entry.names_exactly(name, port));
        let ok: Vec<SocketAddr> = addrs
            .iter()
            .copied()
            .filter(|a| {
                let ip = canonical(a.ip());
                !is_internal(ip) || exact || self.entries.iter().any(|e| e.entry.allows_addr(ip, port))
            })
            .collect();
        if ok.is_empty() {
            let shown: Vec<String> = addrs.iter().map(|a| a.ip().to_string()).collect();
            return Err(Refusal(format!(
                "{name} resolves to an internal address ({}); only an entry naming exactly {name} or that address may reach it",
                shown.join(", ")
            )));
        }
        Ok(ok)
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

/// Exactly `127.0.0.1` or `::1`: the addresses an opened host-loopback port is reached at
/// (not the rest of `127.0.0.0/8`, where other services may listen).
fn is_host_loopback(ip: IpAddr) -> bool {
    ip == IpAddr::from([127, 0, 0, 1]) || ip == IpAddr::from(std::net::Ipv6Addr::LOCALHOST)
}

/// In open mode the proxy, on the host, reaches what the container could: not this host's
/// own loopback or link-local addresses (nor unspecified or multicast ones).
fn open_usable(name: &str, addrs: &[SocketAddr]) -> Result<Vec<SocketAddr>, Refusal> {
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

/// Serve connections until `stop` turns true; then end every open connection, each recording
/// what it relayed so far, and return.
pub async fn serve(
    listener: UnixListener,
    policy: Arc<Policy>,
    log: Arc<EgressLog>,
    mut stop: watch::Receiver<bool>,
) {
    let mut conns = JoinSet::new();
    let for_conns = stop.clone();
    // At most MAX_CONNECTIONS at once (more wait to be accepted): the agent cannot use up
    // `ags`'s descriptors, which its other servers and the checks after the launch need.
    let permits = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let permit = tokio::select! {
            p = permits.clone().acquire_owned() => p.expect("the semaphore is never closed"),
            _ = stopped(&mut stop) => break,
        };
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let conn = handle(stream, policy.clone(), log.clone(), for_conns.clone());
                    conns.spawn(async move {
                        conn.await;
                        drop(permit);
                    });
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            },
            _ = stopped(&mut stop) => break,
        }
        while conns.try_join_next().is_some() {}
    }
    drop(listener);
    while conns.join_next().await.is_some() {}
}

/// Resolves once the stop flag is set (never, if its sender is gone without setting it).
async fn stopped(rx: &mut watch::Receiver<bool>) {
    loop {
        let set = *rx.borrow_and_update();
        if set {
            return;
        }
        if rx.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

async fn handle(
    mut client: UnixStream,
    policy: Arc<Policy>,
    log: Arc<EgressLog>,
    mut stop: watch::Receiver<bool>,
) {
    let Ok(Ok((head, rest))) = tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut client)).await else {
        return;
    };
    let req = match parse_head(&head) {
        Ok(r) => r,
        Err(why) => {
            log.append(&log.record("http", "?", 0, Decision::Invalid, why.clone()));
            let _ = client.write_all(&response(400, "Bad Request", &why)).await;
            return;
        }
    };
    let host = req.host.shown();
    let (kind, port) = (req.kind, req.port);
    let refused = |why: String| log.record(kind, &host, port, Decision::Refused, why);
    let reason = match policy.admit(&req.host, req.port) {
        Ok(reason) => reason,
        Err(Refusal(why)) => {
            let body = format!(
                "{why}. Allowed: {}. To allow it, add it to [network] allow in the global config (docs/network.md).",
                policy.summary()
            );
            log.append(&refused(why));
            let _ = client.write_all(&response(403, "Forbidden", &body)).await;
            return;
        }
    };
    let (req, substituted) = match super::substitute::http(policy.vault.as_deref(), req, &host, &log) {
        Ok(r) => r,
        Err(tripwire) => {
            log.append(&tripwire);
            let _ = client
                .write_all(&response(403, "Forbidden", &tripwire.reason))
                .await;
            return;
        }
    };
    let connected = tokio::time::timeout(CONNECT_TIMEOUT, connect(&policy, &req))
        .await
        .unwrap_or_else(|_| Err(Connect::Failed(format!("{host} port {}: timed out", req.port))));
    let (upstream, addr) = match connected {
        Ok(c) => c,
        Err(Connect::Refused(Refusal(why))) => {
            log.append(&refused(why.clone()));
            let _ = client.write_all(&response(403, "Forbidden", &why)).await;
            return;
        }
        Err(Connect::Failed(why)) => {
            log.append(&log.record(req.kind, &host, req.port, Decision::Failed, why.clone()));
            let _ = client.write_all(&response(502, "Bad Gateway", &why)).await;
            return;
        }
    };
    let mut record = log.record(req.kind, &host, req.port, Decision::Allowed, reason);
    record.address = Some(addr.to_string());
    record.substituted = substituted;
    if let Some(vault) = policy
        .vault
        .clone()
        .filter(|v| req.kind == "connect" && v.terminates(&host, req.port))
    {
        return super::substitute::tunnel(client, upstream, vault, record, &log, stopped(&mut stop)).await;
    }
    let started = Instant::now();
    let (up, down) = (AtomicU64::new(0), AtomicU64::new(0));
    tokio::select! {
        _ = relay(client, upstream, &req, rest, &up, &down) => {}
        _ = stopped(&mut stop) => {}
    }
    let (up, down) = (up.load(Ordering::Relaxed), down.load(Ordering::Relaxed));
    record.bytes_up = up;
    record.bytes_down = down;
    record.duration_ms = started.elapsed().as_millis() as u64;
    log.append(&record);
}

enum Connect {
    Refused(Refusal),
    Failed(String),
}

/// Resolve (on the host) and connect to the first usable address.
async fn connect(policy: &Policy, req: &Request) -> Result<(TcpStream, SocketAddr), Connect> {
    let addrs = match &req.host {
        host if policy.host_loopback(host, req.port).is_some() => {
            policy.host_loopback(host, req.port).into_iter().collect()
        }
        Host::Ip(ip) if policy.open => {
            open_usable(&ip.to_string(), &[SocketAddr::new(*ip, req.port)]).map_err(Connect::Refused)?
        }
        // Admission has checked the deny entries against the address itself.
        Host::Ip(ip) => vec![SocketAddr::new(*ip, req.port)],
        Host::Name(n) => {
            let found: Vec<SocketAddr> = tokio::net::lookup_host((n.as_str(), req.port))
                .await
                .map_err(|e| Connect::Failed(format!("cannot resolve {n}: {e}")))?
                .collect();
            policy.usable(n, req.port, &found).map_err(Connect::Refused)?
        }
    };
    let mut last = String::new();
    for a in addrs {
        match TcpStream::connect(a).await {
            Ok(s) => return Ok((s, a)),
            Err(e) => last = format!("{a}: {e}"),
        }
    }
    Err(Connect::Failed(format!("cannot connect to {last}")))
}

/// Relay, counting bytes as they pass. A tunnel ends when both directions have; a plain-HTTP
/// exchange ends when the destination has answered and closed (it was asked to close), even if
/// the client keeps its side open for another request.
async fn relay(
    mut client: UnixStream,
    mut upstream: TcpStream,
    req: &Request,
    rest: Vec<u8>,
    up: &AtomicU64,
    down: &AtomicU64,
) {
    let mut first = Zeroizing::new(Vec::new());
    match &req.upstream_head {
        None => {
            if client
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await
                .is_err()
            {
                return;
            }
        }
        Some(head) => first.extend_from_slice(head),
    }
    first.extend_from_slice(&rest);
    if upstream.write_all(&first).await.is_err() {
        return;
    }
    up.fetch_add(first.len() as u64, Ordering::Relaxed);
    let (mut cr, mut cw) = client.into_split();
    let (mut ur, mut uw) = upstream.into_split();
    let upward = pump(&mut cr, &mut uw, up);
    let downward = pump(&mut ur, &mut cw, down);
    if req.upstream_head.is_some() {
        tokio::select! {
            _ = downward => {}
            _ = async { upward.await; std::future::pending::<()>().await } => {}
        }
    } else {
        tokio::join!(upward, downward);
    }
}

/// Copy until end of stream or error, then shut the writer down; counts into `total`.
async fn pump<R, W>(from: &mut R, to: &mut W, total: &AtomicU64)
where
    R: tokio::io::AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin,
{
    let mut buf = vec![0u8; 32 * 1024];
    loop {
        match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if to.write_all(&buf[..n]).await.is_err() {
                    break;
                }
                total.fetch_add(n as u64, Ordering::Relaxed);
            }
        }
    }
    let _ = to.shutdown().await;
}

/// A complete response with a plain-text body.
fn response(code: u16, reason: &str, body: &str) -> Vec<u8> {
    let body = format!("ags egress: {body}\n");
    format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[cfg(test)]
#[path = "proxy_tests.rs"]
mod tests;
