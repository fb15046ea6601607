//! `ags`'s OCI hooks against a real Podman service (rootful and rootless) started by the test with
//! its own storage and containers.conf, into which `ags setup oci-hooks` installed the hooks: the events are
//! recorded in the launching user's spool, a finished record survives a SIGKILLed `ags` and the
//! next start runs the owed finished hook exactly once, containers without the annotation trigger
//! nothing, and the hook program running as root writes as the spool's owner.
//! See docs/lifecycle.md.

use crate::common;
use crate::lifecycle_support;

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::time::Duration;

use common::{TestEnv, api, each_mode, show};
use lifecycle_support::{
    IsolatedService, NO_NETWORK, approve_all, decl, hook, json_lines, recording_hook, spawn_ags, spool_dir,
    wait_for,
};
use serde_json::{Value, json};

/// The event lines of every events file in the env's spool.
fn spool_events(env: &TestEnv) -> Vec<Value> {
    let mut out = Vec::new();
    for entry in fs::read_dir(spool_dir(env)).into_iter().flatten().flatten() {
        if entry.file_name().to_string_lossy().ends_with(".events.jsonl") {
            let text = fs::read_to_string(entry.path()).unwrap_or_default();
            out.extend(text.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()));
        }
    }
    out
}

#[test]
fn events_are_recorded_before_the_finished_hooks_run() {
    let _serial = lifecycle_support::serial();
    each_mode(|env| {
        let service = IsolatedService::start(env, true);
        // The finished hook copies this launch's OCI events: by then Podman ran poststop.
        let copy = hook(
            env,
            "copy-events",
            &format!(
                "id=$(sed 's/.*\"launch_id\":\"\\([^\"]*\\)\".*/\\1/')\n\
                 cp \"$1/$id.events.jsonl\" {}\necho '{{\"version\":1}}'",
                env.root().join("events.jsonl").display()
            ),
        );
        let record = recording_hook(env, "record", "finished.jsonl");
        let spool = spool_dir(env);
        env.write_global_config(&format!(
            "{NO_NETWORK}{}{}",
            decl("finished", "copy-events", &copy, &[spool.to_str().unwrap()]),
            decl("finished", "record", &record, &[])
        ));
        approve_all(env);
        let (image, label, url) = (env.image(), env.label(), service.url());
        let out = env.run([
            "--url", &url, "--image", &image, "--label", &label, "--", "sh", "-c", "exit 4",
        ]);
        assert_eq!(out.status.code(), Some(4), "{}", show(&out));
        let finished = &json_lines(env, "finished.jsonl")[0];
        let events = json_lines(env, "events.jsonl");
        let stages: Vec<&str> = events.iter().map(|e| e["stage"].as_str().unwrap()).collect();
        assert_eq!(stages, ["poststart", "poststop"], "{events:?}");
        for e in &events {
            assert_eq!(e["launch_id"], finished["launch_id"]);
            assert_eq!(e["container_id"], finished["container_id"]);
        }
        assert!(events[0]["pid"].as_i64().unwrap() > 0, "{events:?}");
        assert!(events[1]["unix_ms"].as_u64() >= events[0]["unix_ms"].as_u64());
        assert!(
            spool_events(env).is_empty(),
            "ags drops its spool files at the end"
        );
        service.assert_no_leftovers(env);
    });
}

