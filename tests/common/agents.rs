//! The agent-hook tests' harness (`tests/live/agent_hooks_e2e.rs`, `tests/live/agent_hooks_attacks.rs`):
//! the scripted model endpoint (`tests/support/model_endpoint.py`), each real agent CLI of the
//! agent image pointed at it headless, the host record read back, and the checks that a
//! session is recorded whole and a denied command blocked.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;

use super::launch::{assert_clean, stdout};
use super::{TestEnv, each_mode, show};

pub const AGENT_IMAGE: &str = "localhost/ags-agent:latest";
pub const REPLY: &str = "ags-scripted-reply";

/// The scripted endpoint, killed on drop.
pub struct Endpoint {
    child: Child,
    /// The address it listens on.
    pub addr: String,
    /// Its port.
    pub port: u16,
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn host_address() -> Option<String> {
    let out = Command::new("hostname").arg("-I").output().ok()?;
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .find(|a| a.parse::<std::net::Ipv4Addr>().is_ok_and(|ip| !ip.is_loopback()))
        .map(String::from)
}

/// An endpoint whose one tool call runs `command`.
pub fn endpoint(addr: &str, command: &str) -> Endpoint {
    endpoint_with(addr, &["--tool-command", command])
}

/// An endpoint started with the arguments `extra` besides its address and reply.
pub fn endpoint_with(addr: &str, extra: &[&str]) -> Endpoint {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/model_endpoint.py");
    let mut child = Command::new("python3")
        .args([script, "--host", addr, "--reply", REPLY])
        .args(extra)
        .stdout(Stdio::piped())
        .spawn()
        .expect("starting the scripted model endpoint");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("endpoint port");
    let port = line
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("endpoint said {line:?}"));
    Endpoint {
        child,
        addr: addr.into(),
        port,
    }
}

/// The global config: only the endpoint reachable, a crashing and a hanging handler, the guard.
pub fn config(ep: &Endpoint) -> String {
    format!(
        r#"[network]
mode = "allowlist"
agent_hosts = false
allow = ["{}:{}"]

[[agent_hook]]
name = "crash"
event = "pre_tool"
command = "kill -SEGV $$"

[[agent_hook]]
name = "hang"
event = "pre_tool"
command = "sleep 60"
timeout_seconds = 2

[agent_guard]
deny = ["touch denied-*"]
"#,
        ep.addr, ep.port
    )
}

/// One agent: how to point it at the endpoint and run it headless.
pub struct Agent {
    pub name: &'static str,
    pub env: Vec<String>,
    pub args: Vec<String>,
}

pub fn agents(env: &TestEnv, ep: &Endpoint) -> Vec<Agent> {
    let base = format!("http://{}:{}", ep.addr, ep.port);
    let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let pi_dir = env.mkdir(env.work_dir().join(".pi-agent"), 0o755);
    let models = serde_json::json!({"providers": {"scripted": {
        "baseUrl": format!("{base}/v1"), "api": "openai-completions", "apiKey": "test",
        "models": [{"id": "m"}],
    }}});
    env.write_file(pi_dir.join("models.json"), models.to_string(), 0o644);
    // opencode's provider: its project config (read-only to the agent: a protected path).
    let opencode = serde_json::json!({
        "provider": {"scripted": {
            "npm": "@ai-sdk/openai-compatible",
            "name": "scripted",
            "options": {"baseURL": format!("{base}/v1"), "apiKey": "test"},
            "models": {"m": {"name": "m"}},
        }},
        "model": "scripted/m",
    });
    env.write_file(env.work_dir().join("opencode.json"), opencode.to_string(), 0o644);
    vec![
        Agent {
            name: "claude",
            env: vec![
                format!("ANTHROPIC_BASE_URL={base}"),
                "ANTHROPIC_API_KEY=sk-ant-test".into(),
                "DISABLE_TELEMETRY=1".into(),
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1".into(),
                "IS_SANDBOX=1".into(),
            ],
            args: owned(&["-p", "run the command", "--dangerously-skip-permissions"]),
        },
        Agent {
            name: "codex",
            env: vec!["SCRIPTED_KEY=test".into()],
            args: [
                "exec",
                "--dangerously-bypass-approvals-and-sandbox",
                "--skip-git-repo-check",
            ]
            .into_iter()
            .map(String::from)
            .chain(codex_provider(&base))
            .chain(["run the command".to_string()])
            .collect(),
        },
        Agent {
            name: "pi",
            env: vec![format!("PI_CODING_AGENT_DIR={}", pi_dir.display())],
            args: owned(&["-p", "--provider", "scripted", "--model", "m", "run the command"]),
        },
        Agent {
            name: "opencode",
            env: vec!["OPENCODE_DISABLE_MODELS_FETCH=1".into()],
            args: owned(&["run", "run the command"]),
        },
        Agent {
            name: "gemini",
            env: vec![
                format!("GOOGLE_GEMINI_BASE_URL={base}"),
                "GEMINI_API_KEY=test".into(),
            ],
            args: owned(&["-p", "run the command", "--yolo"]),
        },
    ]
}

