//! 1Password references through a real launch, with the fake `op` (tests/fixtures/op/op) that
//! implements the contract `ags` relies on: surviving references are resolved in one
//! `op inject` call, reach the agent through the staged env file, and appear nowhere else.

use crate::common;

use std::path::PathBuf;

use common::launch::approve_hooks as approve_all;
use common::{TestEnv, show};

const SECRET: &str = "op-SENTINEL-7f3a9c";

/// The fake op in `<root>/bin/op`, its database and log; returns (bin dir, log path).
fn fake_op(env: &TestEnv) -> (PathBuf, PathBuf) {
    let fake = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/op/op")).unwrap();
    let bin = env.write_file("bin/op", fake, 0o755);
    let db = format!(
        r#"{{"refs": {{"op://Dev/service/password": "{SECRET}", "op://Dev/other/token": "other"}}}}"#
    );
    env.write_file("op-db.json", db, 0o644);
    let log = env.write_file("op-log.jsonl", "", 0o644);
    (bin.parent().unwrap().to_path_buf(), log)
}

#[test]
fn references_resolve_once_and_reach_only_the_agent() {
    common::each_mode(|env| {
        let (bin, log) = fake_op(env);
        let hook = env.write_file(
            "hooks/sec",
            "#!/bin/sh\ncat >/dev/null\necho '{\"version\":1,\"env\":{\"TOKEN\":{\"op\":\"op://Dev/service/password\"},\"SAME\":{\"op\":\"op://Dev/service/password\"},\"LOST\":{\"op\":\"op://Dev/other/token\"}}}'\n",
            0o755,
        );
        env.write_global_config(&format!(
            "[sandbox]\nnetwork = \"none\"\n[[prepare_hook]]\nname = \"sec\"\nexecutable = \"{}\"\n",
            hook.display()
        ));
        approve_all(env);
        // The value compared by its digest: the command is recorded (Podman's inspect, the run
        // receipt's create body), and the value must not be found anywhere but in the agent.
        let digest = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(SECRET.as_bytes()));
        let script = format!(
            "h=$(printf %s \"$TOKEN\" | sha256sum | cut -d' ' -f1); test \"$h\" = {digest} && test \"$SAME\" = \"$TOKEN\" && echo match; echo LOST=$LOST"
        );
        let mut cmd = env.cmd([
            "--label",
            &env.label(),
            "--image",
            &env.image(),
            "--tty=false",
            "-e",
            "LOST=cli",
            "--",
            "sh",
            "-c",
            &script,
        ]);
        cmd.env("PATH", format!("{}:{}", bin.display(), common::CLEAN_PATH))
            .env("AGS_FAKE_OP_DB", env.root().join("op-db.json"))
            .env("AGS_FAKE_OP_LOG", &log);
        let out = common::run_command(cmd, None, common::RUN_TIMEOUT);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "match\nLOST=cli\n",
            "{}",
            show(&out)
        );
        assert!(
            !String::from_utf8_lossy(&out.stderr).contains(SECRET),
            "{}",
            show(&out)
        );
        let calls: Vec<serde_json::Value> = std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let injects: Vec<_> = calls
            .iter()
            .filter(|c| c["argv"] == serde_json::json!(["inject"]))
            .collect();
        assert_eq!(injects.len(), 1, "one op inject batch: {calls:?}");
        let template = injects[0]["stdin"].as_str().unwrap();
        assert_eq!(
            template.matches("op://").count(),
            1,
            "deduplicated, the CLI-overridden one pruned: {template}"
        );
        for dir in [env.home(), env.runtime_dir()] {
            assert!(
                !contains_text(&dir, SECRET),
                "{SECRET} left under {}",
                dir.display()
            );
        }
        env.assert_no_leftovers();
    });
}

#[test]
fn missing_or_old_op_fails_before_any_container_exists() {
    common::each_mode(|env| {
        let (bin, log) = fake_op(env);
        let hook = env.write_file(
            "hooks/sec",
            "#!/bin/sh\ncat >/dev/null\necho '{\"version\":1,\"env\":{\"TOKEN\":{\"op\":\"op://Dev/service/password\"}}}'\n",
            0o755,
        );
        env.write_global_config(&format!(
            "[[prepare_hook]]\nname = \"sec\"\nexecutable = \"{}\"\n",
            hook.display()
        ));
        approve_all(env);
        let mut cmd = env.cmd([
            "--label",
            &env.label(),
            "--image",
            &env.image(),
            "--tty=false",
            "--",
            "true",
        ]);
        cmd.env("PATH", format!("{}:{}", bin.display(), common::CLEAN_PATH))
            .env("AGS_FAKE_OP_DB", env.root().join("op-db.json"))
            .env("AGS_FAKE_OP_LOG", &log)
            .env("AGS_FAKE_OP_NO_INJECT", "1");
        let out = common::run_command(cmd, None, common::RUN_TIMEOUT);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("op"),
            "{}",
            show(&out)
        );
        assert!(
            env.leftovers().is_empty(),
            "nothing was created: {:?}",
            env.leftovers()
        );
        let out = env.run([
            "--label",
            &env.label(),
            "--image",
            &env.image(),
            "--tty=false",
            "--",
            "true",
        ]);
        assert_eq!(out.status.code(), Some(125), "no op on PATH: {}", show(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("1Password"),
            "{}",
            show(&out)
        );
    });
}

