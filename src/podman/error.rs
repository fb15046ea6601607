//! `PodmanError`: every way talking to the Podman service can fail.
//!
//! Part of stage 4 (`podman`); no I/O. Each message names what was attempted, against which
//! endpoint, and what the user can do about it. Messages never contain request bodies or query
//! strings (build arguments and environment values may be secrets); response bodies appear only as
//! a short excerpt, and not at all for responses that carry a container's environment.

use std::fmt;
use std::sync::Arc;

/// Convenience alias for results of this module.
pub type Result<T> = std::result::Result<T, PodmanError>;

/// One candidate socket that discovery tried, and why it was not usable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tried {
    /// The endpoint URL (`unix:///run/podman/podman.sock`).
    pub url: String,
    /// Where the candidate came from (`--url`, `CONTAINER_HOST`, ...).
    pub source: String,
    /// Why it did not answer.
    pub reason: String,
}

/// Errors talking to Podman.
#[derive(Debug, thiserror::Error)]
pub enum PodmanError {
    /// A Podman URL could not be parsed.
    #[error(
        "invalid Podman URL {url:?} (from {source_name}): {reason}; \
         use unix:///path/to/podman.sock, tcp://host:port or ssh://[user@]host[:port]/path/to/podman.sock"
    )]
    InvalidUrl {
        url: String,
        /// Where it came from (`--url`, `CONTAINER_HOST`).
        source_name: String,
        #[source]
        reason: UrlError,
    },

    /// A named connection (`--connection`, `CONTAINER_CONNECTION`) could not be found or read.
    #[error("Podman connection {name:?} (from {source_name}): {reason}")]
    Connection {
        name: String,
        /// Where the name came from.
        source_name: String,
        #[source]
        reason: super::connections::ConnectionError,
    },

    /// No candidate socket answered a ping.
    #[error("no Podman API service answered; tried:{}\n{hint}", render_tried(tried))]
    NoService {
        /// Every candidate, in order, with the reason it failed.
        tried: Vec<Tried>,
        /// What to do: the exact command that starts a service.
        hint: String,
    },

    /// Connecting to the socket failed.
    #[error("cannot connect to the Podman service at {endpoint}: {source}; is the service still running?")]
    Connect {
        endpoint: Arc<str>,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },

    /// The HTTP exchange failed (connection reset, malformed response, ...).
    #[error(
        "HTTP exchange {method} {path} with the Podman service at {endpoint} failed: {source}; \
         the service may have stopped or restarted"
    )]
    Http {
        method: String,
        /// Request path, without the query string.
        path: String,
        endpoint: Arc<str>,
        /// The hyper error.
        #[source]
        source: hyper::Error,
    },

    /// Podman answered with an error status.
    #[error("Podman at {endpoint} refused {method} {path} ({status}): {message}")]
    Api {
        status: u16,
        /// Podman's `message`, or the raw body when it was not Podman's JSON error.
        message: String,
        /// Podman's `cause` (the innermost error), when given.
        cause: Option<String>,
        method: String,
        /// Request path, without the query string.
        path: String,
        endpoint: Arc<str>,
    },

    /// A response body could not be decoded.
    #[error(
        "cannot decode the {what} from the Podman service at {endpoint}: {error} (body starts: {excerpt}); \
         the service may speak an unsupported API version"
    )]
    Decode {
        what: String,
        /// The serde error, with line and column.
        error: String,
        /// The start of the body, or a note that it was omitted.
        excerpt: String,
        endpoint: Arc<str>,
    },

    /// A request could not be encoded (a bug in `ags` rather than in the input).
    #[error("cannot encode the {what} of a Podman API request: {error}")]
    Encode {
        /// What was encoded.
        what: String,
        /// The encoder's error.
        error: String,
    },

    /// The HTTP upgrade for attach failed.
    #[error("attaching via {path} at {endpoint} failed: {reason}")]
    Upgrade {
        /// Request path, without the query string.
        path: String,
        endpoint: Arc<str>,
        reason: String,
    },

    /// An image build reported an error in its progress stream.
    #[error("building image {tag} at {endpoint} failed: {message}")]
    Build {
        tag: String,
        /// The error text from the build stream.
        message: String,
        endpoint: Arc<str>,
    },
}

/// Why a Podman URL is refused (the `reason` of [`PodmanError::InvalidUrl`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    #[error("it contains a NUL byte")]
    Nul,
    #[error("it has no scheme")]
    NoScheme,
    #[error("the socket path must be absolute (unix:///run/podman/podman.sock)")]
    RelativeSocket,
    #[error("the scheme {0:?} is not supported")]
    Scheme(String),
    #[error("the remote socket path is missing (ssh://user@host/run/podman/podman.sock)")]
    NoRemotePath,
    #[error("the remote socket path {0:?} is not valid")]
    RemotePath(String),
    #[error("the user {0:?} is not valid")]
    User(String),
    #[error("the host {0:?} is not valid")]
    Host(String),
    #[error("the IPv6 address lacks a closing ']'")]
    Ipv6,
    #[error("the port is missing")]
    NoPort,
    #[error("the port is missing after ':'")]
    NoPortAfterColon,
    #[error("the port {0:?} is not a number from 1 to 65535")]
    Port(String),
}

