//! Smaller containment holes of issue 10 (item 11), each performed as an attack in a real launch
//! in every mode: reserved environment keys a hook might use to run code or redirect traffic,
//! an environment entry longer than Linux accepts, a failing hook's stdout that must never be
//! quoted, config and trust files other users can write, an untrusted overlay whose parse error
//! would replay terminal escapes, and a `.git` made in a subdirectory that hides the trusted
//! overlay. Each refusal happens before anything is created in Podman.

mod common;

use std::os::unix::fs::PermissionsExt;

use serde_json::json;

use common::launch::{
    approve_hooks, assert_clean, respond_hook, run_agent, stderr, trust_overlay, write_overlay,
};
use common::{each_mode, show};

#[test]
fn hook_env_keys_that_run_code_or_redirect_traffic_are_refused() {
    each_mode(|env| {
        let marker = env.root().join("pwned");
        for key in [
            "GIT_SSH_COMMAND",
            "GIT_CONFIG_COUNT",
            "https_proxy",
            "npm_config_script_shell",
            "ANTHROPIC_BASE_URL",
            "PROMPT_COMMAND",
        ] {
            let response = json!({"version": 1, "env": {key: format!("touch {}", marker.display())}});
            env.write_global_config(&respond_hook(env, "k", &response, None));
            approve_hooks(env);
            let out = run_agent(env, &[], &["sh", "-c", "git status; true"]);
            assert_eq!(out.status.code(), Some(125), "{key}: {}", show(&out));
            let err = stderr(&out);
            assert!(
                err.contains(&format!("$.env.{key}")) && err.contains("reserved"),
                "{key}: {err}"
            );
            assert!(!marker.exists(), "{key}");
            assert_clean(env);
        }
        let allowed = json!({"version": 1, "env": {"GIT_AUTHOR_NAME": "Hook Author"}});
        env.write_global_config(&respond_hook(env, "a", &allowed, None));
        approve_hooks(env);
        let out = run_agent(env, &[], &["sh", "-c", "echo \"$GIT_AUTHOR_NAME\""]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert_eq!(common::launch::stdout(&out), "Hook Author\n");
        assert_clean(env);
    });
}

#[test]
fn an_env_entry_longer_than_linux_accepts_is_refused_before_the_launch() {
    each_mode(|env| {
        let response = json!({"version": 1, "env": {"BIG": "x".repeat(200 * 1024)}});
        env.write_global_config(&respond_hook(env, "big", &response, None));
        approve_hooks(env);
        let out = run_agent(env, &[], &["true"]);
        // The old code accepted it; the agent then failed to start (exit 126).
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        let err = stderr(&out);
        assert!(
            err.contains("$.env.BIG: `BIG=VALUE` is 204804 bytes, over the 131071-byte limit"),
            "{err}"
        );
        assert_clean(env);
    });
}

#[test]
fn a_failing_hooks_stdout_is_described_never_quoted() {
    each_mode(|env| {
        let secret = format!("SECRET-{}", env.id());
        let hook = env.write_file(
            "hooks/leaky",
            "#!/bin/sh\ncat >/dev/null\nprintf '%s' \"$1\"\nexit 3\n",
            0o755,
        );
        for (stdout, kind) in [
            (format!("\"{secret}\""), "stdout is a string"),
            (format!("[\"{secret}\"]"), "stdout is an array"),
            (secret.clone(), "stdout is not valid JSON"),
        ] {
            let decl = common::launch::decl("leaky", &hook, &[&stdout], "");
            env.write_global_config(&decl);
            approve_hooks(env);
            let out = run_agent(env, &[], &["true"]);
            assert_eq!(out.status.code(), Some(125), "{}", show(&out));
            let err = stderr(&out);
            assert!(err.contains("exited with code 3") && err.contains(kind), "{err}");
            assert!(!err.contains(&secret), "the hook's stdout was quoted: {err}");
            assert_clean(env);
        }
    });
}

#[test]
fn config_and_trust_files_other_users_can_write_are_refused() {
    each_mode(|env| {
        let global = env.write_global_config("[sandbox]\npids_limit = 100\n");
        for (path, mode) in [
            (global.clone(), 0o666),
            (global.parent().unwrap().to_path_buf(), 0o777),
        ] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            let out = run_agent(env, &[], &["true"]);
            assert_eq!(out.status.code(), Some(125), "{}", show(&out));
            let expected = format!(
                "has mode {mode:04o}: other users can change it, so ags does not use it; run `chmod go-w {}`",
                path.display()
            );
            assert!(stderr(&out).contains(&expected), "{}", show(&out));
            assert_clean(env);
            let private = if mode == 0o666 { 0o600 } else { 0o755 };
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(private)).unwrap();
        }
        write_overlay(env, "[sandbox]\n");
        let trust = common::launch::paths(env).overlay_trust_file();
        trust_overlay(env);
        std::fs::set_permissions(&trust, std::fs::Permissions::from_mode(0o622)).unwrap();
        let out = run_agent(env, &[], &["true"]);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        assert!(
            stderr(&out).contains(&format!("overlay trust file {} has mode 0622", trust.display())),
            "{}",
            show(&out)
        );
        std::fs::set_permissions(&trust, std::fs::Permissions::from_mode(0o600)).unwrap();
        let out = run_agent(env, &[], &["true"]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert_clean(env);
    });
}

