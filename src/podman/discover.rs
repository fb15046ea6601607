//! Socket discovery: which Podman API service to talk to.
//!
//! Part of stage 4 (`podman`). Input: a [`Target`] (`--url`, `--connection`, `--identity`) and
//! the environment (`CONTAINER_HOST`, `CONTAINER_CONNECTION`, `CONTAINER_SSHKEY`,
//! `XDG_RUNTIME_DIR`, the effective uid). Output: a [`Client`] whose endpoint answered a ping.
//! The order follows podman-remote:
//!
//! 1. the explicit `--url` value, if given;
//! 2. `--connection NAME` (Podman's named connections, see `connections`);
//! 3. `CONTAINER_HOST`, if set and non-empty;
//! 4. `CONTAINER_CONNECTION`, if set and non-empty;
//! 5. `$XDG_RUNTIME_DIR/podman/podman.sock` (or `/run/user/$UID/podman/podman.sock` for a
//!    non-root user without `XDG_RUNTIME_DIR`), unless another user could replace a directory
//!    on its way (`fsutil::check_ancestors_private`: after `su`, another user's runtime dir);
//! 6. `/run/podman/podman.sock` (the rootful service).
//!
//! A service chosen by 1–4 is the only candidate: when it fails, `ags` reports it rather than
//! silently using another service. The SSH identity of an `ssh://` service: `--identity`, else
//! `CONTAINER_SSHKEY`, else the connection's own. [`candidates`] is pure; [`connect`] does the I/O.
//! Ref: <https://docs.podman.io/en/latest/markdown/podman-remote.1.html>

use std::path::PathBuf;
use std::time::Duration;

use super::connections::Sources;
use super::endpoint::Endpoint;
use super::error::{PodmanError, Result, Tried};
use super::transport::Client;
use super::tunnel::SshProgram;

/// How long connecting plus pinging one of several candidates may take: generous, a busy service
/// (or the remote end of an SSH forward) on a loaded machine answers late, and a missing one fails
/// at once (no socket, connection refused).
pub const PING_TIMEOUT: Duration = Duration::from_secs(10);

/// The same for a lone candidate (a named service, or the only default socket): there is no
/// other to try, so a service that accepted the connection gets longer to answer. Podman 5 in
/// the podman-in-podman suite under four busy loops once took more than 10 s.
pub const LONE_PING_TIMEOUT: Duration = Duration::from_secs(60);

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
    /// A named connection given with `--connection`.
    Connection,
    /// A named connection given in `CONTAINER_CONNECTION`.
    ContainerConnection,
}

impl CandidateSource {
    /// A short name for messages.
    pub fn name(self) -> &'static str {
        match self {
            CandidateSource::Explicit => "--url",
            CandidateSource::ContainerHost => "CONTAINER_HOST",
            CandidateSource::RuntimeDir => "XDG_RUNTIME_DIR",
            CandidateSource::System => "system socket",
            CandidateSource::Connection => "--connection",
            CandidateSource::ContainerConnection => "CONTAINER_CONNECTION",
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

/// Which service the command line asks for (all optional).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Target {
    /// `--url`.
    pub url: Option<String>,
    /// `--connection NAME`.
    pub connection: Option<String>,
    /// `--identity PATH` (an `ssh://` service's key).
    pub identity: Option<PathBuf>,
    /// Which `ssh` may run for an `ssh://` service (`[ssh] path`, the directories the agent
    /// can write).
    pub ssh: SshProgram,
}

impl Target {
    /// A target naming only a URL (`--url`).
    pub fn url(url: impl Into<String>) -> Target {
        Target {
            url: Some(url.into()),
            ..Target::default()
        }
    }
}

/// The service chosen by the command line or the environment (before the default sockets).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chosen {
    /// The URL and where it came from.
    pub candidate: Candidate,
    /// The SSH identity file to use with an `ssh://` URL.
    pub identity: Option<PathBuf>,
}

