use crate::answer::answer;
use crate::fixtures::*;
use crate::flow::dispatch;
use crate::guard::{self, Guard, Verdict};
use crate::handlers::{self, Handlers};
use crate::input::{ToolKind, normalise};
use crate::json::{self, Value};
use crate::run::{self, Outcome};
use crate::*;

#[test]
fn json_round_trips_and_refuses_what_it_must() {
    let text = r#"{"a":[1,-2.5e3,true,null,"x\"\\\n\u00e9\ud83d\ude00"],"b":{}}"#;
    let v = json::parse(text.as_bytes()).unwrap();
    assert_eq!(json::parse(v.to_json().as_bytes()).unwrap(), v);
    assert_eq!(
        v.find(&["a"])
            .map(|a| matches!(a, Value::Array(x) if x.len() == 5)),
        Some(true)
    );
    assert!(v.to_json().contains("é😀"));
    for bad in [
        r#"{"a":1,"a":2}"#,
        "{} x",
        "[1,]",
        "\"\u{1}\"",
        "01x",
        "\"\\ud800\"",
        "",
    ] {
        assert!(json::parse(bad.as_bytes()).is_err(), "{bad:?}");
    }
    let deep = "[".repeat(json::MAX_DEPTH + 2);
    assert!(
        json::parse(deep.as_bytes())
            .unwrap_err()
            .contains("nested too deeply")
    );
    assert_eq!(
        Value::String("\u{1b}[31m\n".into()).to_json(),
        r#""\u001b[31m\n""#
    );
}

#[test]
fn every_agents_input_is_normalised_to_one_shape() {
    let c = normalise("claude", "PreToolUse", CLAUDE_PRE.as_bytes(), None);
    assert_eq!(c.event, Some(Event::PreTool));
    assert_eq!(
        (c.session_id.as_deref(), c.cwd.as_deref()),
        (Some("s-1"), Some("/workspace/p"))
    );
    assert_eq!(
        (c.tool.as_deref(), c.tool_kind()),
        (Some("Bash"), Some(ToolKind::Shell))
    );
    assert_eq!(c.shell_command().as_deref(), Some("git push --force origin main"));

    let x = normalise("codex", "PreToolUse", CODEX_PRE.as_bytes(), None);
    assert_eq!(x.shell_command().as_deref(), Some("ls -la"));

    let g = normalise("gemini", "BeforeTool", GEMINI_PRE.as_bytes(), None);
    assert_eq!(
        (g.event, g.tool_kind()),
        (Some(Event::PreTool), Some(ToolKind::Write))
    );
    assert_eq!(g.write_paths(), [".git/hooks/pre-commit"]);
    assert_eq!(g.summary().as_deref(), Some(".git/hooks/pre-commit"));

    let o = normalise(
        "opencode",
        "tool.execute.before",
        OPENCODE_PRE.as_bytes(),
        Some("/w".into()),
    );
    assert_eq!(
        (o.session_id.as_deref(), o.cwd.as_deref()),
        (Some("ses_4"), Some("/w"))
    );
    assert_eq!(o.shell_command().as_deref(), Some("echo hi"));
    let oc = normalise("opencode", "session.created", OPENCODE_CREATED.as_bytes(), None);
    assert_eq!(oc.event, Some(Event::SessionStart));
    assert_eq!(
        (oc.session_id.as_deref(), oc.cwd.as_deref()),
        (Some("ses_4"), Some("/workspace/p"))
    );
    assert_eq!(oc.tool, None);

    let p = normalise("pi", "tool_call", PI_PRE.as_bytes(), Some("/w".into()));
    assert_eq!((p.event, p.tool.as_deref()), (Some(Event::PreTool), Some("edit")));
    assert_eq!(p.write_paths(), ["/workspace/p/src/a.rs"]);

    let h: Value = json::parse(c.to_handler_json().as_bytes()).unwrap();
    assert_eq!(h.str_at(&["event"]).as_deref(), Some("pre_tool"));
    assert_eq!(h.str_at(&["tool_kind"]).as_deref(), Some("shell"));
    assert_eq!(
        h.str_at(&["input.transcript_path"]).as_deref(),
        Some("/home/u/.claude/p.jsonl")
    );

    let bad = normalise("claude", "PreToolUse", b"not json", None);
    assert!(bad.input_error.unwrap().contains("not JSON"));
    assert_eq!(normalise("claude", "Nope", b"{}", None).event, None);
}

