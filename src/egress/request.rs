//! The proxy's request: reading the head a client sends (`CONNECT host:port`, or a plain-HTTP
//! request with an absolute URI) and parsing it into the destination and, for plain HTTP, the
//! origin-form head to send on. Decides nothing (`super::proxy` does).

use std::net::IpAddr;

use tokio::io::AsyncReadExt;
use tokio::net::UnixStream;
use zeroize::Zeroizing;

use super::model::OVERRIDES;
use crate::config::canonical;

/// Largest request head accepted.
pub(super) const MAX_HEAD: usize = 16 * 1024;

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

    pub(super) fn shown(&self) -> String {
        match self {
            Host::Ip(ip) => ip.to_string(),
            Host::Name(n) => n.clone(),
        }
    }
}

/// What the client asked for.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Request {
    /// `connect` or `http`.
    pub(super) kind: &'static str,
    pub(super) host: Host,
    pub(super) port: u16,
    /// For plain HTTP: the method and the origin-form target (path and query), for the
    /// method and path rules.
    pub(super) method: String,
    pub(super) target: String,
    /// Whether a header overrides the method or path for some servers ([`OVERRIDES`]).
    pub(super) overrides: bool,
    /// For plain HTTP: the body's length by its `Content-Length` (0 without one); `None` with a
    /// `Transfer-Encoding`, whose end only parsing the body finds.
    pub(super) body_len: Option<u64>,
    /// For plain HTTP: the head to send upstream (origin-form request line).
    pub(super) upstream_head: Option<Zeroizing<Vec<u8>>>,
}

/// Read up to the end of the request head; returns the head and whatever followed it.
pub(super) async fn read_head(client: &mut UnixStream) -> std::io::Result<(Vec<u8>, Vec<u8>)> {
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

/// Why a request head is refused (answered 400 Bad Request).
#[derive(Debug, thiserror::Error)]
pub(super) enum BadRequest {
    #[error("the request head is incomplete or longer than {MAX_HEAD} bytes")]
    Incomplete,
    #[error("the request line must be METHOD TARGET HTTP/1.x")]
    RequestLine,
    #[error("{0} is not passed on: it hands the request back, credentials included")]
    Echoing(String),
    #[error("a header folded over several lines (obsolete since RFC 7230) is refused")]
    Folded,
    #[error(
        "a line of the request head holds a control character (a bare CR or LF, or another); lines end in CRLF"
    )]
    Control,
    #[error("a header line must be NAME: value, the name a token")]
    HeaderLine,
    #[error("send https:// requests through CONNECT")]
    Https,
    #[error("a proxy request needs an absolute http:// URI or CONNECT")]
    NotAbsolute,
    #[error("the request's length is ambiguous (several Content-Length, or one with Transfer-Encoding)")]
    AmbiguousLength,
    #[error("the Content-Length is not a number")]
    Length,
    #[error("credentials in the URI are not accepted")]
    Credentials,
    #[error("the port must be 1 to 65535")]
    Port,
    #[error("CONNECT needs host:port")]
    NoPort,
    #[error("the host is not a valid host name or IP address")]
    Host,
}

/// Parse a request head into what to connect to and, for plain HTTP, the head to send on.
pub(super) fn parse_head(head: &[u8]) -> Result<Request, BadRequest> {
    if find_end(head).is_none() {
        return Err(BadRequest::Incomplete);
    }
    let text = String::from_utf8_lossy(head);
    let mut lines = text.split("\r\n");
    let line = lines.next().unwrap_or_default();
    let parts: Vec<&str> = line.split(' ').collect();
    let [method, target, version] = parts[..] else {
        return Err(BadRequest::RequestLine);
    };
    if !version.starts_with("HTTP/1.") || method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase())
    {
        return Err(BadRequest::RequestLine);
    }
    if matches!(method, "TRACE" | "TRACK") {
        return Err(BadRequest::Echoing(method.into()));
    }
    if text.split("\r\n").skip(1).any(|l| l.starts_with([' ', '\t'])) {
        return Err(BadRequest::Folded);
    }
    check_framing(&text)?;
    if method == "CONNECT" {
        let (host, port) = authority(target, None)?;
        return Ok(Request {
            kind: "connect",
            host,
            port,
            method: String::new(),
            target: String::new(),
            overrides: false,
            body_len: None,
            upstream_head: None,
        });
    }
    let lower = target.to_ascii_lowercase();
    if lower.starts_with("https://") {
        return Err(BadRequest::Https);
    }
    if !lower.starts_with("http://") {
        return Err(BadRequest::NotAbsolute);
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
    let (out, overrides, body_len) =
        upstream_head(format!("{method} {path} {version}\r\nHost: {auth}\r\n"), lines)?;
    Ok(Request {
        kind: "http",
        host,
        port,
        method: method.to_string(),
        target: path,
        overrides,
        body_len,
        upstream_head: Some(Zeroizing::new(out.into_bytes())),
    })
}