/// Whether any regular file under `dir` contains `needle`.
fn contains_text(dir: &std::path::Path, needle: &str) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let p = e.path();
        match e.file_type() {
            Ok(t) if t.is_dir() => contains_text(&p, needle),
            Ok(t) if t.is_file() => {
                std::fs::read(&p).is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle.as_bytes()))
            }
            _ => false,
        }
    })
}

/// Issue 10, hole 7 (issue 22, finding 3): a `bin/op` the agent planted in the workspace, first
/// on `PATH` (direnv's `PATH_add bin`), never runs. Alone on `PATH`, the launch is refused with
/// the rule and the fix, before any container exists; with the real `op` after it on `PATH`, it
/// is passed over (named in a note) and the real one runs. With `[op] path` naming the real one,
/// the launch works and still never runs the planted one; a group-writable configured `op` is
/// refused.
#[test]
fn an_op_planted_in_the_workspace_never_runs() {
    common::each_mode(|env| {
        let (bin, log) = fake_op(env);
        let ran = env.root().join("planted-op-ran");
        let planted = env.write_file(
            "work/bin/op",
            format!(
                "#!/bin/sh\necho \"$OP_SERVICE_ACCOUNT_TOKEN\" > {}\nexec {}/op \"$@\"\n",
                ran.display(),
                bin.display()
            ),
            0o755,
        );
        let hook = env.write_file(
            "hooks/sec",
            "#!/bin/sh\ncat >/dev/null\necho '{\"version\":1,\"env\":{\"TOKEN\":{\"op\":\"op://Dev/service/password\"}}}'\n",
            0o755,
        );
        let hook_decl = format!(
            "[[prepare_hook]]\nname = \"sec\"\nexecutable = \"{}\"\n",
            hook.display()
        );
        env.write_global_config(&hook_decl);
        approve_all(env);
        let launch = |env: &TestEnv, with_real: bool| {
            let mut cmd = env.cmd([
                "--label",
                &env.label(),
                "--image",
                &env.image(),
                "--tty=false",
                "--",
                "sh",
                "-c",
                &format!("test \"$TOKEN\" = {SECRET} && echo match"),
            ]);
            let path = match with_real {
                true => format!(
                    "{}:{}:{}",
                    planted.parent().unwrap().display(),
                    bin.display(),
                    common::CLEAN_PATH
                ),
                false => format!("{}:{}", planted.parent().unwrap().display(), common::CLEAN_PATH),
            };
            cmd.env("PATH", path)
                .env("OP_SERVICE_ACCOUNT_TOKEN", "ops_token_SENTINEL")
                .env("AGS_FAKE_OP_DB", env.root().join("op-db.json"))
                .env("AGS_FAKE_OP_LOG", &log);
            common::run_command(cmd, None, common::RUN_TIMEOUT)
        };
        let out = launch(env, false);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        assert!(
            err.contains(&planted.display().to_string())
                && err.contains("which the agent can write")
                && err.contains("[op] path"),
            "{}",
            show(&out)
        );
        assert!(!ran.exists(), "{}: the planted op ran", env.mode());
        assert!(env.leftovers().is_empty(), "{:?}", env.leftovers());

        let out = launch(env, true);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "match\n", "{}", show(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(&format!("passed over {}", planted.display())),
            "{}",
            show(&out)
        );
        assert!(!ran.exists(), "{}: the planted op ran", env.mode());

        let real = bin.join("op").canonicalize().unwrap();
        env.write_global_config(&format!("[op]\npath = \"{}\"\n{hook_decl}", real.display()));
        let out = launch(env, true);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "match\n", "{}", show(&out));
        assert!(!ran.exists(), "{}: the planted op ran", env.mode());

        let loose = env.write_file("loose/op", std::fs::read(&real).unwrap(), 0o775);
        env.write_global_config(&format!("[op]\npath = \"{}\"\n{hook_decl}", loose.display()));
        let out = launch(env, true);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("writable by group or others"),
            "{}",
            show(&out)
        );
        env.assert_no_leftovers();
    });
}
