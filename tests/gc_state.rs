//! `ags gc --state`: the agents' state volumes of projects whose directory is gone are removed,
//! and nothing else: not those of projects that exist, not the `shared` ones, not one a container
//! still uses (until it is gone); plain `ags gc` never touches state volumes; a remote service is refused before
//! any connection. Real volumes, made the way a user makes them (`ags login import`).

mod common;

use std::path::Path;

use common::launch::{stderr, stdout};
use common::{Mode, TEST_LABEL_KEY, TestEnv, api, each_mode, show};
use serde_json::{Value, json};

/// Import a claude login into `dir`'s state volume; its name (from `ags plan --json`).
fn state_volume_of(env: &TestEnv, dir: &Path) -> String {
    let w = dir.display().to_string();
    let out = env.run([
        "plan",
        "--json",
        "--agent",
        "claude",
        "--workdir",
        &w,
        "--image",
        &env.image(),
    ]);
    assert!(out.status.success(), "{}", show(&out));
    let plan: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let name = plan["state_volumes"][0]["name"].as_str().unwrap().to_string();
    let out = env.run([
        "login",
        "import",
        "claude",
        "--workdir",
        &w,
        "--image",
        &env.image(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    name
}

fn volume_exists(mode: Mode, name: &str) -> bool {
    let reply = api::call(mode, "GET", &format!("/volumes/{name}/exists"), None);
    assert!(matches!(reply.status, 204 | 404), "{mode}: {}", reply.text());
    reply.status == 204
}

#[test]
fn only_the_state_of_projects_that_are_gone_is_removed() {
    each_mode(|env| {
        let mode = env.mode();
        env.write_file("home/.claude/.credentials.json", "{\"k\":1}", 0o600);
        let (gone, kept, used) = (
            env.mkdir("gone", 0o755),
            env.mkdir("kept", 0o755),
            env.mkdir("used", 0o755),
        );
        let (gone, kept, used) = (
            gone.canonicalize().unwrap(),
            kept.canonicalize().unwrap(),
            used.canonicalize().unwrap(),
        );
        let gone_volume = state_volume_of(env, &gone);
        let kept_volume = state_volume_of(env, &kept);
        let used_volume = state_volume_of(env, &used);
        let shared = format!("ags-state-claude-shared-{}", env.id());
        let labels = [
            ("io.ags.state-agent", "claude"),
            ("io.ags.state-workdir", "shared"),
            (TEST_LABEL_KEY, env.id()),
        ];
        api::create_volume(mode, &shared, &labels);
        // A container (never started) still holds the third project's volume.
        let spec = json!({
            "image": env.image(), "command": ["true"], "netns": {"nsmode": "none"},
            "volumes": [{"Name": used_volume, "Dest": "/state"}],
            "labels": {TEST_LABEL_KEY: env.id()},
        });
        let holder = api::call(mode, "POST", "/containers/create", Some(&spec));
        assert!(holder.ok(), "{mode}: {}", holder.text());
        std::fs::remove_dir(&gone).unwrap();
        std::fs::remove_dir(&used).unwrap();

        // Plain gc never removes state.
        let out = env.run(["gc"]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert!(
            volume_exists(mode, &gone_volume),
            "{mode}: plain gc removed state"
        );

        let out = env.run(["gc", "--state"]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let said = stdout(&out);
        assert!(
            said.contains(&format!(
                "removed state volume {gone_volume} (claude in {}",
                gone.display()
            )),
            "{}",
            show(&out)
        );
        assert!(
            said.contains(&format!("kept state volume {used_volume}")),
            "{}",
            show(&out)
        );
        assert!(
            !volume_exists(mode, &gone_volume),
            "{mode}: {gone_volume} is still there"
        );
        for volume in [&kept_volume, &used_volume, &shared] {
            assert!(volume_exists(mode, volume), "{mode}: {volume} was removed");
            assert!(
                !said.contains(&format!("removed state volume {volume}")),
                "{}",
                show(&out)
            );
        }

        // The holder gone, the next run takes the used project's volume too.
        let id = holder.json()["Id"].as_str().unwrap().to_owned();
        api::call(mode, "DELETE", &format!("/containers/{id}?force=true"), None);
        let out = env.run(["gc", "--state"]);
        assert!(
            stdout(&out).contains(&format!("removed state volume {used_volume}")),
            "{}",
            show(&out)
        );
        assert!(!volume_exists(mode, &used_volume));
        for volume in [&kept_volume, &shared] {
            api::call(mode, "DELETE", &format!("/volumes/{volume}"), None);
        }
    });
}

/// A service on another machine names its own directories: refused (125) before connecting,
/// with what to do instead.
#[test]
fn a_remote_service_is_refused_before_any_connection() {
    let env = TestEnv::without_podman();
    for url in [
        "tcp://127.0.0.1:9",
        "ssh://nobody@127.0.0.1:9/run/podman/podman.sock",
    ] {
        let out = env.run(["--url", url, "gc", "--state"]);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        let err = stderr(&out);
        assert!(
            err.contains("another machine") && err.contains("podman volume rm"),
            "{url}: {}",
            show(&out)
        );
    }
}
