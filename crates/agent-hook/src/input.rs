//! Normalising an agent's native hook input (REFERENCE §4, docs/agent-hook-handlers.md) into
//! one shape: agent, event, tool name and kind, tool input, session id, cwd.
//!
//! - claude, codex, gemini: a JSON object on stdin with `session_id`, `cwd`, `tool_name`,
//!   `tool_input` (codex and gemini are Claude-like);
//! - opencode: the generated plugin sends `{"input", "output"}` of the plugin hook (tool hooks:
//!   `input.tool`, `input.sessionID`, `output.args`), or of a bus event (`input` is the event,
//!   `{type, properties}`);
//! - pi: the generated extension sends the event object (`toolName`, `input`).
//!
//! Nothing here fails: an input that is not JSON becomes `Value::Null` and is recorded so.

use crate::Event;
use crate::json::{self, Value};
use crate::matrix;

/// What kind of tool a tool name is (for `tool = "shell"` / `"write"` matchers and the guard).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    /// Runs a shell command.
    Shell,
    /// Writes or edits files.
    Write,
    /// Anything else.
    Other,
}

impl ToolKind {
    /// `shell`, `write` or `other`.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolKind::Shell => "shell",
            ToolKind::Write => "write",
            ToolKind::Other => "other",
        }
    }
}

/// Shell tools of the pinned agents (claude/codex `Bash`, codex `exec_command`/`shell`, gemini
/// `run_shell_command`, opencode/pi `bash`), compared case-insensitively.
const SHELL_TOOLS: &[&str] = &[
    "bash",
    "shell",
    "exec_command",
    "shell_command",
    "local_shell",
    "run_shell_command",
];

/// File-writing tools (claude `Write`/`Edit`/`MultiEdit`/`NotebookEdit`, codex `apply_patch`,
/// gemini `write_file`/`replace`, opencode `write`/`edit`/`patch`/`multiedit`, pi
/// `write`/`edit`), compared case-insensitively.
const WRITE_TOOLS: &[&str] = &[
    "write",
    "edit",
    "multiedit",
    "notebookedit",
    "apply_patch",
    "write_file",
    "replace",
    "patch",
];

/// The kind of `tool`.
pub fn tool_kind(tool: &str) -> ToolKind {
    let t = tool.to_ascii_lowercase();
    if SHELL_TOOLS.contains(&t.as_str()) {
        ToolKind::Shell
    } else if WRITE_TOOLS.contains(&t.as_str()) {
        ToolKind::Write
    } else {
        ToolKind::Other
    }
}

/// One hook invocation, normalised.
#[derive(Debug, Clone, PartialEq)]
pub struct Normalised {
    /// The agent (`--agent`).
    pub agent: String,
    /// The native event (`--event`).
    pub native_event: String,
    /// The normalised event, when the matrix wires this native event for this agent.
    pub event: Option<Event>,
    /// The agent's session id, if it says.
    pub session_id: Option<String>,
    /// The working directory of the agent (its input's, else the dispatcher's).
    pub cwd: Option<String>,
    /// The tool's name (tool events).
    pub tool: Option<String>,
    /// The tool's arguments (tool events; `Null` otherwise).
    pub tool_input: Value,
    /// The native input as received (`Null` when it was not JSON).
    pub raw: Value,
    /// Why the input could not be read, if it could not.
    pub input_error: Option<String>,
}

impl Normalised {
    /// The kind of the tool, if there is one.
    pub fn tool_kind(&self) -> Option<ToolKind> {
        self.tool.as_deref().map(tool_kind)
    }

    /// The shell command of a shell tool call. An argv such as codex's `["bash", "-lc", CMD]`
    /// is reduced to `CMD`; any other argv is joined with spaces.
    pub fn shell_command(&self) -> Option<String> {
        if self.tool_kind() != Some(ToolKind::Shell) {
            return None;
        }
        match self.tool_input.find(&["command", "cmd"])? {
            Value::String(s) => Some(s.clone()),
            Value::Array(items) => {
                let argv: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
                match argv.as_slice() {
                    [sh, flag, cmd] if is_shell(sh) && flag.starts_with('-') && flag.ends_with('c') => {
                        Some((*cmd).to_owned())
                    }
                    _ => Some(argv.join(" ")),
                }
            }
            _ => None,
        }
    }

