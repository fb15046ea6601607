//! Method and path rules (`"GET github.com/myorg/*"`, docs/network.md): the part of an allow or
//! deny entry that names requests rather than a whole destination, and the one way a request's
//! path is read before it is compared (decoded, and refused when it could mean two paths).
//! Pure.

use std::net::IpAddr;

use serde::Serialize;

/// Why an allow or deny entry, or a request `ags explain` is asked about, is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    #[error("must be a non-empty host, *.domain, IP or CIDR without spaces")]
    Empty,
    #[error("the destination is longer than 260 characters")]
    TooLong,
    #[error("a method and path rule names a host or an address, not a network")]
    RuleOnNetwork,
    #[error(
        "write a method rule as METHOD HOST/PATH: one method in capitals (GET), one space, then the destination"
    )]
    Method,
    #[error(
        "the path {0:?} must start with '/', hold no '%', '?', '#' or '\\', no '.', '..' or empty segment, and '*' only at its end (a prefix)"
    )]
    RulePath(String),
    #[error("port {0:?} must be a number from 1 to 65535")]
    Port(String),
    #[error("a '[' needs its ']'")]
    Bracket,
    #[error("expected :PORT after ']'")]
    PortAfterBracket,
    #[error("{0:?} is not an IP address")]
    NotIp(String),
    #[error("prefix /{prefix} is not valid for {addr}")]
    Prefix { prefix: String, addr: IpAddr },
    #[error("*.{0} is too wide: name at least a second-level domain")]
    TooWide(String),
    #[error(
        "{0:?} is not a host name (letters, digits, '-', '_' in dot-separated labels; '*.' only as a prefix)"
    )]
    HostName(String),
    #[error("a request is METHOD HOST[:PORT]/PATH, the method in capitals")]
    RequestMethod,
    #[error("an IPv6 address needs its closing ']'")]
    Ipv6,
    #[error("{0:?} is not a host name or IP address")]
    Host(String),
}

/// Why a request's path is refused where method and path rules apply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the request path {path:?} {flaw}; method and path rules read only plain paths")]
pub struct PathRefused {
    /// The path, shortened.
    path: String,
    flaw: PathFlaw,
}

/// What is wrong with a request's path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PathFlaw {
    #[error("is not an absolute path")]
    NotAbsolute,
    #[error("holds a '#'")]
    Fragment,
    #[error("encodes a '/' or '\\'")]
    EncodedSlash,
    #[error("holds a '%' that is not an escape")]
    BadEscape,
    #[error("does not decode to UTF-8")]
    NotUtf8,
    #[error("holds a control character, '\\', ';' or a '%' after decoding")]
    Unsafe,
    #[error("holds a '.', '..' or empty segment")]
    Segments,
}

/// Headers some servers take as the request's method or path instead of its request line
/// (lowercase): where method and path rules read requests, a request carrying one is refused.
pub const OVERRIDES: [&str; 6] = [
    "x-http-method-override",
    "x-http-method",
    "x-method-override",
    "x-original-url",
    "x-rewrite-url",
    "x-original-method",
];

/// The request part of an entry: an optional method and a path, exact or a prefix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RequestRule {
    /// The method (`GET`), or any method.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// The path as written, without a trailing `*`.
    pub path: String,
    /// Whether the path is a prefix (written with a trailing `*`).
    pub prefix: bool,
}

impl RequestRule {
    /// Split `[METHOD ]DESTINATION[/PATH]` into the request part (none when the entry has no
    /// method and no path) and the destination.
    pub(super) fn split(raw: &str) -> Result<(Option<Self>, &str), RuleError> {
        let (method, rest) = match raw.split_once(' ') {
            Some((m, rest)) => {
                let ok = (1..=20).contains(&m.len()) && m.bytes().all(|b| b.is_ascii_uppercase());
                if !ok || rest.contains(char::is_whitespace) {
                    return Err(RuleError::Method);
                }
                (Some(m.to_string()), rest)
            }
            None => (None, raw),
        };
        let (dest, path) = match path_start(rest) {
            Some(i) => (&rest[..i], Some(&rest[i..])),
            None => (rest, None),
        };
        let (body, prefix) = match path.map(|p| p.strip_suffix('*').map_or((p, false), |b| (b, true))) {
            None if method.is_none() => return Ok((None, dest)),
            // A method rule without a path covers every path.
            None => ("/", true),
            Some((body, prefix)) => {
                check_rule_path(body)?;
                (body, prefix)
            }
        };
        Ok((
            Some(Self {
                method,
                path: body.to_string(),
                prefix,
            }),
            dest,
        ))
    }

