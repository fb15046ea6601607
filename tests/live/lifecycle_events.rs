//! `started` and `finished` hooks through the real `ags` binary and real Podman (rootful and
//! rootless), without OCI hooks: the contexts they see, that they run alongside and after the
//! agent, that their failures never change the agent's exit code, and that a SIGKILLed `ags`'s
//! finished hooks run exactly once at the next start (from reconciliation alone).
//! See docs/lifecycle.md. `tests/live/oci_hooks.rs` covers the same crash with OCI hooks installed.

use crate::common;
use crate::lifecycle_support;

use std::time::Duration;

use common::{each_mode, show};
use lifecycle_support::{
    IsolatedService, NO_NETWORK, approve_all, decl, hook, json_lines, recording_hook, spawn_ags, wait_for,
};
use serde_json::Value;

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn started_and_finished_hooks_see_the_right_context() {
    let _serial = lifecycle_support::serial();
    each_mode(|env| {
        // The started hook leaves a marker in the workdir that the agent waits for: it ran while
        // the agent did.
        let started = hook(
            env,
            "on-start",
            &format!(
                "ctx=$(cat)\nprintf '%s\\n' \"$ctx\" >> {}\ntouch started-marker\necho '{{\"version\":1}}'",
                env.root().join("started.jsonl").display()
            ),
        );
        let finished = recording_hook(env, "on-finish", "finished.jsonl");
        env.write_global_config(&format!(
            "{}{}",
            decl("started", "on-start", &started, &[]),
            decl("finished", "on-finish", &finished, &[])
        ));
        approve_all(env);
        let image = env.image();
        // The started hook runs while the agent does: wait for it (up to 2 minutes).
        let agent = "for i in $(seq 1200); do [ -f started-marker ] && exit 7; sleep 0.1; done; exit 1";
        let label = env.label();
        let out = env.run([
            "--image",
            &image,
            "--label",
            &label,
            "--tty=false",
            "--",
            "sh",
            "-c",
            agent,
        ]);
        assert_eq!(out.status.code(), Some(7), "{}", show(&out));
        let s = &json_lines(env, "started.jsonl")[..];
        let f = &json_lines(env, "finished.jsonl")[..];
        assert_eq!((s.len(), f.len()), (1, 1), "{}", show(&out));
        let (s, f) = (&s[0], &f[0]);
        let work = env.work_dir().canonicalize().unwrap();
        assert_eq!(s["event"], "started");
        assert_eq!(f["event"], "finished");
        for ctx in [s, f] {
            assert_eq!(ctx["version"], 1);
            assert_eq!(ctx["launch_id"], s["launch_id"]);
            assert_eq!(ctx["project"], work.to_str().unwrap());
            assert_eq!(ctx["workdir"], work.to_str().unwrap());
            assert_eq!(ctx["agent"], "shell");
            assert_eq!(ctx["container_id"], s["container_id"]);
            assert!(
                ctx["container_name"].as_str().unwrap().starts_with("ags-work-"),
                "{ctx}"
            );
        }
        let id = s["container_id"].as_str().unwrap();
        assert!(
            id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit()),
            "{id}"
        );
        assert_eq!(f["exit_code"], 7);
        assert_eq!(f["recovered"], false);
        assert!(f.get("signal").is_none(), "{f}");
        // Sane, not timed (the agent may wait minutes for the started hook on a loaded machine).
        assert!(f["duration_ms"].as_u64().unwrap() < 3_600_000, "{f}");
        assert!(
            stderr(&out).contains("[on-finish] on-finish ran"),
            "{}",
            show(&out)
        );
        let log = std::fs::read_to_string(lifecycle_support::paths(env).hook_log()).unwrap();
        assert!(
            log.contains("\"event\":\"started\"") && log.contains("\"event\":\"finished\""),
            "{log}"
        );
        assert!(
            !lifecycle_support::spool_dir(env)
                .join(format!("{}.launch.json", s["launch_id"].as_str().unwrap()))
                .exists(),
            "the launch record is dropped once the finished hooks ran"
        );
        env.assert_no_leftovers();
    });
}

