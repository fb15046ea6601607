//! Many launches at once (issue 16, item 4), in every mode: 20 concurrent `ags` launches against
//! one service all succeed with their own exit code, each sees only its own staged env (a
//! `--env` sentinel and a hook-contributed value) and its own generated file — the hook's values
//! are the launch's own id, checked against the launch's `--report` — and nothing is left in
//! Podman or on the host afterwards. No timing is asserted.

use crate::common;

use serde_json::Value;

use common::launch::{approve_hooks, assert_clean, decl, install_hook, launch_args, stdout};
use common::{each_mode, show};

const LAUNCHES: usize = 20;

#[test]
fn concurrent_launches_see_only_their_own_staging() {
    each_mode(|env| {
        let hook = install_hook(env, "own-id");
        env.write_global_config(&decl("own-id", &hook, &[], ""));
        approve_hooks(env);
        let script = r#"printf '%s %s %s\n' "$CLI_SENTINEL" "$HOOK_ID" "$(cat /tmp/sentinel/id)"; exit "$1""#;
        let outputs: Vec<_> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..LAUNCHES)
                .map(|i| {
                    s.spawn(move || {
                        let report = env.root().join(format!("report-{i}.json"));
                        let sentinel = format!("CLI_SENTINEL=sentinel-{i}");
                        let report_arg = report.to_string_lossy().into_owned();
                        let extra = ["--tty=false", "--env", &sentinel, "--report", &report_arg];
                        let code = (i % 5).to_string();
                        let out = env.run(launch_args(env, &extra, &["sh", "-c", script, "sh", &code]));
                        (out, report)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("launch thread"))
                .collect()
        });
        let mut ids = std::collections::BTreeSet::new();
        for (i, (out, report)) in outputs.iter().enumerate() {
            assert_eq!(
                out.status.code(),
                Some((i % 5) as i32),
                "launch {i}: {}",
                show(out)
            );
            let text = std::fs::read_to_string(report).unwrap_or_else(|e| panic!("launch {i}: report: {e}"));
            let r: Value = serde_json::from_str(&text).expect("report is JSON");
            let id = r["launch_id"].as_str().expect("launch id").to_string();
            assert_eq!(
                stdout(out),
                format!("sentinel-{i} {id} {id}\n"),
                "launch {i} sees only its own env and file: {}",
                show(out)
            );
            assert_eq!(r["leftovers"], serde_json::json!([]), "launch {i}: {r}");
            assert!(ids.insert(id), "launch ids are unique");
        }
        assert_clean(env);
    });
}
