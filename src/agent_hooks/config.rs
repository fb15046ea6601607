//! `[[agent_hook]]` handlers and the `[agent_guard]` (issue #14, docs/agent-hook-handlers.md):
//! what the dispatcher runs inside the container on the agent's hook events. Declared in the
//! global config and a trusted project overlay; parsed strictly (unknown keys, bad values and
//! limits are errors that name the key), merged global first. The guard's lists accumulate: an
//! overlay can add patterns, never take one of the global config's away.
//!
//! Handlers run inside the container, with no more authority than the agent itself, so no host
//! approval is needed: the global config is yours (its mode is checked), and the overlay's are
//! covered by trusting the repository's overlay (docs/configuration.md).

use std::fmt;
use std::path::{Component, Path};

use serde::de::{self, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

/// A declaration breaks a rule: `key` inside the file at `path` (wrapped by
/// `ConfigError::Invalid`, which names the file the same way).
#[derive(Debug, thiserror::Error)]
#[error("config {}: {key}: {message}", path.display())]
pub struct Invalid {
    pub path: std::path::PathBuf,
    pub key: String,
    pub message: String,
}

type Result<T> = std::result::Result<T, Invalid>;
use crate::agent_hooks::Event;

/// At most this many `[[agent_hook]]` tables across the global config and the overlay. With
/// [`MAX_TIMEOUT_SECONDS`] this keeps one event's handlers within the agents' own limit on one
/// hook run (`wiring::AGENT_TIMEOUT_SECONDS`).
pub const MAX_AGENT_HOOKS: usize = 16;
/// Largest `timeout_seconds` of one handler.
pub const MAX_TIMEOUT_SECONDS: u32 = 30;
/// Default `timeout_seconds`.
pub const DEFAULT_TIMEOUT_SECONDS: u32 = 10;
/// At most this many `deny` patterns, and as many `protect` prefixes, in total.
pub const MAX_GUARD_ENTRIES: usize = 256;
/// Longest guard entry, in bytes.
pub const MAX_GUARD_ENTRY_BYTES: usize = 1024;
/// At most this many command arguments; each at most [`MAX_ARG_BYTES`].
pub const MAX_ARGS: usize = 64;
/// Longest command argument, in bytes.
pub const MAX_ARG_BYTES: usize = 4096;

/// One `[[agent_hook]]` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentHookFile {
    /// `[A-Za-z0-9_-]`, at most 64 characters, unique across the config files.
    pub name: String,
    /// The normalised event (`pre_tool`, …).
    #[serde(deserialize_with = "super::event_serde::deserialize")]
    pub event: Event,
    /// Matcher: a glob (`*`, `?`) on the agent's tool name, or `shell` / `write` for the tool
    /// kinds. Only for `pre_tool` and `post_tool`.
    pub tool: Option<String>,
    /// Run inside the container: a string (run by `/bin/sh -c`) or an argv array.
    pub command: CommandFile,
    /// 1..=30 seconds (default 10).
    pub timeout_seconds: Option<i64>,
    /// What a failing handler means: `ignore` (default) or `block` (`pre_tool` only).
    pub on_failure: Option<OnFailure>,
}

/// `command`: a shell string or an argv array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandFile(pub Vec<String>);

impl<'de> Deserialize<'de> for CommandFile {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CommandFile;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string (run by /bin/sh -c) or an array of strings (argv)")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> std::result::Result<CommandFile, E> {
                Ok(CommandFile(vec!["/bin/sh".into(), "-c".into(), s.into()]))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<CommandFile, A::Error> {
                let mut out = Vec::new();
                while let Some(s) = seq.next_element::<String>()? {
                    out.push(s);
                }
                Ok(CommandFile(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// What a handler's failure (non-zero exit, crash, timeout, garbage output) means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnFailure {
    /// Recorded; the tool call goes on.
    #[default]
    Ignore,
    /// Recorded; the tool call is blocked (fail closed).
    Block,
}

/// `[agent_guard]` as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentGuardFile {
    /// Globs (`*`, `?`) on shell commands the agent runs.
    #[serde(default)]
    pub deny: Vec<String>,
    /// Path prefixes file-writing tools may not write under.
    #[serde(default)]
    pub protect: Vec<String>,
}

/// One resolved handler (non-secret; shown by `ags plan --json` and written to handlers.json).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentHook {
    /// Name (in records).
    pub name: String,
    /// Normalised event.
    #[serde(serialize_with = "super::event_serde::serialize")]
    pub event: Event,
    /// Tool matcher.
    pub tool: Option<String>,
    /// argv run inside the container.
    pub command: Vec<String>,
    /// Timeout in seconds.
    pub timeout_seconds: u32,
    /// What a failure means.
    pub on_failure: OnFailure,
    /// `global` or `project`.
    pub scope: &'static str,
}

/// The resolved `[agent_guard]`: the union of the global config's and the overlay's lists.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AgentGuard {
    /// Shell command globs.
    pub deny: Vec<String>,
    /// Protected path prefixes.
    pub protect: Vec<String>,
}

/// Handlers and guard of one invocation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AgentHookSettings {
    /// Handlers: global first, then the overlay's, in declaration order.
    pub handlers: Vec<AgentHook>,
    /// The guard.
    pub guard: AgentGuard,
}

impl AgentHookSettings {
    /// Whether no handler and no guard entry is declared.
    pub fn is_empty(&self) -> bool {
        self.handlers.is_empty() && self.guard.deny.is_empty() && self.guard.protect.is_empty()
    }
}

