//! The fixed interface between the host and the container: the paths of the dispatcher, its
//! handlers file and the record socket, and the normalised event names.

use std::fmt;
use std::str::FromStr;

/// Directory inside the container holding everything the dispatcher needs.
pub const CONTAINER_DIR: &str = "/run/ags-agent-hooks";

/// The dispatcher executable inside the container (mounted read-only).
pub const DISPATCHER_PATH: &str = "/run/ags-agent-hooks/ags-agent-hook";

/// The handlers and guard of the launch (non-secret JSON, mounted read-only).
pub const HANDLERS_PATH: &str = "/run/ags-agent-hooks/handlers.json";

/// Directory inside the container where the per-launch socket directory is mounted.
pub const SOCKET_DIR: &str = "/run/ags-agent-hooks/sock";

/// The per-launch unix socket to the host `ags` process (a stream socket; one JSON record per
/// line).
pub const SOCKET_PATH: &str = "/run/ags-agent-hooks/sock/record.sock";

/// The file name of the dispatcher program (this crate's program).
pub const DISPATCHER_PROGRAM: &str = "ags-agent-hook";

/// The normalised hook events, the same for every agent. Which native event of which agent maps
/// to which of these is the hook matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Event {
    /// A session begins.
    SessionStart,
    /// A session ends.
    SessionEnd,
    /// The user submitted a prompt.
    Prompt,
    /// Before a tool call (the only event where a handler or the guard can block).
    PreTool,
    /// After a tool call.
    PostTool,
    /// The agent finished its turn.
    Stop,
    /// The agent notifies the user.
    Notification,
    /// The conversation is about to be compacted.
    Compact,
}

impl Event {
    /// Every event, in the order of the docs.
    pub const ALL: [Event; 8] = [
        Event::SessionStart,
        Event::SessionEnd,
        Event::Prompt,
        Event::PreTool,
        Event::PostTool,
        Event::Stop,
        Event::Notification,
        Event::Compact,
    ];

    /// The normalised name (as in config files, records and docs).
    pub fn as_str(self) -> &'static str {
        match self {
            Event::SessionStart => "session_start",
            Event::SessionEnd => "session_end",
            Event::Prompt => "prompt",
            Event::PreTool => "pre_tool",
            Event::PostTool => "post_tool",
            Event::Stop => "stop",
            Event::Notification => "notification",
            Event::Compact => "compact",
        }
    }

    /// Whether the event concerns one tool call (so a `tool` matcher applies).
    pub fn has_tool(self) -> bool {
        matches!(self, Event::PreTool | Event::PostTool)
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An event name that is not one of [`Event::ALL`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownEvent(pub String);

impl fmt::Display for UnknownEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown agent hook event {:?}; the events are session_start, session_end, prompt, pre_tool, post_tool, stop, notification, compact",
            self.0
        )
    }
}

impl std::error::Error for UnknownEvent {}

impl FromStr for Event {
    type Err = UnknownEvent;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Event::ALL
            .into_iter()
            .find(|e| e.as_str() == s)
            .ok_or_else(|| UnknownEvent(s.to_owned()))
    }
}
