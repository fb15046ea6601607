//! Smaller containment holes of issue 10 (item 11), each performed as an attack in a real launch
//! in every mode: reserved environment keys a hook might use to run code or redirect traffic,
//! an environment entry longer than Linux accepts, a failing hook's stdout that must never be
//! quoted, config and trust files other users can write, an untrusted overlay whose parse error
//! would replay terminal escapes, and a `.git` made in a subdirectory that hides the trusted
//! overlay (each refusal happens before anything is created in Podman); and, for hole 10, hooks and
//! `op` that must not outlive a SIGKILLed `ags`, a watchdog that ends with its `ags`, and an `ags`
//! that cannot dump core. Issue 22 (finding 10): the agent cannot take the machine's memory
//! (a default memory limit, `--memory`, `[sandbox] memory`) or fill RAM through `--lockdown`'s
//! tmpfs mounts (sized), and a bad limit is refused before anything is created.

use crate::common;

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
fn a_malformed_overlay_cannot_drive_the_terminal_nor_stop_launches_unless_trusted() {
    each_mode(|env| {
        let line = format!("x = \"\x1b]0;owned\x07\x1b[2J{}\n", "A".repeat(300_000));
        let overlay = write_overlay(env, &line);
        // Untrusted (the agent can write it): reported and skipped; the launch goes on and ends
        // with the agent's code. It used to stop every launch (125).
        let out = run_agent(env, &[], &["sh", "-c", "exit 7"]);
        assert_eq!(out.status.code(), Some(7), "{}", show(&out));
        let note = stderr(&out);
        let expected = format!(
            "ags: warning: skipping untrusted project overlay {}: it is not a valid config",
            overlay.display()
        );
        assert!(note.contains(&expected), "{note}");
        // Trusted: the user relies on it, so it is refused.
        trust_overlay(env);
        let out = run_agent(env, &[], &["sh", "-c", "exit 7"]);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        let err = stderr(&out);
        assert!(err.contains("TOML parse error"), "{err}");
        for shown in [&note, &err] {
            assert!(
                !shown.contains('\x1b') && !shown.contains('\x07'),
                "raw escapes: {shown:?}"
            );
            assert!(shown.contains("\\u{1b}]0;owned"), "{shown}");
            assert!(shown.len() < 4000, "{} bytes of stderr", shown.len());
        }
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

/// What the agent's cgroup says: the memory limit and the CPU quota (cgroup v2 or v1 files).
const READ_LIMITS: &str = "echo mem=$(cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes); \
     echo cpu=$(cut -d' ' -f1 /sys/fs/cgroup/cpu.max 2>/dev/null || cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us)";

fn cgroup_v2() -> bool {
    common::launch::fs_type("/sys/fs/cgroup".as_ref()) == "cgroup2fs"
}

/// Whether the mode's service can apply cgroup limits: not a rootless one on cgroup v1 (Podman
/// drops them with a warning there; `ags doctor` says so).
fn limits_apply(env: &common::TestEnv) -> bool {
    env.mode() == common::Mode::Rootful || cgroup_v2()
}

/// `min(8 GiB, half of this machine's memory)`, whole MiB: the default memory limit.
fn default_memory() -> u64 {
    // `MemTotal: N kB` is the first line.
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let kb: u64 = meminfo.split_whitespace().nth(1).unwrap().parse().unwrap();
    (kb * 1024 / 2).min(8 << 30) / (1 << 20) * (1 << 20)
}

#[test]
fn the_agent_gets_a_memory_limit_by_default_and_the_ones_asked_for() {
    each_mode(|env| {
        let enforced = limits_apply(env);
        let check = |extra: &[&str], mem: u64, cpu: &str| {
            let out = run_agent(env, extra, &["sh", "-c", READ_LIMITS]);
            assert_eq!(out.status.code(), Some(0), "{extra:?}: {}", show(&out));
            let got = common::launch::stdout(&out);
            if enforced {
                assert!(got.contains(&format!("mem={mem}\n")), "{extra:?}: {got}");
                assert!(got.contains(&format!("cpu={cpu}\n")), "{extra:?}: {got}");
            } else {
                // Podman drops the limits with its warning (shown once per service) and the
                // launch goes on.
                assert!(got.contains("mem="), "{extra:?}: {got}");
            }
            out
        };
        let out = check(&[], default_memory(), if cgroup_v2() { "max" } else { "-1" });
        if !enforced {
            assert!(
                stderr(&out).contains("Resource limits are not supported and ignored on cgroups V1 rootless"),
                "{}",
                show(&out)
            );
        }
        check(&["--memory", "256m", "--cpus", "1.5"], 256 << 20, "150000");
        env.write_global_config("[sandbox]\nmemory = \"96m\"\ncpus = 0.5\n");
        check(&[], 96 << 20, "50000");
        // The command line beats the config.
        check(&["--memory", "128m"], 128 << 20, "50000");
        assert_clean(env);
    });
}

#[test]
fn the_agent_cannot_fill_ram_through_lockdown_tmpfs_or_past_its_memory_limit() {
    each_mode(|env| {
        // The mounts are sized: /tmp and /var/tmp 1g, /run 64m.
        let out = run_agent(
            env,
            &["--lockdown"],
            &["grep", "-E", " /(tmp|var/tmp|run) ", "/proc/mounts"],
        );
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let mounts = common::launch::stdout(&out);
        for (dest, size) in [("/tmp", "1048576k"), ("/var/tmp", "1048576k"), ("/run", "65536k")] {
            assert!(
                mounts
                    .lines()
                    .any(|l| l.split(' ').nth(1) == Some(dest) && l.contains(&format!("size={size}"))),
                "{dest} size={size}: {mounts}"
            );
        }
        // The attack: write more than the tmpfs holds. The old, unsized tmpfs took it all
        // (half of the machine's memory per mount).
        env.write_global_config("[sandbox]\ntmpfs_size = \"8m\"\n");
        let fill = "dd if=/dev/zero of=/tmp/fill bs=1M count=20 2>/dev/null; echo rc=$?; du -k /tmp/fill";
        let out = run_agent(env, &["--lockdown"], &["sh", "-c", fill]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let got = common::launch::stdout(&out);
        assert!(got.contains("rc=1\n") && got.contains("8192\t/tmp/fill"), "{got}");
        // Past the memory limit: tmpfs pages count against it, so 200m in a 1g tmpfs does not
        // fit into 64m of memory (the writer is killed). Without the limit it fits.
        env.write_global_config("");
        let fill = "dd if=/dev/zero of=/tmp/fill bs=1M count=200 2>/dev/null; echo rc=$?";
        let out = run_agent(env, &["--lockdown", "--memory", "none"], &["sh", "-c", fill]);
        assert_eq!(common::launch::stdout(&out), "rc=0\n", "{}", show(&out));
        if limits_apply(env) {
            let out = run_agent(env, &["--lockdown", "--memory", "64m"], &["sh", "-c", fill]);
            assert!(!common::launch::stdout(&out).contains("rc=0"), "{}", show(&out));
        }
        assert_clean(env);
    });
}

#[test]
fn a_bad_limit_is_refused_before_anything_is_created() {
    each_mode(|env| {
        for (args, message) in [
            (
                &["--memory", "lots"][..],
                "invalid value 'lots' for '--memory <SIZE>': \"lots\" is not a size",
            ),
            (
                &["--memory", "1m"],
                "below the smallest memory limit Podman accepts (6m)",
            ),
            (
                &["--cpus", "0"],
                "invalid value '0' for '--cpus <CPUS>': \"0\" is out of range; give between 0.01 and 1024 CPUs",
            ),
        ] {
            let out = run_agent(env, args, &["true"]);
            assert_eq!(out.status.code(), Some(125), "{args:?}: {}", show(&out));
            assert!(stderr(&out).contains(message), "{args:?}: {}", show(&out));
        }
        let global = env.write_global_config("[sandbox]\nmemory = \"8 gigs\"\n");
        let out = run_agent(env, &[], &["true"]);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        let expected = format!(
            "config {}: sandbox.memory: \"8 gigs\" is not a size",
            global.display()
        );
        assert!(stderr(&out).contains(&expected), "{}", show(&out));
        // An overlay (the agent can write it) may not lift the limits, even when trusted.
        env.write_global_config("");
        write_overlay(env, "[sandbox]\nmemory = \"none\"\n");
        trust_overlay(env);
        let out = run_agent(env, &[], &["true"]);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        assert!(
            stderr(&out).contains("sandbox.memory may only be set in the global config"),
            "{}",
            show(&out)
        );
        assert_clean(env);
    });
}
