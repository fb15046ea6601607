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
         use unix:///path/to/podman.sock or tcp://host:port"
    )]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// Where it came from (`--url`, `CONTAINER_HOST`).
        source_name: String,
        /// What is wrong with it.
        reason: String,
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
        /// The endpoint URL.
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
        /// Request method.
        method: String,
        /// Request path, without the query string.
        path: String,
        /// The endpoint URL.
        endpoint: Arc<str>,
        /// The hyper error.
        #[source]
        source: hyper::Error,
    },

    /// Podman answered with an error status.
    #[error("Podman at {endpoint} refused {method} {path} ({status}): {message}")]
    Api {
        /// HTTP status.
        status: u16,
        /// Podman's `message`, or the raw body when it was not Podman's JSON error.
        message: String,
        /// Podman's `cause` (the innermost error), when given.
        cause: Option<String>,
        /// Request method.
        method: String,
        /// Request path, without the query string.
        path: String,
        /// The endpoint URL.
        endpoint: Arc<str>,
    },

    /// A response body could not be decoded.
    #[error(
        "cannot decode the {what} from the Podman service at {endpoint}: {error} (body starts: {excerpt}); \
         the service may speak an unsupported API version"
    )]
    Decode {
        /// What was decoded.
        what: String,
        /// The serde error, with line and column.
        error: String,
        /// The start of the body, or a note that it was omitted.
        excerpt: String,
        /// The endpoint URL.
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
        /// The endpoint URL.
        endpoint: Arc<str>,
        /// What went wrong.
        reason: String,
    },

    /// An image build reported an error in its progress stream.
    #[error("building image {tag} at {endpoint} failed: {message}")]
    Build {
        /// The tag being built.
        tag: String,
        /// The error text from the build stream.
        message: String,
        /// The endpoint URL.
        endpoint: Arc<str>,
    },
}

impl PodmanError {
    /// The HTTP status of an [`PodmanError::Api`] error.
    pub fn status(&self) -> Option<u16> {
        match self {
            PodmanError::Api { status, .. } => Some(*status),
            _ => None,
        }
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
    /// which Podman 4.3 answers with 500).
    pub fn is_state_improper(&self) -> bool {
        matches!(self, PodmanError::Api { cause: Some(c), .. } if c == "container state improper")
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
mod tests {
    use super::*;

    #[test]
    fn error_stays_small() {
        // Results of every stage carry it; clippy's result_large_err limit is 128 bytes.
        assert!(
            std::mem::size_of::<PodmanError>() < 128,
            "{}",
            std::mem::size_of::<PodmanError>()
        );
    }

    #[test]
    fn decodes_podman_json_error() {
        let body = br#"{"cause":"no such container","message":"no container with name or ID \"x\" found: no such container","response":404}"#;
        let (msg, cause) = decode_error_body(body);
        assert_eq!(
            msg,
            r#"no container with name or ID "x" found: no such container"#
        );
        assert_eq!(cause.as_deref(), Some("no such container"));
    }

    #[test]
    fn falls_back_to_raw_text() {
        let (msg, cause) = decode_error_body(b"  404 page not found\n");
        assert_eq!(msg, "404 page not found");
        assert_eq!(cause, None);
        let (msg, _) = decode_error_body(b"");
        assert_eq!(msg, "(empty response body)");
        let long = "x".repeat(2000);
        let (msg, _) = decode_error_body(long.as_bytes());
        assert_eq!(msg.chars().count(), MAX_RAW_MESSAGE + 1);
    }

    #[test]
    fn json_without_message_is_raw() {
        let (msg, cause) = decode_error_body(br#"{"error":"boom"}"#);
        assert_eq!(msg, r#"{"error":"boom"}"#);
        assert_eq!(cause, None);
    }

    #[test]
    fn api_error_helpers_and_message() {
        let e = PodmanError::Api {
            status: 404,
            message: "no such volume".into(),
            cause: Some("no such volume".into()),
            method: "DELETE".into(),
            path: "/v4.0.0/libpod/volumes/v".into(),
            endpoint: "unix:///run/podman/podman.sock".into(),
        };
        assert!(e.is_not_found());
        assert!(!e.is_conflict());
        assert_eq!(
            e.to_string(),
            "Podman at unix:///run/podman/podman.sock refused DELETE /v4.0.0/libpod/volumes/v (404): \
             no such volume"
        );
    }

    #[test]
    fn no_service_lists_every_candidate() {
        let e = PodmanError::NoService {
            tried: vec![
                Tried {
                    url: "unix:///a".into(),
                    source: "XDG_RUNTIME_DIR".into(),
                    reason: "missing".into(),
                },
                Tried {
                    url: "unix:///b".into(),
                    source: "system".into(),
                    reason: "refused".into(),
                },
            ],
            hint: "start it".into(),
        };
        assert_eq!(
            e.to_string(),
            "no Podman API service answered; tried:\n  unix:///a (from XDG_RUNTIME_DIR): missing\n  \
             unix:///b (from system): refused\nstart it"
        );
    }
}