#[test]
fn patch_tools_name_their_paths_in_the_patch() {
    let input = r#"{"session_id":"s","cwd":"/w","tool_name":"apply_patch","tool_input":{"command":"*** Begin Patch\n*** Update File: .git/hooks/post-checkout\n@@\n-a\n+b\n*** Add File: src/x.rs\n+x\n*** End Patch"}}"#;
    let n = normalise("codex", "PreToolUse", input.as_bytes(), None);
    assert_eq!(n.write_paths(), [".git/hooks/post-checkout", "src/x.rs"]);
}

#[test]
fn answers_follow_each_agents_protocol() {
    for agent in ["claude", "codex"] {
        let a = answer(agent, Some("no"));
        assert_eq!(
            (a.exit_code, a.stdout.as_str(), a.stderr.as_str()),
            (2, "", "no\n")
        );
        let a = answer(agent, None);
        assert_eq!((a.exit_code, a.stdout.as_str(), a.stderr.as_str()), (0, "", ""));
    }
    let g = answer("gemini", Some("no \"way\""));
    assert_eq!(g.exit_code, 0);
    assert_eq!(
        g.stdout,
        "{\"decision\":\"deny\",\"reason\":\"no \\\"way\\\"\"}\n"
    );
    assert_eq!(answer("gemini", None).stdout, "");
    for agent in ["opencode", "pi"] {
        assert_eq!(answer(agent, None).stdout, "{\"decision\":\"allow\"}\n");
        let b = answer(agent, Some("r"));
        assert_eq!(
            (b.exit_code, b.stdout.as_str()),
            (0, "{\"decision\":\"block\",\"reason\":\"r\"}\n")
        );
    }
}

#[test]
fn guard_globs_split_commands_and_protect_prefixes() {
    assert!(guard::glob("git push --force*", "git push --force-with-lease"));
    assert!(guard::glob("rm -rf ?", "rm -rf /"));
    assert!(!guard::glob("git push --force*", "git push origin"));
    assert!(guard::glob("*", ""));
    assert_eq!(
        guard::simple_commands("cd x && git push --force; echo 'a;b' | (sudo rm -rf /)"),
        ["cd x", "git push --force", "echo 'a;b'", "rm -rf /"]
    );
    assert_eq!(guard::absolute("../b/./c", Some("/w/a")), "/w/b/c");
    assert!(guard::protects(".git/hooks", "/w/p/.git/hooks/pre-commit"));
    assert!(!guard::protects(".git/hooks", "/w/p/.github/hooks"));
    assert!(guard::protects("/etc", "/etc/passwd") && !guard::protects("/etc", "/etcetera"));

    let g = Guard {
        deny: vec!["git push --force*".into()],
        protect: vec![".git/hooks".into()],
    };
    let c = normalise("claude", "PreToolUse", CLAUDE_PRE.as_bytes(), None);
    assert!(matches!(g.check(&c), Verdict::Block(r) if r.contains("\"git push --force*\"")));
    let chained = CLAUDE_PRE.replace("git push --force origin main", "cd /w && git push --force");
    let c2 = normalise("claude", "PreToolUse", chained.as_bytes(), None);
    assert!(matches!(g.check(&c2), Verdict::Block(_)));
    let gem = normalise("gemini", "BeforeTool", GEMINI_PRE.as_bytes(), None);
    assert!(matches!(g.check(&gem), Verdict::Block(r) if r.contains(".git/hooks/pre-commit")));
    let x = normalise("codex", "PreToolUse", CODEX_PRE.as_bytes(), None);
    assert_eq!(g.check(&x), Verdict::Allow);
    let pi = normalise("pi", "tool_call", PI_PRE.as_bytes(), None);
    assert_eq!(g.check(&pi), Verdict::Allow);
    assert_eq!(Guard::default().check(&c), Verdict::NotApplicable);
}

#[test]
fn handlers_file_parses_and_matches_tools() {
    let text = r#"{"v":1,"handlers":[{"name":"a","event":"pre_tool","tool":"shell","command":["x"],"timeout_seconds":5,"on_failure":"block","scope":"global"},{"name":"b","event":"post_tool","tool":"Ba*","command":["y"],"timeout_seconds":1,"on_failure":"ignore","scope":"project"}],"guard":{"deny":["d"],"protect":["p"]}}"#;
    let h = handlers::parse(text.as_bytes()).unwrap();
    assert_eq!(h.handlers.len(), 2);
    assert!(h.handlers[0].block_on_failure && !h.handlers[1].block_on_failure);
    assert_eq!(h.guard.deny, ["d"]);
    let pre = normalise("claude", "PreToolUse", CLAUDE_PRE.as_bytes(), None);
    assert!(h.handlers[0].matches(&pre) && !h.handlers[1].matches(&pre));
    let post = normalise("claude", "PostToolUse", CLAUDE_PRE.as_bytes(), None);
    assert!(h.handlers[1].matches(&post));
    let opencode = normalise("opencode", "tool.execute.before", OPENCODE_PRE.as_bytes(), None);
    assert!(h.handlers[0].matches(&opencode), "tool kinds match across agents");
    assert!(handlers::parse(b"{\"v\":2,\"handlers\":[]}").is_err());
}