#[test]
fn an_untrusted_overlays_parse_error_cannot_drive_the_terminal() {
    each_mode(|env| {
        let line = format!("x = \"\x1b]0;owned\x07\x1b[2J{}\n", "A".repeat(300_000));
        write_overlay(env, &line);
        let out = run_agent(env, &[], &["true"]);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        let err = stderr(&out);
        assert!(
            !err.contains('\x1b') && !err.contains('\x07'),
            "raw escapes: {err:?}"
        );
        assert!(err.contains("\\u{1b}]0;owned"), "{err}");
        assert!(err.len() < 4000, "{} bytes of stderr", err.len());
        assert_clean(env);
    });
}

#[test]
fn a_git_dir_made_in_a_subdirectory_does_not_silently_drop_the_trusted_overlay() {
    each_mode(|env| {
        write_overlay(env, "[sandbox]\n");
        trust_overlay(env);
        env.mkdir("work/sub/.git", 0o755);
        let sub = env.work_dir().join("sub");
        let out = run_agent(env, &["--workdir", &sub.to_string_lossy()], &["true"]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let work = env.work_dir().canonicalize().unwrap();
        let expected = format!(
            "not using the project overlay {}/.ags/config.toml of the trusted repository {}: {} has its own .git",
            work.display(),
            work.display(),
            work.join("sub").display()
        );
        assert!(stderr(&out).contains(&expected), "{}", show(&out));
        assert_clean(env);
    });
}

#[test]
fn a_running_ags_cannot_dump_core_or_be_read_by_the_users_other_processes() {
    each_mode(|env| {
        let args = common::launch::launch_args(env, &["--tty=false"], &["sh", "-c", "echo started; sleep 3"]);
        let bg = common::launch::Background::spawn(env, &args);
        bg.expect_stdout("started", std::time::Duration::from_secs(60));
        let pid = bg.pid();
        let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
        let core = limits
            .lines()
            .find(|l| l.starts_with("Max core file size"))
            .expect("a core limit line");
        assert_eq!(
            core.split_whitespace().collect::<Vec<_>>()[4..6],
            ["0", "0"],
            "{core}"
        );
        // The files in /proc/PID of a process that is not dumpable belong to root: visible only
        // when ags runs as another user (rootless mode).
        let status = std::fs::metadata(format!("/proc/{pid}/status")).unwrap();
        let owner = std::os::unix::fs::MetadataExt::uid(&status);
        assert_eq!(owner, 0, "ags (running as uid {}) is still dumpable", env.uid());
        let out = bg.wait();
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert_clean(env);
    });
}
