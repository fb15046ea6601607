use ags_agent_hook::fixtures::{CLAUDE_PRE, GEMINI_PRE, OPENCODE_CREATED, handler};
use ags_agent_hook::flow::dispatch;
use ags_agent_hook::guard::Guard;
use ags_agent_hook::handlers::Handlers;

#[test]
fn records_parse_as_the_hosts_record_type() {
    use crate::agent_hooks::record::{self, Kind};
    let hs = Ok(Handlers {
        handlers: vec![
            handler("ok", "pre_tool", "true"),
            handler("garbage", "pre_tool", "echo '<html>'"),
            handler("deny", "pre_tool", "exit 2"),
            handler("later", "pre_tool", "true"),
        ],
        guard: Guard {
            deny: vec!["nothing*".into()],
            protect: vec![],
        },
        settings: Vec::new(),
    });
    // Long values are cut to the host's limits rather than refused.
    let long = CLAUDE_PRE
        .replace("\"s-1\"", &format!("\"{}\"", "s".repeat(1000)))
        .replace("git push --force origin main", &"x".repeat(10_000));
    let inputs: [(&str, &str, &[u8]); 6] = [
        ("claude", "PreToolUse", CLAUDE_PRE.as_bytes()),
        ("claude", "PreToolUse", long.as_bytes()),
        ("codex", "Stop", b"{}"),
        ("gemini", "BeforeTool", GEMINI_PRE.as_bytes()),
        ("opencode", "session.created", OPENCODE_CREATED.as_bytes()),
        ("pi", "tool_call", b"not json"),
    ];
    let mut kinds = Vec::new();
    for (agent, native, input) in inputs {
        let d = dispatch(agent, native, input, &hs, Some("/w".into()));
        for line in &d.records {
            let body = line.strip_suffix('\n').expect("newline-terminated");
            assert!(!body.contains('\n'));
            let r = record::parse_line(body.as_bytes()).unwrap_or_else(|e| panic!("{e}: {line}"));
            assert_eq!(r.agent, agent);
            kinds.push(r.kind);
        }
    }
    assert!(kinds.contains(&Kind::Event) && kinds.contains(&Kind::Handler));
}