pub fn launch(env: &TestEnv, agent: &Agent) -> Output {
    let flags: Vec<String> = agent
        .env
        .iter()
        .flat_map(|e| ["--env".to_string(), e.clone()])
        .collect();
    env.run(agent_args(env, agent.name, &flags, &agent.args))
}

/// `ags`'s arguments running `agent` in the agent image without a terminal, labelled for the
/// test, with more `flags` (each `--env KEY=VALUE` one of them) and the agent's `args`.
pub fn agent_args(env: &TestEnv, agent: &str, flags: &[String], args: &[String]) -> Vec<String> {
    let fixed = [
        "--tty=false",
        "--image",
        AGENT_IMAGE,
        "--label",
        &env.label(),
        "--agent",
        agent,
    ];
    let mut all: Vec<String> = fixed.iter().map(|s| s.to_string()).collect();
    all.extend(flags.iter().cloned());
    all.push("--".into());
    all.extend(args.iter().cloned());
    all
}

pub fn log(env: &TestEnv) -> Vec<Value> {
    let out = env.run(["log", "--json", "-n", "100000"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

/// The event records of `event` among `entries`.
pub fn events<'a>(entries: &'a [Value], event: &str) -> Vec<&'a Value> {
    entries
        .iter()
        .filter(|e| e["kind"] == "event" && e["event"] == event)
        .collect()
}

/// The handler records of `handler` among `entries`.
pub fn handler<'a>(entries: &'a [Value], name: &str) -> Vec<&'a Value> {
    entries
        .iter()
        .filter(|e| e["kind"] == "handler" && e["handler"] == name)
        .collect()
}

/// Run the shell `script` (with `vars` in its environment) on `agent`'s state volume whose
/// name holds `part`, mounted at `/v`, made by a first `--version` launch.
pub fn in_state_volume(env: &TestEnv, agent: &str, part: &str, script: &str, vars: Value) {
    let label = env.label();
    let version = [
        "--tty=false",
        "--image",
        AGENT_IMAGE,
        "--label",
        &label,
        "--agent",
        agent,
    ];
    let out = env.run(version.into_iter().chain(["--", "--version"]));
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let workdir = env.work_dir().display().to_string();
    let volume = super::api::volumes_with_label(env.mode(), &format!("io.ags.state-workdir={workdir}"))
        .into_iter()
        .find(|v| v.contains(part))
        .expect("the agent's state volume");
    let spec = serde_json::json!({
        "image": env.image(),
        "command": ["sh", "-c", script],
        "env": vars,
        "volumes": [{"Name": volume, "Dest": "/v"}],
    });
    let (code, said) = super::api::run_to_end(env.mode(), &spec);
    assert_eq!(code, 0, "{said}");
}

/// gemini takes its auth method and folder trust from its user settings, in its state volume
/// (`~/.gemini`): written there as a user who chose them once would have them.
pub fn seed_gemini(env: &TestEnv) {
    seed_gemini_with(env, serde_json::json!({}));
}

/// The same user settings with the keys of `more` added.
pub fn seed_gemini_with(env: &TestEnv, more: Value) {
    let mut settings = serde_json::json!({
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
    });
    if let (Some(base), Value::Object(more)) = (settings.as_object_mut(), more) {
        base.extend(more);
    }
    let script = "printf '%s' \"$S\" > /v/settings.json && chmod 644 /v/settings.json";
    let vars = serde_json::json!({"S": settings.to_string()});
    in_state_volume(env, "gemini", "gemini", script, vars);
}

/// Run `agent` once with the endpoint's tool command and return its new log entries.
pub fn session(env: &TestEnv, agent: &Agent, ep: &Endpoint) -> (Output, Vec<Value>) {
    env.write_global_config(&config(ep));
    if agent.name == "gemini" {
        seed_gemini(env);
    }
    let before = log(env).len();
    let out = launch(env, agent);
    let entries = log(env).split_off(before);
    (out, entries)
}

