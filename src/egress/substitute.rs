//! The proxy's credential part (docs/credentials.md): a plain-HTTP request to a credential's
//! host gets its real value in the declared header, a `CONNECT` to one goes to the terminating
//! relay (`credentials::terminate`), and a placeholder seen going anywhere else is a tripwire:
//! refused and recorded. The values themselves stay in `credentials::Vault`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use tokio::net::{TcpStream, UnixStream};

use super::log::{Decision, EgressLog, EgressRecord};
use super::request::Request;
use crate::credentials::{self, Inner, Vault};

/// The substitutions of a request.
type Substituted = std::collections::BTreeMap<String, u64>;

/// A plain-HTTP request with its head substituted, or the tripwire record refusing it.
pub(super) fn http(
    vault: Option<&Vault>,
    mut req: Request,
    host: &str,
    log: &EgressLog,
) -> Result<(Request, Substituted), Box<EgressRecord>> {
    let mut done = Substituted::new();
    let (Some(vault), Some(head)) = (vault, req.upstream_head.as_ref()) else {
        return Ok((req, done));
    };
    match vault.http_head(host, req.port, head) {
        Ok(s) => {
            for env in s.envs {
                *done.entry(env).or_default() += 1;
            }
            req.upstream_head = Some(s.head);
            Ok((req, done))
        }
        Err(t) => Err(Box::new(tripwire_record(
            log,
            req.kind,
            host,
            req.port,
            (&t.env, &t.place),
        ))),
    }
}

/// The record of a tripwire: `env`'s placeholder in `where_` of a request to `host:port`.
fn tripwire_record(
    log: &EgressLog,
    kind: &str,
    host: &str,
    port: u16,
    (env, where_): (&str, &str),
) -> EgressRecord {
    let reason = format!(
        "tripwire: the {where_} carries the placeholder of {env}, which is not for {host}:{port}; refused (docs/credentials.md)"
    );
    log.record(kind, host, port, Decision::Tripwire, reason)
}

/// Relay a `CONNECT` to a credential host through the terminating relay; record the
/// connection (`record`, already carrying the address) and each tripwire.
pub(super) async fn tunnel(
    mut client: UnixStream,
    upstream: TcpStream,
    (vault, check): (Arc<Vault>, credentials::RequestCheck),
    mut record: EgressRecord,
    log: &EgressLog,
    stop: impl std::future::Future<Output = ()>,
) {
    let started = Instant::now();
    let (up, down) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (host, port) = (record.host.clone(), record.port);
    let inner = match vault.plain_http(&host, port) {
        false => Inner::Tls { answered: false },
        true => match speaks_tls(&mut client).await {
            Some(true) => Inner::Tls { answered: true },
            Some(false) => Inner::Plain,
            None => {
                record.decision = Decision::Failed;
                record.reason = "the agent closed the tunnel before sending anything".into();
                return log.append(&record);
            }
        },
    };
    let counts = (up.clone(), down.clone());
    let relay = credentials::terminate(
        client,
        upstream,
        (vault, check),
        (host.clone(), port),
        counts,
        inner,
    );
    let outcome = tokio::select! {
        o = relay => Some(o),
        _ = stop => None,
    };
    let outcome = outcome.unwrap_or_default();
    for t in &outcome.tripwires {
        log.append(&tripwire_record(log, "connect", &host, port, (&t.env, &t.place)));
    }
    for why in outcome.refused {
        log.append(&log.record("connect", &host, port, Decision::Refused, why));
    }
    if let Some(why) = outcome.failed {
        record.decision = Decision::Failed;
        record.reason = why;
    }
    record.substituted = outcome.substituted;
    record.bytes_up = up.load(Ordering::Relaxed);
    record.bytes_down = down.load(Ordering::Relaxed);
    record.duration_ms = started.elapsed().as_millis() as u64;
    log.append(&record);
}

/// For a host whose credential may go over plain HTTP, a tunnel may carry either: answer the
/// `CONNECT`, then look at the agent's first byte (a TLS handshake record starts with 0x16)
/// without taking it. `None` when the agent closed or failed first.
async fn speaks_tls(client: &mut UnixStream) -> Option<bool> {
    use std::os::fd::AsRawFd;
    use tokio::io::{AsyncWriteExt, Interest};
    client
        .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
        .await
        .ok()?;
    let client = &*client;
    let peek = || {
        let mut byte = [0u8; 1];
        let flags = nix::sys::socket::MsgFlags::MSG_PEEK;
        nix::sys::socket::recv(client.as_raw_fd(), &mut byte, flags)
            .map(|n| (n, byte[0]))
            .map_err(std::io::Error::from)
    };
    let wait = async {
        loop {
            client.readable().await.ok()?;
            match client.try_io(Interest::READABLE, peek) {
                Ok((0, _)) => return None,
                Ok((_, b)) => return Some(b == 0x16),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                Err(_) => return None,
            }
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(30), wait)
        .await
        .ok()
        .flatten()
}
