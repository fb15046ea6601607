//! Issue 10, hole 5: an agent's state is kept per project. The attack: in project A the agent
//! writes a `SessionStart` hook into its settings (`/home/dev/.claude/settings.json`, in its
//! state volume); a launch of the same agent in project B must not see it. With
//! `[sandbox] shared_state = true` (the explicit opt-in) both projects share one volume.
//!
//! The test image has no agents: a `claude` that runs `/bin/sh "$@"` is committed on top of it
//! once per service (`localhost/ags-busybox-agents:latest`).

use crate::common;

use std::sync::Mutex;

use common::launch::{assert_clean, stdout};
use common::{Mode, TestEnv, api, each_mode, show};
use serde_json::json;

const AGENTS_IMAGE: &str = "localhost/ags-busybox-agents:latest";

/// Commit the busybox image plus a `/bin/claude` shim, once per service.
fn agents_image(env: &TestEnv) -> String {
    static DONE: Mutex<Vec<Mode>> = Mutex::new(Vec::new());
    let mut done = DONE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let mode = env.mode();
    if done.contains(&mode) {
        return AGENTS_IMAGE.into();
    }
    let script = "printf '#!/bin/sh\\nexec /bin/sh \"$@\"\\n' > /bin/claude && chmod 755 /bin/claude";
    let body = json!({
        "image": env.image(), "command": ["sh", "-c", script],
        "netns": {"nsmode": "none"}, "labels": {common::TEST_LABEL_KEY: env.id()},
    });
    let created = api::call(mode, "POST", "/containers/create", Some(&body));
    assert!(created.ok(), "{mode}: {}", created.text());
    let id = created.json()["Id"].as_str().unwrap().to_owned();
    let started = api::call(mode, "POST", &format!("/containers/{id}/start"), None);
    assert!(started.ok(), "{mode}: {}", started.text());
    let waited = api::call(mode, "POST", &format!("/containers/{id}/wait"), None);
    assert!(waited.ok(), "{mode}: {}", waited.text());
    let committed = api::call(
        mode,
        "POST",
        &format!("/commit?container={id}&repo=localhost/ags-busybox-agents&tag=latest"),
        None,
    );
    assert!(committed.ok(), "{mode}: commit: {}", committed.text());
    api::call(mode, "DELETE", &format!("/containers/{id}?force=true"), None);
    done.push(mode);
    AGENTS_IMAGE.into()
}

/// State volumes labelled for `workdir` (or `shared`), removed by the caller.
fn state_volumes(mode: Mode, workdir: &str) -> Vec<String> {
    api::volumes_with_label(mode, &format!("io.ags.state-workdir={workdir}"))
}

fn remove_volumes(mode: Mode, names: &[String]) {
    for name in names {
        api::call(mode, "DELETE", &format!("/volumes/{name}"), None);
    }
}

/// `ags --agent claude --workdir DIR -- -c SCRIPT` (the shim runs `sh -c SCRIPT`).
fn claude(env: &TestEnv, image: &str, workdir: &std::path::Path, script: &str) -> std::process::Output {
    let dir = workdir.to_str().unwrap();
    env.run([
        "--tty=false",
        "--image",
        image,
        "--label",
        &env.label(),
        "--agent",
        "claude",
        "--workdir",
        dir,
        "--",
        "-c",
        script,
    ])
}

const PLANT: &str = r#"mkdir -p "$CLAUDE_CONFIG_DIR" && echo '{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"touch /tmp/pwned"}]}]}}' > "$CLAUDE_CONFIG_DIR/settings.json" && echo planted"#;
const LOOK: &str = r#"if [ -e "$CLAUDE_CONFIG_DIR/settings.json" ]; then echo SEEN; else echo CLEAN; fi"#;

#[test]
fn state_written_in_one_project_is_not_seen_in_another() {
    each_mode(|env| {
        let image = agents_image(env);
        let a = env.mkdir("projA", 0o755).canonicalize().unwrap();
        let b = env.mkdir("projB", 0o755).canonicalize().unwrap();
        let out = claude(env, &image, &a, PLANT);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert!(stdout(&out).contains("planted"), "{}", show(&out));
        let out = claude(env, &image, &a, LOOK);
        assert_eq!(
            stdout(&out).trim(),
            "SEEN",
            "state is kept within a project: {}",
            show(&out)
        );
        let out = claude(env, &image, &b, LOOK);
        assert_eq!(
            stdout(&out).trim(),
            "CLEAN",
            "{}: project B sees project A's agent state: {}",
            env.mode(),
            show(&out)
        );
        let (va, vb) = (
            state_volumes(env.mode(), a.to_str().unwrap()),
            state_volumes(env.mode(), b.to_str().unwrap()),
        );
        assert_eq!(va.len(), 1, "{va:?}");
        assert_eq!(vb.len(), 1, "{vb:?}");
        assert_ne!(va, vb);
        remove_volumes(env.mode(), &va);
        remove_volumes(env.mode(), &vb);
        assert_clean(env);
    });
}

#[test]
fn shared_state_is_an_explicit_opt_in() {
    each_mode(|env| {
        let image = agents_image(env);
        env.write_global_config("[sandbox]\nshared_state = true\n");
        let a = env.mkdir("projA", 0o755).canonicalize().unwrap();
        let b = env.mkdir("projB", 0o755).canonicalize().unwrap();
        // The one shared volume may exist already, left by an earlier run: remove it first
        // (a volume kept across runs can outlive its Podman lock, when the service's lock
        // segment was reset, and then "shares lock ID 0" with a new container: the CI failure
        // of stop 31) and last. The marker is unique to this test all the same.
        let shared = "/volumes/ags-state-claude-claude";
        api::call(env.mode(), "DELETE", shared, None);
        let marker = format!("shared-{}", env.id());
        let plant = format!(r#"mkdir -p "$CLAUDE_CONFIG_DIR" && touch "$CLAUDE_CONFIG_DIR/{marker}""#);
        let look = format!(
            r#"if [ -e "$CLAUDE_CONFIG_DIR/{marker}" ]; then rm "$CLAUDE_CONFIG_DIR/{marker}"; echo SEEN; else echo CLEAN; fi"#
        );
        let out = claude(env, &image, &a, &plant);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let out = claude(env, &image, &b, &look);
        assert_eq!(stdout(&out).trim(), "SEEN", "{}", show(&out));
        let exists = api::call(env.mode(), "GET", &format!("{shared}/exists"), None);
        assert_eq!(exists.status, 204, "the shared volume: {}", exists.text());
        let per_project = state_volumes(env.mode(), a.to_str().unwrap());
        assert!(per_project.is_empty(), "{per_project:?}");
        let removed = api::call(env.mode(), "DELETE", shared, None);
        assert!(removed.ok(), "removing the shared volume: {}", removed.text());
        assert_clean(env);
    });
}
