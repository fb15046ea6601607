//! The agent hook record (docs/agent-hooks.md "The record"): the wire format between the
//! dispatcher in the container and the `ags` process of the launch, and the line format of the
//! host log `$XDG_STATE_HOME/ags/agent-hooks.jsonl`.
//!
//! On the wire the dispatcher connects to [`super::SOCKET_PATH`] once per invocation, writes
//! newline-terminated [`Record`]s and closes: one `kind: "event"` record per hook invocation (its
//! `decision` is the final decision) and one `kind: "handler"` record per handler run (the
//! guard included). The host parses each line strictly ([`parse_line`]: at most
//! [`MAX_LINE_BYTES`], duplicate keys and unknown fields refused, every string bounded, errors
//! that never quote a value), stamps it ([`Entry`]: `time`, `launch_id`) and appends it; a line
//! that does not parse is appended as an [`Invalid`] entry instead. `null` and a missing member
//! both mean "none" for the optional fields.
//!
//! A leaf module: pure, no I/O.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, DeserializeOwned, Deserializer, IntoDeserializer, Visitor};
use serde::{Deserialize, Serialize};

use super::Event;

/// Version of the record format (`v`).
pub const RECORD_VERSION: u32 = 1;

/// Longest line the host accepts, newline excluded (a longer one is recorded as invalid).
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// The longest strings, in bytes, as the dispatcher cuts them: `tool_input_summary` (the shell
/// command or file path); `agent`, `native_event`, `tool` and `handler`; `session_id`; `cwd`
/// and `reason`.
pub use ags_agent_hook::input::SUMMARY_MAX as MAX_SUMMARY_BYTES;
pub use ags_agent_hook::send::{
    NAME_MAX as MAX_NAME_BYTES, SESSION_ID_MAX as MAX_SESSION_ID_BYTES, TEXT_MAX as MAX_TEXT_BYTES,
};

/// What a record describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// One hook invocation of the agent (one per event the agent fired).
    Event,
    /// One handler run (a `[[agent_hook]]` handler or the built-in guard).
    Handler,
}

/// How an event or a handler run ended (the dispatcher's type: both sides spell it one way).
pub use ags_agent_hook::run::Outcome;

/// A decision about a tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Let it run.
    Allow,
    /// Block it.
    Block,
}

/// One record as the dispatcher sends it (one JSON line). Every string is bounded (see
/// [`Record::check`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    /// Format version, [`RECORD_VERSION`].
    pub v: u32,
    /// Event or handler run.
    pub kind: Kind,
    /// The agent (a name of the agent table).
    pub agent: String,
    /// The normalised event.
    #[serde(serialize_with = "super::event_serde::serialize", deserialize_with = "event")]
    pub event: Event,
    /// The agent's own event name (`PreToolUse`, `tool.execute.before`, …).
    pub native_event: String,
    /// The agent's session id, when its hook input has one.
    #[serde(default, deserialize_with = "nullable")]
    pub session_id: Option<String>,
    /// The working directory the agent reported.
    #[serde(default, deserialize_with = "nullable")]
    pub cwd: Option<String>,
    /// The tool (`pre_tool`, `post_tool`), as the agent names it (`Bash`, `run_shell_command`…).
    #[serde(default, deserialize_with = "nullable")]
    pub tool: Option<String>,
    /// The shell command or file path of the tool call, at most [`MAX_SUMMARY_BYTES`].
    #[serde(default, deserialize_with = "nullable")]
    pub tool_input_summary: Option<String>,
    /// The handler (`guard` for the built-in guard); `None` for `kind: "event"`.
    #[serde(default, deserialize_with = "nullable")]
    pub handler: Option<String>,
    /// How it ended.
    #[serde(serialize_with = "outcome_name", deserialize_with = "outcome")]
    pub outcome: Outcome,
    /// The handler's exit code, when it exited.
    #[serde(default, deserialize_with = "nullable")]
    pub exit_code: Option<i32>,
    /// How long it took, in milliseconds.
    pub duration_ms: u64,
    /// The decision (for an event: the final one the agent got).
    #[serde(default, deserialize_with = "nullable")]
    pub decision: Option<Decision>,
    /// Why (a block's reason, a failure's description).
    #[serde(default, deserialize_with = "nullable")]
    pub reason: Option<String>,
}

