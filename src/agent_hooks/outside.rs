//! Programs an agent's own configuration starts outside any tool call (session-13 attack M4;
//! [decision 0007](../../docs/decisions/0007-programs-outside-tool-calls.md)): MCP servers,
//! claude's `apiKeyHelper` and `statusLine`, codex's `notify`, gemini's tool discovery and user
//! hooks, opencode's plugins, a `!command` value in pi's `models.json`. No agent's hooks see
//! them, so neither the guard nor the record does. They run in the same container, under the
//! same containment, and the agent can write the files that name them (its state volume).
//!
//! `ags` does not switch them off (MCP servers are a daily tool); it makes them visible: before
//! the container starts, the launch reads these files through Podman (the state at rest, before
//! anything the agent runs could change it), and the record gets one `unguarded` entry listing
//! each program with the file and key that name it. Pure: bytes in, descriptions out.

use serde_json::Value;

/// How one file names programs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// claude's `.claude.json`: `mcpServers`, and each project's.
    ClaudeState,
    /// claude's user settings: helpers and the status line.
    ClaudeSettings,
    /// codex's `config.toml`: `notify`, `mcp_servers`.
    CodexConfig,
    /// gemini's user settings: `mcpServers`, tool discovery, user hooks.
    GeminiSettings,
    /// opencode's user config: local `mcp` servers, `plugin`.
    OpencodeConfig,
    /// pi's `models.json`: any `!command` value.
    PiModels,
}

/// Largest file read; a larger one is listed as not read.
pub const MAX_BYTES: usize = 1024 * 1024;

/// The files of `agent`'s state (paths inside the container) that can name such programs.
pub fn files(agent: &str) -> &'static [(&'static str, Format)] {
    match agent {
        "claude" => &[
            ("/home/dev/.claude/.claude.json", Format::ClaudeState),
            // The legacy name claude reads when `.claude.json` is missing (S15-A3).
            ("/home/dev/.claude/.config.json", Format::ClaudeState),
            ("/home/dev/.claude/settings.json", Format::ClaudeSettings),
            ("/home/dev/.claude/settings.local.json", Format::ClaudeSettings),
        ],
        "codex" => &[("/home/dev/.codex/config.toml", Format::CodexConfig)],
        "gemini" => &[("/home/dev/.gemini/settings.json", Format::GeminiSettings)],
        "opencode" => &[
            ("/home/dev/.config/opencode/opencode.json", Format::OpencodeConfig),
            ("/home/dev/.config/opencode/config.json", Format::OpencodeConfig),
            // opencode writes this one itself (S15-A5).
            (
                "/home/dev/.config/opencode/opencode.jsonc",
                Format::OpencodeConfig,
            ),
        ],
        "pi" => &[
            ("/home/dev/.pi/agent/models.json", Format::PiModels),
            // pi runs a `!command` key here too (S15-A7).
            ("/home/dev/.pi/agent/auth.json", Format::PiModels),
        ],
        _ => &[],
    }
}

