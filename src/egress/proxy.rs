//! The allowlisting HTTP proxy: `CONNECT host:port` tunnels and absolute-URI plain-HTTP
//! requests, each allowed only to an allowlisted host:port. Names are resolved here, on the
//! host; an address that is loopback, private, link-local, unique-local or multicast is used
//! only when an entry names it (by IP/CIDR, or that exact host name). Anything else gets a
//! `403` with a text body saying why. Only the request line and headers are read; bodies and
//! tunnels are relayed untouched and never logged.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixListener, UnixStream};
use tokio::sync::watch;

use zeroize::Zeroizing;

use super::log::{Decision, EgressLog, EgressRecord};
use super::policy::open_usable;
pub use super::policy::{Policy, Refusal};
pub use super::request::Host;
pub(super) use super::request::Request;
use super::request::{parse_head, read_head};
use crate::socket_server::{accept, stopped};

/// Connections served at once (two descriptors each; the default soft limit is 1024).
pub const MAX_CONNECTIONS: usize = 256;
/// How long the stop lets open connections record themselves.
const STOP_GRACE: Duration = Duration::from_secs(2);
/// How long a client may take to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
/// How long resolving and connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// Serve connections until `stop` turns true; then end every open connection, each recording
/// what it relayed so far (for at most [`STOP_GRACE`]), and return.
pub async fn serve(
    listener: UnixListener,
    policy: Arc<Policy>,
    log: Arc<EgressLog>,
    mut stop: watch::Receiver<bool>,
) {
    let for_conns = stop.clone();
    let mut conns = accept(&listener, MAX_CONNECTIONS, &mut stop, |stream| {
        handle(stream, policy.clone(), log.clone(), for_conns.clone())
    })
    .await;
    drop(listener);
    let _ = tokio::time::timeout(STOP_GRACE, conns.join()).await;
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
    let Some(Admitted {
        req,
        upstream,
        mut record,
        until,
        inspect,
    }) = admit(&mut client, &policy, &log, &head).await
    else {
        return;
    };
    let host = req.host.shown();
    if let Some(vault) = policy
        .vault
        .clone()
        .filter(|v| req.kind == "connect" && (inspect || v.terminates(&host, req.port)))
    {
        let ended = async {
            tokio::select! {
                _ = stopped(&mut stop) => {}
                _ = expiry(until) => {}
            }
        };
        let check = checker(policy.clone(), &req);
        return super::substitute::tunnel(client, upstream, (vault, check), record, &log, ended).await;
    }
    let started = Instant::now();
    let (up, down) = (AtomicU64::new(0), AtomicU64::new(0));
    tokio::select! {
        _ = relay(client, upstream, (&req, inspect), rest, (&up, &down)) => {}
        _ = stopped(&mut stop) => {}
        _ = expiry(until) => record.reason.push_str("; cut when its grant expired"),
    }
    let (up, down) = (up.load(Ordering::Relaxed), down.load(Ordering::Relaxed));
    record.bytes_up = up;
    record.bytes_down = down;
    record.duration_ms = started.elapsed().as_millis() as u64;
    log.append(&record);
}

/// A connection the proxy let through: the request (credentials put in), the connection to
/// its destination, the record to finish when it ends, the deadline of a grant that admitted
/// it, and whether its requests are each checked.
struct Admitted {
    req: Request,
    upstream: TcpStream,
    record: EgressRecord,
    until: Option<SystemTime>,
    inspect: bool,
}