#[test]
fn a_handler_run_ends_in_one_outcome_whatever_it_does() {
    let r =
        |script: &str, can_block: bool| run::run(&handler("h", "pre_tool", script), "{}", None, can_block);
    let ok = r("cat >/dev/null", true);
    assert_eq!(
        (ok.outcome, ok.exit_code, ok.block),
        (Outcome::Ok, Some(0), false)
    );
    let b = r("echo 'not today' >&2; exit 2", true);
    assert_eq!(
        (b.outcome, b.block, b.reason.as_deref()),
        (Outcome::Blocked, true, Some("not today"))
    );
    let j = r(
        "echo '{\"decision\":\"block\",\"reason\":\"json says no\"}'",
        true,
    );
    assert_eq!(
        (j.outcome, j.reason.as_deref()),
        (Outcome::Blocked, Some("json says no"))
    );
    let not_pre = r("exit 2", false);
    assert_eq!((not_pre.outcome, not_pre.block), (Outcome::Ok, false));
    assert_eq!(r("echo garbage", true).outcome, Outcome::InvalidOutput);
    assert_eq!(
        r("echo '{\"decision\":\"maybe\"}'", true).outcome,
        Outcome::InvalidOutput
    );
    let failed = r("echo boom >&2; exit 3", true);
    assert_eq!(
        (failed.outcome, failed.reason.as_deref()),
        (Outcome::Failed, Some("exit status 3: boom"))
    );
    assert_eq!(r("kill -SEGV $$", true).outcome, Outcome::Crashed);
    let mut slow = handler("slow", "pre_tool", "sleep 30");
    slow.timeout_seconds = 1;
    let t = run::run(&slow, "{}", None, true);
    assert_eq!(t.outcome, Outcome::Timeout);
    let mut missing = handler("m", "pre_tool", "");
    missing.command = vec!["/nonexistent/handler".into()];
    assert_eq!(run::run(&missing, "{}", None, true).outcome, Outcome::Crashed);
    // A handler that leaves a background child holding its stdout still ends.
    let bg = r("sleep 30 & echo", true);
    assert_eq!(bg.outcome, Outcome::Ok);
    // One that leaves the group and holds it too (the longer drain, bounded); its answer counts.
    let escaped = r("setsid sleep 30 & echo '{\"decision\":\"block\"}'", true);
    assert_eq!((escaped.outcome, escaped.block), (Outcome::Blocked, true));
}

