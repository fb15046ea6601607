//! Transport: connections, the one request funnel, and the HTTP upgrade.
//!
//! Part of stage 4 (`podman`) and the only code in `ags` that opens a socket. Every endpoint in
//! `api.rs` builds a [`Request`] and hands it to [`Client::call`] / [`Client::call_json`] (or
//! [`Client::upgrade`] for attach), which connect, send, check the status and turn Podman's error
//! body into [`PodmanError::Api`]. One connection per request: connecting to a unix socket costs
//! microseconds, and it keeps the client free of pooling state (see
//! `docs/decisions/0001-own-libpod-client.md`).
//!
//! All routes use the `/v4.0.0/libpod` prefix, which both Podman 4 and Podman 5 answer.
//! Ref: <https://docs.podman.io/en/latest/_static/api.html>

use std::io;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use http::{Method, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1;
use hyper::upgrade::Upgraded;
use hyper_util::rt::TokioIo;
use serde::de::DeserializeOwned;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpStream, UnixStream};

use super::endpoint::Endpoint;
use super::error::{Excerpt, PodmanError, Result, decode_error_body};
use super::tunnel::Tunnel;
use super::version::ServerVersion;

/// The route prefix for every request: the libpod API, version 4.0.0 (answered by Podman 4 and 5).
pub const API_PREFIX: &str = "/v4.0.0/libpod";

/// A connected socket of either kind (unix or TCP). Its `poll_shutdown` half-closes the socket
/// (`shutdown(SHUT_WR)`); attach relies on this for stdin EOF.
trait Stream: AsyncRead + AsyncWrite + Unpin + Send {}

impl<T: AsyncRead + AsyncWrite + Unpin + Send> Stream for T {}

/// A query string under construction; keys and values are percent-encoded.
#[derive(Debug, Default, Clone)]
pub(crate) struct Query(String);

impl Query {
    fn push(&mut self, key: &str, value: &str) {
        if !self.0.is_empty() {
            self.0.push('&');
        }
        self.0.push_str(&encode(key, b""));
        self.0.push('=');
        self.0.push_str(&encode(value, b""));
    }
}

/// Percent-encode everything except RFC 3986 unreserved characters and `keep`.
pub(crate) fn encode(s: &str, keep: &[u8]) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) || keep.contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Encode a container or volume name/ID as one path segment.
pub(crate) fn segment(name: &str) -> String {
    encode(name, b":@")
}

/// Encode an image reference (`localhost/name:tag`) for an image path; `/` stays literal.
pub(crate) fn image_ref(name: &str) -> String {
    encode(name, b":@/")
}

/// One request to the libpod API, built by an endpoint function in `api.rs`.
#[derive(Debug)]
pub(crate) struct Request {
    method: Method,
    path: String,
    query: Query,
    body: Bytes,
    content_type: Option<&'static str>,
}

impl Request {
    /// A request to `API_PREFIX` + `path` (`path` starts with `/`, segments already encoded).
    pub(crate) fn new(method: Method, path: impl Into<String>) -> Self {
        Request {
            method,
            path: path.into(),
            query: Query::default(),
            body: Bytes::new(),
            content_type: None,
        }
    }

    /// Add a query parameter.
    pub(crate) fn query(mut self, key: &str, value: impl AsRef<str>) -> Self {
        self.query.push(key, value.as_ref());
        self
    }

    /// Add a query parameter whose value is JSON (filters, build args).
    pub(crate) fn query_json(self, key: &str, value: &impl serde::Serialize) -> Result<Self> {
        let json = encode_json(value, key)?;
        Ok(self.query(key, String::from_utf8_lossy(&json)))
    }

    /// Set a JSON body.
    pub(crate) fn json(mut self, body: &impl serde::Serialize) -> Result<Self> {
        self.body = Bytes::from(encode_json(body, "request body")?);
        self.content_type = Some("application/json");
        Ok(self)
    }

    /// Set a tar body.
    pub(crate) fn tar(mut self, body: Bytes) -> Self {
        self.body = body;
        self.content_type = Some("application/x-tar");
        self
    }

    /// The full path, without the query string (safe for error messages).
    fn full_path(&self) -> String {
        format!("{API_PREFIX}{}", self.path)
    }

    fn into_http(self, host: &str, upgrade: bool) -> Result<http::Request<Full<Bytes>>> {
        let mut uri = self.full_path();
        if !self.query.0.is_empty() {
            uri.push('?');
            uri.push_str(&self.query.0);
        }
        let mut b = http::Request::builder()
            .method(self.method)
            .uri(uri)
            .header(header::HOST, host);
        if let Some(ct) = self.content_type {
            b = b.header(header::CONTENT_TYPE, ct);
        }
        if upgrade {
            b = b
                .header(header::CONNECTION, "Upgrade")
                .header(header::UPGRADE, "tcp");
        }
        b.body(Full::new(self.body)).map_err(|e| PodmanError::Encode {
            what: "request line".into(),
            error: e.to_string(),
        })
    }
}