/// The programs the file `path` (its `bytes`, in `format`) starts, as `PATH: KEY: COMMAND`
/// (escaped, each command at most 200 characters); a file that cannot be parsed is one line
/// saying so.
pub fn programs(path: &str, format: Format, bytes: &[u8]) -> Vec<String> {
    let parsed = match format {
        Format::CodexConfig => std::str::from_utf8(bytes)
            .map_err(|e| e.to_string())
            .and_then(|t| toml::from_str::<toml::Value>(t).map_err(|e| e.message().to_string()))
            .and_then(|t| serde_json::to_value(t).map_err(|e| e.to_string())),
        Format::OpencodeConfig => {
            serde_json::from_slice::<Value>(&uncommented_json(bytes)).map_err(|e| e.to_string())
        }
        _ => serde_json::from_slice::<Value>(bytes).map_err(|e| e.to_string()),
    };
    let v = match parsed {
        Ok(v) => v,
        Err(e) => return vec![shown(path, "(the whole file)", &format!("not read: {e}"))],
    };
    let mut found: Vec<(String, String)> = Vec::new();
    match format {
        Format::ClaudeState => {
            servers(&v["mcpServers"], "mcpServers", &mut found);
            for (project, p) in v["projects"].as_object().into_iter().flatten() {
                servers(
                    &p["mcpServers"],
                    &format!("projects.{project}.mcpServers"),
                    &mut found,
                );
            }
        }
        Format::ClaudeSettings => {
            for key in [
                "apiKeyHelper",
                "awsAuthRefresh",
                "awsCredentialExport",
                "otelHeadersHelper",
            ] {
                text(&v[key], key, &mut found);
            }
            text(&v["statusLine"]["command"], "statusLine.command", &mut found);
            // Plugins bring MCP servers and skills of their own (S15-A4).
            for (plugin, on) in v["enabledPlugins"].as_object().into_iter().flatten() {
                if on.as_bool() != Some(false) {
                    found.push(("enabledPlugins".into(), plugin.clone()));
                }
            }
            text(
                &v["env"]["CLAUDE_CODE_PLUGIN_DIRS"],
                "env.CLAUDE_CODE_PLUGIN_DIRS",
                &mut found,
            );
        }
        Format::CodexConfig => {
            text(&v["notify"], "notify", &mut found);
            servers(&v["mcp_servers"], "mcp_servers", &mut found);
        }
        Format::GeminiSettings => {
            servers(&v["mcpServers"], "mcpServers", &mut found);
            text(
                &v["tools"]["discoveryCommand"],
                "tools.discoveryCommand",
                &mut found,
            );
            text(&v["tools"]["callCommand"], "tools.callCommand", &mut found);
            for (event, groups) in v["hooks"].as_object().into_iter().flatten() {
                for group in groups.as_array().into_iter().flatten() {
                    for hook in group["hooks"].as_array().into_iter().flatten() {
                        text(&hook["command"], &format!("hooks.{event}"), &mut found);
                    }
                }
            }
        }
        Format::OpencodeConfig => {
            servers(&v["mcp"], "mcp", &mut found);
            text(&v["plugin"], "plugin", &mut found);
        }
        Format::PiModels => bang_values(&v, "", &mut found),
    }
    found
        .into_iter()
        .map(|(key, command)| shown(path, &key, &command))
        .collect()
}

/// Each server of the table `v` that starts a local program (`command`, with its `args`).
fn servers(v: &Value, key: &str, found: &mut Vec<(String, String)>) {
    for (name, server) in v.as_object().into_iter().flatten() {
        let mut command = match &server["command"] {
            Value::Null => continue,
            c => words(c),
        };
        if let Some(args) = server["args"].as_array() {
            command.push(' ');
            command.push_str(&words(&Value::Array(args.clone())));
        }
        found.push((format!("{key}.{name}"), command));
    }
}

/// `v` when it is a string or an array of strings.
fn text(v: &Value, key: &str, found: &mut Vec<(String, String)>) {
    if !v.is_null() {
        found.push((key.to_string(), words(v)));
    }
}

/// Every string value under `v` that starts with `!`: pi runs it as a shell command.
fn bang_values(v: &Value, key: &str, found: &mut Vec<(String, String)>) {
    match v {
        Value::String(s) if s.starts_with('!') => found.push((key.to_string(), s.clone())),
        Value::Object(m) => {
            for (k, v) in m {
                let sub = if key.is_empty() {
                    k.clone()
                } else {
                    format!("{key}.{k}")
                };
                bang_values(v, &sub, found);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                bang_values(v, &format!("{key}[{i}]"), found);
            }
        }
        _ => {}
    }
}

/// A string, or the strings of an array joined by spaces, or the JSON text of anything else.
fn words(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_string))
            .collect::<Vec<_>>()
            .join(" "),
        other => other.to_string(),
    }
}

/// JSON with comments (`//`, `/* */`) and trailing commas, as opencode reads its `.jsonc`,
/// made plain JSON: comments become blanks, a comma before `}` or `]` is dropped. Strings are
/// left as they are.
fn uncommented_json(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let (mut i, mut in_string) = (0, false);
    while i < bytes.len() {
        let (c, next) = (bytes[i], bytes.get(i + 1).copied());
        if in_string {
            out.push(c);
            if c == b'\\' {
                out.extend(next);
                i += 1;
            } else if c == b'"' {
                in_string = false;
            }
        } else if c == b'/' && next == Some(b'/') {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            continue;
        } else if c == b'/' && next == Some(b'*') {
            i += 2;
            while i < bytes.len() && !(bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/')) {
                i += 1;
            }
            i += 2;
            out.push(b' ');
            continue;
        } else if c == b',' {
            let rest = bytes[i + 1..].iter().find(|b| !b.is_ascii_whitespace());
            if !matches!(rest, Some(b'}' | b']')) {
                out.push(c);
            }
        } else {
            in_string = c == b'"';
            out.push(c);
        }
        i += 1;
    }
    out
}