/// Parse, decide and connect one request head; a refusal or a failure is answered to `client`
/// and recorded here (`None`).
async fn admit(
    client: &mut UnixStream,
    policy: &Arc<Policy>,
    log: &EgressLog,
    head: &[u8],
) -> Option<Admitted> {
    let req = match parse_head(head) {
        Ok(r) => r,
        Err(why) => {
            let why = why.to_string();
            let record = log.record("http", "?", 0, Decision::Invalid, why.clone());
            return refuse(client, log, &record, (400, "Bad Request"), &why).await;
        }
    };
    let host = req.host.shown();
    let (kind, port) = (req.kind, req.port);
    let refused = |why: String| log.record(kind, &host, port, Decision::Refused, why);
    let (reason, until, inspect) = match decide(policy, &req) {
        Ok(admitted) => admitted,
        Err(Refusal(why)) => {
            let record = refused(why);
            let body = refusal_body(policy, &record, &req.host);
            return refuse(client, log, &record, FORBIDDEN, &body).await;
        }
    };
    let (req, substituted) = match super::substitute::http(policy.vault.as_deref(), req, &host, log) {
        Ok(r) => r,
        Err(tripwire) => return refuse(client, log, &tripwire, FORBIDDEN, &tripwire.reason).await,
    };
    let connected = tokio::time::timeout(CONNECT_TIMEOUT, connect(policy, &req))
        .await
        .unwrap_or_else(|_| Err(Connect::Failed(format!("{host} port {}: timed out", req.port))));
    let (upstream, addr, granted) = match connected {
        Ok(c) => c,
        Err(Connect::Refused(Refusal(why))) => {
            return refuse(client, log, &refused(why.clone()), FORBIDDEN, &why).await;
        }
        Err(Connect::Failed(why)) => {
            let record = log.record(req.kind, &host, req.port, Decision::Failed, why.clone());
            return refuse(client, log, &record, (502, "Bad Gateway"), &why).await;
        }
    };
    let until = match (until, granted) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let mut record = log.record(req.kind, &host, req.port, Decision::Allowed, reason);
    if granted.is_some() {
        record.reason.push_str("; its internal address by a grant");
    }
    record.address = Some(addr.to_string());
    record.substituted = substituted;
    Some(Admitted {
        req,
        upstream,
        record,
        until,
        inspect,
    })
}

/// 403 Forbidden.
const FORBIDDEN: (u16, &str) = (403, "Forbidden");

/// Record `record` and answer the client `status` with `body`: the attempt goes no further.
async fn refuse(
    client: &mut UnixStream,
    log: &EgressLog,
    record: &EgressRecord,
    (code, reason): (u16, &str),
    body: &str,
) -> Option<Admitted> {
    log.append(record);
    let _ = client.write_all(&response(code, reason, body)).await;
    None
}

/// Decide a request head: the reason it is admitted, the deadline of a grant that admitted
/// it, and whether the tunnel's requests are each checked (method and path rules decide
/// there). A plain-HTTP request is decided whole here; a tunnel that rules decide by request
/// needs the launch CA to read them.
fn decide(policy: &Policy, req: &Request) -> Result<(String, Option<SystemTime>, bool), Refusal> {
    let (reason, until) = policy.admit_until(&req.host, req.port)?;
    if req.kind == "http" {
        let ruled = policy.check_request(&req.host, req.port, (&req.method, &req.target, req.overrides))?;
        if ruled.is_some() && req.body_len.is_none() {
            return Err(Refusal(format!(
                "{} port {} has method and path rules, and a body sent with Transfer-Encoding cannot be bounded here: send it with a Content-Length",
                req.host.shown(),
                req.port
            )));
        }
        // Where rules decide, only this request's bytes go on (`relay`).
        let bounded = ruled.is_some();
        return Ok((ruled.unwrap_or(reason), until, bounded));
    }
    let inspect = policy.inspects(&req.host, req.port);
    let host = req.host.shown();
    if inspect && policy.vault.is_none() {
        return Err(Refusal(format!(
            "{host} port {} has method and path rules, but this launch has no CA to read its requests with",
            req.port
        )));
    }
    if let Some(refusal) = policy.tunnel_refusal(&req.host, req.port) {
        return Err(refusal);
    }
    Ok((reason, until, inspect))
}

/// The check each request of a terminated tunnel passes (method and path rules).
fn checker(policy: Arc<Policy>, req: &Request) -> crate::credentials::RequestCheck {
    let (host, port) = (req.host.clone(), req.port);
    Arc::new(move |method: &str, target: &str, overrides: bool| {
        policy
            .check_request(&host, port, (method, target, overrides))
            .map(|_| ())
            .map_err(|Refusal(why)| why)
    })
}

