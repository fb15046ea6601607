//! Issue 14, the dispatcher in a real container: the static `ags-agent-hook` that `ags` embeds
//! runs inside the busybox test image (launched by `ags` with the shell agent, rootful and
//! rootless), gets each agent's native hook input on stdin, runs handlers that crash, hang,
//! print garbage and block — each isolated, the next one still runs, the dispatcher still
//! answers — checks the guard, answers in each agent's protocol, and sends its records to a
//! unix socket on the host through a bind-mounted directory (as the launch's record socket).
//! A dispatcher whose socket is missing still answers, block included; so does one whose
//! socket is jammed (its backlog full, so `connect` blocks), within bounded time, and so does
//! the JS shim of a dispatcher that answered but has not exited (issue 23, item 2).

use crate::common;

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use common::each_mode;
use common::launch::{agent_stderr, run_agent, stdout};
use serde_json::Value;

const CLAUDE_PUSH: &str = r#"{"session_id":"s-1","cwd":"/tmp","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"git push --force origin main"}}"#;
const CLAUDE_LS: &str = r#"{"session_id":"s-1","cwd":"/tmp","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}"#;
const GEMINI_HOOKS: &str = r#"{"session_id":"s-3","cwd":"/tmp","hook_event_name":"BeforeTool","tool_name":"write_file","tool_input":{"file_path":".git/hooks/pre-commit","content":"x"}}"#;
const PI_LS: &str = r#"{"type":"tool_call","toolName":"bash","toolCallId":"c","input":{"command":"ls"}}"#;

/// Accept connections on `listener` and collect every line sent, until the test drops it.
fn collect(listener: UnixListener) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { break };
            for line in BufReader::new(conn).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    return;
                }
            }
        }
    });
    rx
}

