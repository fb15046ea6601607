//! Answering the agent in its own protocol (REFERENCE §4):
//!
//! - claude, codex: allow = exit 0 with nothing on stdout (stdout of some events becomes model
//!   context); block a `pre_tool` call = exit 2 with the reason on stderr;
//! - gemini: allow = exit 0, nothing on stdout; block = exit 0 with
//!   `{"decision": "deny", "reason": "…"}` on stdout;
//! - opencode, pi (the generated JS shims): always exit 0 with one line
//!   `{"decision": "allow" | "block", "reason": "…"}` on stdout; the shim throws (opencode) or
//!   returns `{block: true, reason}` (pi).

use crate::json::{self, Value};

/// What the dispatcher prints and how it exits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// Exit status.
    pub exit_code: u8,
    /// Written to stdout.
    pub stdout: String,
    /// Written to stderr.
    pub stderr: String,
}

/// Why a call the hooks allowed is blocked after all: its record could not be written.
pub const UNRECORDED: &str = "ags agent hooks: the record of this call could not be written within 2 s (the record socket is jammed), so the tool call is blocked; try again";

/// The answer to `agent` for a decision: `block` is `Some(reason)` when a `pre_tool` call is
/// blocked.
pub fn answer(agent: &str, block: Option<&str>) -> Answer {
    let allow = Answer {
        exit_code: 0,
        stdout: String::new(),
        stderr: String::new(),
    };
    match (agent, block) {
        ("opencode" | "pi", None) => Answer {
            stdout: "{\"decision\":\"allow\"}\n".into(),
            ..allow
        },
        ("opencode" | "pi", Some(reason)) => Answer {
            stdout: line(json::object(vec![
                ("decision", Value::String("block".into())),
                ("reason", Value::String(reason.into())),
            ])),
            ..allow
        },
        ("gemini", Some(reason)) => Answer {
            stdout: line(json::object(vec![
                ("decision", Value::String("deny".into())),
                ("reason", Value::String(reason.into())),
            ])),
            ..allow
        },
        (_, Some(reason)) => Answer {
            exit_code: 2,
            stdout: String::new(),
            stderr: format!("{reason}\n"),
        },
        (_, None) => allow,
    }
}

fn line(v: Value) -> String {
    let mut s = v.to_json();
    s.push('\n');
    s
}