/// Why a line is not a valid record. The messages name the field and the rule, never a value
/// (an unknown key is named in the JSON path; the host scrubs every message before it is logged).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// The line is longer than [`MAX_LINE_BYTES`].
    #[error("the line has {len} bytes, more than the limit of {MAX_LINE_BYTES}")]
    LineTooLong {
        /// Its length (as far as it was read).
        len: usize,
    },
    /// Not a JSON record.
    #[error("not a record: {0}")]
    Json(#[from] crate::json::JsonError),
    /// `v` is not [`RECORD_VERSION`].
    #[error("v is {found}; this ags reads version {RECORD_VERSION}")]
    Version {
        /// The version found.
        found: u32,
    },
    /// `agent` is not in the agent table.
    #[error("agent is not one of {}", crate::agents::names())]
    UnknownAgent,
    /// A string field is too long.
    #[error("{field} has {len} bytes, more than the limit of {limit}")]
    TooLong {
        /// The field.
        field: &'static str,
        /// Its length.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// A required string is empty.
    #[error("{field} is empty")]
    Empty {
        /// The field.
        field: &'static str,
    },
    /// `agent` is not the agent of the launch whose socket received the record (checked by
    /// the host).
    #[error("agent does not name this launch's agent, {launch}")]
    WrongAgent {
        /// The launch's agent.
        launch: String,
    },
    /// `handler` does not fit `kind`.
    #[error("a {kind} record must {rule}")]
    Handler {
        /// `event` or `handler`.
        kind: &'static str,
        /// What it must do.
        rule: &'static str,
    },
}

/// Parse and check one line (without its newline).
pub fn parse_line(line: &[u8]) -> Result<Record, RecordError> {
    if line.len() > MAX_LINE_BYTES {
        return Err(RecordError::LineTooLong { len: line.len() });
    }
    let record: Record = crate::json::from_slice(line)?;
    record.check()?;
    Ok(record)
}

impl Record {
    /// The rules between and within fields that serde does not check.
    pub fn check(&self) -> Result<(), RecordError> {
        if self.v != RECORD_VERSION {
            return Err(RecordError::Version { found: self.v });
        }
        let limits: [(&'static str, Option<&String>, usize); 8] = [
            ("agent", Some(&self.agent), MAX_NAME_BYTES),
            ("native_event", Some(&self.native_event), MAX_NAME_BYTES),
            ("session_id", self.session_id.as_ref(), MAX_SESSION_ID_BYTES),
            ("cwd", self.cwd.as_ref(), MAX_TEXT_BYTES),
            ("tool", self.tool.as_ref(), MAX_NAME_BYTES),
            (
                "tool_input_summary",
                self.tool_input_summary.as_ref(),
                MAX_SUMMARY_BYTES,
            ),
            ("handler", self.handler.as_ref(), MAX_NAME_BYTES),
            ("reason", self.reason.as_ref(), MAX_TEXT_BYTES),
        ];
        for (field, value, limit) in limits {
            if let Some(v) = value
                && v.len() > limit
            {
                return Err(RecordError::TooLong {
                    field,
                    len: v.len(),
                    limit,
                });
            }
        }
        if crate::agents::find(&self.agent).is_none() {
            return Err(RecordError::UnknownAgent);
        }
        if self.native_event.is_empty() {
            return Err(RecordError::Empty {
                field: "native_event",
            });
        }
        match (self.kind, &self.handler) {
            (Kind::Event, None) => Ok(()),
            (Kind::Handler, Some(h)) if !h.is_empty() => Ok(()),
            (Kind::Handler, Some(_)) => Err(RecordError::Empty { field: "handler" }),
            (Kind::Event, Some(_)) => Err(RecordError::Handler {
                kind: "event",
                rule: "have handler null",
            }),
            (Kind::Handler, None) => Err(RecordError::Handler {
                kind: "handler",
                rule: "name its handler",
            }),
        }
    }

    /// Every string field that came from the container (for scrubbing).
    pub fn strings_mut(&mut self) -> impl Iterator<Item = &mut String> {
        [&mut self.agent, &mut self.native_event].into_iter().chain(
            [
                &mut self.session_id,
                &mut self.cwd,
                &mut self.tool,
                &mut self.tool_input_summary,
                &mut self.handler,
                &mut self.reason,
            ]
            .into_iter()
            .flatten(),
        )
    }

    /// The record as one line: compact JSON and a newline (what the dispatcher writes).
    #[cfg(test)]
    pub fn to_line(&self) -> Vec<u8> {
        let mut line = serde_json::to_vec(self).expect("a record serializes");
        line.push(b'\n');
        line
    }
}

/// `s` cut to at most `max` bytes at a character boundary (for the dispatcher's summaries).
#[cfg(test)]
pub fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The tag of an [`Invalid`] entry (`"kind": "invalid"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InvalidKind {
    /// The only value.
    Invalid,
}

/// A line from the container that is not a valid record (or the note that records were
/// dropped): recorded instead of it, without its content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Invalid {
    /// Format version, [`RECORD_VERSION`].
    pub v: u32,
    /// Always `invalid`.
    pub kind: InvalidKind,
    /// What was wrong (a [`RecordError`], scrubbed).
    pub error: String,
    /// The length of the line, in bytes.
    pub bytes: u64,
}

impl Invalid {
    /// An entry for a line of `bytes` bytes that failed with `error`.
    pub fn new(error: String, bytes: usize) -> Self {
        Self {
            v: RECORD_VERSION,
            kind: InvalidKind::Invalid,
            error,
            bytes: bytes as u64,
        }
    }
}

/// The tag of an [`Incomplete`] entry (`"kind": "incomplete"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IncompleteKind {
    /// The only value.
    Incomplete,
}

/// The host's verdict at the end of a launch whose record lacks events the agent should have
/// sent (`crate::agent_hooks::log::complete`): written by `ags`, never taken from the container.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Incomplete {
    /// Format version, [`RECORD_VERSION`].
    pub v: u32,
    /// Always `incomplete`.
    pub kind: IncompleteKind,
    /// The launch's agent.
    pub agent: String,
    /// What is missing, one sentence each.
    pub missing: Vec<String>,
}

/// The tag of an [`Unguarded`] entry (`"kind": "unguarded"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnguardedKind {
    /// The only value.
    Unguarded,
}

/// The programs the agent's configuration starts outside any tool call, read before the
/// container started (`agent_hooks::outside`): written by `ags`, never taken from the container.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Unguarded {
    /// Format version, [`RECORD_VERSION`].
    pub v: u32,
    /// Always `unguarded`.
    pub kind: UnguardedKind,
    /// The launch's agent.
    pub agent: String,
    /// `FILE: KEY: COMMAND`, one per program.
    pub programs: Vec<String>,
}

