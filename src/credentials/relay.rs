//! The terminating relay: a `CONNECT` to a credential host is answered only once the real host
//! is connected over TLS and its certificate verified; then the agent's TLS is accepted with
//! the launch CA's certificate for that host, and each HTTP/1.1 request (hyper, on both sides)
//! is checked and passed on: its `Host` must be the host it connected to, a placeholder of a
//! credential for other hosts in its request line or headers is a tripwire (refused, 403), and
//! the declared header gets the real value. Response headers carrying a real value get the
//! placeholder back. Bodies pass untouched.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{Either, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderName, HeaderValue};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use super::Vault;

/// How long each TLS handshake may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(15);

/// What one terminated connection did.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Requests passed on.
    pub requests: u64,
    /// Substitutions, by variable.
    pub substituted: BTreeMap<String, u64>,
    /// Tripwires: the variable whose placeholder was seen, and where.
    pub tripwires: Vec<super::Tripwire>,
    /// Why the connection was refused or failed before any request, when it was.
    pub failed: Option<String>,
    /// Requests the method and path rules refused (403), each with why.
    pub refused: Vec<String>,
}

/// The check each request of a terminated tunnel passes before it goes on (the egress
/// policy's method and path rules): given the method and the origin-form target, why not.
/// The third argument: whether the request carries a header that overrides its method or
/// path for some servers (`egress`'s `OVERRIDES`).
pub type RequestCheck = Arc<dyn Fn(&str, &str, bool) -> Result<(), String> + Send + Sync>;

type Body = Either<Incoming, Full<Bytes>>;

/// What the agent speaks inside its tunnel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inner {
    /// TLS; `answered`: the `200` has already been sent (the caller looked at the first byte).
    Tls { answered: bool },
    /// Plain HTTP (a host declared for it: `plain_http`).
    Plain,
}

/// Relay `client` (which sent `CONNECT host:port`) to `upstream`, substituting. `up` and
/// `down` count the bytes the agent sent and received.
pub async fn terminate<C>(
    mut client: C,
    upstream: TcpStream,
    (vault, check): (Arc<Vault>, RequestCheck),
    (host, port): (String, u16),
    counts: (Arc<AtomicU64>, Arc<AtomicU64>),
    inner: Inner,
) -> Outcome
where
    C: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let counted = |inner| Counted {
        inner,
        up: counts.0.clone(),
        down: counts.1.clone(),
    };
    let answered = match inner {
        Inner::Plain => return serve(counted(client), upstream, (vault, check), (host, port), true).await,
        Inner::Tls { answered } => answered,
    };
    let upstream = match verified(&vault, &host, upstream).await {
        Ok(s) => s,
        Err(why) => {
            if !answered {
                let body = format!("ags egress: {why}\n");
                let head = format!(
                    "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = client.write_all(head.as_bytes()).await;
            }
            return Outcome {
                failed: Some(why),
                ..Outcome::default()
            };
        }
    };
    let accepted = async {
        if !answered {
            client
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await
                .map_err(|e| e.to_string())?;
        }
        let config = vault.authority.server_config(&host).map_err(|e| e.to_string())?;
        tokio::time::timeout(
            HANDSHAKE_TIMEOUT,
            tokio_rustls::TlsAcceptor::from(config).accept(counted(client)),
        )
        .await
        .map_err(|_| "the agent's TLS handshake timed out".to_string())?
        .map_err(|e| format!("the agent's TLS handshake failed: {e}"))
    };
    match accepted.await {
        Ok(agent) => serve(agent, upstream, (vault, check), (host, port), false).await,
        Err(why) => Outcome {
            failed: Some(why),
            ..Outcome::default()
        },
    }
}

