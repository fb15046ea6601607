//! Socket discovery: which Podman API service to talk to.
//!
//! Part of stage 4 (`podman`). Input: an explicit `--url` value and the environment
//! (`CONTAINER_HOST`, `XDG_RUNTIME_DIR`, the effective uid). Output: a [`Client`] whose
//! endpoint answered a ping. The order follows podman-remote:
//!
//! 1. the explicit `--url` value, if given;
//! 2. `CONTAINER_HOST`, if set and non-empty;
//! 3. `$XDG_RUNTIME_DIR/podman/podman.sock` (or `/run/user/$UID/podman/podman.sock` for a
//!    non-root user without `XDG_RUNTIME_DIR`);
//! 4. `/run/podman/podman.sock` (the rootful service).
//!
//! An explicit URL or `CONTAINER_HOST` is the only candidate: when it fails, `ags` reports it
//! rather than silently using another service. [`candidates`] is pure; [`connect`] does the I/O.
//! Ref: <https://docs.podman.io/en/latest/markdown/podman-remote.1.html>

use std::time::Duration;

use super::endpoint::Endpoint;
use super::error::{PodmanError, Result, Tried};
use super::transport::Client;

/// How long connecting plus pinging one candidate may take.
pub const PING_TIMEOUT: Duration = Duration::from_secs(2);

/// The rootful service's socket.
pub const SYSTEM_SOCKET: &str = "/run/podman/podman.sock";

/// Where a candidate endpoint came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CandidateSource {
    /// The `--url` command-line value.
    Explicit,
    /// The `CONTAINER_HOST` environment variable.
    ContainerHost,
    /// The user's runtime directory (`$XDG_RUNTIME_DIR` or `/run/user/$UID`).
    RuntimeDir,
    /// The rootful system socket.
    System,
}

impl CandidateSource {
    /// A short name for messages.
    pub fn name(self) -> &'static str {
        match self {
            CandidateSource::Explicit => "--url",
            CandidateSource::ContainerHost => "CONTAINER_HOST",
            CandidateSource::RuntimeDir => "XDG_RUNTIME_DIR",
            CandidateSource::System => "system socket",
        }
    }
}

/// One endpoint URL to try, with its origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The URL (`unix:///...` or `tcp://...`), not yet validated.
    pub url: String,
    /// Where it came from.
    pub source: CandidateSource,
}

/// The ordered candidate list for the given inputs (no I/O). Empty strings count as unset.
pub fn candidates(
    explicit: Option<&str>,
    container_host: Option<&str>,
    xdg_runtime_dir: Option<&str>,
    euid: u32,
) -> Vec<Candidate> {
    let set = |v: Option<&str>| v.filter(|s| !s.is_empty()).map(str::to_owned);
    if let Some(url) = set(explicit) {
        return vec![Candidate {
            url,
            source: CandidateSource::Explicit,
        }];
    }
    if let Some(url) = set(container_host) {
        return vec![Candidate {
            url,
            source: CandidateSource::ContainerHost,
        }];
    }
    let mut out = Vec::new();
    let runtime_dir = set(xdg_runtime_dir).or_else(|| (euid != 0).then(|| format!("/run/user/{euid}")));
    if let Some(dir) = runtime_dir {
        let url = format!("unix://{}/podman/podman.sock", dir.trim_end_matches('/'));
        out.push(Candidate {
            url,
            source: CandidateSource::RuntimeDir,
        });
    }
    let system = format!("unix://{SYSTEM_SOCKET}");
    if !out.iter().any(|c| c.url == system) {
        out.push(Candidate {
            url: system,
            source: CandidateSource::System,
        });
    }
    out
}

/// What to tell the user when no service answered.
pub fn hint(euid: u32, explicit: bool) -> String {
    let start = if euid == 0 {
        format!(
            "start the rootful service: `systemctl start podman.socket`, or `podman system service --time=0 unix://{SYSTEM_SOCKET} &`"
        )
    } else {
        "start your user's service: `systemctl --user start podman.socket`, or \
         `podman system service --time=0 unix://$XDG_RUNTIME_DIR/podman/podman.sock &`"
            .to_owned()
    };
    if explicit {
        format!("check the URL (--url or CONTAINER_HOST), or unset it to use the default sockets; or {start}")
    } else {
        format!("To fix: {start}")
    }
}

/// Find a Podman service: compute the candidates from `explicit` and the environment, ping
/// each (at most [`PING_TIMEOUT`] apiece) and return a client for the first that answers.
///
/// Requires a tokio runtime with the time driver enabled.
pub async fn connect(explicit: Option<&str>) -> Result<Client> {
    let env = |k: &str| std::env::var(k).ok();
    let euid = nix::unistd::geteuid().as_raw();
    let list = candidates(
        explicit,
        env("CONTAINER_HOST").as_deref(),
        env("XDG_RUNTIME_DIR").as_deref(),
        euid,
    );
    connect_candidates(&list, euid).await
}

