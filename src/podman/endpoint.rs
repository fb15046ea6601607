//! Endpoint URLs: `unix:///path/to/podman.sock`, `tcp://host:port` and
//! `ssh://[user@]host[:port]/path/to/podman.sock`, nothing else.
//!
//! Part of stage 4 (`podman`); no I/O. An `ssh://` endpoint is reached through the system
//! OpenSSH client forwarding the remote socket to a private local one (`tunnel`).
//! Ref: <https://docs.podman.io/en/latest/markdown/podman-remote.1.html>

use std::fmt;
use std::path::PathBuf;

use super::error::{PodmanError, Result, UrlError};

/// Where the Podman API service listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A unix socket (`unix:///run/podman/podman.sock`).
    Unix(PathBuf),
    /// A TCP address (`tcp://host:port`); the host has no brackets, even for IPv6.
    Tcp {
        /// Host name or address.
        host: String,
        port: u16,
    },
    /// A unix socket on another machine, reached over SSH (`ssh://user@host:22/run/podman/podman.sock`).
    Ssh {
        /// Login name (`None`: OpenSSH's default, from its config or the local user).
        user: Option<String>,
        /// Host name or address, as given to `ssh` (no brackets, even for IPv6).
        host: String,
        /// Port (`None`: OpenSSH's default, from its config or 22).
        port: Option<u16>,
        /// The socket's absolute path on the remote machine.
        path: PathBuf,
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

    /// True for a unix socket endpoint on this machine.
    pub fn is_unix(&self) -> bool {
        matches!(self, Endpoint::Unix(_))
    }

    /// True for an endpoint on another machine (`tcp://`, `ssh://`): paths in the launch name
    /// that machine's files, and this host's files cannot be bind-mounted.
    pub fn is_remote(&self) -> bool {
        !self.is_unix()
    }

    /// The value for the HTTP `Host` header.
    pub(crate) fn host_header(&self) -> String {
        match self {
            Endpoint::Unix(_) | Endpoint::Ssh { .. } => "d".to_owned(),
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
            Endpoint::Ssh {
                user,
                host,
                port,
                path,
            } => {
                f.write_str("ssh://")?;
                if let Some(user) = user {
                    write!(f, "{user}@")?;
                }
                match host.contains(':') {
                    true => write!(f, "[{host}]")?,
                    false => f.write_str(host)?,
                }
                if let Some(port) = port {
                    write!(f, ":{port}")?;
                }
                write!(f, "{}", path.display())
            }
        }
    }
}

type Parsed<T> = std::result::Result<T, UrlError>;

fn parse_url(url: &str) -> Parsed<Endpoint> {
    if url.contains('\0') {
        return Err(UrlError::Nul);
    }
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(UrlError::NoScheme);
    };
    match scheme {
        "unix" if rest.starts_with('/') => Ok(Endpoint::Unix(PathBuf::from(rest))),
        "unix" => Err(UrlError::RelativeSocket),
        "tcp" => parse_tcp(rest.strip_suffix('/').unwrap_or(rest)),
        "ssh" => parse_ssh(rest),
        other => Err(UrlError::Scheme(other.into())),
    }
}

/// `[user@]host[:port]/absolute/socket/path`. Names that `ssh` could read as options (a
/// leading `-`) or that hold spaces or control characters are refused.
fn parse_ssh(rest: &str) -> Parsed<Endpoint> {
    let Some(slash) = rest.find('/') else {
        return Err(UrlError::NoRemotePath);
    };
    let (authority, path) = rest.split_at(slash);
    if path.contains(['?', '#']) || path.chars().any(char::is_control) || path == "/" {
        return Err(UrlError::RemotePath(path.into()));
    }
    let (user, hostport) = match authority.rsplit_once('@') {
        Some((user, hostport)) => (Some(user), hostport),
        None => (None, authority),
    };
    let bad = |s: &str| {
        s.is_empty()
            || s.starts_with('-')
            || s.chars()
                .any(|c| c.is_whitespace() || c.is_control() || "/@?#'\"\\`$;|&<>(){}*!".contains(c))
    };
    if let Some(user) = user.filter(|u| bad(u)) {
        return Err(UrlError::User(user.into()));
    }
    let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
        let (host, tail) = v6.split_once(']').ok_or(UrlError::Ipv6)?;
        match tail {
            "" => (host, None),
            t => (host, Some(t.strip_prefix(':').ok_or(UrlError::NoPortAfterColon)?)),
        }
    } else {
        match hostport.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (hostport, None),
        }
    };
    if bad(host) || host.contains(['[', ']']) {
        return Err(UrlError::Host(host.into()));
    }
    Ok(Endpoint::Ssh {
        user: user.map(str::to_owned),
        host: host.to_owned(),
        port: port.map(parse_port).transpose()?,
        path: PathBuf::from(path),
    })
}

