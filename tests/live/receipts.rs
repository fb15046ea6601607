//! Run receipts (issue 29) on real launches, in every mode: a launch with a prepare hook and an
//! allowlist leaves a receipt that `--report` names and `ags verify` finds intact; then each
//! kind of record and the receipt are tampered with on disk (an edited byte, a removed record,
//! a record put in again, a consistently rewritten receipt) and `ags verify` finds each. With
//! the agent image, claude and codex run a tool call that makes a request through the proxy:
//! the egress record names the call its `pre_tool` record opened, and `ags log --launch` shows
//! the request under it.

use crate::common;

use serde_json::{Value, json};

use common::agents::{agents, endpoint, endpoint_with, with_agent_image};
use common::launch::{assert_clean, launch_args, respond_hook, stdout};
use common::{TestEnv, each_mode, show};

/// A change made to one line of a log (`None` removes it).
type Attack = Box<dyn Fn(&str) -> Option<String>>;

const SENTINEL: &str = "receipt-sentinel-7d41";

fn state(env: &TestEnv) -> std::path::PathBuf {
    env.state_home().join("ags")
}

fn verify(env: &TestEnv, args: &[&str]) -> (Option<i32>, String) {
    let mut all = vec!["verify"];
    all.extend(args);
    let out = env.run(all);
    (out.status.code(), show(&out))
}