/// Ping each candidate in order; the first that answers wins.
pub async fn connect_candidates(list: &[Candidate], euid: u32) -> Result<Client> {
    let mut tried = Vec::new();
    for cand in list {
        let endpoint = Endpoint::parse_from(&cand.url, cand.source.name())?;
        let client = Client::new(endpoint);
        match tokio::time::timeout(PING_TIMEOUT, client.ping()).await {
            Ok(Ok(_)) => return Ok(client),
            Ok(Err(e)) => tried.push(tried_entry(cand, reason(&e))),
            Err(_) => tried.push(tried_entry(
                cand,
                format!("no answer within {} s", PING_TIMEOUT.as_secs()),
            )),
        }
    }
    let explicit = list.iter().any(|c| {
        matches!(
            c.source,
            CandidateSource::Explicit | CandidateSource::ContainerHost
        )
    });
    Err(PodmanError::NoService {
        tried,
        hint: hint(euid, explicit),
    })
}

fn tried_entry(cand: &Candidate, reason: String) -> Tried {
    Tried {
        url: cand.url.clone(),
        source: cand.source.name().to_owned(),
        reason,
    }
}

/// A short reason for a failed ping, without repeating the endpoint.
fn reason(e: &PodmanError) -> String {
    match e {
        PodmanError::Connect { source, .. } => match source.kind() {
            std::io::ErrorKind::NotFound => "the socket does not exist".to_owned(),
            std::io::ErrorKind::ConnectionRefused => "nothing is listening (connection refused)".to_owned(),
            std::io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
            _ => source.to_string(),
        },
        PodmanError::Api { status, message, .. } => {
            format!("answered {status} to the libpod ping (not a Podman service?): {message}")
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use CandidateSource::*;

    fn urls(list: &[Candidate]) -> Vec<(&str, CandidateSource)> {
        list.iter().map(|c| (c.url.as_str(), c.source)).collect()
    }

    #[test]
    fn explicit_wins_alone() {
        let list = candidates(Some("tcp://h:1"), Some("unix:///x"), Some("/run/user/1000"), 1000);
        assert_eq!(urls(&list), [("tcp://h:1", Explicit)]);
    }

    #[test]
    fn container_host_is_the_only_candidate() {
        let list = candidates(None, Some("unix:///x.sock"), Some("/run/user/1000"), 1000);
        assert_eq!(urls(&list), [("unix:///x.sock", ContainerHost)]);
    }

    #[test]
    fn defaults_for_a_user() {
        let list = candidates(None, None, Some("/run/user/1000/"), 1000);
        assert_eq!(
            urls(&list),
            [
                ("unix:///run/user/1000/podman/podman.sock", RuntimeDir),
                ("unix:///run/podman/podman.sock", System)
            ]
        );
        let list = candidates(Some(""), Some(""), None, 1000);
        assert_eq!(
            urls(&list),
            [
                ("unix:///run/user/1000/podman/podman.sock", RuntimeDir),
                ("unix:///run/podman/podman.sock", System)
            ]
        );
    }

    #[test]
    fn defaults_for_root() {
        assert_eq!(
            urls(&candidates(None, None, None, 0)),
            [("unix:///run/podman/podman.sock", System)]
        );
        let list = candidates(None, None, Some("/run/user/0"), 0);
        assert_eq!(
            urls(&list),
            [
                ("unix:///run/user/0/podman/podman.sock", RuntimeDir),
                ("unix:///run/podman/podman.sock", System)
            ]
        );
        // No duplicate when the runtime dir is /run.
        assert_eq!(
            urls(&candidates(None, None, Some("/run"), 0)),
            [("unix:///run/podman/podman.sock", RuntimeDir)]
        );
    }

    #[test]
    fn hints_name_the_command() {
        assert!(hint(0, false).contains("podman system service --time=0 unix:///run/podman/podman.sock &"));
        assert!(hint(1000, false).contains("systemctl --user start podman.socket"));
        assert!(hint(1000, true).starts_with("check the URL"));
    }

    #[tokio::test]
    async fn missing_sockets_are_all_listed() {
        let dir = tempfile::tempdir().unwrap();
        let a = format!("unix://{}/a.sock", dir.path().display());
        let b = format!("unix://{}/b.sock", dir.path().display());
        let list = vec![
            Candidate {
                url: a.clone(),
                source: RuntimeDir,
            },
            Candidate {
                url: b.clone(),
                source: System,
            },
        ];
        let e = connect_candidates(&list, 1000).await.unwrap_err();
        let PodmanError::NoService { tried, hint } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(tried.len(), 2);
        assert_eq!(tried[0].url, a);
        assert_eq!(tried[0].reason, "the socket does not exist");
        assert!(hint.contains("systemctl --user start podman.socket"), "{hint}");
        assert!(
            e.to_string()
                .contains(&format!("{b} (from system socket): the socket does not exist")),
            "{e}"
        );
    }

    #[tokio::test]
    async fn explicit_invalid_url_is_an_error() {
        let e = connect_candidates(&candidates(Some("ssh://x"), None, None, 0), 0)
            .await
            .unwrap_err();
        assert!(matches!(e, PodmanError::InvalidUrl { .. }), "{e:?}");
    }

    #[tokio::test]
    async fn refused_socket_has_a_clear_reason() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        // connect(2) to a path that is not a listening socket fails with ECONNREFUSED.
        std::fs::write(&path, b"").unwrap();
        let list = vec![Candidate {
            url: format!("unix://{}", path.display()),
            source: Explicit,
        }];
        let e = connect_candidates(&list, 1000).await.unwrap_err();
        let PodmanError::NoService { tried, .. } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(tried.len(), 1);
        assert!(tried[0].reason.contains("refused"), "{}", tried[0].reason);
    }
}