/// Programs named in one launch's record and warning, at most; the rest are counted.
pub const MAX_PROGRAMS: usize = 64;
/// Characters of one program's line, at most, before and after escaping.
const MAX_SHOWN: usize = 300;

/// `programs` (from the agent's own files, so of the agent's choosing) cut to [`MAX_PROGRAMS`]
/// lines and one that counts the rest: with [`shown`]'s cap, the unguarded entry stays a few
/// tens of KiB whatever the agent planted (session-18 attack B2: a 14.7 MB line).
pub fn bounded(mut programs: Vec<String>) -> Vec<String> {
    if programs.len() > MAX_PROGRAMS {
        let rest = programs.len() - MAX_PROGRAMS;
        programs.truncate(MAX_PROGRAMS);
        programs.push(format!("… and {rest} more, not named"));
    }
    programs
}

/// One program's line: the path, the key and the command, cut before and after escaping
/// (escaping can make a character several).
fn shown(path: &str, key: &str, command: &str) -> String {
    let raw: String = format!("{path}: {key}: {command}")
        .chars()
        .take(MAX_SHOWN)
        .collect();
    crate::text::escape_line(&raw).chars().take(MAX_SHOWN).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_agent_planted_is_named_within_bounds() {
        let key = "\u{202e}".repeat(10_000);
        let line = shown("/c.json", &key, &"x".repeat(10_000));
        assert!(line.chars().count() <= MAX_SHOWN, "{}", line.len());
        let many = bounded((0..1000).map(|i| format!("p{i}")).collect());
        assert_eq!(many.len(), MAX_PROGRAMS + 1);
        assert_eq!(many.last().unwrap(), "… and 936 more, not named");
    }

    #[test]
    fn each_agents_programs_are_named_with_their_key() {
        let claude = br#"{"mcpServers":{"x":{"type":"stdio","command":"sh","args":["-c","touch y"]}},"projects":{"/w":{"mcpServers":{"p":{"command":"node"}}}}}"#;
        let got = programs("/c.json", Format::ClaudeState, claude);
        assert_eq!(
            got,
            [
                "/c.json: mcpServers.x: sh -c touch y",
                "/c.json: projects./w.mcpServers.p: node"
            ]
        );
        let settings = br#"{"apiKeyHelper":"echo k","statusLine":{"type":"command","command":"s"}}"#;
        assert_eq!(programs("/s", Format::ClaudeSettings, settings).len(), 2);
        let codex =
            b"notify = [\"touch\", \"n\"]\n[mcp_servers.m]\ncommand = \"sh\"\nargs = [\"-c\", \"x\"]\n";
        assert_eq!(
            programs("/t", Format::CodexConfig, codex),
            ["/t: notify: touch n", "/t: mcp_servers.m: sh -c x"]
        );
        let gemini = br#"{"tools":{"discoveryCommand":"d"},"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"h"}]}]}}"#;
        assert_eq!(programs("/g", Format::GeminiSettings, gemini).len(), 2);
        let opencode = br#"{"mcp":{"x":{"type":"local","command":["sh","-c","y"]}},"plugin":["p"]}"#;
        assert_eq!(programs("/o", Format::OpencodeConfig, opencode).len(), 2);
        let pi = br#"{"providers":{"a":{"apiKey":"!touch k; echo t","headers":{"h":"plain"}}}}"#;
        assert_eq!(
            programs("/p", Format::PiModels, pi),
            ["/p: providers.a.apiKey: !touch k; echo t"]
        );
    }

    #[test]
    fn jsonc_comments_and_trailing_commas_are_read() {
        let jsonc =
            b"{ // c\n \"mcp\": {\"x\": {\"type\": \"local\", /* y */ \"command\": [\"a//b\", \"c\"],},}, }";
        assert_eq!(
            programs("/o", Format::OpencodeConfig, jsonc),
            ["/o: mcp.x: a//b c"]
        );
    }

    #[test]
    fn a_file_that_does_not_parse_is_named_and_text_is_escaped() {
        assert_eq!(programs("/x", Format::ClaudeSettings, b"{").len(), 1);
        let got = programs(
            "/x",
            Format::ClaudeSettings,
            b"{\"apiKeyHelper\":\"a\\u001b]0;x\"}",
        );
        assert!(!got[0].contains('\u{1b}'), "{got:?}");
        assert!(programs("/x", Format::ClaudeSettings, b"{}").is_empty());
    }
}