#[test]
fn failing_lifecycle_hooks_do_not_change_the_exit_code() {
    let _serial = lifecycle_support::serial();
    each_mode(|env| {
        let bad_start = hook(env, "bad-start", "cat >/dev/null; echo oops >&2; exit 3");
        let bad_finish = hook(
            env,
            "bad-finish",
            "cat >/dev/null; echo '{\"version\":1,\"extra\":1}'",
        );
        let good = recording_hook(env, "good-finish", "finished.jsonl");
        env.write_global_config(&format!(
            "{}{}{}",
            decl("started", "bad-start", &bad_start, &[]),
            decl("finished", "bad-finish", &bad_finish, &[]),
            decl("finished", "good-finish", &good, &[])
        ));
        approve_all(env);
        let (image, label) = (env.image(), env.label());
        let out = env.run(["--image", &image, "--label", &label, "--", "sh", "-c", "exit 5"]);
        assert_eq!(out.status.code(), Some(5), "{}", show(&out));
        let err = stderr(&out);
        assert!(err.contains("[bad-start] oops"), "{err}");
        assert!(
            err.contains("ags: started hook bad-start failed: exited with code 3"),
            "{err}"
        );
        assert!(
            err.contains(
                "ags: finished hook bad-finish failed: invalid response: $.extra: unknown field; \
                 allowed here: `version`"
            ),
            "{err}"
        );
        assert_eq!(
            json_lines(env, "finished.jsonl").len(),
            1,
            "a failing peer cancels nothing"
        );
        // An unknown exit status is not the agent's: exit 0 stays 0 as well.
        let out = env.run(["--image", &image, "--label", &label, "--", "true"]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        env.assert_no_leftovers();
    });
}

#[test]
fn a_killed_ags_finished_hooks_run_once_at_the_next_start() {
    let _serial = lifecycle_support::serial();
    each_mode(|env| {
        let marker = env.root().join("started-marker");
        let started = hook(
            env,
            "mark",
            &format!(
                "cat >/dev/null; touch {}; echo '{{\"version\":1}}'",
                marker.display()
            ),
        );
        let finished = recording_hook(env, "on-finish", "finished.jsonl");
        let service = IsolatedService::start(env, false);
        env.write_global_config(&format!(
            "{NO_NETWORK}{}{}",
            decl("started", "mark", &started, &[]),
            decl("finished", "on-finish", &finished, &[])
        ));
        approve_all(env);
        let (image, label, url) = (env.image(), env.label(), service.url());
        let agent = "while [ ! -f release ]; do sleep 0.05; done; exit 3";
        let mut ags = spawn_ags(
            env,
            &[
                "--url", &url, "--image", &image, "--label", &label, "--", "sh", "-c", agent,
            ],
        );
        wait_for("the started hook", Duration::from_secs(60), || marker.exists());
        ags.kill().expect("SIGKILL ags");
        ags.wait().expect("reaping ags");
        assert!(
            json_lines(env, "finished.jsonl").is_empty(),
            "ags died before its finished hooks"
        );
        // The agent outlives its ags; let it end by itself, then start the next ags at once.
        env.write_file("work/release", "", 0o644);
        let mut seen = Vec::new();
        wait_for("the orphaned agent to exit", Duration::from_secs(120), || {
            seen = lifecycle_support::container_states(env, service.socket());
            seen.iter().all(|s| s != "running")
        });
        let out = env.run(["--url", &url, "--image", &image, "--label", &label, "--", "true"]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let runs = json_lines(env, "finished.jsonl");
        assert_eq!(runs.len(), 2, "{runs:?}\n{}", show(&out));
        let recovered: Vec<&Value> = runs.iter().filter(|r| r["recovered"] == true).collect();
        assert_eq!(recovered.len(), 1, "{runs:?}");
        let r = recovered[0];
        let after = lifecycle_support::container_states(env, service.socket());
        assert_eq!(
            r["exit_code"],
            3,
            "from the leftover container ({seen:?} before the next ags, {after:?} after): {r}\n{}",
            show(&out)
        );
        assert!(r["container_id"].as_str().unwrap().len() == 64, "{r}");
        assert!(
            stderr(&out).contains("ran its finished hooks: on-finish"),
            "{}",
            show(&out)
        );
        // Its run receipt was closed by the recovery too, after its finished hooks, and holds.
        let receipts = env.state_home().join("ags/receipts");
        let recovered: Vec<String> = std::fs::read_dir(&receipts)
            .unwrap()
            .flatten()
            .map(|e| std::fs::read_to_string(e.path()).unwrap())
            .filter(|t| t.contains("\"closed_by\":\"recovery\""))
            .collect();
        assert_eq!(recovered.len(), 1, "{recovered:?}");
        let body: Value = serde_json::from_str(recovered[0].lines().next().unwrap()).unwrap();
        assert!(
            body["hooks"]
                .as_array()
                .unwrap()
                .iter()
                .any(|h| h["name"] == "on-finish"),
            "{body:#}"
        );
        let verified = env.run(["verify", body["launch_id"].as_str().unwrap()]);
        assert_eq!(verified.status.code(), Some(0), "{}", show(&verified));
        // Exactly once: neither gc nor the next launch runs it again.
        let gc = env.run(["gc", "--url", &url]);
        assert_eq!(gc.status.code(), Some(0), "{}", show(&gc));
        let out = env.run(["--url", &url, "--image", &image, "--label", &label, "--", "true"]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let runs = json_lines(env, "finished.jsonl");
        assert_eq!(
            runs.iter().filter(|r| r["recovered"] == true).count(),
            1,
            "{runs:?}"
        );
        assert_eq!(runs.len(), 3, "{runs:?}");
        service.assert_no_leftovers(env);
    });
}

/// The JSON examples of docs/lifecycle.md are accepted by the strict context parsers, and the
/// worked example hook prints the documented line and the only valid response.
#[test]
fn docs_examples_are_honest() {
    use ags::hooks::events::{FinishedContext, StartedContext, parse_lifecycle_response};
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/lifecycle.md")).unwrap();
    let block = |tag: &str| {
        let start = doc
            .find(&format!("```json {tag}\n"))
            .unwrap_or_else(|| panic!("no {tag} block"));
        let body = doc[start..].split_once('\n').unwrap().1;
        body[..body.find("```").unwrap()].trim().to_string()
    };
    StartedContext::parse_strict(block("started-context").as_bytes()).expect("started example");
    let tomls: Vec<&str> = doc
        .split("```toml\n")
        .skip(1)
        .map(|b| &b[..b.find("```").unwrap()])
        .collect();
    assert!(tomls.len() >= 2);
    for t in tomls {
        let file: ags::config::ConfigFile = toml::from_str(t).unwrap_or_else(|e| panic!("{e}\n{t}"));
        assert!(file.declares_hooks(), "{t}");
    }
    let finished = block("finished-context");
    let ctx = FinishedContext::parse_strict(finished.as_bytes()).expect("finished example");
    assert_eq!(ctx.signal.as_deref(), Some("SIGKILL"));
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("runs.log");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/hooks/finished-summary");
    assert!(
        doc.contains(
            &std::fs::read_to_string(script)
                .unwrap()
                .lines()
                .skip(5)
                .collect::<Vec<_>>()
                .join("\n")
        )
    );
    let mut cmd = std::process::Command::new(script);
    cmd.arg(&out);
    let run = common::run_command(cmd, Some(finished.as_bytes()), Duration::from_secs(30));
    assert!(run.status.success(), "{}", show(&run));
    parse_lifecycle_response(&run.stdout).expect("the example answers {\"version\":1}");
    let line = std::fs::read_to_string(&out).unwrap();
    assert!(
        line.ends_with(
            " ags-48213-1767225600123456789 agent=pi exit=137 duration_ms=5021 recovered=false \
             project=/work/project\n"
        ),
        "{line}"
    );
}