fn encode_json(value: &impl serde::Serialize, what: &str) -> Result<Vec<u8>> {
    serde_json::to_vec(value).map_err(|e| PodmanError::Encode {
        what: what.to_owned(),
        error: e.to_string(),
    })
}

/// A client for one Podman API service. Cheap to clone (clones share the recorded server
/// version); each request opens its own connection.
#[derive(Debug, Clone)]
pub struct Client {
    endpoint: Endpoint,
    url: Arc<str>,
    /// The server's version, recorded by the first ping or version call that told it.
    server: Arc<OnceLock<ServerVersion>>,
    /// The SSH forward of an `ssh://` endpoint; torn down when the last clone is dropped.
    tunnel: Option<Arc<Tunnel>>,
}

impl Client {
    /// A client for `endpoint`. Nothing is connected until the first request.
    pub fn new(endpoint: Endpoint) -> Self {
        let url = Arc::from(endpoint.to_string());
        Client {
            endpoint,
            url,
            server: Arc::default(),
            tunnel: None,
        }
    }

    /// The server's Podman version, when a ping or version call has told it (a client from
    /// [`super::connect`] has pinged). [`Client::server_version`] asks the service otherwise.
    pub fn known_version(&self) -> Option<ServerVersion> {
        self.server.get().copied()
    }

    /// Record the server's version (the first one recorded stays).
    pub(crate) fn record_version(&self, version: ServerVersion) {
        let _ = self.server.set(version);
    }

    /// A client for an `ssh://` endpoint whose socket `tunnel` forwards.
    pub(crate) fn with_tunnel(endpoint: Endpoint, tunnel: Tunnel) -> Self {
        Client {
            tunnel: Some(Arc::new(tunnel)),
            ..Client::new(endpoint)
        }
    }

    /// What the SSH client of an `ssh://` endpoint said on stderr (empty otherwise).
    pub(crate) async fn transport_said(&self) -> String {
        match &self.tunnel {
            Some(t) => t.ssh_said_after_failure().await,
            None => String::new(),
        }
    }

    /// The endpoint this client talks to.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// The endpoint as a URL, for messages (`unix:///run/podman/podman.sock`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The endpoint URL, shared, for error values.
    pub(crate) fn shared_url(&self) -> Arc<str> {
        self.url.clone()
    }

    /// True when the service is reached through a unix socket on this machine (false for
    /// `tcp://` and `ssh://`).
    pub fn is_unix(&self) -> bool {
        self.endpoint.is_unix()
    }

    /// True when the service runs on another machine (`tcp://`, `ssh://`).
    pub fn is_remote(&self) -> bool {
        self.endpoint.is_remote()
    }

    async fn connect(&self) -> Result<Box<dyn Stream>> {
        fn boxed(s: impl Stream + 'static) -> Box<dyn Stream> {
            Box::new(s)
        }
        let stream = match &self.endpoint {
            Endpoint::Unix(path) => UnixStream::connect(path).await.map(boxed),
            Endpoint::Tcp { host, port } => TcpStream::connect((host.as_str(), *port)).await.map(boxed),
            Endpoint::Ssh { .. } => match &self.tunnel {
                Some(t) => UnixStream::connect(t.socket()).await.map(boxed),
                None => Err(io::Error::new(
                    io::ErrorKind::NotConnected,
                    "the SSH transport is not running",
                )),
            },
        };
        stream.map_err(|source| PodmanError::Connect {
            endpoint: self.url.clone(),
            source,
        })
    }

    /// Connect, send, and return the response whatever its status.
    async fn send_raw(&self, req: Request, upgrade: bool) -> Result<(Response<Incoming>, Method, String)> {
        let (method, path) = (req.method.clone(), req.full_path());
        let http_err = |source| PodmanError::Http {
            method: method.to_string(),
            path: path.clone(),
            endpoint: self.url.clone(),
            source,
        };
        let io = TokioIo::new(self.connect().await?);
        let (mut sender, conn) = http1::handshake(io).await.map_err(http_err)?;
        // The connection task ends with the response (or hands the socket to the upgrade).
        tokio::spawn(async move {
            let _ = conn.with_upgrades().await;
        });
        let http_req = req.into_http(&self.endpoint.host_header(), upgrade)?;
        let resp = sender.send_request(http_req).await.map_err(http_err)?;
        Ok((resp, method, path))
    }

    /// The funnel: send `req`, check the status (2xx or 304), return the response.
    pub(crate) async fn send(&self, req: Request) -> Result<Response<Incoming>> {
        let (resp, method, path) = self.send_raw(req, false).await?;
        let status = resp.status();
        if status.is_success() || status == StatusCode::NOT_MODIFIED {
            return Ok(resp);
        }
        Err(self.api_error(resp, &method, &path).await)
    }