/// Serve the agent's HTTP/1.1 requests, each checked, rewritten (`plain`: only credentials
/// declared for plain HTTP) and passed on to `upstream`.
async fn serve<A, U>(
    agent: A,
    upstream: U,
    (vault, check): (Arc<Vault>, RequestCheck),
    (host, port): (String, u16),
    plain: bool,
) -> Outcome
where
    A: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    U: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let Ok((sender, conn)) =
        hyper::client::conn::http1::handshake::<_, Incoming>(TokioIo::new(upstream)).await
    else {
        return Outcome {
            failed: Some(format!("{host}: the HTTP handshake failed")),
            ..Outcome::default()
        };
    };
    let upstream_task = tokio::spawn(conn);
    let shared = Arc::new(Mutex::new(Outcome::default()));
    let sender = Arc::new(tokio::sync::Mutex::new(sender));
    let service = {
        let shared = shared.clone();
        hyper::service::service_fn(move |req| {
            let (vault, host, sender, shared) = (vault.clone(), host.clone(), sender.clone(), shared.clone());
            let check = check.clone();
            async move {
                let at = Target {
                    host: &host,
                    port,
                    plain,
                };
                Ok::<_, std::convert::Infallible>(one(req, (&vault, &check), at, &sender, &shared).await)
            }
        })
    };
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(agent), service)
        .await;
    upstream_task.abort();
    std::mem::take(&mut *shared.lock().unwrap_or_else(|p| p.into_inner()))
}

/// Where a request goes: the tunnel's host and port, and whether it is plain HTTP.
#[derive(Clone, Copy)]
struct Target<'a> {
    host: &'a str,
    port: u16,
    plain: bool,
}

/// Connect TLS to the real host and verify its certificate for `host`.
async fn verified(
    vault: &Vault,
    host: &str,
    tcp: TcpStream,
) -> Result<tokio_rustls::client::TlsStream<TcpStream>, String> {
    let name = rustls::pki_types::ServerName::try_from(host.trim_matches(['[', ']']).to_string())
        .map_err(|e| format!("{host}: not a name to verify a certificate for: {e}"))?;
    let connector = tokio_rustls::TlsConnector::from(vault.upstream.clone());
    tokio::time::timeout(HANDSHAKE_TIMEOUT, connector.connect(name, tcp))
        .await
        .map_err(|_| format!("{host}: the TLS handshake timed out"))?
        .map_err(|e| format!("{host}: TLS to the real host failed ({e}); the proxy sends a credential only to a host whose certificate this machine trusts (docs/credentials.md)"))
}

/// Refuse what could carry the key elsewhere or hand it back: a method other than an ordinary
/// request (`CONNECT`, `TRACE`, `TRACK`), a target not in origin form (an absolute URI names
/// another host to a server that follows RFC 9112), and a `Host` that is not exactly one header
/// naming the host this connection is to.
fn ordinary(req: &Request<Incoming>, host: &str, port: u16) -> Result<(), String> {
    let method = req.method().as_str();
    if !method.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(format!(
            "the method {method:?} is not in capitals; servers that read it without regard to case would see another request than the rules did"
        ));
    }
    if ["CONNECT", "TRACE", "TRACK"]
        .iter()
        .any(|m| m.eq_ignore_ascii_case(method))
    {
        return Err(format!("{method} is not passed on to a credential's host"));
    }
    if req.uri().scheme().is_some() || req.uri().authority().is_some() {
        return Err("a request to a credential's host must name a path (origin form), not a URI".into());
    }
    let hosts: Vec<_> = req.headers().get_all(hyper::header::HOST).iter().collect();
    let asked = match hosts[..] {
        [one] => one.to_str().map(str::to_ascii_lowercase).ok(),
        _ => None,
    };
    let shown = match host.contains(':') {
        true => format!("[{host}]"),
        false => host.to_string(),
    };
    let expected = [shown.clone(), format!("{shown}:{port}")];
    match asked.is_some_and(|a| expected.contains(&a)) {
        true => Ok(()),
        false => Err(format!(
            "this connection is to {host}:{port}; a request needs exactly one Host header naming it"
        )),
    }
}