/// The head a plain-HTTP request is sent on with: `first` (the origin-form request line and
/// the Host), the client's headers but the hop-by-hop and proxy ones, `Connection: close`;
/// with whether the client sent a method override header, and the body's length.
fn upstream_head<'a>(
    mut out: String,
    lines: impl Iterator<Item = &'a str>,
) -> Result<(String, bool, Option<u64>), BadRequest> {
    let mut overrides = false;
    let (mut lengths, mut encoded) = (Vec::new(), false);
    for h in lines.filter(|l| !l.is_empty()) {
        let name = h
            .split(':')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        overrides |= OVERRIDES.contains(&name.as_str());
        let value = h.split_once(':').map(|(_, v)| v.trim()).unwrap_or_default();
        match name.as_str() {
            "content-length" => lengths.push(value.to_string()),
            "transfer-encoding" => encoded = true,
            _ => {}
        }
        if !matches!(
            name.as_str(),
            "host" | "connection" | "proxy-connection" | "proxy-authorization" | "keep-alive"
        ) {
            out.push_str(h);
            out.push_str("\r\n");
        }
    }
    out.push_str("Connection: close\r\n\r\n");
    Ok((out, overrides, body_length(&lengths, encoded)?))
}

/// Every line ends in CRLF and holds no other control character (a lone LF or CR would end a
/// line for some servers and not for this reader: a request smuggled past the rules, session-22
/// attack F1), and every header is `NAME: value` with a token for a name.
fn check_framing(text: &str) -> Result<(), BadRequest> {
    let body = text.strip_suffix("\r\n\r\n").unwrap_or(text);
    for (i, line) in body.split("\r\n").enumerate() {
        if line
            .chars()
            .any(|c| (c.is_control() && c != '\t') || c == '\u{7f}')
        {
            return Err(BadRequest::Control);
        }
        let tchar = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
        let named = line
            .split_once(':')
            .is_some_and(|(name, _)| !name.is_empty() && name.bytes().all(tchar));
        if i > 0 && !named {
            return Err(BadRequest::HeaderLine);
        }
    }
    Ok(())
}

/// The body's length from its `Content-Length` headers (0 without one), `None` with a
/// `Transfer-Encoding`. Two lengths, or one with a `Transfer-Encoding`, are refused: servers
/// would frame the request differently (RFC 9112, 6.3).
fn body_length(lengths: &[String], encoded: bool) -> Result<Option<u64>, BadRequest> {
    match (lengths, encoded) {
        ([], false) => Ok(Some(0)),
        ([], true) => Ok(None),
        ([one], false) => one
            .parse::<u64>()
            .ok()
            .filter(|_| one.bytes().all(|b| b.is_ascii_digit()))
            .map(Some)
            .ok_or(BadRequest::Length),
        _ => Err(BadRequest::AmbiguousLength),
    }
}

/// `host:port` (IPv6 in brackets); `default` when the port may be left out.
fn authority(a: &str, default: Option<u16>) -> Result<(Host, u16), BadRequest> {
    if a.contains('@') {
        return Err(BadRequest::Credentials);
    }
    let (host, port) = match a.rfind(':') {
        Some(i) if !a[i..].contains(']') => (&a[..i], Some(&a[i + 1..])),
        _ => (a, None),
    };
    let port = match (port, default) {
        (Some(p), _) => p.parse::<u16>().ok().filter(|p| *p > 0).ok_or(BadRequest::Port)?,
        (None, Some(d)) => d,
        (None, None) => return Err(BadRequest::NoPort),
    };
    let host = Host::parse(host).ok_or(BadRequest::Host)?;
    Ok((host, port))
}
