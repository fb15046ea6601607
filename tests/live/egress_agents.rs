//! Real agent CLIs through the egress proxy (issue 15): claude, opencode, codex and pi from the agent image
//! reach a scripted model endpoint (`tests/support/model_endpoint.py`) in allowlist mode, using
//! the proxy variables `ags` sets, and are refused when the endpoint is not on the list. Their
//! API hosts from the agent table are turned off (`agent_hosts = false`), so their background
//! traffic is refused by the proxy before any name is resolved: nothing leaves this machine.
//!
//! The endpoint listens on this machine's own address (the first of `hostname -I`): inside the
//! container 127.0.0.1 is the container's own loopback (and in `NO_PROXY`). Runs in each mode
//! whose service has the agent image (`localhost/ags-agent:latest`); skipped (with a note) where
//! it is missing.

use crate::common;

use serde_json::Value;

use common::agents::{AGENT_IMAGE, Endpoint, REPLY, codex_provider, endpoint_with, host_address};
use common::launch::{assert_clean, stdout};
use common::{TestEnv, each_mode, show};

fn endpoint(addr: &str) -> Endpoint {
    endpoint_with(addr, &[])
}

fn egress_log(env: &TestEnv) -> Vec<Value> {
    let out = env.run(["log", "--egress", "--json", "-n", "1000"]);
    stdout(&out)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Run `agent` with `args` in allowlist mode, with or without the endpoint on the list.
fn launch(
    env: &TestEnv,
    ep: &Endpoint,
    agent: &str,
    listed: bool,
    envs: &[String],
    args: &[&str],
) -> std::process::Output {
    let entry = if listed {
        format!("{}:{}", ep.addr, ep.port)
    } else {
        format!("{}:1", ep.addr)
    };
    env.write_global_config(&format!(
        "[network]\nmode = \"allowlist\"\nagent_hosts = false\nallow = [\"{entry}\"]\n"
    ));
    let flags: Vec<String> = envs
        .iter()
        .flat_map(|e| ["--env".to_string(), e.clone()])
        .collect();
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    env.run(common::agents::agent_args(env, agent, &flags, &args))
}

fn check(env: &TestEnv, ep: &Endpoint, agent: &str, envs: &[String], args: &[&str]) {
    let before = egress_log(env).len();
    let out = launch(env, ep, agent, true, envs, args);
    assert_eq!(out.status.code(), Some(0), "{agent}: {}", show(&out));
    assert!(stdout(&out).contains(REPLY), "{agent}: {}", show(&out));
    let log = egress_log(env);
    let ours = |r: &&Value| r["host"] == ep.addr.as_str() && r["port"] == ep.port;
    let allowed: Vec<&Value> = log[before..].iter().filter(ours).collect();
    assert!(
        !allowed.is_empty() && allowed.iter().all(|r| r["decision"] == "allowed"),
        "{agent}: {log:#?}"
    );
    assert!(
        allowed.iter().all(|r| r["bytes_down"].as_u64() > Some(0)),
        "{agent}: {allowed:#?}"
    );

    let before = log.len();
    let out = launch(env, ep, agent, false, envs, args);
    assert_ne!(
        out.status.code(),
        Some(0),
        "{agent} without its endpoint: {}",
        show(&out)
    );
    assert!(!stdout(&out).contains(REPLY), "{agent}: {}", show(&out));
    let log = egress_log(env);
    let refused: Vec<&Value> = log[before..].iter().filter(ours).collect();
    assert!(
        !refused.is_empty() && refused.iter().all(|r| r["decision"] == "refused"),
        "{agent}: {log:#?}"
    );
    assert_clean(env);
}

#[test]
fn claude_opencode_and_codex_reach_a_listed_endpoint_and_only_that() {
    let Some(addr) = host_address() else {
        println!("SKIP: no address of this machine from `hostname -I`");
        return;
    };
    let ep = endpoint(&addr);
    each_mode(|env| {
        if !common::api::image_exists(&env.mode().socket(), AGENT_IMAGE).unwrap_or(false) {
            println!("SKIP: {}: no {AGENT_IMAGE} in this service", env.mode());
            return;
        }
        let base = format!("http://{}:{}", ep.addr, ep.port);
        check(
            env,
            &ep,
            "claude",
            &[
                format!("ANTHROPIC_BASE_URL={base}"),
                "ANTHROPIC_API_KEY=sk-ant-test".into(),
                "DISABLE_TELEMETRY=1".into(),
            ],
            &["-p", "say hi"],
        );
        let config = serde_json::json!({
            "provider": {"scripted": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "scripted",
                "options": {"baseURL": format!("{base}/v1"), "apiKey": "test"},
                "models": {"m": {"name": "m"}},
            }},
            "model": "scripted/m",
        });
        env.write_file(env.work_dir().join("opencode.json"), config.to_string(), 0o644);
        check(
            env,
            &ep,
            "opencode",
            &["OPENCODE_DISABLE_MODELS_FETCH=1".into()],
            &["run", "say hi"],
        );
        let codex_args: Vec<String> = ["exec", "--skip-git-repo-check"]
            .into_iter()
            .map(String::from)
            .chain(codex_provider(&base))
            .chain(["say hi".to_string()])
            .collect();
        let codex_args: Vec<&str> = codex_args.iter().map(String::as_str).collect();
        check(env, &ep, "codex", &["SCRIPTED_KEY=test".into()], &codex_args);
    });
}

/// pi tunnels even http:// through `CONNECT` (undici `EnvHttpProxyAgent` from `HTTPS_PROXY`),
/// unlike the three above, which send absolute-URI requests. Its provider comes from
/// `models.json` in `PI_CODING_AGENT_DIR`, here a directory in the workspace.
#[test]
fn pi_reaches_a_listed_endpoint_and_only_that() {
    let Some(addr) = host_address() else {
        println!("SKIP: no address of this machine from `hostname -I`");
        return;
    };
    let ep = endpoint(&addr);
    each_mode(|env| {
        if !common::api::image_exists(&env.mode().socket(), AGENT_IMAGE).unwrap_or(false) {
            println!("SKIP: {}: no {AGENT_IMAGE} in this service", env.mode());
            return;
        }
        let dir = env.mkdir(env.work_dir().join(".pi-agent"), 0o755);
        let models = serde_json::json!({"providers": {"scripted": {
            "baseUrl": format!("http://{}:{}/v1", ep.addr, ep.port),
            "api": "openai-completions",
            "apiKey": "test",
            "models": [{"id": "m"}],
        }}});
        env.write_file(dir.join("models.json"), models.to_string(), 0o644);
        check(
            env,
            &ep,
            "pi",
            &[format!("PI_CODING_AGENT_DIR={}", dir.display())],
            &["-p", "--provider", "scripted", "--model", "m", "say hi"],
        );
    });
}