/// Check, rewrite and pass on one request.
async fn one(
    mut req: Request<Incoming>,
    (vault, check): (&Vault, &RequestCheck),
    Target { host, port, plain }: Target<'_>,
    sender: &tokio::sync::Mutex<hyper::client::conn::http1::SendRequest<Incoming>>,
    shared: &Mutex<Outcome>,
) -> Response<Body> {
    if let Err(why) = ordinary(&req, host, port) {
        return refusal(StatusCode::BAD_REQUEST, &why);
    }
    let target = req.uri().to_string();
    let seen = std::iter::once(("request line".to_string(), target.as_str()))
        .chain(
            req.headers()
                .iter()
                .filter_map(|(n, v)| Some((format!("header {n}"), v.to_str().ok()?))),
        )
        .find_map(|(where_, text)| {
            vault
                .tripwire(host, port, text)
                .map(|env| (env.to_string(), where_))
        });
    if let Some((env, where_)) = seen {
        let why = format!(
            "tripwire: the {where_} carries the placeholder of {env}, which is not for {host}:{port}; refused and recorded (docs/credentials.md)"
        );
        lock(shared)
            .tripwires
            .push(super::Tripwire { env, place: where_ });
        return refusal(StatusCode::FORBIDDEN, &why);
    }
    let overrides = req
        .headers()
        .keys()
        .any(|n| crate::egress::model::OVERRIDES.contains(&n.as_str()));
    if let Err(why) = check(req.method().as_str(), &target, overrides) {
        lock(shared).refused.push(why.clone());
        return refusal(StatusCode::FORBIDDEN, &why);
    }
    let mut done = Vec::new();
    for (name, value) in req.headers_mut().iter_mut() {
        let Ok(text) = value.to_str() else { continue };
        let rewritten = match plain {
            true => vault.rewrite_plain(host, port, name.as_str(), text),
            false => vault.rewrite(host, port, name.as_str(), text),
        };
        if let Some((real, env)) = rewritten
            && let Ok(mut v) = HeaderValue::from_str(&real)
        {
            v.set_sensitive(true);
            *value = v;
            done.push(env.to_string());
        }
    }
    {
        let mut o = lock(shared);
        o.requests += 1;
        for env in done {
            *o.substituted.entry(env).or_default() += 1;
        }
    }
    let sent = sender.lock().await.send_request(req).await;
    match sent {
        Ok(resp) => masked(resp, vault),
        Err(e) => refusal(StatusCode::BAD_GATEWAY, &format!("{host}: {e}")),
    }
}

/// The response with any real value in its headers replaced by the placeholder.
fn masked(mut resp: Response<Incoming>, vault: &Vault) -> Response<Body> {
    let names: Vec<HeaderName> = resp.headers().keys().cloned().collect();
    for name in names {
        let values: Vec<HeaderValue> = resp.headers().get_all(&name).iter().cloned().collect();
        let changed: Vec<HeaderValue> = values
            .iter()
            .map(|v| {
                v.to_str()
                    .ok()
                    .and_then(|t| vault.mask(t))
                    .and_then(|m| HeaderValue::from_str(&m).ok())
                    .unwrap_or_else(|| v.clone())
            })
            .collect();
        if changed != values {
            resp.headers_mut().remove(&name);
            for v in changed {
                resp.headers_mut().append(name.clone(), v);
            }
        }
    }
    resp.map(Either::Left)
}

fn refusal(status: StatusCode, why: &str) -> Response<Body> {
    let mut resp = Response::new(Either::Right(Full::new(Bytes::from(format!(
        "ags egress: {why}\n"
    )))));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}

fn lock(m: &Mutex<Outcome>) -> std::sync::MutexGuard<'_, Outcome> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A stream counting the bytes read (`up`: from the agent) and written (`down`).
struct Counted<S> {
    inner: S,
    up: Arc<AtomicU64>,
    down: Arc<AtomicU64>,
}

impl<S: AsyncRead + Unpin> AsyncRead for Counted<S> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        self.up
            .fetch_add((buf.filled().len() - before) as u64, Ordering::Relaxed);
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Counted<S> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let r = std::pin::Pin::new(&mut self.inner).poll_write(cx, buf);
        if let std::task::Poll::Ready(Ok(n)) = &r {
            self.down.fetch_add(*n as u64, Ordering::Relaxed);
        }
        r
    }
    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
