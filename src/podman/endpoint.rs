//! Endpoint URLs: `unix:///path/to/podman.sock` and `tcp://host:port`, nothing else.
//!
//! Part of stage 4 (`podman`); no I/O. podman-remote also accepts `ssh://`, which `ags` refuses
//! with a message naming the two accepted forms.
//! Ref: <https://docs.podman.io/en/latest/markdown/podman-remote.1.html>

use std::fmt;
use std::path::PathBuf;

use super::error::{PodmanError, Result};

/// Where the Podman API service listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A unix socket (`unix:///run/podman/podman.sock`).
    Unix(PathBuf),
    /// A TCP address (`tcp://host:port`); the host has no brackets, even for IPv6.
    Tcp {
        /// Host name or address.
        host: String,
        /// Port.
        port: u16,
    },
}

impl Endpoint {
    /// Parse `unix:///absolute/path` or `tcp://host:port`; anything else is refused.
    pub fn parse(url: &str) -> Result<Endpoint> {
        Self::parse_from(url, "the given URL")
    }

    /// Parse, naming where the URL came from (`--url`, `CONTAINER_HOST`) in the error.
    pub fn parse_from(url: &str, source_name: &str) -> Result<Endpoint> {
        parse_url(url).map_err(|reason| PodmanError::InvalidUrl {
            url: url.to_owned(),
            source_name: source_name.to_owned(),
            reason,
        })
    }

    /// True for a unix socket endpoint.
    pub fn is_unix(&self) -> bool {
        matches!(self, Endpoint::Unix(_))
    }

    /// The value for the HTTP `Host` header.
    pub(crate) fn host_header(&self) -> String {
        match self {
            Endpoint::Unix(_) => "d".to_owned(),
            Endpoint::Tcp { host, port } if host.contains(':') => format!("[{host}]:{port}"),
            Endpoint::Tcp { host, port } => format!("{host}:{port}"),
        }
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Unix(path) => write!(f, "unix://{}", path.display()),
            Endpoint::Tcp { .. } => write!(f, "tcp://{}", self.host_header()),
        }
    }
}

fn parse_url(url: &str) -> std::result::Result<Endpoint, String> {
    if url.contains('\0') {
        return Err("it contains a NUL byte".into());
    }
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err("it has no scheme".into());
    };
    match scheme {
        "unix" if rest.starts_with('/') => Ok(Endpoint::Unix(PathBuf::from(rest))),
        "unix" => Err("the socket path must be absolute (unix:///run/podman/podman.sock)".into()),
        "tcp" => parse_tcp(rest.strip_suffix('/').unwrap_or(rest)),
        other => Err(format!("the scheme {other:?} is not supported")),
    }
}

fn parse_tcp(rest: &str) -> std::result::Result<Endpoint, String> {
    let (host, port) = if let Some(v6) = rest.strip_prefix('[') {
        let (host, tail) = v6.split_once(']').ok_or("the IPv6 address lacks a closing ']'")?;
        (host, tail.strip_prefix(':').ok_or("the port is missing")?)
    } else {
        rest.rsplit_once(':').ok_or("the port is missing")?
    };
    if host.is_empty() || host.contains(['/', '@', '?', '#']) {
        return Err(format!("the host {host:?} is not valid"));
    }
    match port.parse::<u16>() {
        Ok(port) if port != 0 => Ok(Endpoint::Tcp {
            host: host.to_owned(),
            port,
        }),
        _ => Err(format!("the port {port:?} is not a number from 1 to 65535")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(url: &str) -> String {
        match Endpoint::parse_from(url, "--url") {
            Err(PodmanError::InvalidUrl { reason, .. }) => reason,
            other => panic!("expected InvalidUrl for {url}, got {other:?}"),
        }
    }

    #[test]
    fn parses_unix_and_tcp() {
        assert_eq!(
            Endpoint::parse("unix:///run/podman/podman.sock").unwrap(),
            Endpoint::Unix("/run/podman/podman.sock".into())
        );
        assert_eq!(
            Endpoint::parse("tcp://127.0.0.1:8080").unwrap(),
            Endpoint::Tcp {
                host: "127.0.0.1".into(),
                port: 8080
            }
        );
        assert_eq!(
            Endpoint::parse("tcp://podman.local:1/").unwrap(),
            Endpoint::Tcp {
                host: "podman.local".into(),
                port: 1
            }
        );
        assert_eq!(
            Endpoint::parse("tcp://[::1]:8080").unwrap(),
            Endpoint::Tcp {
                host: "::1".into(),
                port: 8080
            }
        );
    }

    #[test]
    fn display_round_trips() {
        for url in [
            "unix:///run/user/1000/podman/podman.sock",
            "tcp://localhost:8080",
            "tcp://[::1]:8080",
        ] {
            assert_eq!(Endpoint::parse(url).unwrap().to_string(), url);
        }
    }

    #[test]
    fn rejects_everything_else() {
        assert_eq!(
            reason("ssh://core@host/run/podman.sock"),
            "the scheme \"ssh\" is not supported"
        );
        assert_eq!(
            reason("http://localhost:8080"),
            "the scheme \"http\" is not supported"
        );
        assert_eq!(reason("/run/podman/podman.sock"), "it has no scheme");
        assert_eq!(
            reason("unix://run/podman.sock"),
            "the socket path must be absolute (unix:///run/podman/podman.sock)"
        );
        assert_eq!(reason("tcp://localhost"), "the port is missing");
        assert_eq!(
            reason("tcp://localhost:0"),
            "the port \"0\" is not a number from 1 to 65535"
        );
        assert_eq!(
            reason("tcp://localhost:99999"),
            "the port \"99999\" is not a number from 1 to 65535"
        );
        assert_eq!(reason("tcp://:80"), "the host \"\" is not valid");
        assert_eq!(reason("tcp://h/x:80"), "the host \"h/x\" is not valid");
        assert_eq!(reason("tcp://[::1"), "the IPv6 address lacks a closing ']'");
        assert_eq!(reason("unix:///a\0b"), "it contains a NUL byte");
    }

    #[test]
    fn invalid_url_message_says_what_to_use() {
        let e = Endpoint::parse_from("ssh://x", "CONTAINER_HOST").unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid Podman URL \"ssh://x\" (from CONTAINER_HOST): the scheme \"ssh\" is not supported; \
             use unix:///path/to/podman.sock or tcp://host:port"
        );
    }
}