    /// How the rule is written after its destination: ` /path*`'s path part.
    pub(super) fn path_shown(&self) -> String {
        match (self.prefix, self.path.as_str()) {
            (true, "/") if self.method.is_some() => String::new(),
            (true, p) => format!("{p}*"),
            (false, p) => p.to_string(),
        }
    }

    /// Whether a request (`method`, its path read by [`request_path`]) matches. `fold`:
    /// compare without case (deny rules: a server that ignores case must not slip past one).
    /// A deny rule (`fold`) also matches its path with or without a trailing `/`, and its
    /// method in any case.
    pub fn matches(&self, method: &str, path: &str, fold: bool) -> bool {
        let method_ok = |m: &String| match fold {
            true => m.eq_ignore_ascii_case(method),
            false => m == method,
        };
        if self.method.as_ref().is_some_and(|m| !method_ok(m)) {
            return false;
        }
        let (rule, path) = match fold {
            true => (self.path.to_ascii_lowercase(), path.to_ascii_lowercase()),
            false => (self.path.clone(), path.to_string()),
        };
        let bare = rule.strip_suffix('/').filter(|b| fold && !b.is_empty());
        match self.prefix {
            true => path.starts_with(&rule) || bare.is_some_and(|b| path == b),
            false => path == rule || (fold && path.strip_suffix('/') == Some(rule.as_str())),
        }
    }
}

/// Where the path of a destination starts: the first `/` that is not a CIDR's prefix length
/// (`10.0.0.0/8`, `10.0.0.0/8:443`) nor inside an IPv6 bracket.
fn path_start(dest: &str) -> Option<usize> {
    let from = match dest.starts_with('[') {
        true => dest.find(']')? + 1,
        false => 0,
    };
    let i = from + dest[from..].find('/')?;
    let rest = &dest[i + 1..];
    let len = rest.split([':', '/']).next().unwrap_or_default();
    if dest[..i].parse::<std::net::IpAddr>().is_ok()
        && !len.is_empty()
        && len.bytes().all(|b| b.is_ascii_digit())
    {
        return rest.find('/').map(|j| i + 1 + j);
    }
    Some(i)
}

/// A rule's path: absolute, plain characters, no `%`, `?`, `#`, `*` or `\`, no `.` or `..`
/// segment, no empty segment.
fn check_rule_path(path: &str) -> Result<(), RuleError> {
    let plain = path.starts_with('/')
        && path
            .bytes()
            .all(|b| b.is_ascii_graphic() && !matches!(b, b'%' | b'?' | b'#' | b'*' | b'\\'));
    if !plain || !segments_ok(path) {
        return Err(RuleError::RulePath(path.into()));
    }
    Ok(())
}

/// No `.`, `..` or empty segment before the last one.
fn segments_ok(path: &str) -> bool {
    let segs: Vec<&str> = path[1..].split('/').collect();
    let last = segs.len().saturating_sub(1);
    segs.iter()
        .enumerate()
        .all(|(i, s)| *s != "." && *s != ".." && (!s.is_empty() || i == last))
}

/// A request target's path as the rules read it: the query and fragment dropped, percent
/// escapes decoded. Refused (the reason) when it could reach another path than it reads:
/// an encoded `/` or `\`, a `.` or `..` segment, an empty segment, a control character, or
/// not an absolute path.
pub fn request_path(target: &str) -> Result<String, PathRefused> {
    let path = target.split('?').next().unwrap_or_default();
    let refuse = |flaw| {
        Err(PathRefused {
            path: shorten(path),
            flaw,
        })
    };
    if !path.starts_with('/') {
        return refuse(PathFlaw::NotAbsolute);
    }
    // A fragment is never sent; a server may keep a raw '#' in the path (session-22 F6).
    if path.contains('#') {
        return refuse(PathFlaw::Fragment);
    }
    let mut out = Vec::with_capacity(path.len());
    let bytes = path.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%' {
            let hex = path
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            match hex {
                Some(b'/' | b'\\') => return refuse(PathFlaw::EncodedSlash),
                Some(d) => out.push(d),
                None => return refuse(PathFlaw::BadEscape),
            }
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    let Ok(decoded) = String::from_utf8(out) else {
        return refuse(PathFlaw::NotUtf8);
    };
    // ';' starts parameters some servers strip (`..;/`), a '%' left after decoding is read as an
    // escape by servers that decode twice (session-22 F7).
    if decoded.contains(|c: char| c.is_control() || matches!(c, '\\' | ';' | '%')) {
        return refuse(PathFlaw::Unsafe);
    }
    if !segments_ok(&decoded) {
        return refuse(PathFlaw::Segments);
    }
    Ok(decoded)
}

/// At most 200 characters of `path`, for messages.
pub fn shorten(path: &str) -> String {
    match path.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &path[..i]),
        None => path.to_string(),
    }
}
