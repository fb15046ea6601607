//! The handlers file (`/run/ags-agent-hooks/handlers.json`), written by the plan from
//! `[[agent_hook]]` and `[agent_guard]` (`agent_hooks::plan`), read by the dispatcher:
//!
//! ```json
//! {"v": 1,
//!  "handlers": [{"name": "audit", "event": "pre_tool", "tool": "shell" | null,
//!                "command": ["/bin/sh", "-c", "…"], "timeout_seconds": 10,
//!                "on_failure": "ignore" | "block", "scope": "global"}],
//!  "guard": {"deny": ["git push --force*"], "protect": [".git/hooks"]},
//!  "settings": ["/home/dev/.claude/settings.json", "/work/proj/.claude/settings.json"]}
//! ```
//!
//! `settings`: the agent's settings files the plan knows of (its state directory's and the
//! workdir's), checked at each `pre_tool` whatever the dispatcher's own environment says
//! (`settings::tampered`).

use crate::guard::{self, Guard};
use crate::input::{Normalised, ToolKind};
use crate::json::{self, Value};

/// Format version of the file.
pub const VERSION: &str = "1";

/// One handler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handler {
    /// Name (in records).
    pub name: String,
    /// Normalised event name.
    pub event: String,
    /// Tool matcher: a glob on the tool name, or `shell` / `write`.
    pub tool: Option<String>,
    /// argv.
    pub command: Vec<String>,
    /// Timeout in seconds.
    pub timeout_seconds: u64,
    /// A failure blocks (`on_failure = "block"`).
    pub block_on_failure: bool,
}

impl Handler {
    /// Whether the handler runs for `n`.
    pub fn matches(&self, n: &Normalised) -> bool {
        if n.event.map(|e| e.as_str()) != Some(self.event.as_str()) {
            return false;
        }
        let Some(matcher) = &self.tool else { return true };
        match (matcher.as_str(), n.tool_kind()) {
            ("shell", Some(ToolKind::Shell)) | ("write", Some(ToolKind::Write)) => true,
            _ => n.tool.as_deref().is_some_and(|t| guard::glob(matcher, t)),
        }
    }
}

/// The handlers and guard of the launch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Handlers {
    /// In declaration order.
    pub handlers: Vec<Handler>,
    /// The built-in guard.
    pub guard: Guard,
    /// The agent's settings files to check (absolute paths).
    pub settings: Vec<String>,
}

/// Parse the handlers file.
pub fn parse(bytes: &[u8]) -> Result<Handlers, String> {
    let v = json::parse(bytes)?;
    if v.get("v") != Some(&Value::Number(VERSION.into())) {
        return Err(format!("not version {VERSION} of the handlers file"));
    }
    let strings = |v: Option<&Value>, what: &str| -> Result<Vec<String>, String> {
        match v {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|i| {
                    i.as_str()
                        .map(str::to_owned)
                        .ok_or(format!("{what}: not a string"))
                })
                .collect(),
            Some(_) => Err(format!("{what}: not an array")),
        }
    };
    let mut handlers = Vec::new();
    let list = match v.get("handlers") {
        Some(Value::Array(items)) => items.as_slice(),
        _ => return Err("handlers: not an array".into()),
    };
    for (i, h) in list.iter().enumerate() {
        let field = |k: &str| h.get(k).and_then(Value::as_str).map(str::to_owned);
        let name = field("name").ok_or(format!("handlers[{i}].name missing"))?;
        let event = field("event").ok_or(format!("handlers[{i}].event missing"))?;
        let command = strings(h.get("command"), "command")?;
        if command.is_empty() {
            return Err(format!("handlers[{i}].command is empty"));
        }
        let timeout_seconds = match h.get("timeout_seconds") {
            Some(Value::Number(n)) => n.parse().map_err(|_| format!("handlers[{i}].timeout_seconds"))?,
            _ => return Err(format!("handlers[{i}].timeout_seconds missing")),
        };
        handlers.push(Handler {
            name,
            event,
            tool: field("tool"),
            command,
            timeout_seconds,
            block_on_failure: field("on_failure").as_deref() == Some("block"),
        });
    }
    let g = v.get("guard").cloned().unwrap_or(Value::Null);
    Ok(Handlers {
        handlers,
        guard: Guard {
            deny: strings(g.get("deny"), "guard.deny")?,
            protect: strings(g.get("protect"), "guard.protect")?,
        },
        settings: strings(v.get("settings"), "settings")?,
    })
}