pub fn check_agent(env: &TestEnv, addr: &str, name: &str) {
    let allowed_cmd = format!("touch allowed-{name}");
    let ep = endpoint(addr, &allowed_cmd);
    let agent = agents(env, &ep).into_iter().find(|a| a.name == name).unwrap();
    let (out, entries) = session(env, &agent, &ep);
    let what = format!("{name}: {}\n{entries:#?}", show(&out));
    assert_eq!(out.status.code(), Some(0), "{what}");
    assert!(stdout(&out).contains(REPLY), "{what}");
    assert!(env.work_dir().join(format!("allowed-{name}")).exists(), "{what}");
    assert!(
        entries
            .iter()
            .all(|e| e["agent"] == name && e["kind"] != "invalid"),
        "{what}"
    );
    assert_eq!(events(&entries, "session_start").len(), 1, "{what}");
    // A whole session: `ags` does not mark its record incomplete (issue 23 item 6).
    assert!(entries.iter().all(|e| e["kind"] != "incomplete"), "{what}");
    for event in ["pre_tool", "post_tool"] {
        let ours: Vec<_> = events(&entries, event)
            .into_iter()
            .filter(|e| {
                e["tool_input_summary"]
                    .as_str()
                    .is_some_and(|s| s.contains(&allowed_cmd))
            })
            .collect();
        assert_eq!(ours.len(), 1, "{event}: {what}");
        assert!(ours[0]["tool"].is_string(), "{what}");
    }
    let pre = events(&entries, "pre_tool")[0];
    assert_eq!(pre["decision"], "allow", "{what}");
    assert!(!events(&entries, "stop").is_empty(), "{what}");
    let crashed = handler(&entries, "crash");
    let hung = handler(&entries, "hang");
    assert_eq!(crashed.len(), 1, "{what}");
    assert_eq!(crashed[0]["outcome"], "crashed", "{what}");
    assert_eq!(hung.len(), 1, "{what}");
    assert_eq!(hung[0]["outcome"], "timeout", "{what}");
    assert_clean(env);
    drop(ep);

    check_blocked(env, addr, name, &|_| {});
}

/// A launch of `name` (changed by `tweak`) whose tool runs `touch denied-NAME`, which the
/// guard denies: the file stays absent and the block is recorded.
pub fn check_blocked(env: &TestEnv, addr: &str, name: &str, tweak: &dyn Fn(&mut Agent)) {
    let denied_cmd = format!("touch denied-{name}");
    let ep = endpoint(addr, &denied_cmd);
    let mut agent = agents(env, &ep).into_iter().find(|a| a.name == name).unwrap();
    tweak(&mut agent);
    let (out, entries) = session(env, &agent, &ep);
    let what = format!("{name} (denied): {}\n{entries:#?}", show(&out));
    assert!(
        !env.work_dir().join(format!("denied-{name}")).exists(),
        "the guard did not block: {what}"
    );
    let blocked: Vec<_> = events(&entries, "pre_tool")
        .into_iter()
        .filter(|e| {
            e["tool_input_summary"]
                .as_str()
                .is_some_and(|s| s.contains(&denied_cmd))
        })
        .collect();
    assert_eq!(blocked.len(), 1, "{what}");
    assert_eq!(
        (&blocked[0]["decision"], &blocked[0]["outcome"]),
        (&Value::from("block"), &Value::from("blocked")),
        "{what}"
    );
    let guard = handler(&entries, "guard");
    assert!(guard.iter().any(|g| g["outcome"] == "blocked"), "{what}");
    assert!(
        events(&entries, "post_tool")
            .iter()
            .all(|e| e["tool_input_summary"]
                .as_str()
                .is_none_or(|s| !s.contains(&denied_cmd))),
        "{what}"
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "the session goes on after the block: {what}"
    );
    assert_clean(env);
}

/// Run `check` in each mode whose service has the agent image.
pub fn with_agent_image(check: impl Fn(&TestEnv, &str)) {
    let Some(addr) = host_address() else {
        println!("SKIP: no address of this machine from `hostname -I`");
        return;
    };
    each_mode(|env| {
        if !super::api::image_exists(&env.mode().socket(), AGENT_IMAGE).unwrap_or(false) {
            println!("SKIP: {}: no {AGENT_IMAGE} in this service", env.mode());
            return;
        }
        check(env, &addr);
    });
}

pub fn run_for(name: &str) {
    with_agent_image(|env, addr| check_agent(env, addr, name));
}

/// codex's `-c` arguments that make the scripted endpoint at `base` (`http://ADDR:PORT`) its
/// model provider (key in `SCRIPTED_KEY`).
pub fn codex_provider(base: &str) -> Vec<String> {
    let provider = |k: &str, v: &str| format!("model_providers.scripted.{k}={v:?}");
    let settings = [
        "model_provider=scripted".to_string(),
        provider("name", "scripted"),
        provider("base_url", &format!("{base}/v1")),
        provider("wire_api", "responses"),
        provider("env_key", "SCRIPTED_KEY"),
        "model=\"m\"".to_string(),
    ];
    settings.into_iter().flat_map(|s| ["-c".to_string(), s]).collect()
}

/// Whether a `pre_tool` record of `entries` is a block whose `key` holds `needle`.
pub fn blocked_with(entries: &[Value], key: &str, needle: &str) -> bool {
    events(entries, "pre_tool")
        .into_iter()
        .any(|e| e["decision"] == "block" && e[key].as_str().is_some_and(|s| s.contains(needle)))
}