/// Pick the service of `target` and the environment (`env`), reading Podman's connection list
/// when a connection is named; `None` when nothing names one (the default sockets apply).
pub fn choose(target: &Target, env: &dyn Fn(&str) -> Option<String>, euid: u32) -> Result<Option<Chosen>> {
    let set = |v: Option<String>| v.filter(|s| !s.is_empty());
    let key_env = set(env("CONTAINER_SSHKEY")).map(PathBuf::from);
    let identity = |own: Option<PathBuf>| target.identity.clone().or(key_env.clone()).or(own);
    let chosen = |url: String, source: CandidateSource, own: Option<PathBuf>| {
        Some(Chosen {
            candidate: Candidate { url, source },
            identity: identity(own),
        })
    };
    let named = |name: &str, source: CandidateSource| -> Result<Option<Chosen>> {
        let c = Sources::locate(env, euid)
            .find(name)
            .map_err(|reason| PodmanError::Connection {
                name: name.to_owned(),
                source_name: source.name().to_owned(),
                reason,
            })?;
        Ok(chosen(c.uri, source, c.identity))
    };
    if let Some(url) = set(target.url.clone()) {
        return Ok(chosen(url, CandidateSource::Explicit, None));
    }
    if let Some(name) = set(target.connection.clone()) {
        return named(&name, CandidateSource::Connection);
    }
    if let Some(url) = set(env("CONTAINER_HOST")) {
        return Ok(chosen(url, CandidateSource::ContainerHost, None));
    }
    if let Some(name) = set(env("CONTAINER_CONNECTION")) {
        return named(&name, CandidateSource::ContainerConnection);
    }
    Ok(None)
}

/// The ordered candidate list for the given inputs (no I/O). Empty strings count as unset.
pub fn candidates(
    explicit: Option<&str>,
    container_host: Option<&str>,
    xdg_runtime_dir: Option<&str>,
    euid: u32,
) -> Vec<Candidate> {
    let set = |v: Option<&str>| v.filter(|s| !s.is_empty()).map(str::to_owned);
    let candidate = |url, source| Candidate { url, source };
    if let Some(url) = set(explicit) {
        return vec![candidate(url, CandidateSource::Explicit)];
    }
    if let Some(url) = set(container_host) {
        return vec![candidate(url, CandidateSource::ContainerHost)];
    }
    let mut out = Vec::new();
    let runtime_dir = set(xdg_runtime_dir).or_else(|| (euid != 0).then(|| format!("/run/user/{euid}")));
    if let Some(dir) = runtime_dir {
        let url = format!("unix://{}/podman/podman.sock", dir.trim_end_matches('/'));
        out.push(candidate(url, CandidateSource::RuntimeDir));
    }
    let system = format!("unix://{SYSTEM_SOCKET}");
    if !out.iter().any(|c| c.url == system) {
        out.push(candidate(system, CandidateSource::System));
    }
    out
}

/// What to tell the user when an `ssh://` service did not answer.
const SSH_HINT: &str = "check that `ssh [-p PORT] [USER@]HOST true` works without any prompt (ags runs OpenSSH with BatchMode: \
     load the key into ssh-agent or pass --identity, and accept the host key once with ssh itself), that the \
     server allows stream-local forwarding (sshd: AllowStreamLocalForwarding, no DisableForwarding), and that \
     the Podman service runs on that machine at that socket path and is yours (`systemctl --user start podman.socket` there)";

/// What to tell the user when no service answered. `runtime_dir_set`: whether
/// `XDG_RUNTIME_DIR` is set (a session without systemd's user manager — `su`, a container, CI —
/// has none, and a rootless service then has no place for its socket).
pub fn hint(euid: u32, explicit: bool, runtime_dir_set: bool) -> String {
    let start = if euid == 0 {
        format!(
            "start the rootful service: `systemctl start podman.socket`, or `podman system service --time=0 unix://{SYSTEM_SOCKET} &`"
        )
    } else if !runtime_dir_set {
        format!(
            "XDG_RUNTIME_DIR is not set (no systemd user session: `su`, a container, CI). Make your runtime \
             directory and start your service there: `sudo install -d -m 0700 -o {euid} /run/user/{euid}`, \
             `export XDG_RUNTIME_DIR=/run/user/{euid}`, then `podman system service --time=0 \
             unix://$XDG_RUNTIME_DIR/podman/podman.sock &` (or, as root, `scripts/setup-podman --rootless-user NAME`)"
        )
    } else {
        "start your user's service: `systemctl --user start podman.socket`, or \
         `podman system service --time=0 unix://$XDG_RUNTIME_DIR/podman/podman.sock &`"
            .to_owned()
    };
    if explicit {
        format!(
            "check the URL (--url, --connection, CONTAINER_HOST or CONTAINER_CONNECTION), or unset it to use the default sockets; or {start}"
        )
    } else {
        format!("To fix: {start}")
    }
}