#[test]
fn group_lives_sees_a_live_member_and_not_a_zombie() {
    use std::os::unix::process::CommandExt;
    let mut leader = std::process::Command::new("sleep")
        .arg("30")
        .process_group(0)
        .spawn()
        .unwrap();
    let group = leader.id();
    assert!(run::group_lives(group));
    leader.kill().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while run::group_lives(group) {
        assert!(
            std::time::Instant::now() < deadline,
            "a killed sleep still counts"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    leader.wait().unwrap();
    assert!(!run::group_lives(group));
}

#[test]
fn a_handler_gets_the_event_a_clean_environment_and_the_agents_cwd() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("seen");
    let script = format!(
        "cat > {0}; echo \"$AGS_AGENT_HOOK_NAME $AGS_AGENT_HOOK_EVENT ${{CARGO_MANIFEST_DIR:-unset}} $(pwd)\" >> {0}",
        out.display()
    );
    assert!(
        std::env::var_os("CARGO_MANIFEST_DIR").is_some(),
        "cargo test sets it for the test process"
    );
    let cwd = dir.path().to_str().unwrap();
    let r = run::run(
        &handler("seer", "pre_tool", &script),
        "{\"x\":1}",
        Some(cwd),
        true,
    );
    assert_eq!(r.outcome, Outcome::Ok);
    let seen = std::fs::read_to_string(&out).unwrap();
    assert_eq!(seen, format!("{{\"x\":1}}seer pre_tool unset {cwd}\n"));
}

fn records(d: &flow::Dispatched) -> Vec<Value> {
    d.records
        .iter()
        .map(|l| json::parse(l.as_bytes()).unwrap())
        .collect()
}

#[test]
fn dispatch_records_every_handler_and_never_loses_a_block() {
    let hs = Ok(Handlers {
        handlers: vec![
            handler("crash", "pre_tool", "kill -KILL $$"),
            handler("garbage", "pre_tool", "echo '<html>'"),
            handler("deny", "pre_tool", "echo 'handler says no' >&2; exit 2"),
            handler("after", "pre_tool", "true"),
            handler("other-event", "stop", "true"),
        ],
        guard: Guard::default(),
        settings: Vec::new(),
    });
    let d = dispatch("claude", "PreToolUse", CLAUDE_PRE.as_bytes(), &hs, None);
    assert_eq!(d.answer.exit_code, 2);
    assert_eq!(d.answer.stderr, "handler says no\n");
    let r = records(&d);
    let outcomes: Vec<(Option<String>, Option<String>)> = r
        .iter()
        .map(|v| (v.str_at(&["handler"]), v.str_at(&["outcome"])))
        .collect();
    let s = |a: Option<&str>, b: &str| (a.map(String::from), Some(b.to_string()));
    assert_eq!(
        outcomes,
        [
            s(None, "blocked"),
            s(Some("crash"), "crashed"),
            s(Some("garbage"), "invalid_output"),
            s(Some("deny"), "blocked"),
            s(Some("after"), "skipped"),
        ]
    );
    assert_eq!(r[0].str_at(&["kind"]).as_deref(), Some("event"));
    assert_eq!(r[0].str_at(&["decision"]).as_deref(), Some("block"));
    assert_eq!(
        r[0].str_at(&["tool_input_summary"]).as_deref(),
        Some("git push --force origin main")
    );
    assert_eq!(r[0].str_at(&["native_event"]).as_deref(), Some("PreToolUse"));

    // on_failure = "block" turns a failure into a block; the guard blocks before any handler.
    let mut strict = handler("strict", "pre_tool", "exit 1");
    strict.block_on_failure = true;
    let d = dispatch(
        "pi",
        "tool_call",
        PI_PRE.as_bytes(),
        &Ok(Handlers {
            handlers: vec![strict],
            guard: Guard::default(),
            settings: Vec::new(),
        }),
        None,
    );
    assert!(
        d.answer.stdout.contains("on_failure = \\\"block\\\""),
        "{}",
        d.answer.stdout
    );
    let guarded = Ok(Handlers {
        handlers: vec![handler("h", "pre_tool", "true")],
        guard: Guard {
            deny: vec!["git push --force*".into()],
            protect: vec![],
        },
        settings: Vec::new(),
    });
    let d = dispatch(
        "gemini",
        "BeforeTool",
        CLAUDE_PRE.replace("Bash", "run_shell_command").as_bytes(),
        &guarded,
        None,
    );
    assert!(d.answer.stdout.starts_with("{\"decision\":\"deny\""));
    let r = records(&d);
    assert_eq!(r[1].str_at(&["handler"]).as_deref(), Some("guard"));
    assert_eq!(r[2].str_at(&["outcome"]).as_deref(), Some("skipped"));

    // An input the guard cannot read (cut at the size limit, garbage) is blocked when there is
    // a guard, and allowed when there is none.
    let cut = &CLAUDE_PRE.as_bytes()[..CLAUDE_PRE.len() / 2];
    let d = dispatch("claude", "PreToolUse", cut, &guarded, None);
    assert_eq!(d.answer.exit_code, 2, "{}", d.answer.stderr);
    assert!(
        d.answer.stderr.contains("the hook input is not JSON"),
        "{}",
        d.answer.stderr
    );
    let open = Ok(Handlers::default());
    assert_eq!(
        dispatch("claude", "PreToolUse", cut, &open, None)
            .answer
            .exit_code,
        0
    );

    // Other events are never blocked and have no decision.
    let d = dispatch("claude", "Stop", b"{\"session_id\":\"s\"}", &guarded, None);
    assert_eq!(d.answer, answer("claude", None));
    assert_eq!(records(&d)[0].get("decision"), Some(&Value::Null));

    // Without the handlers file a pre_tool call is blocked, other events pass; both recorded.
    let missing: Result<Handlers, String> = Err("/run/ags-agent-hooks/handlers.json: not found".into());
    let d = dispatch("codex", "PreToolUse", CODEX_PRE.as_bytes(), &missing, None);
    assert_eq!(d.answer.exit_code, 2);
    let d = dispatch("codex", "SessionStart", b"{}", &missing, None);
    assert_eq!(d.answer.exit_code, 0);
    assert_eq!(records(&d)[0].str_at(&["outcome"]).as_deref(), Some("failed"));
}