/// What a log line holds besides its stamp.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Line {
    /// A valid record.
    Record(Record),
    /// A line that was not one.
    Invalid(Invalid),
    /// The launch ended with its record incomplete.
    Incomplete(Incomplete),
    /// Programs the agent's configuration starts outside tool calls.
    Unguarded(Unguarded),
}

/// One line of the host log: the record (or the invalid line) with the host's stamp, as one
/// flat JSON object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// When the host received it, RFC 3339 UTC.
    pub time: String,
    /// The launch whose container sent it.
    pub launch_id: String,
    /// The tool call the host numbered for an allowed `pre_tool` and its `post_tool`
    /// (`crate::agent_hooks::calls`); egress records made during it name it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
    /// The record.
    #[serde(flatten)]
    pub line: Line,
}

impl Entry {
    /// The record, when the line was a valid one.
    #[cfg(test)]
    pub fn record(&self) -> Option<&Record> {
        match &self.line {
            Line::Record(r) => Some(r),
            Line::Invalid(_) | Line::Incomplete(_) | Line::Unguarded(_) => None,
        }
    }
}

/// An outcome by its name.
fn outcome_name<S: serde::Serializer>(outcome: &Outcome, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(outcome.as_str())
}

/// An outcome's name, with an error that names the outcomes, not the value.
fn outcome<'de, D: Deserializer<'de>>(d: D) -> Result<Outcome, D::Error> {
    let s = String::deserialize(d)?;
    Outcome::ALL.into_iter().find(|o| o.as_str() == s).ok_or_else(|| {
        let names: Vec<&str> = Outcome::ALL.iter().map(|o| o.as_str()).collect();
        let expected = format!("an outcome: {}", names.join(", "));
        de::Error::invalid_value(de::Unexpected::Other("another string"), &expected.as_str())
    })
}

/// The normalised event, with an error that names the events, not the value.
fn event<'de, D: Deserializer<'de>>(d: D) -> Result<Event, D::Error> {
    let s = String::deserialize(d)?;
    s.parse().map_err(|_| {
        de::Error::invalid_value(
            de::Unexpected::Str(&s),
            &"an event: session_start, session_end, prompt, pre_tool, post_tool, stop, notification, compact",
        )
    })
}

/// Deserialize an optional field where `null` and a value are both accepted (the strict
/// decoder of `crate::json` never reads `null` as `None` by itself).
fn nullable<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Option<T>, D::Error> {
    d.deserialize_any(Nullable(PhantomData))
}

struct Nullable<T>(PhantomData<T>);

impl<'de, T: DeserializeOwned> Visitor<'de> for Nullable<T> {
    type Value = Option<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a value or null")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        T::deserialize(d).map(Some)
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
        T::deserialize(s.into_deserializer()).map(Some)
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Self::Value, E> {
        T::deserialize(n.into_deserializer()).map(Some)
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Self::Value, E> {
        T::deserialize(n.into_deserializer()).map(Some)
    }

    fn visit_f64<E: de::Error>(self, n: f64) -> Result<Self::Value, E> {
        T::deserialize(n.into_deserializer()).map(Some)
    }

    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Self::Value, E> {
        T::deserialize(b.into_deserializer()).map(Some)
    }
}

#[cfg(test)]
#[path = "record_tests.rs"]
mod tests;
