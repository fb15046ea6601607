//! Issue 12, item 5: `ags login import AGENT` copies the host's login of an agent into the
//! state volume that `ags --agent AGENT` mounts for this project — through the Podman API
//! (rootful and rootless), never a mount of the host's agent directory. The test reads the
//! file back the way the agent would (its user, its user namespace, the volume at its state
//! directory) in a container it makes through the API, checks that another project's volume does not get it, that no
//! writer container is left, and that the content shows in no output of `ags`.

use crate::common;

use common::launch::{login_import, state_volume, stderr};
use common::{Mode, TestEnv, each_mode, show};
use serde_json::Value;

/// The file as the agent sees it: a container through the mode's service, with its uid:gid
/// (keep-id rootless) and the volume at its state directory, prints the file and its mode and
/// owner (output: stdout and stderr).
fn read_as_agent(env: &TestEnv, volume: &str, dir: &str, file: &str) -> String {
    let script = format!("cat {dir}/{file}; echo; stat -c 'MODE=%a UID=%u' {dir}/{file}");
    let mut spec = serde_json::json!({
        "image": env.image(),
        "command": ["sh", "-c", script],
        "user": format!("{}:{}", env.uid(), env.gid()),
        "volumes": [{ "Name": volume, "Dest": dir }],
        "netns": { "nsmode": "none" },
        "labels": { common::TEST_LABEL_KEY: env.id() },
    });
    if env.mode() == Mode::Rootless {
        spec["userns"] = serde_json::json!({ "nsmode": "keep-id" });
    }
    common::api::run_to_end(env.mode(), &spec).1
}

fn remove_volume(env: &TestEnv, name: &str) {
    let _ = common::api::call(env.mode(), "DELETE", &format!("/volumes/{name}"), None);
}

#[test]
fn a_host_login_lands_in_this_projects_state_volume_only() {
    each_mode(|env| {
        let _turn = common::keep_id_turn(env);
        let secret = format!("SECRET-LOGIN-{}", env.id());
        env.write_file(
            "home/.claude/.credentials.json",
            format!("{{\"claudeAiOauth\":{{\"accessToken\":\"{secret}\"}}}}"),
            0o600,
        );
        let work = env.work_dir().canonicalize().unwrap();
        let other = env.mkdir("other", 0o755);
        let volume = state_volume(env, "claude", &work);
        let other_volume = state_volume(env, "claude", &other);
        assert_ne!(volume, other_volume);
        let out = login_import(env, "claude", &work);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert!(stderr(&out).contains(&volume), "{}", show(&out));
        assert!(
            !show(&out).contains(&secret),
            "the content is never printed: {}",
            show(&out)
        );

        let said = read_as_agent(env, &volume, "/home/dev/.claude", ".credentials.json");
        assert!(said.contains(&secret), "{}: {said}", env.mode());
        assert!(
            said.contains(&format!("MODE=600 UID={}", env.uid())),
            "{}: {said}",
            env.mode()
        );
        // Another project's volume for the same agent does not have it.
        let said = read_as_agent(env, &other_volume, "/home/dev/.claude", ".credentials.json");
        assert!(!said.contains(&secret), "{said}");
        // Imported again (a refreshed login): replaced in place.
        env.write_file("home/.claude/.credentials.json", "{\"v\":2}", 0o600);
        let out = login_import(env, "claude", &work);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let said = read_as_agent(env, &volume, "/home/dev/.claude", ".credentials.json");
        assert!(said.starts_with("{\"v\":2}"), "{said}");
        // No writer container is left behind.
        let all = common::api::call(env.mode(), "GET", "/containers/json?all=true", None).json();
        let writers: Vec<&Value> = all
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["Names"].to_string().contains(&format!("{volume}-login")))
            .collect();
        assert!(writers.is_empty(), "{writers:?}");
        remove_volume(env, &volume);
        remove_volume(env, &other_volume);
    });
}

#[test]
fn refusals_name_the_agent_the_file_and_what_to_do() {
    each_mode(|env| {
        let _turn = common::keep_id_turn(env);
        let w = env.work_dir().display().to_string();
        let out = env.run(["login", "import", "shell", "--workdir", &w]);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        assert!(stderr(&out).contains("keeps no login file"), "{}", show(&out));
        let out = env.run(["login", "import", "codex", "--workdir", &w]);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        let err = stderr(&out);
        assert!(
            err.contains(".codex/auth.json") && err.contains("log in with the agent on this host first"),
            "{}",
            show(&out)
        );
        let out = env.run(["login", "import", "clade", "--workdir", &w]);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        assert!(stderr(&out).contains("claude"), "{}", show(&out));
    });
}

/// Issue 28, item 8: gemini's Google login needs its settings to select it, or gemini asks how
/// to log in. The import writes `settings.json` beside the login when the volume has none, and
/// leaves one that is there alone (it is the agent's and the user's).
#[test]
fn a_gemini_import_selects_the_google_login_unless_settings_exist() {
    each_mode(|env| {
        let _turn = common::keep_id_turn(env);
        env.write_file("home/.gemini/oauth_creds.json", "{\"access_token\":\"t\"}", 0o600);
        let work = env.work_dir().canonicalize().unwrap();
        let volume = state_volume(env, "gemini", &work);
        let out = login_import(env, "gemini", &work);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert!(stderr(&out).contains("settings.json"), "{}", show(&out));
        let said = read_as_agent(env, &volume, "/home/dev/.gemini", "settings.json");
        let selected = r#"{"security":{"auth":{"selectedType":"oauth-personal"}}}"#;
        assert!(said.starts_with(selected), "{}: {said}", env.mode());
        assert!(
            said.contains(&format!("UID={}", env.uid())),
            "{}: {said}",
            env.mode()
        );
        // The user's own settings (another auth type) are kept at the next import.
        let mine = r#"{"security":{"auth":{"selectedType":"gemini-api-key"}}}"#;
        let script = format!("printf '%s' '{mine}' > /home/dev/.gemini/settings.json");
        let mut spec = serde_json::json!({
            "image": env.image(),
            "command": ["sh", "-c", script],
            "user": format!("{}:{}", env.uid(), env.gid()),
            "volumes": [{ "Name": volume, "Dest": "/home/dev/.gemini" }],
            "netns": { "nsmode": "none" },
            "labels": { common::TEST_LABEL_KEY: env.id() },
        });
        if env.mode() == Mode::Rootless {
            spec["userns"] = serde_json::json!({ "nsmode": "keep-id" });
        }
        common::api::run_to_end(env.mode(), &spec);
        let out = login_import(env, "gemini", &work);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert!(stderr(&out).contains("left"), "{}", show(&out));
        let said = read_as_agent(env, &volume, "/home/dev/.gemini", "settings.json");
        assert!(said.starts_with(mine), "{}: {said}", env.mode());
        remove_volume(env, &volume);
    });
}
