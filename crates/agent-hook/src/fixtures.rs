//! Native hook inputs as the pinned CLIs send them and a handler builder, shared by the
//! dispatcher's tests and `ags`'s tests of the host side (feature `testkit`).

use crate::handlers::Handler;

/// Native inputs as the pinned CLIs send them (REFERENCE §4; claude's schema, codex and gemini
/// Claude-like, opencode's `{input, output}` from the generated plugin, pi's event object).
pub const CLAUDE_PRE: &str = r#"{"session_id":"s-1","transcript_path":"/home/u/.claude/p.jsonl","cwd":"/workspace/p","permission_mode":"bypassPermissions","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"git push --force origin main","description":"push"}}"#;
pub const CODEX_PRE: &str = r#"{"session_id":"s-2","turn_id":"t-1","model":"m","cwd":"/workspace/p","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":["bash","-lc","ls -la"]}}"#;
pub const GEMINI_PRE: &str = r#"{"session_id":"s-3","transcript_path":"/t","cwd":"/workspace/p","hook_event_name":"BeforeTool","timestamp":"2026-12-01T00:00:00Z","tool_name":"write_file","tool_input":{"file_path":".git/hooks/pre-commit","content":"x"}}"#;
pub const OPENCODE_PRE: &str = r#"{"input":{"tool":"bash","sessionID":"ses_4","callID":"c1"},"output":{"args":{"command":"echo hi","description":"d"}}}"#;
pub const OPENCODE_CREATED: &str = r#"{"input":{"type":"session.created","properties":{"info":{"id":"ses_4","directory":"/workspace/p"}}},"output":null}"#;
pub const PI_PRE: &str = r#"{"type":"tool_call","toolName":"edit","toolCallId":"c1","input":{"path":"/workspace/p/src/a.rs","oldText":"a","newText":"b"}}"#;

/// A handler named `name` for `event` that runs `script` with `/bin/sh -c`.
pub fn handler(name: &str, event: &str, script: &str) -> Handler {
    Handler {
        name: name.into(),
        event: event.into(),
        tool: None,
        command: vec!["/bin/sh".into(), "-c".into(), script.into()],
        timeout_seconds: 2,
        block_on_failure: false,
    }
}
