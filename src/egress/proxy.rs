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

use super::log::{Decision, EgressLog};
use crate::config::{AllowEntry, canonical, is_internal};

/// Largest request head accepted.
const MAX_HEAD: usize = 16 * 1024;
/// Connections served at once (two descriptors each; the default soft limit is 1024).
pub const MAX_CONNECTIONS: usize = 256;
/// How long a client may take to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
/// How long resolving and connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// The allowlist of one launch.
#[derive(Debug)]
pub struct Policy {
    entries: Vec<AllowEntry>,
}

/// Why an attempt is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(pub String);

impl Policy {
    /// A policy allowing `entries`.
    pub fn new(entries: Vec<AllowEntry>) -> Self {
        Self { entries }
    }

    /// Decide a destination before resolving it: the entry that allows it, or why not.
    pub fn admit(&self, host: &Host, port: u16) -> Result<&AllowEntry, Refusal> {
        let found = match host {
            Host::Ip(ip) => self.entries.iter().find(|e| e.allows_addr(*ip, port)),
            Host::Name(n) => self.entries.iter().find(|e| e.allows_name(n, port)),
        };
        found.ok_or_else(|| {
            Refusal(match host {
                Host::Ip(ip) => format!(
                    "the address {ip} port {port} is not on this launch's allowlist (a raw IP needs an IP or CIDR entry)"
                ),
                Host::Name(n) => format!("{n} port {port} is not on this launch's allowlist"),
            })
        })
    }

    /// Of the addresses `name` resolved to, those that may be used: public ones, and internal
    /// ones only when an entry names that exact host or covers the address.
    pub fn usable(&self, name: &str, port: u16, addrs: &[SocketAddr]) -> Result<Vec<SocketAddr>, Refusal> {
        let exact = self.entries.iter().any(|e| e.names_exactly(name, port));
        let ok: Vec<SocketAddr> = addrs
            .iter()
            .copied()
            .filter(|a| {
                let ip = canonical(a.ip());
                !is_internal(ip) || exact || self.entries.iter().any(|e| e.allows_addr(ip, port))
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
            .map(|e| e.entry.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A destination host as asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    /// An IP literal.
    Ip(IpAddr),
    /// A host name (lowercase, no trailing dot).
    Name(String),
}

impl Host {
    /// Parse a host (`[v6]` in brackets allowed); `None` when it is not a plausible host name.
    pub fn parse(raw: &str) -> Option<Self> {
        let inner = raw
            .strip_prefix('[')
            .and_then(|r| r.strip_suffix(']'))
            .unwrap_or(raw);
        if let Ok(ip) = inner.parse::<IpAddr>() {
            return Some(Host::Ip(canonical(ip)));
        }
        let name = raw.trim_end_matches('.').to_ascii_lowercase();
        let ok = !name.is_empty()
            && name.len() <= 253
            && name.split('.').all(|l| {
                !l.is_empty()
                    && l.len() <= 63
                    && l.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            });
        ok.then_some(Host::Name(name))
    }

    fn shown(&self) -> String {
        match self {
            Host::Ip(ip) => ip.to_string(),
            Host::Name(n) => n.clone(),
        }
    }
}

/// What the client asked for.
#[derive(Debug, PartialEq, Eq)]
struct Request {
    /// `connect` or `http`.
    kind: &'static str,
    host: Host,
    port: u16,
    /// For plain HTTP: the head to send upstream (origin-form request line).
    upstream_head: Option<Vec<u8>>,
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
    let refused = |why: String| log.record(req.kind, &host, req.port, Decision::Refused, why);
    let entry = match policy.admit(&req.host, req.port) {
        Ok(e) => e.entry.clone(),
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
    let started = Instant::now();
    let (up, down) = (AtomicU64::new(0), AtomicU64::new(0));
    tokio::select! {
        _ = relay(client, upstream, &req, rest, &up, &down) => {}
        _ = stopped(&mut stop) => {}
    }
    let (up, down) = (up.load(Ordering::Relaxed), down.load(Ordering::Relaxed));
    let mut record = log.record(
        req.kind,
        &host,
        req.port,
        Decision::Allowed,
        format!("allowed by {entry}"),
    );
    record.address = Some(addr.to_string());
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
    let mut first = Vec::new();
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

/// Read up to the end of the request head; returns the head and whatever followed it.
async fn read_head(client: &mut UnixStream) -> std::io::Result<(Vec<u8>, Vec<u8>)> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = find_end(&buf) {
            let rest = buf.split_off(end);
            return Ok((buf, rest));
        }
        if buf.len() > MAX_HEAD {
            return Ok((buf, Vec::new()));
        }
        let n = client.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

fn find_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4)
}

/// Parse a request head into what to connect to and, for plain HTTP, the head to send on.
fn parse_head(head: &[u8]) -> Result<Request, String> {
    if find_end(head).is_none() {
        return Err(format!(
            "the request head is incomplete or longer than {MAX_HEAD} bytes"
        ));
    }
    let text = String::from_utf8_lossy(head);
    let mut lines = text.split("\r\n");
    let line = lines.next().unwrap_or_default();
    let parts: Vec<&str> = line.split(' ').collect();
    let [method, target, version] = parts[..] else {
        return Err("the request line must be METHOD TARGET HTTP/1.x".into());
    };
    if !version.starts_with("HTTP/1.") || method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase())
    {
        return Err("the request line must be METHOD TARGET HTTP/1.x".into());
    }
    if method == "CONNECT" {
        let (host, port) = authority(target, None)?;
        return Ok(Request {
            kind: "connect",
            host,
            port,
            upstream_head: None,
        });
    }
    let lower = target.to_ascii_lowercase();
    if lower.starts_with("https://") {
        return Err("send https:// requests through CONNECT".into());
    }
    if !lower.starts_with("http://") {
        return Err("a proxy request needs an absolute http:// URI or CONNECT".into());
    }
    let after = &target["http://".len()..];
    let split = after.find(['/', '?', '#']).unwrap_or(after.len());
    let (auth, path) = after.split_at(split);
    let (host, port) = authority(auth, Some(80))?;
    let path = match path {
        "" => "/".to_string(),
        p if p.starts_with('/') => p.to_string(),
        p => format!("/{p}"),
    };
    let mut out = format!("{method} {path} {version}\r\nHost: {auth}\r\n");
    for h in lines.filter(|l| !l.is_empty()) {
        let name = h
            .split(':')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        if !matches!(
            name.as_str(),
            "host" | "connection" | "proxy-connection" | "proxy-authorization" | "keep-alive"
        ) {
            out.push_str(h);
            out.push_str("\r\n");
        }
    }
    out.push_str("Connection: close\r\n\r\n");
    Ok(Request {
        kind: "http",
        host,
        port,
        upstream_head: Some(out.into_bytes()),
    })
}

/// `host:port` (IPv6 in brackets); `default` when the port may be left out.
fn authority(a: &str, default: Option<u16>) -> Result<(Host, u16), String> {
    if a.contains('@') {
        return Err("credentials in the URI are not accepted".into());
    }
    let (host, port) = match a.rfind(':') {
        Some(i) if !a[i..].contains(']') => (&a[..i], Some(&a[i + 1..])),
        _ => (a, None),
    };
    let port = match (port, default) {
        (Some(p), _) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or("the port must be 1 to 65535")?,
        (None, Some(d)) => d,
        (None, None) => return Err("CONNECT needs host:port".into()),
    };
    let host = Host::parse(host).ok_or("the host is not a valid host name or IP address")?;
    Ok((host, port))
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