/// Resolve the declarations of the loaded files (global first) into one [`AgentHookSettings`].
pub fn resolve(
    files: &[(&Path, &[AgentHookFile], Option<&AgentGuardFile>, &'static str)],
) -> Result<AgentHookSettings> {
    let mut out = AgentHookSettings::default();
    for (path, hooks, guard, scope) in files {
        for (i, h) in hooks.iter().enumerate() {
            let invalid = |field: &str, message: String| Invalid {
                path: (*path).into(),
                key: format!("agent_hook[{i}].{field}"),
                message,
            };
            if out.handlers.len() == MAX_AGENT_HOOKS {
                return Err(invalid(
                    "name",
                    format!(
                        "more than {MAX_AGENT_HOOKS} [[agent_hook]] tables across the global config and the project overlay"
                    ),
                ));
            }
            let hook = resolve_one(h, scope, &invalid)?;
            if out.handlers.iter().any(|o| o.name == hook.name) {
                return Err(invalid(
                    "name",
                    format!(
                        "{:?} is declared twice; agent hook names are unique across the config files",
                        hook.name
                    ),
                ));
            }
            out.handlers.push(hook);
        }
        if let Some(g) = guard {
            let (deny, protect) = (&mut out.guard.deny, &mut out.guard.protect);
            for (field, list, entries) in [("deny", deny, &g.deny), ("protect", protect, &g.protect)] {
                for (i, entry) in entries.iter().enumerate() {
                    let invalid = |message: String| Invalid {
                        path: (*path).into(),
                        key: format!("agent_guard.{field}[{i}]"),
                        message,
                    };
                    check_guard_entry(field, entry).map_err(invalid)?;
                    if !list.contains(entry) {
                        list.push(entry.clone());
                    }
                    if list.len() > MAX_GUARD_ENTRIES {
                        return Err(invalid(format!(
                            "more than {MAX_GUARD_ENTRIES} entries across the global config and the project overlay"
                        )));
                    }
                }
            }
        }
    }
    Ok(out)
}

fn resolve_one(
    h: &AgentHookFile,
    scope: &'static str,
    invalid: &dyn Fn(&str, String) -> Invalid,
) -> Result<AgentHook> {
    if h.name.is_empty()
        || h.name.len() > 64
        || !h
            .name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(invalid(
            "name",
            "must be 1 to 64 characters of A-Z a-z 0-9 _ -".into(),
        ));
    }
    if let Some(why) = tool_problem(h) {
        return Err(invalid("tool", why));
    }
    let command = &h.command.0;
    if let Some(why) = command_problem(command) {
        return Err(invalid("command", why));
    }
    let timeout_seconds = match h.timeout_seconds {
        None => DEFAULT_TIMEOUT_SECONDS,
        Some(t) if (1..=i64::from(MAX_TIMEOUT_SECONDS)).contains(&t) => t as u32,
        Some(t) => {
            return Err(invalid(
                "timeout_seconds",
                format!("{t} is outside 1..={MAX_TIMEOUT_SECONDS}"),
            ));
        }
    };
    let on_failure = h.on_failure.unwrap_or_default();
    if on_failure == OnFailure::Block && h.event != Event::PreTool {
        return Err(invalid(
            "on_failure",
            format!(
                "\"block\" applies only to pre_tool (no other event can be blocked), not {}; use \"ignore\"",
                h.event
            ),
        ));
    }
    Ok(AgentHook {
        name: h.name.clone(),
        event: h.event,
        tool: h.tool.clone(),
        command: command.clone(),
        timeout_seconds,
        on_failure,
        scope,
    })
}

/// What is wrong with the handler's tool matcher, if anything.
fn tool_problem(h: &AgentHookFile) -> Option<String> {
    let t = h.tool.as_ref()?;
    if !h.event.has_tool() {
        return Some(format!(
            "a tool matcher applies only to the pre_tool and post_tool events, not {}; remove it",
            h.event
        ));
    }
    let bad = t.is_empty() || t.len() > 128 || t.chars().any(|c| c.is_control() || c.is_whitespace());
    bad.then(|| {
        "must be 1 to 128 characters without spaces or control characters (a tool name glob, or shell / write)"
            .into()
    })
}

/// What is wrong with the handler's command, if anything.
fn command_problem(command: &[String]) -> Option<String> {
    if command.is_empty() || command[0].is_empty() {
        return Some("must not be empty".into());
    }
    if command.len() > MAX_ARGS {
        return Some(format!("{} arguments; at most {MAX_ARGS}", command.len()));
    }
    let j = command
        .iter()
        .position(|a| a.contains('\0') || a.len() > MAX_ARG_BYTES)?;
    Some(format!(
        "argument {j} contains NUL or is longer than {MAX_ARG_BYTES} bytes"
    ))
}

fn check_guard_entry(field: &str, entry: &str) -> std::result::Result<(), String> {
    if entry.trim().is_empty() || entry.len() > MAX_GUARD_ENTRY_BYTES {
        return Err(format!(
            "must be non-blank and at most {MAX_GUARD_ENTRY_BYTES} bytes"
        ));
    }
    if entry.chars().any(|c| c.is_control()) {
        return Err("must not contain control characters (newline, tab, NUL…)".into());
    }
    if field == "protect" && Path::new(entry).components().any(|c| c == Component::ParentDir) {
        return Err(
            "must not contain `..` (an absolute prefix, or a relative one matched anywhere in a path)".into(),
        );
    }
    Ok(())
}