/// Why the OCI runtime could not run the container's command, from a start error's
/// `exec: "CMD": …` part (exit codes 127 and 126, as `podman run` gives).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecFailure {
    /// The command does not exist (`executable file not found in $PATH`, `no such file or
    /// directory`).
    NotFound,
    /// The command exists but cannot be run (`permission denied`, `exec format error`).
    CannotInvoke,
}

/// A failure of the OCI runtime to set up any container, with a known fix on these hosts
/// (docs: `ags doctor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuntimeSetupFailure {
    /// crun on a hybrid cgroup v1 layout: "cgroups in hybrid mode not supported".
    HybridCgroups,
    /// The default rlimits exceed the host's: "setrlimit `RLIMIT_NOFILE`: Operation not permitted".
    Rlimits,
    /// The user lacks subordinate ids (`newuidmap` failed, or /etc/subuid has no entry).
    SubordinateIds,
}

impl PodmanError {
    /// The HTTP status of an [`PodmanError::Api`] error.
    pub fn status(&self) -> Option<u16> {
        match self {
            PodmanError::Api { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// Podman's message and cause of an [`PodmanError::Api`] error.
    fn api_text(&self) -> Option<(&str, Option<&str>)> {
        match self {
            PodmanError::Api { message, cause, .. } => Some((message, cause.as_deref())),
            _ => None,
        }
    }

    /// True when Podman's message or cause contains `needle`.
    fn says(&self, needle: &str) -> bool {
        self.api_text()
            .is_some_and(|(m, c)| m.contains(needle) || c.is_some_and(|c| c.contains(needle)))
    }

    /// True when Podman answered 404 (no such container, volume or image).
    ///
    /// Cleanup code treats this as success: the resource is already gone.
    pub fn is_not_found(&self) -> bool {
        self.status() == Some(404)
    }

    /// True when Podman answered 409 (e.g. resize before the container is initialised, or a
    /// volume still in use).
    pub fn is_conflict(&self) -> bool {
        self.status() == Some(409)
    }

    /// True when Podman reported "container state improper" (e.g. kill of an exited container,
    /// which Podman 4.3 answers with 500 and 5.4 with 409: the cause is the same).
    pub fn is_state_improper(&self) -> bool {
        matches!(self, PodmanError::Api { cause: Some(c), .. } if c == "container state improper")
    }

    /// A create failed because the image is not in the service's storage. Podman 5 answers 404
    /// "no such image: IMG: image not known"; 4.3 answers 500 "IMG: image not known".
    pub fn is_image_missing(&self) -> bool {
        self.is_not_found() || self.says("image not known")
    }

    /// A create failed because another container has the name: "… the container name "N" is
    /// already in use by ID. You have to remove that container to be able to reuse that name:
    /// that name is already in use" (500, Podman 4.3 and 5).
    pub fn is_name_in_use(&self) -> bool {
        self.says("is already in use")
    }

    /// A volume create failed because the volume exists: 409 or, on Podman 4.3, 500 "volume with
    /// name N already exists: volume already exists".
    pub fn is_already_exists(&self) -> bool {
        self.is_conflict() || self.says("already exists")
    }

    /// A create failed because a bind mount's source does not exist on the service's machine:
    /// "statfs PATH: no such file or directory" (500 on Podman 4.3.1 and 5.4.2, checked before
    /// anything is created). Returns `PATH`.
    pub fn missing_bind_source(&self) -> Option<&str> {
        let (message, _) = self.api_text()?;
        let rest = &message[message.find("statfs ")? + "statfs ".len()..];
        rest.strip_suffix(": no such file or directory")
            .filter(|path| path.starts_with('/'))
    }

    /// A rootless `keep-id` create failed with "keep-id requires additional UIDs or GIDs defined
    /// in /etc/subuid and /etc/subgid to function correctly". Podman 4 says so spuriously when
    /// creates run concurrently (it reads the ranges through libsubid, which is not
    /// thread-safe), so the create is worth retrying; Podman 5 no longer makes this check
    /// ([`super::ServerVersion::has_keep_id_subuid_check`]).
    pub fn is_keep_id_subuid_failure(&self) -> bool {
        self.says("keep-id requires additional UIDs or GIDs")
    }

    /// The container's monitor (conmon) ended without a word while Podman prepared the
    /// container (init, or the init of an attach or start): "container create failed (no logs
    /// from conmon): conmon bytes \"\": readObjectStart…" (Podman 5.4 under load, an upstream
    /// flake: containers/podman#10927), or "write child: broken pipe" when it ended before
    /// Podman wrote to it (both reproduced on 4.3.1 with a conmon that exits early). Nothing ran
    /// and the container is back in its created state, so the step is worth repeating.
    pub fn is_conmon_lost(&self) -> bool {
        matches!(self, PodmanError::Api { .. })
            && (self.says("no logs from conmon")
                || self.says("write child: broken pipe")
                // runc's init died before its preliminary setup (seen under load on 5.4.2 and
                // 4.3.1): nothing ran, and the container is back in its created state.
                || self.says("read init-p: connection reset by peer"))
    }

    /// A start failed because the OCI runtime could not execute the command. Only the runtime's
    /// exec step counts (`exec: "CMD": …` in runc's message, as relayed by Podman 4.3 and 5):
    /// other start failures (a mount refused, a runtime error) are `None`, although Podman's
    /// cause may say "not found" for them too.
    pub fn exec_failure(&self) -> Option<ExecFailure> {
        let (message, _) = self.api_text()?;
        let lower = message.to_lowercase();
        let exec = &lower[lower.find("exec: \"")?..];
        if exec.contains("executable file not found") || exec.contains("no such file or directory") {
            Some(ExecFailure::NotFound)
        } else if exec.contains("permission denied") || exec.contains("exec format error") {
            Some(ExecFailure::CannotInvoke)
        } else {
            None
        }
    }

    /// A failure of the OCI runtime to run any container that `ags doctor` knows a fix for.
    pub fn runtime_setup_failure(&self) -> Option<RuntimeSetupFailure> {
        if self.says("cgroups in hybrid mode") {
            Some(RuntimeSetupFailure::HybridCgroups)
        } else if self.says("setrlimit") {
            Some(RuntimeSetupFailure::Rlimits)
        } else if self.says("newuidmap") || self.says("subuid") {
            Some(RuntimeSetupFailure::SubordinateIds)
        } else {
            None
        }
    }

    /// Inspect raced the container's own exit: Podman 4.3 reads the cgroup of the container's
    /// process for a running container and answers 500 "read /proc/PID/cgroup: no such process"
    /// when that process has just ended. Asking again sees the exited state.
    pub fn is_exit_race(&self) -> bool {
        matches!(self, PodmanError::Api { status: 500, .. })
            && self.says("no such process")
            && self.says("/cgroup")
    }

    /// A list raced a removal: Podman 4.3 answers 500 "no volume with name … found in database:
    /// no such volume" (or "… no such container") when an object it listed is removed before
    /// it reads it. Asking again lists without it.
    pub fn is_removal_race(&self) -> bool {
        matches!(self, PodmanError::Api { status: 500, .. })
            && (self.says("no such volume") || self.says("no such container"))
    }

    /// A container vanished between list and inspect: 404, or (Podman 4.3, while the removal is
    /// under way) 500 "… does not exist in database: no such container".
    pub fn is_vanished_container(&self) -> bool {
        self.is_not_found() || self.is_removal_race() && self.says("no such container")
    }
}

fn render_tried(tried: &[Tried]) -> String {
    let mut out = String::new();
    for t in tried {
        out.push_str(&format!("\n  {} (from {}): {}", t.url, t.source, t.reason));
    }
    out
}

/// Podman's JSON error body: `{"cause": "...", "message": "...", "response": 409}`.
#[derive(Debug, serde::Deserialize)]
struct ErrorBody {
    #[serde(default)]
    cause: Option<String>,
    message: String,
}

/// Longest raw (non-JSON) error body kept in a message.
const MAX_RAW_MESSAGE: usize = 500;

/// Decode an error body into `(message, cause)`; falls back to the raw text.
pub(crate) fn decode_error_body(body: &[u8]) -> (String, Option<String>) {
    if let Ok(e) = serde_json::from_slice::<ErrorBody>(body) {
        let cause = e.cause.filter(|c| !c.is_empty());
        return (e.message, cause);
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        return ("(empty response body)".to_owned(), None);
    }
    (truncate(text, MAX_RAW_MESSAGE), None)
}

/// The first `max` characters of `text`, with an ellipsis when cut.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

/// Displays the trimmed start of a response body, quoted, for decode errors.
pub(crate) struct Excerpt<'a>(pub &'a [u8]);

impl fmt::Display for Excerpt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = String::from_utf8_lossy(self.0);
        write!(f, "{:?}", truncate(text.trim(), 120))
    }
}

#[cfg(test)]
#[path = "error_tests.rs"]
mod tests;
