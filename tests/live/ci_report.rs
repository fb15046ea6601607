//! CI mode (issue 16, item 3), in every mode: `ags hooks approve NAME --hash SHA256` records an
//! approval for exactly the pinned hash without running the hook (a wrong hash is refused and
//! approves nothing; a changed entrypoint is refused at launch, with no prompt); `--report PATH`
//! writes one JSON document after the launch — launch id, image, the agent's exit code, every
//! phase timed, the hook runs of this launch without values, no leftovers — and `--report -`
//! prints it after a refused launch too.

use crate::common;

use serde_json::{Value, json};

use common::launch::{assert_clean, install_hook, launch_args, respond_hook, stdout};
use common::{TestEnv, each_mode, show};

const SECRET: &str = "ci-report-secret-5c1e";

/// The approval hash of the active hook `name`, from `ags hooks list --json`.
fn listed(env: &TestEnv, name: &str) -> (String, bool) {
    let out = env.run(["hooks", "list", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let rows: Value = serde_json::from_slice(&out.stdout).expect("hooks list --json is JSON");
    let row = rows
        .as_array()
        .expect("a list")
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no hook {name} in {rows}"))
        .clone();
    (
        row["hash"].as_str().expect("a hash").to_string(),
        row["approved"] == true,
    )
}

fn read_report(path: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("report is not JSON ({e}): {text}"))
}

#[test]
fn pinned_approval_then_a_report_of_the_launch() {
    each_mode(|env| {
        let marker = env.root().join("hook-ran");
        let response = json!({"version": 1, "env": {"CI_TOKEN": SECRET}});
        env.write_global_config(&respond_hook(env, "ci", &response, Some(&marker)));
        let (hash, approved) = listed(env, "ci");
        assert!(!approved, "a fresh hook is not approved");

        // A wrong pin is refused and approves nothing; nothing runs.
        let wrong = "0".repeat(64);
        let out = env.run(["hooks", "approve", "ci", "--hash", &wrong]);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        assert!(
            show(&out).contains(&hash[..12]),
            "names the current hash: {}",
            show(&out)
        );
        assert!(show(&out).contains("nothing was approved"), "{}", show(&out));
        let out = env.run(["hooks", "approve", "ci", "--hash", &hash[..12]]);
        assert_eq!(out.status.code(), Some(125), "a prefix is no pin: {}", show(&out));
        assert!(!listed(env, "ci").1, "still unapproved");

        // The right pin approves without executing.
        let out = env.run(["hooks", "approve", "ci", "--hash", &hash]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert!(!marker.exists(), "approve must not run the hook");
        assert!(listed(env, "ci").1, "approved");

        // A launch with no terminal: no prompt, the report says what happened.
        let report = env.root().join("report.json");
        let report_arg = report.to_string_lossy().into_owned();
        let args = ["--tty=false", "--report", &report_arg];
        let cmd = ["sh", "-c", "test \"$CI_TOKEN\" = \"$1\" && exit 7", "sh", SECRET];
        let out = env.run(launch_args(env, &args, &cmd));
        assert_eq!(out.status.code(), Some(7), "{}", show(&out));
        assert!(marker.exists(), "the approved hook ran");
        let r = read_report(&report);
        assert_eq!(r["version"], 1, "{r}");
        assert_eq!(r["exit_code"], 7, "{r}");
        assert_eq!(r["error"], Value::Null, "{r}");
        assert_eq!(r["image"], env.image(), "{r}");
        assert_eq!(r["agent"], "shell", "{r}");
        let launch_id = r["launch_id"].as_str().expect("a launch id");
        assert!(!launch_id.is_empty(), "{r}");
        for phase in ["hooks", "create", "start", "exit", "cleanup"] {
            assert!(r["phases_ms"][phase].is_u64(), "phase {phase} timed: {r}");
        }
        let hooks = r["hooks"].as_array().expect("hook runs");
        assert_eq!(hooks.len(), 1, "{r}");
        assert_eq!(hooks[0]["name"], "ci", "{r}");
        assert_eq!(hooks[0]["hash"], hash.as_str(), "{r}");
        assert_eq!(hooks[0]["launch_id"], launch_id, "{r}");
        assert_eq!(hooks[0]["outcome"], "ok", "{r}");
        assert_eq!(hooks[0]["keys"], json!(["CI_TOKEN"]), "{r}");
        assert_eq!(r["leftovers"], json!([]), "{r}");
        assert!(!r.to_string().contains(SECRET), "no value in the report: {r}");
        assert!(!stdout(&out).contains(SECRET), "{}", show(&out));
        assert_clean(env);

        // The entrypoint changes: its hash no longer matches the pin, the launch is refused
        // without a prompt and without running it, and `--report -` still reports.
        std::fs::remove_file(&marker).expect("marker removed");
        let hook = install_hook(env, "respond");
        let mut bytes = std::fs::read(&hook).expect("hook readable");
        bytes.extend_from_slice(b"# changed after the pin\n");
        env.write_file("hooks/respond", bytes, 0o755);
        let out = env.run(launch_args(env, &["--tty=false", "--report", "-"], &["true"]));
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        assert!(!marker.exists(), "a changed hook must not run");
        let r: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("--report - prints JSON ({e}): {}", show(&out)));
        assert_eq!(r["exit_code"], 125, "{r}");
        assert!(
            r["error"].as_str().is_some_and(|e| e.contains("approv")),
            "the refusal is the error: {r}"
        );
        assert_eq!(r["phases_ms"]["create"], Value::Null, "nothing was created: {r}");
        assert_eq!(r["hooks"], json!([]), "{r}");
        assert_clean(env);
    });
}

#[test]
fn report_arguments_are_checked_before_anything_runs() {
    let env = TestEnv::without_podman();
    let missing = env.root().join("no-such-dir/report.json");
    let out = env.run([
        "--tty=false",
        "--report",
        &missing.to_string_lossy(),
        "--",
        "true",
    ]);
    assert_eq!(out.status.code(), Some(125), "{}", show(&out));
    assert!(show(&out).contains("does not exist"), "{}", show(&out));
    let out = env.run(["plan", "--report", "-", "--", "true"]);
    assert_eq!(out.status.code(), Some(125), "{}", show(&out));
    assert!(show(&out).contains("launches nothing"), "{}", show(&out));
}