fn parse_tcp(rest: &str) -> Parsed<Endpoint> {
    let (host, port) = if let Some(v6) = rest.strip_prefix('[') {
        let (host, tail) = v6.split_once(']').ok_or(UrlError::Ipv6)?;
        (host, tail.strip_prefix(':').ok_or(UrlError::NoPort)?)
    } else {
        rest.rsplit_once(':').ok_or(UrlError::NoPort)?
    };
    if host.is_empty() || host.contains(['/', '@', '?', '#']) {
        return Err(UrlError::Host(host.into()));
    }
    Ok(Endpoint::Tcp {
        host: host.to_owned(),
        port: parse_port(port)?,
    })
}

fn parse_port(port: &str) -> Parsed<u16> {
    match port.parse::<u16>() {
        Ok(n) if n != 0 => Ok(n),
        _ => Err(UrlError::Port(port.into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(url: &str) -> String {
        match Endpoint::parse_from(url, "--url") {
            Err(PodmanError::InvalidUrl { reason, .. }) => reason.to_string(),
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
    fn parses_ssh() {
        assert_eq!(
            Endpoint::parse("ssh://core@host.example:2222/run/user/1000/podman/podman.sock").unwrap(),
            Endpoint::Ssh {
                user: Some("core".into()),
                host: "host.example".into(),
                port: Some(2222),
                path: "/run/user/1000/podman/podman.sock".into(),
            }
        );
        assert_eq!(
            Endpoint::parse("ssh://host/run/podman/podman.sock").unwrap(),
            Endpoint::Ssh {
                user: None,
                host: "host".into(),
                port: None,
                path: "/run/podman/podman.sock".into(),
            }
        );
        assert_eq!(
            Endpoint::parse("ssh://root@[::1]:22/run/podman/podman.sock").unwrap(),
            Endpoint::Ssh {
                user: Some("root".into()),
                host: "::1".into(),
                port: Some(22),
                path: "/run/podman/podman.sock".into(),
            }
        );
        assert!(
            Endpoint::parse("ssh://h/run/podman/podman.sock")
                .unwrap()
                .is_remote()
        );
    }

    #[test]
    fn display_round_trips() {
        for url in [
            "ssh://core@host:2222/run/podman/podman.sock",
            "ssh://[::1]/run/podman/podman.sock",
            "ssh://host/run/user/1000/podman/podman.sock",
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
            reason("ssh://core@host"),
            "the remote socket path is missing (ssh://user@host/run/podman/podman.sock)"
        );
        assert_eq!(
            reason("ssh://-oProxyCommand=x/run/p.sock"),
            "the host \"-oProxyCommand=x\" is not valid"
        );
        assert_eq!(reason("ssh://-l@h/run/p.sock"), "the user \"-l\" is not valid");
        assert_eq!(reason("ssh://a b@h/run/p.sock"), "the user \"a b\" is not valid");
        assert_eq!(
            reason("ssh://h:0/run/p.sock"),
            "the port \"0\" is not a number from 1 to 65535"
        );
        assert_eq!(reason("ssh://h/"), "the remote socket path \"/\" is not valid");
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
        let e = Endpoint::parse_from("http://x", "CONTAINER_HOST").unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid Podman URL \"http://x\" (from CONTAINER_HOST): the scheme \"http\" is not supported; \
             use unix:///path/to/podman.sock, tcp://host:port or ssh://[user@]host[:port]/path/to/podman.sock"
        );
    }
}
