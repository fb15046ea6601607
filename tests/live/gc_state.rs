//! `ags gc --state`: the agents' state volumes of projects whose directory is gone are listed and,
//! confirmed (`--yes` here: no terminal), removed, and nothing else: not those of projects that
//! exist, not the `shared` ones, not a volume whose name is not the one `ags` gives that project,
//! not one a container still uses (until it is gone), not outside `--under`; plain `ags gc` never
//! touches state volumes; without a terminal and `--yes` nothing is removed; a remote service is refused before
//! any connection. Real volumes, made the way a user makes them (`ags login import`). Plain
//! `ags gc` also removes the egress grants of launches that ended.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::launch::{login_import, run_agent, state_volume, stderr, stdout};
use common::{Mode, TEST_LABEL_KEY, TestEnv, api, each_mode, show};
use serde_json::json;

/// Import a claude login into `dir`'s state volume; its name.
fn state_volume_of(env: &TestEnv, dir: &Path) -> String {
    let out = login_import(env, "claude", dir);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    state_volume(env, "claude", dir)
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
        // Kept whatever their label says: the shared volume, and a volume whose name is not the
        // one ags gives (hand-made, or labelled for a directory that does not hash to it).
        let shared = format!("ags-state-claude-shared-{}", env.id());
        let handmade = format!("handmade-{}", env.id());
        let gone_label = gone.display().to_string();
        let test_label = (TEST_LABEL_KEY, env.id());
        let agent_label = ("io.ags.state-agent", "claude");
        api::create_volume(
            mode,
            &shared,
            &[agent_label, ("io.ags.state-workdir", "shared"), test_label],
        );
        api::create_volume(
            mode,
            &handmade,
            &[agent_label, ("io.ags.state-workdir", &gone_label), test_label],
        );
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
        // Only this test's projects: the services may hold other state of their users.
        let under = env.root().display().to_string();

        // Plain gc never removes state.
        let out = env.run(["gc"]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert!(
            volume_exists(mode, &gone_volume),
            "{mode}: plain gc removed state"
        );
        // Without a terminal to ask on and without --yes: listed, refused, nothing removed.
        let out = env.run(["gc", "--state", "--under", &under]);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        assert!(
            stdout(&out).contains(&format!("  {gone_volume} (claude in {gone_label})")),
            "{}",
            show(&out)
        );
        assert!(stderr(&out).contains("--yes"), "{}", show(&out));
        assert!(volume_exists(mode, &gone_volume), "{mode}: removed without --yes");
        // Another directory named: not listed.
        let elsewhere = env.mkdir("elsewhere", 0o755).display().to_string();
        let out = env.run(["gc", "--state", "--under", &elsewhere, "--yes"]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert!(
            stdout(&out).contains("no state volume of a project that is gone"),
            "{}",
            show(&out)
        );
        assert!(
            volume_exists(mode, &gone_volume),
            "{mode}: removed outside --under"
        );

        // On a terminal it asks: no keeps everything, and Ctrl-C too (at once, 130).
        for (answer, code) in [(&b"n\n"[..], 0), (b"\x03", 130)] {
            let mut s = env.spawn_pty(["gc", "--state", "--under", &under], 24, 200);
            assert!(s.wait_for("[y/N]", Duration::from_secs(60)), "{}", s.output());
            assert!(
                s.output().contains("Remove these 2 state volumes?"),
                "{}",
                s.output()
            );
            s.write(answer);
            let status = s.wait(Duration::from_secs(60));
            let status = status.unwrap_or_else(|| panic!("ags still runs after {answer:?}: {}", s.output()));
            assert_eq!(status.code(), Some(code), "{}", s.output());
            assert!(volume_exists(mode, &gone_volume), "{mode}: removed without a yes");
        }

        let out = env.run(["gc", "--state", "--under", &under, "--yes"]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let said = stdout(&out);
        let removed = format!("removed state volume {gone_volume} (claude in {gone_label})");
        assert!(said.contains(&removed), "{}", show(&out));
        assert!(
            said.contains(&format!("kept state volume {used_volume}")),
            "{}",
            show(&out)
        );
        assert!(
            !volume_exists(mode, &gone_volume),
            "{mode}: {gone_volume} is still there"
        );
        for volume in [&kept_volume, &used_volume, &shared, &handmade] {
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
        let out = env.run(["gc", "--state", "--under", &under, "--yes"]);
        assert!(
            stdout(&out).contains(&format!("removed state volume {used_volume}")),
            "{}",
            show(&out)
        );
        assert!(!volume_exists(mode, &used_volume));
        for volume in [&kept_volume, &shared, &handmade] {
            api::call(mode, "DELETE", &format!("/volumes/{volume}"), None);
        }
    });
}

/// The attack: an agent working in a parent project puts a dangling symlink where a nested
/// project was, to make that project look gone and its state (a login) be deleted. Whatever is
/// at a project's path keeps its state: the nested project's volume is neither listed nor
/// removed, even with `--yes`.
#[test]
fn a_symlink_an_agent_plants_in_a_projects_place_keeps_its_state() {
    each_mode(|env| {
        let mode = env.mode();
        env.write_file("home/.claude/.credentials.json", "{\"k\":1}", 0o600);
        let nested = env.mkdir("work/nested", 0o755).canonicalize().unwrap();
        let volume = state_volume_of(env, &nested);
        let attack = "rm -rf nested && ln -s /nowhere/at/all nested && ls -la nested";
        let out = run_agent(env, &["--network", "none"], &["sh", "-c", attack]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert!(
            nested.symlink_metadata().unwrap().file_type().is_symlink(),
            "the attack ran"
        );
        let under = env.root().display().to_string();
        let out = env.run(["gc", "--state", "--under", &under, "--yes"]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert!(!stdout(&out).contains(&volume), "{}", show(&out));
        assert!(
            volume_exists(mode, &volume),
            "{mode}: the planted symlink got {volume} removed"
        );
        api::call(mode, "DELETE", &format!("/volumes/{volume}"), None);
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

/// A grant until a launch ends stops holding when that launch's `ags` is gone; `ags gc` removes
/// its file and says so (before, only the next `ags allow` swept it).
#[test]
fn gc_removes_the_grants_of_launches_that_ended() {
    each_mode(|env| {
        let mut launch_process = std::process::Command::new("sleep")
            .arg("120")
            .spawn()
            .expect("sleep");
        let launch = format!("ags-{}-1", launch_process.id());
        let out = env.run(["allow", "127.0.0.1:9", "--launch", &launch]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        launch_process.kill().expect("kill");
        launch_process.wait().expect("wait");
        let out = env.run(["gc"]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert!(
            stdout(&out).contains("removed 1 egress grant(s) that no longer hold"),
            "{}",
            show(&out)
        );
        let out = env.run(["gc"]);
        assert!(!stdout(&out).contains("egress grant"), "{}", show(&out));
    });
}