#[test]
fn a_finished_record_survives_a_killed_ags_and_runs_once() {
    let _serial = lifecycle_support::serial();
    each_mode(|env| {
        let service = IsolatedService::start(env, true);
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
        env.write_file("work/release", "", 0o644);
        // The record of the end appears without any ags: Podman's cleanup ran the poststop hook.
        wait_for("the poststop record", Duration::from_secs(120), || {
            spool_events(env).iter().any(|e| e["stage"] == "poststop")
        });
        let events = spool_events(env);
        let launch_id = events[0]["launch_id"].as_str().unwrap().to_string();
        assert!(spool_dir(env).join(format!("{launch_id}.launch.json")).exists());
        assert!(json_lines(env, "finished.jsonl").is_empty());
        let before = lifecycle_support::container_states(env, service.socket());
        let out = env.run(["--url", &url, "--image", &image, "--label", &label, "--", "true"]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let runs = json_lines(env, "finished.jsonl");
        let recovered: Vec<&Value> = runs.iter().filter(|r| r["recovered"] == true).collect();
        assert_eq!((runs.len(), recovered.len()), (2, 1), "{runs:?}\n{}", show(&out));
        let r = recovered[0];
        assert_eq!(r["launch_id"], launch_id.as_str());
        assert_eq!(
            r["exit_code"], 3,
            "{r}; before the next ags: {before:?}; events {events:?}"
        );
        let duration = r["duration_ms"]
            .as_u64()
            .expect("poststart and poststop give the duration");
        // Sane, not timed: the agent ran from its start until `release` (minutes on a loaded
        // machine at most).
        assert!((1..3_600_000).contains(&duration), "{r}");
        assert!(!spool_dir(env).join(format!("{launch_id}.launch.json")).exists());
        let gc = env.run(["gc", "--url", &url]);
        assert_eq!(gc.status.code(), Some(0), "{}", show(&gc));
        assert_eq!(json_lines(env, "finished.jsonl").len(), 2, "exactly once");
        service.assert_no_leftovers(env);
    });
}

#[test]
fn containers_without_the_launch_annotation_trigger_nothing() {
    let _serial = lifecycle_support::serial();
    each_mode(|env| {
        let service = IsolatedService::start(env, true);
        let spool = env.mkdir("foreign-spool", 0o700);
        let stage = env.mkdir("run-dirs/stage-1-2-ab", 0o700);
        let run = |name: &str, annotations: Value| {
            let body = json!({
                "name": env.unique_name(name), "image": env.image(), "command": ["true"],
                "labels": { "io.ags.test": env.id() }, "annotations": annotations,
                "netns": { "nsmode": "none" },
            });
            let create = api::request(service.socket(), "POST", "/containers/create", Some(&body)).unwrap();
            assert!(create.ok(), "{}", create.text());
            let id = create.json()["Id"].as_str().unwrap().to_string();
            let start =
                api::request(service.socket(), "POST", &format!("/containers/{id}/start"), None).unwrap();
            assert!(start.ok(), "{}", start.text());
            let wait = format!("/containers/{id}/wait?condition=exited");
            api::request(service.socket(), "POST", &wait, None).unwrap();
        };
        let spool_s = spool.to_str().unwrap();
        let stage_s = stage.to_str().unwrap();
        run(
            "plain",
            json!({ "io.ags.spool": spool_s, "io.ags.stage": stage_s }),
        );
        std::thread::sleep(Duration::from_millis(500));
        assert_eq!(
            fs::read_dir(&spool).unwrap().count(),
            0,
            "no launch annotation: no hook ran"
        );
        assert!(stage.exists());
        run(
            "ags-like",
            json!({ "io.ags.launch": "ags-1-2", "io.ags.spool": spool_s, "io.ags.stage": stage_s }),
        );
        let events = spool.join("ags-1-2.events.jsonl");
        wait_for(
            "the control container's poststop",
            Duration::from_secs(120),
            || fs::read_to_string(&events).is_ok_and(|t| t.contains("poststop")),
        );
        // The hook appends the record first, then removes the directory.
        wait_for(
            "the hook to remove the staging leftovers",
            Duration::from_secs(120),
            || !stage.exists(),
        );
        assert_eq!(fs::metadata(&events).unwrap().uid(), env.uid());
    });
}

#[test]
fn the_hook_program_as_root_writes_as_the_spool_owner() {
    if !nix::unistd::geteuid().is_root() {
        common::loud("SKIP: the_hook_program_as_root_writes_as_the_spool_owner: needs root");
        return;
    }
    let Some(user) = nix::unistd::User::from_name("agstest")
        .ok()
        .flatten()
        .or_else(|| nix::unistd::User::from_name("nobody").ok().flatten())
    else {
        common::loud("SKIP: no unprivileged user to own the spool");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let spool = tmp.path().join("spool");
    fs::create_dir(&spool).unwrap();
    std::os::unix::fs::chown(&spool, Some(user.uid.as_raw()), Some(user.gid.as_raw())).unwrap();
    fs::set_permissions(&spool, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let state =
        json!({"id": "c1", "pid": 1, "annotations": {"io.ags.launch": "ags-5-6", "io.ags.spool": spool}});
    let mut cmd = std::process::Command::new(lifecycle_support::oci_hook_bin());
    cmd.arg("poststart");
    let out = common::run_command(cmd, Some(state.to_string().as_bytes()), Duration::from_secs(30));
    assert!(out.status.success(), "{}", show(&out));
    assert!(out.stderr.is_empty(), "{}", show(&out));
    let events = spool.join("ags-5-6.events.jsonl");
    let meta = fs::metadata(&events).expect("the event was recorded");
    assert_eq!((meta.uid(), meta.gid()), (user.uid.as_raw(), user.gid.as_raw()));
    // A spool others may write is refused, and the hook still exits 0 (runc would kill the
    // container of a failing poststart hook).
    fs::set_permissions(&spool, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let mut cmd = std::process::Command::new(lifecycle_support::oci_hook_bin());
    cmd.arg("poststart");
    let out = common::run_command(cmd, Some(state.to_string().as_bytes()), Duration::from_secs(30));
    assert!(out.status.success(), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("lets others write"),
        "{}",
        show(&out)
    );
}