/// The 403 text: why, what is allowed, and how to allow it (the config, or a grant in flight to
/// this running launch).
fn refusal_body(policy: &Policy, record: &super::log::EgressRecord, host: &Host) -> String {
    let (why, port) = (record.reason.as_str(), record.port);
    let target = match host {
        Host::Ip(std::net::IpAddr::V6(ip)) => format!("[{ip}]:{port}"),
        _ => format!("{}:{port}", host.shown()),
    };
    let grant = match policy.launch() {
        Some(launch) if !why.contains("deny entry") => {
            format!(
                " To grant it to this running launch for 30 minutes, run on the host: ags allow {target} --launch {launch} --for 30m."
            )
        }
        _ => String::new(),
    };
    format!(
        "{why}. Allowed: {}. To allow it, add it to [network] allow in the global config (docs/network.md).{grant} This refusal is record {}: on the host, ags explain {} shows it.",
        policy.summary(),
        record.id,
        record.id
    )
}

/// Wait until `until` (forever without one).
async fn expiry(until: Option<SystemTime>) {
    match until {
        Some(t) => {
            let left = t.duration_since(SystemTime::now()).unwrap_or_default();
            tokio::time::sleep(left).await;
        }
        None => std::future::pending().await,
    }
}

/// A connection made: the stream, the address, and the deadline of a grant that made the
/// address usable (a name that resolved to an internal address).
type Connected = (TcpStream, SocketAddr, Option<SystemTime>);

enum Connect {
    Refused(Refusal),
    Failed(String),
}

/// Resolve (on the host) and connect to the first usable address.
async fn connect(policy: &Policy, req: &Request) -> Result<Connected, Connect> {
    let mut until = None;
    let addrs = match &req.host {
        host if policy.host_loopback(host, req.port).is_some() => {
            policy.host_loopback(host, req.port).into_iter().collect()
        }
        // Admitted by method and path rules naming the host's loopback under another spelling.
        Host::Name(n) if n == crate::egress::model::HOST_NAME => {
            vec![SocketAddr::from(([127, 0, 0, 1], req.port))]
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
            let (addrs, granted) = policy
                .usable_until(n, req.port, &found)
                .map_err(Connect::Refused)?;
            until = granted;
            addrs
        }
    };
    let mut last = String::new();
    for a in addrs {
        match TcpStream::connect(a).await {
            Ok(s) => return Ok((s, a, until)),
            Err(e) => last = format!("{a}: {e}"),
        }
    }
    Err(Connect::Failed(format!("cannot connect to {last}")))
}

/// Relay, counting bytes as they pass. A tunnel ends when both directions have; a plain-HTTP
/// exchange ends when the destination has answered and closed (it was asked to close), even if
/// the client keeps its side open for another request. A plain-HTTP request that method and
/// path rules decided (`bounded`) sends on its head and its `Content-Length` of body, nothing
/// more: a second request behind it never reaches a server that ignores `Connection: close`.
async fn relay(
    mut client: UnixStream,
    mut upstream: TcpStream,
    (req, bounded): (&Request, bool),
    mut rest: Vec<u8>,
    (up, down): (&AtomicU64, &AtomicU64),
) {
    let cap = req.body_len.filter(|_| bounded && req.upstream_head.is_some());
    if let Some(len) = cap {
        rest.truncate(usize::try_from(len).unwrap_or(usize::MAX));
    }
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
    let left = cap.map(|len| len.saturating_sub(rest.len() as u64));
    let upward = pump(&mut cr, &mut uw, up, left);
    let downward = pump(&mut ur, &mut cw, down, None);
    if req.upstream_head.is_some() {
        tokio::select! {
            _ = downward => {}
            _ = async { upward.await; std::future::pending::<()>().await } => {}
        }
    } else {
        tokio::join!(upward, downward);
    }
}

/// Copy until end of stream or error, then shut the writer down; or copy `limit` bytes and
/// leave the writer open (a server may take a half-closed connection for a client that went
/// away, nginx's 499). Counts into `total`.
async fn pump<R, W>(from: &mut R, to: &mut W, total: &AtomicU64, mut limit: Option<u64>)
where
    R: tokio::io::AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin,
{
    let mut buf = vec![0u8; 32 * 1024];
    while limit != Some(0) {
        let room = limit.map_or(buf.len(), |l| {
            buf.len().min(usize::try_from(l).unwrap_or(usize::MAX))
        });
        match from.read(&mut buf[..room]).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if to.write_all(&buf[..n]).await.is_err() {
                    break;
                }
                total.fetch_add(n as u64, Ordering::Relaxed);
                limit = limit.map(|l| l - n as u64);
            }
        }
    }
    if limit != Some(0) {
        let _ = to.shutdown().await;
    }
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