#[test]
fn handlers_crash_hang_print_garbage_and_block_in_a_real_container_and_every_agent_gets_its_answer() {
    each_mode(|env| {
        let dir = env.mkdir(env.work_dir().join("agent-hooks"), 0o755);
        let program = env.write_file(
            dir.join("ags-agent-hook"),
            ags::agent_hooks::dispatch::PROGRAM,
            0o755,
        );
        let handlers = serde_json::json!({
            "v": 1,
            "handlers": [
                {"name": "crash", "event": "pre_tool", "tool": "shell", "command": ["/bin/sh", "-c", "kill -SEGV $$"], "timeout_seconds": 5, "on_failure": "ignore", "scope": "global"},
                {"name": "hang", "event": "pre_tool", "tool": null, "command": ["/bin/sh", "-c", "sleep 60"], "timeout_seconds": 1, "on_failure": "ignore", "scope": "global"},
                {"name": "garbage", "event": "pre_tool", "tool": "Bash", "command": ["/bin/sh", "-c", "cat; echo '<html>'"], "timeout_seconds": 5, "on_failure": "ignore", "scope": "global"},
                {"name": "no-ls", "event": "pre_tool", "tool": "shell", "command": ["/bin/sh", "-c", "grep -q '\"command\":\"ls\"' && { echo 'ls is not allowed here' >&2; exit 2; }; exit 0"], "timeout_seconds": 5, "on_failure": "ignore", "scope": "project"}
            ],
            "guard": {"deny": ["git push --force*"], "protect": [".git/hooks"]}
        });
        let handlers_file = env.write_file(dir.join("handlers.json"), handlers.to_string(), 0o644);
        let socket = dir.join("record.sock");
        let listener = UnixListener::bind(&socket).expect("bind the record socket");
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o777)).unwrap();
        env.give_tree(&socket);
        let records = collect(listener);

        let call = |agent: &str, event: &str, input: &str, socket: &str| {
            format!(
                "printf '%s' '{input}' | {prog} --agent {agent} --event {event} --handlers {h} --socket {socket}; echo \"rc=$?\"",
                prog = program.display(),
                h = handlers_file.display(),
            )
        };
        let sock = socket.display().to_string();
        let script = [
            "echo '== claude push'",
            &call("claude", "PreToolUse", CLAUDE_PUSH, &sock),
            "echo '== claude ls'",
            &call("claude", "PreToolUse", CLAUDE_LS, &sock),
            "echo '== gemini hooks'",
            &call("gemini", "BeforeTool", GEMINI_HOOKS, &sock),
            "echo '== pi ls'",
            &call("pi", "tool_call", PI_LS, &sock),
            "echo '== codex stop'",
            &call("codex", "Stop", "{\"session_id\":\"s-2\"}", &sock),
            // The attack on the size limit: a write to a protected path hidden in an input
            // larger than the dispatcher reads. Cut, it is no JSON; the guard blocks it.
            "echo '== huge write'",
            &format!(
                "{{ printf '{{\"session_id\":\"s-1\",\"cwd\":\"/tmp\",\"tool_name\":\"Write\",\"tool_input\":{{\"file_path\":\".git/hooks/pre-commit\",\"content\":\"'; head -c 17000000 /dev/zero | tr '\\0' a; printf '\"}}}}'; }} | {prog} --agent claude --event PreToolUse --handlers {h} --socket {sock}; echo \"rc=$?\"",
                prog = program.display(),
                h = handlers_file.display(),
            ),
            "echo '== no socket'",
            &call("claude", "PreToolUse", CLAUDE_PUSH, "/nonexistent/record.sock"),
        ]
        .join("\n");
        let out = run_agent(env, &["--agent", "shell"], &["sh", "-c", &script]);
        let (text, err) = (stdout(&out), agent_stderr(&out));
        assert_eq!(out.status.code(), Some(0), "{}: {text}\n{err}", env.mode());
        let section = |name: &str| {
            let start = text
                .find(&format!("== {name}\n"))
                .unwrap_or_else(|| panic!("{name}: {text}"));
            let rest = &text[start + name.len() + 4..];
            rest[..rest.find("== ").unwrap_or(rest.len())].to_string()
        };
        // claude: the guard blocks with exit 2 (reason on stderr); no handler runs after it.
        assert_eq!(section("claude push"), "rc=2\n", "{}: {err}", env.mode());
        assert!(
            err.contains("matches the deny pattern \"git push --force*\""),
            "{err}"
        );
        // The crashing, hanging and garbage handlers ran and were survived; the last one blocked.
        assert_eq!(section("claude ls"), "rc=2\n", "{}: {err}", env.mode());
        assert!(err.contains("ls is not allowed here"), "{err}");
        // gemini: its JSON block for a write under a protected path.
        let gemini = section("gemini hooks");
        assert!(
            gemini.starts_with("{\"decision\":\"deny\",\"reason\":\"ags agent guard: .git/hooks/pre-commit"),
            "{gemini}"
        );
        assert!(gemini.ends_with("rc=0\n"), "{gemini}");
        // pi: the shim's answer object.
        assert_eq!(
            section("pi ls"),
            "{\"decision\":\"block\",\"reason\":\"ls is not allowed here\"}\nrc=0\n"
        );
        assert_eq!(section("codex stop"), "rc=0\n");
        assert_eq!(section("huge write"), "rc=2\n", "{}: {err}", env.mode());
        assert!(err.contains("so the guard cannot check this tool call"), "{err}");
        // Without the socket the block still reaches the agent.
        assert_eq!(section("no socket"), "rc=2\n");

        let lines: Vec<Value> = std::iter::from_fn(|| records.recv_timeout(Duration::from_secs(5)).ok())
            .take(64)
            .map(|l| serde_json::from_str(&l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect();
        let seen: Vec<String> = lines
            .iter()
            .map(|r| {
                format!(
                    "{} {} {} {}",
                    r["agent"].as_str().unwrap(),
                    r["handler"].as_str().unwrap_or("-"),
                    r["outcome"].as_str().unwrap(),
                    r["decision"].as_str().unwrap_or("-")
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                "claude - blocked block",
                "claude guard blocked block",
                "claude crash skipped -",
                "claude hang skipped -",
                "claude garbage skipped -",
                "claude no-ls skipped -",
                "claude - blocked block",
                "claude guard ok allow",
                "claude crash crashed allow",
                "claude hang timeout allow",
                "claude garbage invalid_output allow",
                "claude no-ls blocked block",
                "gemini - blocked block",
                "gemini guard blocked block",
                "gemini hang skipped -",
                "pi - blocked block",
                "pi guard ok allow",
                "pi crash crashed allow",
                "pi hang timeout allow",
                "pi no-ls blocked block",
                "codex - ok -",
                "claude - blocked block",
                "claude guard blocked block",
                "claude hang skipped -",
            ],
            "{}",
            env.mode()
        );
        assert_eq!(lines[0]["tool_input_summary"], "git push --force origin main");
        assert_eq!(lines[0]["session_id"], "s-1");
        assert_eq!(lines[0]["event"], "pre_tool");
        env.assert_no_leftovers();
    });
}

/// `ags plan` shows the handlers, the guard, the handlers file and the dispatcher's read-only
/// bind (text and JSON); `--format kube` exports none of them.
#[test]
fn the_plan_shows_handlers_guard_and_dispatcher() {
    let env = common::TestEnv::without_podman();
    env.write_global_config(
        "[[agent_hook]]\nname = \"audit\"\nevent = \"pre_tool\"\ntool = \"shell\"\ncommand = \"logger x\"\n\
         [agent_guard]\ndeny = [\"git push --force*\"]\nprotect = [\".git/hooks\"]\n",
    );
    let out = env.run(["--agent", "gemini", "plan", "--no-hooks"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{}", common::show(&out));
    for want in [
        "agent hook      audit on pre_tool tool shell: [\"/bin/sh\", \"-c\", \"logger x\"] (timeout 10 s, on_failure ignore) [global]",
        "agent guard     deny \"git push --force*\"",
        "agent guard     protect \".git/hooks\"",
        "file            /run/ags-agent-hooks/handlers.json (",
        "mount           /run/ags-agent-hooks/ags-agent-hook <- bind ",
    ] {
        assert!(text.contains(want), "{want}\n{text}");
    }
    let out = env.run(["--agent", "gemini", "plan", "--json", "--no-hooks"]);
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    let w = &plan["agent_hook_wiring"];
    assert_eq!(
        w["handlers"][0]["command"],
        serde_json::json!(["/bin/sh", "-c", "logger x"])
    );
    assert_eq!(w["guard"]["protect"][0], ".git/hooks");
    assert!(
        w["dispatcher"]
            .as_str()
            .unwrap()
            .contains("/ags/agent-hooks/ags-agent-hook-"),
        "{w}"
    );
    let out = env.run(["--agent", "gemini", "plan", "--format", "kube", "--no-hooks"]);
    assert_eq!(out.status.code(), Some(0), "{}", common::show(&out));
    let kube = stdout(&out);
    assert!(
        !kube.contains("ags-agent-hooks") && !kube.contains("ags-agent-hook"),
        "{kube}"
    );
}

/// Fill the backlog of `socket` (listened on, never accepted): connect until `connect` blocks.
/// The connections are held by a thread until the listener is closed. Returns how many queued.
fn jam(socket: &Path) -> usize {
    let count = Arc::new(AtomicUsize::new(0));
    let (counted, path) = (count.clone(), socket.to_path_buf());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        // The last connect blocks while the backlog is full.
        while let Ok(s) = UnixStream::connect(&path) {
            held.push(s);
            counted.fetch_add(1, Ordering::SeqCst);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = usize::MAX;
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let now = count.load(Ordering::SeqCst);
        if (now == last && now > 0) || Instant::now() > deadline {
            return now;
        }
        last = now;
    }
}

/// The attack of issue 23 item 2: the agent fills the record socket's backlog, then runs a
/// command the guard blocks. The old dispatcher answered, then hung in `connect` until the
/// agent's own timeout (600 s), after which claude ran the blocked command. Now it exits with
/// the block within its send timeout (the container's `timeout 30` only catches the old hang).
/// And a command the guard allows is blocked too: it would run unrecorded (session-12 F7).
#[test]
fn a_jammed_record_socket_neither_holds_nor_undoes_a_block() {
    each_mode(|env| {
        let dir = env.mkdir(env.work_dir().join("agent-hooks"), 0o755);
        let program = env.write_file(
            dir.join("ags-agent-hook"),
            ags::agent_hooks::dispatch::PROGRAM,
            0o755,
        );
        let handlers = serde_json::json!({
            "v": 1, "handlers": [], "guard": {"deny": ["git push --force*"], "protect": []}
        });
        let handlers_file = env.write_file(dir.join("handlers.json"), handlers.to_string(), 0o644);
        let socket = dir.join("record.sock");
        let listener = UnixListener::bind(&socket).expect("bind the record socket");
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o777)).unwrap();
        env.give_tree(&socket);
        let queued = jam(&socket);
        assert!(queued > 100, "the backlog took only {queued} connections");
        let call = |agent: &str, event: &str, input: &str| {
            format!(
                "printf '%s' '{input}' | timeout 30 {prog} --agent {agent} --event {event} --handlers {h} --socket {sock}; echo \"rc=$?\"",
                prog = program.display(),
                h = handlers_file.display(),
                sock = socket.display(),
            )
        };
        let script = [
            "echo '== claude'".to_string(),
            call("claude", "PreToolUse", CLAUDE_PUSH),
            "echo '== pi'".to_string(),
            call("pi", "tool_call", r#"{"type":"tool_call","toolName":"bash","toolCallId":"c","input":{"command":"git push --force x"}}"#),
            "echo '== allowed'".to_string(),
            call("claude", "PreToolUse", CLAUDE_LS),
            "echo '== end'".to_string(),
        ]
        .join("\n");
        let out = run_agent(env, &["--agent", "shell"], &["sh", "-c", &script]);
        let (text, err) = (stdout(&out), agent_stderr(&out));
        assert_eq!(out.status.code(), Some(0), "{}: {text}\n{err}", env.mode());
        let claude = text.split("== claude\n").nth(1).unwrap_or_default();
        assert!(claude.starts_with("rc=2\n"), "{}: {text}\n{err}", env.mode());
        assert!(err.contains("matches the deny pattern"), "{err}");
        let pi = text.split("== pi\n").nth(1).unwrap_or_default();
        assert!(
            pi.starts_with("{\"decision\":\"block\",") && pi.contains("\nrc=0\n== allowed"),
            "{}: {text}",
            env.mode()
        );
        // Session-12 attack F7: a call the guard allows, made while the socket is jammed, would
        // run with no record of it; it is blocked instead.
        let allowed = text.split("== allowed\n").nth(1).unwrap_or_default();
        assert!(allowed.starts_with("rc=2\n"), "{}: {text}\n{err}", env.mode());
        assert!(err.contains("could not be written within 2 s"), "{err}");
        drop(listener);
        env.assert_no_leftovers();
    });
}

/// The JS shims decide on the dispatcher's answer line as soon as it is read: a dispatcher
/// that answered "block" and then does not exit (stuck sending its records) still blocks, at
/// once. The old shim waited for the process to close, then after its 600 s timeout let the
/// call through. Runs pi's generated extension in the host's Node, when there is one.
#[test]
fn the_js_shim_blocks_on_the_answer_line_without_waiting_for_the_dispatcher_to_exit() {
    if Command::new("node").arg("--version").output().is_err() {
        eprintln!("skipped: no node on this host");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("ags-agent-hook");
    // Answers, then holds its stdout open while its parent lives (a record send that hangs).
    std::fs::write(
        &fake,
        "#!/bin/sh\ncat >/dev/null\necho '{\"decision\":\"block\",\"reason\":\"no pushing\"}'\nwhile kill -0 $PPID 2>/dev/null; do sleep 0.2; done\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let wiring = ags::agent_hooks::wiring::generate("pi", "t").expect("pi has wiring");
    let ext = wiring.files[0]
        .content
        .replace(ags::agent_hooks::DISPATCHER_PATH, &fake.display().to_string());
    std::fs::write(dir.path().join("ext.mjs"), ext).unwrap();
    std::fs::write(
        dir.path().join("driver.mjs"),
        r#"import ext from "./ext.mjs";
const on = {};
ext({ on: (name, fn) => { on[name] = fn; } });
const answer = await on["tool_call"]({ type: "tool_call", toolName: "bash", input: { command: "git push" } });
console.log(JSON.stringify(answer ?? null));
process.exit(0);
"#,
    )
    .unwrap();
    let mut child = Command::new("node")
        .arg(dir.path().join("driver.mjs"))
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the shim still waits for the dispatcher after 30 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.trim(), r#"{"block":true,"reason":"no pushing"}"#);
}
