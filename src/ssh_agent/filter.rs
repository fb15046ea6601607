//! The filter between the container and the host's ssh-agent: each connection from the
//! container gets its own connection to the real agent (session binding is per connection),
//! opened when the first message passes. Passed: listing identities, signing, and the
//! `session-bind@openssh.com` extension; with `[git] ssh_keys`, only those keys are listed and
//! only they sign. Everything else (removing keys, locking, adding keys or smartcard
//! providers, other extensions) is answered `SSH_AGENT_FAILURE` without reaching the agent and
//! recorded in the egress log (kind `ssh-agent`). A frame the protocol does not allow closes
//! the connection (fail closed), recorded too.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::net::{UnixListener, UnixStream};
use tokio::sync::watch;

use super::protocol::{self as p, FrameError};
use crate::egress::log::{Decision, EgressLog};
use crate::socket_server::accept;

/// Connections served at once (more wait to be accepted).
pub const MAX_CONNECTIONS: usize = 64;

/// The policy of one launch.
#[derive(Debug)]
pub struct Filter {
    /// The host agent's socket.
    pub upstream: PathBuf,
    /// The fingerprints of the only keys listed and used; empty: all.
    pub keys: Vec<String>,
    /// Where refusals are recorded.
    pub log: Arc<EgressLog>,
}

/// What becomes of a request.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Sent on to the agent.
    Pass,
    /// Answered `SSH_AGENT_FAILURE` here, for this reason.
    Refuse(String),
}

impl Filter {
    /// Decide a request (`msg`: type byte and payload).
    pub fn decide(&self, msg: &[u8]) -> Verdict {
        let (t, payload) = (msg[0], &msg[1..]);
        match t {
            p::REQUEST_IDENTITIES if payload.is_empty() => Verdict::Pass,
            p::SIGN_REQUEST => match p::sign_request_key(payload) {
                None => Verdict::Refuse("a malformed sign request".into()),
                Some(key) if !self.allowed(key) => Verdict::Refuse(format!(
                    "a sign request with key {}, which is not in [git] ssh_keys",
                    p::fingerprint(key)
                )),
                Some(_) => Verdict::Pass,
            },
            p::EXTENSION => match p::extension_name(payload) {
                Some(name) if name == p::SESSION_BIND.as_bytes() => Verdict::Pass,
                name => Verdict::Refuse(format!(
                    "the extension {:?}; only {} is forwarded",
                    String::from_utf8_lossy(name.unwrap_or_default()),
                    p::SESSION_BIND
                )),
            },
            _ => Verdict::Refuse(format!("message {t} ({})", p::type_name(t))),
        }
    }

    fn allowed(&self, key: &[u8]) -> bool {
        self.keys.is_empty() || self.keys.contains(&p::fingerprint(key))
    }

    /// The agent's answer as the container gets it: an identities answer narrowed to the
    /// configured keys (one that does not parse becomes a failure).
    pub fn answer(&self, request: u8, reply: Vec<u8>) -> Vec<u8> {
        if request != p::REQUEST_IDENTITIES || self.keys.is_empty() || reply[0] != p::IDENTITIES_ANSWER {
            return reply;
        }
        match p::identities(&reply[1..]) {
            Some(keys) => {
                let kept: Vec<_> = keys.into_iter().filter(|(blob, _)| self.allowed(blob)).collect();
                p::identities_answer(&kept)
            }
            None => vec![p::FAILURE],
        }
    }

    fn record(&self, decision: Decision, why: String) {
        let reason = format!(
            "{why}: refused by the ssh-agent filter; the container may only list identities, sign and bind sessions (docs/security.md)"
        );
        self.log
            .append(&self.log.record("ssh-agent", "ssh-agent", 0, decision, reason));
    }
}

/// Serve `listener` until `stop` turns true; then end every connection.
pub async fn serve(listener: UnixListener, filter: Arc<Filter>, mut stop: watch::Receiver<bool>) {
    let conns = accept(&listener, MAX_CONNECTIONS, &mut stop, |stream| {
        connection(stream, filter.clone())
    })
    .await;
    conns.abort().await;
}

/// Serve one connection from the container, message by message.
async fn connection(mut client: UnixStream, filter: Arc<Filter>) {
    let mut upstream: Option<UnixStream> = None;
    loop {
        let msg = match p::read_frame(&mut client).await {
            Ok(m) => m,
            Err(e @ FrameError::Length(_)) => {
                filter.record(Decision::Invalid, format!("{e}; the connection was closed"));
                return;
            }
            // Closed or failed (the client went away, mid-message or not).
            Err(_) => return,
        };
        let reply = match filter.decide(&msg) {
            Verdict::Refuse(why) => {
                filter.record(Decision::Refused, why);
                vec![p::FAILURE]
            }
            Verdict::Pass => match forward(&mut upstream, &filter, &msg).await {
                Some(reply) => filter.answer(msg[0], reply),
                None => return,
            },
        };
        if p::write_frame(&mut client, &reply).await.is_err() {
            return;
        }
    }
}

/// Send `msg` to the host agent (connecting first if needed) and read its answer; `None` when
/// the agent cannot be reached or answers outside the protocol (the connection is then closed).
async fn forward(upstream: &mut Option<UnixStream>, filter: &Filter, msg: &[u8]) -> Option<Vec<u8>> {
    if upstream.is_none() {
        match UnixStream::connect(&filter.upstream).await {
            Ok(s) => *upstream = Some(s),
            Err(_) => return Some(vec![p::FAILURE]),
        }
    }
    let up = upstream.as_mut()?;
    p::write_frame(up, msg).await.ok()?;
    p::read_frame(up).await.ok()
}

#[cfg(test)]
#[path = "filter_tests.rs"]
mod tests;