/// Replace the first line of `file` holding `needle` (and `launch`) by `f(line)`; `None`
/// removes it. Returns the file's bytes before.
fn tamper(file: &std::path::Path, launch: &str, needle: &str, f: impl Fn(&str) -> Option<String>) -> Vec<u8> {
    let before = std::fs::read(file).unwrap();
    let text = String::from_utf8(before.clone()).unwrap();
    let mut done = false;
    let mut out = String::new();
    for line in text.lines() {
        if !done && line.contains(launch) && line.contains(needle) {
            done = true;
            if let Some(l) = f(line) {
                out.push_str(&l);
                out.push('\n');
            }
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    assert!(done, "no line of {launch} with {needle} in {}", file.display());
    std::fs::write(file, out).unwrap();
    before
}

#[test]
fn a_launch_leaves_a_receipt_that_verify_checks_and_finds_each_tampering() {
    let listed = crate::egress::server("listed");
    each_mode(|env| {
        let response = json!({"version": 1, "env": {"HOOK_VALUE": SENTINEL}});
        let hook = respond_hook(env, "rcpt", &response, None);
        env.write_global_config(&format!(
            "[network]\nmode = \"allowlist\"\nallow = [\"127.0.0.1:{listed}\"]\n{hook}"
        ));
        common::launch::approve_hooks(env);
        let report = env.root().join("report.json");
        let report_arg = report.to_string_lossy().into_owned();
        let script = format!(
            "printf 'GET http://127.0.0.1:{listed}/ HTTP/1.1\\r\\n\\r\\n' | nc 127.0.0.1 3128; \
             printf 'CONNECT blocked.example.invalid:443 HTTP/1.1\\r\\n\\r\\n' | nc 127.0.0.1 3128; exit 0"
        );
        let env_arg = format!("PLAIN_VALUE={SENTINEL}");
        let args = ["--tty=false", "--report", &report_arg, "--env", &env_arg];
        let out = env.run(launch_args(env, &args, &["sh", "-c", &script]));
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let r: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
        let launch = r["launch_id"].as_str().unwrap().to_string();
        let path = std::path::PathBuf::from(
            r["receipt"]["path"]
                .as_str()
                .expect("the report names the receipt"),
        );
        let digest = r["receipt"]["digest"].as_str().unwrap().to_string();
        assert_eq!(path, state(env).join("receipts").join(format!("{launch}.json")));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains(SENTINEL), "a value in the receipt: {text}");
        let body: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(body["launch_id"], launch.as_str());
        assert_eq!(body["closed_by"], "launch");
        assert_eq!(body["exit_code"], 0);
        assert!(
            body["image_id"].as_str().is_some_and(|i| i.len() == 64),
            "{body:#}"
        );
        // `--env` values are staged, not in the create body; what is there is redacted.
        let spec_env = body["create"]["env"].as_object().unwrap();
        assert!(
            !spec_env.is_empty() && spec_env.values().all(|v| v == "(redacted)"),
            "{body:#}"
        );
        assert_eq!(body["network"]["mode"], "allowlist", "{body:#}");
        let hook = &body["hooks"][0];
        assert_eq!(
            (hook["name"].as_str(), hook["event"].as_str()),
            (Some("rcpt"), Some("prepare")),
            "{body:#}"
        );
        assert!(
            hook["response"]
                .as_str()
                .is_some_and(|d| d.starts_with("sha256:")),
            "{body:#}"
        );
        // Each chain ends with the receipt's closing record.
        assert_eq!(body["logs"]["hooks"]["count"], 2, "{body:#}");
        assert!(body["logs"]["egress"]["count"].as_u64() >= Some(3), "{body:#}");
        // No chain heads are left behind.
        assert!(!state(env).join("chains").join(&launch).exists());

        let report_flag = ["--report", report_arg.as_str()];
        let (code, said) = verify(env, &report_flag);
        assert_eq!(code, Some(0), "{said}");
        assert!(said.contains("intact") && said.contains("egress"), "{said}");

        // Each record kind, tampered with and put back.
        let egress = state(env).join("egress.jsonl");
        let hooks = state(env).join("hooks.jsonl");
        let attacks: Vec<(&std::path::Path, &str, Attack)> = vec![
            (
                &egress,
                "refused",
                Box::new(|l: &str| Some(l.replacen("blocked.example.invalid", "blocked.example.invaliD", 1))),
            ),
            (&egress, "allowed", Box::new(|_: &str| None)),
            (
                &hooks,
                "rcpt",
                Box::new(|l: &str| Some(l.replacen("\"ok\"", "\"failed\"", 1))),
            ),
            (&hooks, "rcpt", Box::new(|_: &str| None)),
        ];
        for (file, needle, attack) in attacks {
            let before = tamper(file, &launch, needle, attack);
            let (code, said) = verify(env, &report_flag);
            assert_eq!(code, Some(1), "{} {needle}: {said}", file.display());
            assert!(
                said.contains(&file.display().to_string()) && said.contains("NOT intact"),
                "{said}"
            );
            std::fs::write(file, before).unwrap();
        }
        // A record put in again (a replay of the launch's first egress record, right after it).
        let before = std::fs::read(&egress).unwrap();
        let text = String::from_utf8(before.clone()).unwrap();
        let mut lines: Vec<&str> = text.lines().collect();
        let at = lines.iter().position(|l| l.contains(&launch)).unwrap();
        lines.insert(at + 1, lines[at]);
        std::fs::write(&egress, lines.join("\n") + "\n").unwrap();
        assert_eq!(verify(env, &report_flag).0, Some(1));
        // The same record after the chain's closing record: with its link, a copy (found);
        // without, written after the receipt closed (not covered, shown as such).
        std::fs::write(&egress, format!("{text}{}\n", lines[at])).unwrap();
        assert_eq!(verify(env, &report_flag).0, Some(1));
        let unlinked = ags::logfile::chain::split(lines[at].as_bytes()).0.into_owned();
        let unlinked = String::from_utf8(unlinked).unwrap();
        std::fs::write(&egress, format!("{text}{unlinked}\n")).unwrap();
        let (code, said) = verify(env, &report_flag);
        assert_eq!(code, Some(0), "{said}");
        assert!(
            said.contains("note: ") && said.contains("after its receipt closed"),
            "{said}"
        );
        let out = env.run(["log", "--launch", &launch, "-n", "100"]);
        assert!(
            stdout(&out).contains("[not covered by the receipt]"),
            "{}",
            stdout(&out)
        );
        std::fs::write(&egress, before).unwrap();
        // The receipt rewritten with a new seal: intact by itself, caught by the kept digest.
        let original = std::fs::read_to_string(&path).unwrap();
        let forged_body = original.lines().next().unwrap().replacen(
            "\"closed_by\":\"launch\"",
            "\"closed_by\":\"recovery\"",
            1,
        );
        let seal = ags::logfile::chain::digest(forged_body.as_bytes());
        std::fs::write(&path, format!("{forged_body}\n{{\"seal\":\"{seal}\"}}\n")).unwrap();
        assert_eq!(verify(env, &[&launch]).0, Some(0));
        let (code, said) = verify(env, &[&launch, "--digest", &digest]);
        assert_eq!(code, Some(1), "{said}");
        std::fs::write(&path, &original).unwrap();
        assert_eq!(verify(env, &[&launch, "--digest", &digest]).0, Some(0));
        // The timeline holds all three logs' records of the launch.
        let out = env.run(["log", "--launch", &launch, "-n", "100"]);
        let table = stdout(&out);
        assert!(
            table.starts_with("TIME") && table.contains(" hook ") && table.contains(" egress "),
            "{table}"
        );
        assert_clean(env);
    });
}

/// `name` runs one tool call, `curl` to a second listed server: its egress record names the
/// call its `pre_tool` record opened, and the timeline shows it under that record.
fn check_attribution(env: &TestEnv, addr: &str, name: &str) {
    let target = endpoint_with(addr, &[]);
    let command = format!(
        "curl -s -o /dev/null http://{addr}:{}/from-the-tool; true",
        target.port
    );
    let ep = endpoint(addr, &command);
    let agent = agents(env, &ep).into_iter().find(|a| a.name == name).unwrap();
    env.write_global_config(&format!(
        "[network]\nmode = \"allowlist\"\nagent_hosts = false\nallow = [\"{addr}:{}\", \"{addr}:{}\"]\n\n[agent_guard]\ndeny = [\"touch never-*\"]\n",
        ep.port, target.port
    ));
    let out = common::agents::launch(env, &agent);
    assert_eq!(out.status.code(), Some(0), "{name}: {}", show(&out));
    let receipts = state(env).join("receipts");
    let launch = std::fs::read_dir(&receipts)
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_suffix(".json").map(String::from))
        .max_by_key(|l| l.rsplit('-').next().and_then(|n| n.parse::<u128>().ok()))
        .unwrap();
    let rows: Vec<Value> = stdout(&env.run(["log", "--launch", &launch, "--json", "-n", "1000"]))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let what = format!("{name}: {}\n{rows:#?}", show(&out));
    let pre = rows
        .iter()
        .find(|r| {
            r["event"] == "pre_tool"
                && r["kind"] == "event"
                && r["tool_input_summary"]
                    .as_str()
                    .is_some_and(|s| s.contains("from-the-tool"))
        })
        .unwrap_or_else(|| panic!("no pre_tool of the curl: {what}"));
    let call = pre["call"]
        .as_str()
        .unwrap_or_else(|| panic!("the pre_tool opened no call: {what}"));
    let request = rows
        .iter()
        .find(|r| r["port"] == target.port && r["decision"] == "allowed")
        .unwrap_or_else(|| panic!("no egress record of the tool's request: {what}"));
    assert_eq!(request["calls"], json!([call]), "{what}");
    // The model's own requests are made outside the call.
    let model: Vec<&Value> = rows
        .iter()
        .filter(|r| r["port"] == ep.port && r["decision"] == "allowed")
        .collect();
    assert!(
        !model.is_empty() && model.iter().any(|r| r.get("calls").is_none()),
        "{what}"
    );
    // The request is among the rows right after its call's record (`--json` rows are in the
    // table's order; the agent's own connections during the call, codex's refused update
    // checks, are there too), and the table draws it under the call.
    let at = rows.iter().position(|r| std::ptr::eq(r, pre)).unwrap();
    let block: Vec<&Value> = rows[at + 1..]
        .iter()
        .take_while(|r| r["calls"] == json!([call]))
        .collect();
    assert!(block.iter().any(|r| r["port"] == target.port), "{what}");
    let table = stdout(&env.run(["log", "--launch", &launch, "-n", "1000"]));
    let under = format!(":{} ", target.port);
    assert!(
        table.lines().any(|l| l.contains("└") && l.contains(&under)),
        "{table}"
    );
    let (code, said) = verify(env, &[&launch]);
    assert_eq!(code, Some(0), "{said}");
    assert_clean(env);
}

#[test]
fn claude_and_codex_requests_are_linked_to_the_tool_call_that_made_them() {
    with_agent_image(|env, addr| {
        for name in ["claude", "codex"] {
            check_attribution(env, addr, name);
        }
    });
}