    /// The paths a file-writing tool call writes (as given; relative ones are relative to
    /// [`Normalised::cwd`]). Patch tools name theirs inside the patch text.
    pub fn write_paths(&self) -> Vec<String> {
        if self.tool_kind() != Some(ToolKind::Write) {
            return Vec::new();
        }
        let mut out: Vec<String> = ["file_path", "filePath", "path", "notebook_path", "absolute_path"]
            .iter()
            .filter_map(|k| self.tool_input.get(k)?.as_str())
            .map(str::to_owned)
            .collect();
        for key in ["patch", "input", "command", "patchText"] {
            let text = match self.tool_input.get(key) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Array(items)) => items
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join("\n"),
                _ => continue,
            };
            for line in text.lines() {
                for prefix in [
                    "*** Add File: ",
                    "*** Update File: ",
                    "*** Delete File: ",
                    "*** Move to: ",
                ] {
                    if let Some(p) = line.strip_prefix(prefix) {
                        out.push(p.trim().to_owned());
                    }
                }
            }
        }
        out.retain(|p| !p.is_empty());
        out.dedup();
        out
    }

    /// What a record shows of the tool input: the shell command or the written paths, else
    /// nothing; at most [`SUMMARY_MAX`] bytes.
    pub fn summary(&self) -> Option<String> {
        let s = self
            .shell_command()
            .or_else(|| Some(self.write_paths().join(" ")).filter(|s| !s.is_empty()))?;
        Some(truncate(&s, SUMMARY_MAX))
    }

    /// The JSON a handler gets on stdin.
    pub fn to_handler_json(&self) -> String {
        json::object(vec![
            ("v", Value::Number("1".into())),
            ("agent", Value::String(self.agent.clone())),
            ("event", json::opt_str(self.event.map(Event::as_str))),
            ("native_event", Value::String(self.native_event.clone())),
            ("session_id", json::opt_str(self.session_id.as_deref())),
            ("cwd", json::opt_str(self.cwd.as_deref())),
            ("tool", json::opt_str(self.tool.as_deref())),
            ("tool_kind", json::opt_str(self.tool_kind().map(ToolKind::as_str))),
            ("tool_input", self.tool_input.clone()),
            ("command", json::opt_str(self.shell_command().as_deref())),
            ("input", self.raw.clone()),
        ])
        .to_json()
    }
}

/// Longest tool input summary in a record, in bytes.
pub const SUMMARY_MAX: usize = 4096;

/// `s` cut to at most `max` bytes on a character boundary.
pub fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_owned()
}

fn is_shell(prog: &str) -> bool {
    let name = prog.rsplit('/').next().unwrap_or(prog);
    matches!(name, "sh" | "bash" | "zsh" | "dash" | "ash")
}

/// Normalise `input` (the bytes the agent or its shim wrote) of `agent`'s `native` event.
/// `fallback_cwd` is the dispatcher's own working directory (the agent's, it spawned us).
pub fn normalise(agent: &str, native: &str, input: &[u8], fallback_cwd: Option<String>) -> Normalised {
    let (raw, input_error) = match json::parse(input) {
        Ok(v) => (v, None),
        Err(e) => (Value::Null, Some(format!("the hook input is not JSON ({e})"))),
    };
    let event = matrix::normalise(agent, native);
    let (session_id, cwd, tool, tool_input) = match agent {
        "opencode" => {
            let input = raw.get("input").cloned().unwrap_or(Value::Null);
            let output = raw.get("output").cloned().unwrap_or(Value::Null);
            let session = input.str_at(&[
                "sessionID",
                "properties.sessionID",
                "properties.info.id",
                "properties.info.sessionID",
            ]);
            let tool = input.str_at(&["tool"]);
            let args = output
                .get("args")
                .or_else(|| input.get("args"))
                .cloned()
                .unwrap_or(Value::Null);
            let cwd = input.str_at(&["properties.info.directory"]);
            (session, cwd, tool, args)
        }
        "pi" => (
            raw.str_at(&["sessionId", "session_id", "sessionFile"]),
            raw.str_at(&["cwd"]),
            raw.str_at(&["toolName", "tool_name"]),
            raw.find(&["input", "args"]).cloned().unwrap_or(Value::Null),
        ),
        _ => (
            raw.str_at(&["session_id", "sessionId"]),
            raw.str_at(&["cwd"]),
            raw.str_at(&["tool_name"]),
            raw.get("tool_input").cloned().unwrap_or(Value::Null),
        ),
    };
    let has_tool = event.is_none_or(Event::has_tool);
    Normalised {
        agent: agent.to_owned(),
        native_event: native.to_owned(),
        event,
        session_id,
        cwd: cwd.or(fallback_cwd),
        tool: tool.filter(|_| has_tool),
        tool_input: if has_tool { tool_input } else { Value::Null },
        raw,
        input_error,
    }
}
