//! The CI contract (issue 27, item 5), in every mode: the report's `outcome` separates the
//! agent's own failure from a timeout, a hook refusal, a refused input and a policy refusal
//! (each with the exit code docs/cli.md gives it), the report matches its published JSON Schema
//! (`docs/schemas/report.schema.json`, the fields and the outcome's values), and
//! `--expect-plan` launches the plan `ags plan` printed and refuses one that drifted, creating
//! nothing. An out-of-memory kill is reported as such where Podman says so.

use crate::common;

use serde_json::{Value, json};

use common::launch::{assert_clean, launch_args, respond_hook, stdout};
use common::{Mode, TestEnv, api, each_mode, show};

/// Launch `cmd` with `extra` options and `--report -`: the exit code and the report.
fn reported(env: &TestEnv, extra: &[&str], cmd: &[&str]) -> (i32, Value) {
    let mut all = vec!["--tty=false", "--report", "-"];
    all.extend_from_slice(extra);
    let out = env.run(launch_args(env, &all, cmd));
    let text = stdout(&out);
    let at = text
        .rfind("\n{\n")
        .map(|i| i + 1)
        .or_else(|| text.starts_with('{').then_some(0));
    let report = serde_json::from_str(&text[at.unwrap_or_else(|| panic!("no report: {}", show(&out)))..])
        .unwrap_or_else(|e| panic!("{e}: {}", show(&out)));
    (out.status.code().unwrap_or(-1), report)
}

/// The published schema's properties and the outcome's values.
fn schema() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/schemas/report.schema.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The report has exactly the schema's required fields and an outcome it lists.
fn conforms(report: &Value, schema: &Value) {
    let fields: Vec<&String> = report.as_object().unwrap().keys().collect();
    let required: Vec<&str> = schema["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for f in &required {
        assert!(report.get(*f).is_some(), "{f} missing: {report}");
    }
    for f in fields {
        assert!(schema["properties"].get(f).is_some(), "{f} is not in the schema");
    }
    let values = serde_json::to_string(&schema["$defs"]["Outcome"]).unwrap();
    let outcome = report["outcome"].as_str().unwrap();
    assert!(
        values.contains(&format!("\"{outcome}\"")),
        "{outcome} not in {values}"
    );
}

#[test]
fn the_outcome_separates_how_a_launch_ended() {
    let schema = schema();
    each_mode(|env| {
        let cases: [(&[&str], &[&str], i32, &str); 4] = [
            (&[], &["true"], 0, "success"),
            (&[], &["sh", "-c", "exit 3"], 3, "agent-failure"),
            (&["--timeout", "1"], &["sleep", "30"], 124, "timeout"),
            (&["--publish", "not-a-port"], &["true"], 125, "invalid-input"),
        ];
        for (extra, cmd, code, outcome) in cases {
            let (got, report) = reported(env, extra, cmd);
            assert_eq!(
                (got, report["outcome"].as_str()),
                (code, Some(outcome)),
                "{report}"
            );
            assert_eq!(report["exit_code"], code, "{report}");
            conforms(&report, &schema);
        }
        // A hook nobody approved: refused without a prompt.
        let response = json!({"version": 1, "env": {"X": "1"}});
        env.write_global_config(&respond_hook(env, "unapproved", &response, None));
        let (got, report) = reported(env, &[], &["true"]);
        assert_eq!(
            (got, report["outcome"].as_str()),
            (125, Some("hook-refusal")),
            "{report}"
        );
        conforms(&report, &schema);
        env.write_global_config("");
        assert_clean(env);
    });
}

#[test]
fn expect_plan_launches_the_pinned_plan_and_refuses_a_drifted_one() {
    each_mode(|env| {
        let mut args = vec!["plan".to_string(), "--tty=false".into()];
        args.extend(launch_args(env, &[], &["true"]));
        let out = env.run(&args);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let digest = stdout(&out)
            .lines()
            .find_map(|l| l.strip_prefix("digest (--expect-plan): ").map(String::from))
            .unwrap_or_else(|| panic!("no digest: {}", show(&out)));
        let (code, report) = reported(env, &["--expect-plan", &digest], &["true"]);
        assert_eq!(
            (code, report["outcome"].as_str()),
            (0, Some("success")),
            "{report}"
        );
        // Another option, another plan: refused before anything is created.
        let (code, report) = reported(env, &["--expect-plan", &digest, "--env", "EXTRA=1"], &["true"]);
        assert_eq!(
            (code, report["outcome"].as_str()),
            (125, Some("policy-refusal")),
            "{report}"
        );
        assert!(
            report["error"].as_str().unwrap().contains("--expect-plan"),
            "{report}"
        );
        assert!(
            report["phases_ms"]["create"].is_null(),
            "nothing created: {report}"
        );
        let (code, _) = reported(env, &["--expect-plan", "sha256:12"], &["true"]);
        assert_eq!(code, 125);
        assert_clean(env);
    });
}

/// Whether this service reports a kernel OOM kill in `State.OOMKilled` (Podman 4.3 with
/// cgroupfs on a cgroup v1 host does not: conmon never sees the event).
fn reports_oom(mode: Mode, image: &str) -> bool {
    let body = json!({
        "image": image, "command": ["tail", "/dev/zero"],
        "resource_limits": {"memory": {"limit": 16 * 1024 * 1024}},
    });
    let created = api::call(mode, "POST", "/containers/create", Some(&body)).json();
    let id = created["Id"].as_str().unwrap_or_default().to_string();
    let _ = api::call(mode, "POST", &format!("/containers/{id}/start"), None);
    let _ = api::call(mode, "POST", &format!("/containers/{id}/wait"), None);
    let state = api::call(mode, "GET", &format!("/containers/{id}/json"), None).json()["State"].clone();
    let _ = api::call(mode, "DELETE", &format!("/containers/{id}?force=true"), None);
    state["OOMKilled"] == true
}

#[test]
fn an_out_of_memory_kill_is_its_own_outcome_where_podman_reports_it() {
    each_mode(|env| {
        if env.mode() == Mode::Rootless && api::podman_major(env.mode()) < 5 {
            common::loud("SKIP: rootless Podman 4 on cgroup v1 applies no memory limit");
            return;
        }
        if !reports_oom(env.mode(), &env.image()) {
            common::loud(&format!(
                "SKIP ({}): this Podman does not report the kernel's OOM kill (State.OOMKilled stays false); ags reports agent-failure with 137 there",
                env.mode()
            ));
            return;
        }
        let (code, report) = reported(env, &["--memory", "16m"], &["tail", "/dev/zero"]);
        assert_eq!(
            (code, report["outcome"].as_str()),
            (137, Some("out-of-memory")),
            "{report}"
        );
        assert_clean(env);
    });
}
