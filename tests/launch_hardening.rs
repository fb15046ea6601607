//! Smaller containment holes of issue 10 (item 11), each performed as an attack in a real launch
//! in every mode: reserved environment keys a hook might use to run code or redirect traffic,
//! an environment entry longer than Linux accepts, a failing hook's stdout that must never be
//! quoted, config and trust files other users can write, an untrusted overlay whose parse error
//! would replay terminal escapes, and a `.git` made in a subdirectory that hides the trusted
//! overlay (each refusal happens before anything is created in Podman); and, for hole 10, hooks and
//! `op` that must not outlive a SIGKILLed `ags`, a watchdog that ends with its `ags`, and an `ags`
//! that cannot dump core.

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
        // The agent waits for `go`: ags runs while it is looked at.
        let script = "echo started; while [ ! -e go ]; do sleep 0.1; done";
        let args = common::launch::launch_args(env, &["--tty=false"], &["sh", "-c", script]);
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
        env.write_file("work/go", "", 0o644);
        let out = bg.wait();
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert_clean(env);
    });
}

/// Pids of the processes in process group `pgid` (from /proc; zombies count as gone).
fn group_members(pgid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 2..]) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // fields[0] is the state, fields[2] the process group.
        if fields.len() > 2 && fields[0] != "Z" && fields[2] == pgid.to_string() {
            out.push(pid);
        }
    }
    out
}

/// SIGKILL `ags` and wait (at most 60 s, polling) until group `pgid` has no live member.
fn kill_ags_and_expect_group_gone(bg: common::launch::Background, pgid: i32) {
    assert!(!group_members(pgid).is_empty(), "group {pgid} is not running");
    bg.signal(nix::sys::signal::Signal::SIGKILL);
    let gone = common::launch::wait_until(std::time::Duration::from_secs(60), || {
        group_members(pgid).is_empty()
    });
    let left = group_members(pgid);
    for pid in &left {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(*pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    assert!(
        gone,
        "processes of group {pgid} outlived the SIGKILLed ags: {left:?}"
    );
    let out = bg.wait();
    assert_eq!(out.status.code(), None, "{}", show(&out));
}

#[test]
fn a_hook_and_its_grandchild_do_not_outlive_a_sigkilled_ags() {
    each_mode(|env| {
        let hook = common::launch::install_hook(env, "slow-with-grandchild");
        let pids = env.root().join("hook-pids");
        let decl = common::launch::decl("slow", &hook, &[&pids.to_string_lossy()], "timeout_seconds = 300");
        env.write_global_config(&decl);
        approve_hooks(env);
        let args = common::launch::launch_args(env, &["--tty=false"], &["true"]);
        let bg = common::launch::Background::spawn(env, &args);
        let started = common::launch::wait_until(std::time::Duration::from_secs(60), || pids.exists());
        assert!(started, "the hook did not start: {}", bg.stderr_so_far());
        let text = std::fs::read_to_string(&pids).unwrap();
        let pgid: i32 = text.split_whitespace().next().unwrap().parse().unwrap();
        kill_ags_and_expect_group_gone(bg, pgid);
    });
}

#[test]
fn op_does_not_outlive_a_sigkilled_ags() {
    each_mode(|env| {
        let fake = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/op/op")).unwrap();
        let bin = env.write_file("bin/op", fake, 0o755);
        let response = json!({"version": 1, "env": {"TOKEN": {"op": "op://Dev/service/password"}}});
        env.write_global_config(&respond_hook(env, "sec", &response, None));
        approve_hooks(env);
        let pidfile = env.root().join("op-pid");
        let mut cmd = env.cmd(common::launch::launch_args(env, &["--tty=false"], &["true"]));
        cmd.env(
            "PATH",
            format!("{}:{}", bin.parent().unwrap().display(), common::CLEAN_PATH),
        )
        .env("AGS_FAKE_OP_SLEEP", "600")
        .env("AGS_FAKE_OP_PIDFILE", &pidfile);
        let bg = common::launch::Background::spawn_cmd(cmd);
        let mut pid = None;
        let started = common::launch::wait_until(std::time::Duration::from_secs(60), || {
            pid = std::fs::read_to_string(&pidfile)
                .ok()
                .and_then(|t| t.trim().parse::<i32>().ok());
            pid.is_some()
        });
        assert!(started, "op did not start: {}", bg.stderr_so_far());
        kill_ags_and_expect_group_gone(bg, pid.unwrap());
    });
}

#[test]
fn the_watchdog_ends_with_its_ags() {
    each_mode(|env| {
        let response = json!({"version": 1});
        env.write_global_config(&respond_hook(env, "ok", &response, None));
        approve_hooks(env);
        let script = "echo started; while [ ! -e go ]; do sleep 0.1; done";
        let args = common::launch::launch_args(env, &["--tty=false"], &["sh", "-c", script]);
        let bg = common::launch::Background::spawn(env, &args);
        bg.expect_stdout("started", std::time::Duration::from_secs(60));
        let ags = bg.pid();
        let children: Vec<i32> = std::fs::read_dir(format!("/proc/{ags}/task"))
            .unwrap()
            .flatten()
            .flat_map(|t| {
                std::fs::read_to_string(t.path().join("children"))
                    .unwrap_or_default()
                    .split_whitespace()
                    .filter_map(|p| p.parse().ok())
                    .collect::<Vec<i32>>()
            })
            .collect();
        let watchdog = children
            .iter()
            .copied()
            .find(|pid| {
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                cmdline.split(|b| *b == 0).any(|arg| arg == b"__ags-watchdog")
            })
            .unwrap_or_else(|| panic!("no watchdog among the children {children:?} of ags {ags}"));
        env.write_file("work/go", "", 0o644);
        let out = bg.wait();
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let gone = common::launch::wait_until(std::time::Duration::from_secs(60), || {
            !common::launch::process_running(watchdog)
        });
        assert!(gone, "the watchdog {watchdog} outlived its ags");
        assert_clean(env);
    });
}