/// Find a Podman service: the one `target` or the environment names (see [`choose`]), else
/// the default sockets; ping each (at most [`PING_TIMEOUT`] apiece, [`LONE_PING_TIMEOUT`] when
/// there is one; after the SSH forward of an `ssh://` service is up) and return a client for the
/// first that answers.
///
/// Requires a tokio runtime with the time driver enabled.
pub async fn connect(target: &Target) -> Result<Client> {
    let env = |k: &str| std::env::var(k).ok();
    let euid = nix::unistd::geteuid().as_raw();
    if let Some(chosen) = choose(target, &env, euid)? {
        return connect_with(
            std::slice::from_ref(&chosen.candidate),
            chosen.identity.as_deref(),
            &target.ssh,
            euid,
        )
        .await;
    }
    let list = candidates(None, None, env("XDG_RUNTIME_DIR").as_deref(), euid);
    connect_candidates(&list, euid).await
}

/// Ping each candidate in order; the first that answers wins.
pub async fn connect_candidates(list: &[Candidate], euid: u32) -> Result<Client> {
    connect_with(list, None, &SshProgram::default(), euid).await
}

async fn connect_with(
    list: &[Candidate],
    identity: Option<&std::path::Path>,
    ssh: &SshProgram,
    euid: u32,
) -> Result<Client> {
    let mut tried = Vec::new();
    for cand in list {
        let path = cand.url.strip_prefix("unix://").map(std::path::Path::new);
        if let (CandidateSource::RuntimeDir, Some(Err(why))) =
            (cand.source, path.map(crate::fsutil::check_ancestors_private))
        {
            tried.push(tried_entry(
                cand,
                format!(
                    "not tried: {why}, so another user could serve its own API there (`su` keeps \
                     that user's XDG_RUNTIME_DIR); pass --url to use it anyway"
                ),
            ));
            continue;
        }
        let endpoint = Endpoint::parse_from(&cand.url, cand.source.name())?;
        let client = match &endpoint {
            Endpoint::Ssh { .. } => match super::tunnel::Tunnel::open(&endpoint, identity, ssh).await {
                Ok(tunnel) => Client::with_tunnel(endpoint, tunnel),
                Err(why) => {
                    tried.push(tried_entry(cand, why.to_string()));
                    continue;
                }
            },
            _ => Client::new(endpoint),
        };
        let limit = match list.len() {
            1 => LONE_PING_TIMEOUT,
            _ => PING_TIMEOUT,
        };
        let failed = match tokio::time::timeout(limit, client.ping()).await {
            Ok(Ok(_)) => return Ok(client),
            Ok(Err(e)) => reason(&e),
            Err(_) => format!("no answer within {} s", limit.as_secs()),
        };
        // Through an SSH forward, ssh's own words say why (e.g. the remote socket is missing).
        let said = client.transport_said().await;
        tried.push(tried_entry(
            cand,
            match said.is_empty() {
                true => failed,
                false => format!("{failed}; ssh said: {said}"),
            },
        ));
    }
    let explicit = list
        .iter()
        .any(|c| !matches!(c.source, CandidateSource::RuntimeDir | CandidateSource::System));
    let over_ssh = list.iter().any(|c| c.url.starts_with("ssh://"));
    Err(PodmanError::NoService {
        tried,
        hint: match over_ssh {
            true => SSH_HINT.to_owned(),
            false => hint(
                euid,
                explicit,
                std::env::var_os("XDG_RUNTIME_DIR").is_some_and(|v| !v.is_empty()),
            ),
        },
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
#[path = "discover_tests.rs"]
mod tests;