    /// Send `req` and collect the whole response body.
    pub(crate) async fn call(&self, req: Request) -> Result<(StatusCode, Bytes)> {
        let (status, _, body) = self.call_with_headers(req).await?;
        Ok((status, body))
    }

    /// Send `req` and collect the whole response body, keeping the response headers.
    pub(crate) async fn call_with_headers(
        &self,
        req: Request,
    ) -> Result<(StatusCode, header::HeaderMap, Bytes)> {
        let (method, path) = (req.method.to_string(), req.full_path());
        let resp = self.send(req).await?;
        let (status, headers) = (resp.status(), resp.headers().clone());
        let body = self.collect(resp, &method, &path).await?;
        Ok((status, headers, body))
    }

    /// Send `req` and decode the JSON response into `T`; `what` names it in errors.
    pub(crate) async fn call_json<T: DeserializeOwned>(&self, req: Request, what: &str) -> Result<T> {
        let (_, body) = self.call(req).await?;
        self.decode(&body, what, false)
    }

    /// Decode a JSON body. With `redact`, the error leaves out the body (it may hold secrets).
    pub(crate) fn decode<T: DeserializeOwned>(&self, body: &[u8], what: &str, redact: bool) -> Result<T> {
        serde_json::from_slice(body).map_err(|e| PodmanError::Decode {
            what: what.to_owned(),
            error: e.to_string(),
            excerpt: if redact {
                "(omitted: may contain secrets)".into()
            } else {
                Excerpt(body).to_string()
            },
            endpoint: self.url.clone(),
        })
    }

    async fn collect(&self, resp: Response<Incoming>, method: &str, path: &str) -> Result<Bytes> {
        match resp.into_body().collect().await {
            Ok(c) => Ok(c.to_bytes()),
            Err(source) => Err(PodmanError::Http {
                method: method.to_owned(),
                path: path.to_owned(),
                endpoint: self.url.clone(),
                source,
            }),
        }
    }

    async fn api_error(&self, resp: Response<Incoming>, method: &Method, path: &str) -> PodmanError {
        let status = resp.status().as_u16();
        let body = match self.collect(resp, method.as_str(), path).await {
            Ok(body) => body,
            Err(e) => return e,
        };
        let (message, cause) = decode_error_body(&body);
        PodmanError::Api {
            status,
            message,
            cause,
            method: method.to_string(),
            path: path.to_owned(),
            endpoint: self.url.clone(),
        }
    }

    /// Send `req` with `Connection: Upgrade`, `Upgrade: tcp`; expect 101 and return the socket.
    pub(crate) async fn upgrade(&self, req: Request) -> Result<Upgraded> {
        let (resp, method, path) = self.send_raw(req, true).await?;
        let status = resp.status();
        if status.is_client_error() || status.is_server_error() {
            return Err(self.api_error(resp, &method, &path).await);
        }
        let upgrade_err = |reason: String| PodmanError::Upgrade {
            path: path.clone(),
            endpoint: self.url.clone(),
            reason,
        };
        if status != StatusCode::SWITCHING_PROTOCOLS {
            return Err(upgrade_err(format!(
                "expected 101 Switching Protocols, got {status}"
            )));
        }
        hyper::upgrade::on(resp)
            .await
            .map_err(|e| upgrade_err(e.to_string()))
    }

    /// Send `req` and return the response body as a stream of chunks (build progress).
    pub(crate) async fn stream(&self, req: Request) -> Result<BodyStream> {
        let (method, path) = (req.method.to_string(), req.full_path());
        let body = self.send(req).await?.into_body();
        Ok(BodyStream {
            body,
            method,
            path,
            endpoint: self.url.clone(),
        })
    }
}

/// A response body read chunk by chunk.
#[derive(Debug)]
pub(crate) struct BodyStream {
    body: Incoming,
    method: String,
    path: String,
    endpoint: Arc<str>,
}

impl BodyStream {
    /// The next data chunk, or `None` at the end of the body.
    pub(crate) async fn next_chunk(&mut self) -> Result<Option<Bytes>> {
        loop {
            match self.body.frame().await {
                None => return Ok(None),
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        return Ok(Some(data));
                    }
                }
                Some(Err(source)) => {
                    return Err(PodmanError::Http {
                        method: self.method.clone(),
                        path: self.path.clone(),
                        endpoint: self.endpoint.clone(),
                        source,
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_query_and_paths() {
        let mut q = Query::default();
        q.push("filters", r#"{"label":["io.ags.test=1"]}"#);
        q.push("path", "/home/dev/a b");
        assert_eq!(
            q.0,
            "filters=%7B%22label%22%3A%5B%22io.ags.test%3D1%22%5D%7D&path=%2Fhome%2Fdev%2Fa%20b"
        );
        assert_eq!(segment("ags-test_1.x"), "ags-test_1.x");
        assert_eq!(segment("a/b"), "a%2Fb");
        assert_eq!(
            image_ref("localhost/ags-busybox:latest"),
            "localhost/ags-busybox:latest"
        );
    }
}
