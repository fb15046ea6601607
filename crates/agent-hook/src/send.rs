//! Records for the host (the wire format of `agent_hooks::record`, AGENT_HOOKS_CONTRACT): one
//! JSON object per line, written to the per-launch socket in one connection. Sending costs at
//! most [`SEND_TIMEOUT`] in all, whatever the socket does (a full backlog makes `connect`
//! block). A block, and every event that cannot block, is answered before the records are
//! sent: they cannot delay or lose it. A `pre_tool` call the hooks allow is answered only once
//! its records are delivered, and blocked when the socket is there but does not take them:
//! jamming the socket around one call no longer runs it unrecorded (session-12 attack F7).
//! With no socket at all (a launch without a record, a Kubernetes pod) nothing waits.

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::sync::mpsc;
use std::time::Duration;

use crate::input::{Normalised, truncate};
use crate::json::{self, Value};

/// How long sending the records may take, connecting included.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(2);

/// One record: `kind` is `event` or `handler`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record<'a> {
    /// `event` or `handler`.
    pub kind: &'static str,
    /// The handler's name (`guard` for the guard), `None` for the event record.
    pub handler: Option<&'a str>,
    /// `ok`, `failed`, `timeout`, `crashed`, `invalid_output`, `blocked`, `skipped`.
    pub outcome: &'static str,
    /// Exit status of a handler.
    pub exit_code: Option<i32>,
    /// Wall time.
    pub duration_ms: u64,
    /// `allow` / `block` on `pre_tool`, else `None`.
    pub decision: Option<&'static str>,
    /// Why (a block's reason, a failure).
    pub reason: Option<&'a str>,
}

/// Longest names (`agent`, `native_event`, `tool`, `handler`) the host accepts, in bytes.
pub const NAME_MAX: usize = 128;
/// Longest `session_id`.
pub const SESSION_ID_MAX: usize = 256;
/// Longest `cwd` and `reason`.
pub const TEXT_MAX: usize = 4096;

/// The JSON line of `r` about the invocation `n`; every string cut to the host's limits.
pub fn line(n: &Normalised, r: &Record<'_>) -> String {
    let num = |v: Option<i64>| v.map_or(Value::Null, |v| Value::Number(v.to_string()));
    let cut = |s: Option<&str>, max: usize| json::opt_str(s.map(|s| truncate(s, max)).as_deref());
    let mut s = json::object(vec![
        ("v", Value::Number("1".into())),
        ("kind", Value::String(r.kind.into())),
        ("agent", cut(Some(n.agent.as_str()), NAME_MAX)),
        ("event", json::opt_str(n.event.map(|e| e.as_str()))),
        ("native_event", cut(Some(n.native_event.as_str()), NAME_MAX)),
        ("session_id", cut(n.session_id.as_deref(), SESSION_ID_MAX)),
        ("cwd", cut(n.cwd.as_deref(), TEXT_MAX)),
        ("tool", cut(n.tool.as_deref(), NAME_MAX)),
        ("tool_input_summary", json::opt_str(n.summary().as_deref())),
        ("handler", cut(r.handler, NAME_MAX)),
        ("outcome", Value::String(r.outcome.into())),
        ("exit_code", num(r.exit_code.map(i64::from))),
        ("duration_ms", Value::Number(r.duration_ms.to_string())),
        ("decision", json::opt_str(r.decision)),
        ("reason", cut(r.reason, TEXT_MAX)),
    ])
    .to_json();
    s.push('\n');
    s
}

/// Whether the records reached the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    /// Written to the socket in full.
    Delivered,
    /// No socket at the path: this launch has no record.
    NoSocket,
    /// The socket is there but did not take them in time.
    Lost,
}

/// Write `lines` to the socket at `path`, waiting at most [`SEND_TIMEOUT`]. Std has no connect
/// timeout: the send runs on a thread of its own, which a dispatcher done waiting leaves behind
/// (its exit ends it).
pub fn send(path: &str, lines: &[String]) -> Sent {
    let (done, finished) = mpsc::channel::<Sent>();
    let path = path.to_owned();
    let data = lines.concat();
    let sender = std::thread::Builder::new().spawn(move || {
        let sent = match UnixStream::connect(&path) {
            Ok(mut stream) => {
                let _ = stream.set_write_timeout(Some(SEND_TIMEOUT));
                let written = stream.write_all(data.as_bytes()).is_ok()
                    && stream.shutdown(std::net::Shutdown::Write).is_ok();
                if written { Sent::Delivered } else { Sent::Lost }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Sent::NoSocket,
            Err(_) => Sent::Lost,
        };
        let _ = done.send(sent);
    });
    match sender {
        Ok(_) => finished.recv_timeout(SEND_TIMEOUT).unwrap_or(Sent::Lost),
        Err(_) => Sent::Lost,
    }
}
