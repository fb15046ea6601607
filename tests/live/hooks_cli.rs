//! The prepare-hook system through the real `ags` binary: approval without a terminal, denial on
//! a terminal, changed entrypoints and arguments, unusable entrypoints, timeouts with
//! grandchildren, output caps, escaped diagnostics, signals during the phase, the run log, and
//! that values never reach output or logs. No Podman is needed: `ags plan` stops before it.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::launch::{approve_hooks as approve_all, paths};
use common::{TestEnv, show};

const SENTINEL: &str = "s3cr3t-SENTINEL-value";

/// Write a hook script under `<root>/hooks/NAME` and return its path.
fn hook(env: &TestEnv, name: &str, body: &str) -> PathBuf {
    env.write_file(format!("hooks/{name}"), format!("#!/bin/sh\n{body}\n"), 0o755)
}

/// A global config declaring `decls` (TOML fragments).
fn config(env: &TestEnv, decls: &[&str]) -> PathBuf {
    env.write_global_config(&decls.join("\n"))
}

fn decl(name: &str, path: &Path, extra: &str) -> String {
    format!(
        "[[prepare_hook]]\nname = \"{name}\"\nexecutable = \"{}\"\n{extra}\n",
        path.display()
    )
}

fn plan(env: &TestEnv) -> std::process::Output {
    env.run(["plan", "--json"])
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn unapproved_hook_without_terminal_fails_with_the_command_to_approve_it() {
    let env = TestEnv::without_podman();
    let marker = env.root().join("ran");
    let h = hook(
        &env,
        "h",
        &format!("touch {}; echo '{{\"version\":1}}'", marker.display()),
    );
    let cfg = config(&env, &[&decl("h", &h, "")]);
    let out = plan(&env);
    assert_eq!(out.status.code(), Some(125), "{}", show(&out));
    let err = stderr(&out);
    assert!(err.contains("need approval"), "{err}");
    assert!(
        err.contains(&format!("ags hooks test h --config {}", cfg.display())),
        "{err}"
    );
    assert!(!marker.exists(), "an unapproved hook must not run");
}

#[test]
fn approved_hook_contributes_and_values_stay_out_of_output_and_logs() {
    let env = TestEnv::without_podman();
    let h = hook(
        &env,
        "h",
        &format!(
            "cat >/dev/null; echo diag >&2; echo '{{\"version\":1,\"env\":{{\"TOKEN\":\"{SENTINEL}\"}},\"files\":[{{\"destination\":\"/tmp/x.json\",\"content\":\"{SENTINEL}\"}}]}}'"
        ),
    );
    config(&env, &[&decl("h", &h, "")]);
    approve_all(&env);
    let out = plan(&env);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let plan: serde_json::Value = serde_json::from_str(&stdout).expect("plan is JSON");
    let env_entry = plan["env"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["key"] == "TOKEN")
        .unwrap();
    assert_eq!(
        env_entry["origin"],
        serde_json::json!({"source": "global-hook", "name": "h"})
    );
    assert_eq!(plan["files"][0]["destination"], "/tmp/x.json");
    assert!(
        !stdout.contains(SENTINEL) && !stderr(&out).contains(SENTINEL),
        "{}",
        show(&out)
    );
    assert!(stderr(&out).contains("[h] diag"), "{}", show(&out));
    let log = std::fs::read_to_string(paths(&env).hook_log()).expect("run log exists");
    assert!(
        log.contains("\"keys\":[\"TOKEN\"]") && !log.contains(SENTINEL),
        "{log}"
    );
    let shown = env.run(["hooks", "log", "--json"]);
    assert!(
        String::from_utf8_lossy(&shown.stdout).contains("\"outcome\":\"ok\""),
        "{}",
        show(&shown)
    );
}

#[test]
fn changed_entrypoint_or_args_need_a_new_approval() {
    let env = TestEnv::without_podman();
    let h = hook(&env, "h", "echo '{\"version\":1}'");
    config(&env, &[&decl("h", &h, "")]);
    approve_all(&env);
    assert_eq!(plan(&env).status.code(), Some(0));
    hook(&env, "h", "echo '{\"version\":1}' # changed");
    let out = plan(&env);
    assert_eq!(out.status.code(), Some(125), "changed bytes: {}", show(&out));
    approve_all(&env);
    assert_eq!(plan(&env).status.code(), Some(0));
    config(&env, &[&decl("h", &h, "args = [\"--new\"]")]);
    let out = plan(&env);
    assert_eq!(out.status.code(), Some(125), "changed args: {}", show(&out));
}

#[test]
fn denial_on_a_terminal_refuses_the_launch() {
    let env = TestEnv::without_podman();
    let marker = env.root().join("ran");
    let h = hook(
        &env,
        "h",
        &format!("touch {}; echo '{{\"version\":1}}'", marker.display()),
    );
    config(&env, &[&decl("h", &h, "")]);
    let mut s = env.spawn_pty(["plan"], 24, 80);
    assert!(
        s.wait_for("[y/N]", Duration::from_secs(60)),
        "no prompt: {}",
        s.output()
    );
    assert!(
        s.output().contains("HOST"),
        "prompt names the authority: {}",
        s.output()
    );
    s.write(b"n\n");
    let status = s.wait(Duration::from_secs(60)).expect("ags exits");
    assert_eq!(status.code(), Some(125), "{}", s.output());
    assert!(!marker.exists(), "a refused hook must not run");
    let mut s = env.spawn_pty(["plan"], 24, 80);
    assert!(s.wait_for("[y/N]", Duration::from_secs(60)), "{}", s.output());
    s.write(b"y\n");
    assert_eq!(
        s.wait(Duration::from_secs(60)).and_then(|st| st.code()),
        Some(0),
        "{}",
        s.output()
    );
    assert!(marker.exists(), "the approved hook ran");
    assert_eq!(plan(&env).status.code(), Some(0), "approval was recorded");
}

#[test]
fn unusable_entrypoints_are_refused_without_blocking() {
    let env = TestEnv::without_podman();
    let fifo = env.root().join("fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o700)).unwrap();
    let plain = env.write_file("hooks/plain", "#!/bin/sh\necho '{\"version\":1}'\n", 0o644);
    for (path, what) in [(&fifo, "not a regular file"), (&plain, "not executable")] {
        config(&env, &[&decl("h", path, "")]);
        let started = Instant::now();
        let out = plan(&env);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        assert!(stderr(&out).contains("h"), "{}", show(&out));
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{what}: must not block"
        );
    }
}

#[test]
fn timeout_kills_the_hook_and_its_grandchildren() {
    let env = TestEnv::without_podman();
    let pidfile = env.root().join("grandchild.pid");
    let h = hook(
        &env,
        "slow",
        &format!("sleep 600 & echo $! > {}; sleep 600", pidfile.display()),
    );
    // 3 s leave a loaded machine time to start the grandchild (and write its pid) first.
    config(&env, &[&decl("slow", &h, "timeout_seconds = 3")]);
    approve_all(&env);
    let out = plan(&env);
    assert_eq!(out.status.code(), Some(125), "{}", show(&out));
    assert!(stderr(&out).contains("slow"), "{}", show(&out));
    assert!(
        stderr(&out).to_lowercase().contains("timed out") || stderr(&out).contains("timeout"),
        "{}",
        show(&out)
    );
    assert_gone(&pidfile);
}

#[test]
fn output_caps_and_control_characters() {
    let env = TestEnv::without_podman();
    let big = hook(&env, "big", "head -c 1100000 /dev/zero | tr '\\0' a");
    config(&env, &[&decl("big", &big, "")]);
    approve_all(&env);
    let out = plan(&env);
    assert_eq!(out.status.code(), Some(125), "{}", show(&out));
    assert!(stderr(&out).contains("big"), "{}", show(&out));
    let noisy = hook(
        &env,
        "noisy",
        "printf 'red \\033[31mtext\\r\\n' >&2; echo '{\"version\":1}'",
    );
    config(&env, &[&decl("noisy", &noisy, "")]);
    approve_all(&env);
    let out = plan(&env);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let err = stderr(&out);
    assert!(
        !err.contains('\u{1b}') && !err.contains('\r'),
        "controls must be escaped: {err:?}"
    );
    assert!(err.contains("[noisy] red"), "{err:?}");
}

#[test]
fn invalid_response_names_the_hook_path_and_rule_without_the_value() {
    let env = TestEnv::without_podman();
    let h = hook(
        &env,
        "bad",
        &format!("echo '{{\"version\":1,\"env\":{{\"HOME\":\"{SENTINEL}\"}}}}'"),
    );
    config(&env, &[&decl("bad", &h, "")]);
    approve_all(&env);
    let out = plan(&env);
    assert_eq!(out.status.code(), Some(125), "{}", show(&out));
    let err = stderr(&out);
    assert!(
        err.contains("bad") && err.contains("$.env.HOME") && err.contains("reserved"),
        "{err}"
    );
    assert!(!err.contains(SENTINEL), "{err}");
}

#[test]
fn sigterm_during_the_phase_kills_hooks_and_exits() {
    let env = TestEnv::without_podman();
    let pidfile = env.root().join("grandchild.pid");
    let h = hook(
        &env,
        "slow",
        &format!("sleep 600 & echo $! > {}; sleep 600", pidfile.display()),
    );
    config(&env, &[&decl("slow", &h, "")]);
    approve_all(&env);
    let mut child = env
        .cmd(["plan"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_file(&pidfile);
    let ags_pid = find_child_pid(child.id()).expect("ags runs under setsid");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(ags_pid),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "ags did not exit after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(143), "128 + SIGTERM");
    assert_gone(&pidfile);
}

#[test]
fn validate_accepts_the_seed_example_and_refuses_bad_input() {
    let env = TestEnv::without_podman();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/responses");
    let ok = env.run([
        "hooks",
        "validate",
        fixtures.join("valid-spec-example.json").to_str().unwrap(),
    ]);
    assert_eq!(ok.status.code(), Some(0), "{}", show(&ok));
    assert!(
        String::from_utf8_lossy(&ok.stdout).contains("SERVICE_TOKEN"),
        "{}",
        show(&ok)
    );
    let bad = env.run([
        "hooks",
        "validate",
        fixtures.join("invalid-trailing-garbage.json").to_str().unwrap(),
    ]);
    assert_eq!(bad.status.code(), Some(1), "{}", show(&bad));
}

fn wait_for_file(p: &Path) {
    let start = Instant::now();
    while !p.exists() || std::fs::read_to_string(p).unwrap_or_default().trim().is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{} never appeared",
            p.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Assert that the process whose pid is in `pidfile` is gone (or a zombie: this machine's init
/// may not reap).
fn assert_gone(pidfile: &Path) {
    let pid: i32 = std::fs::read_to_string(pidfile).unwrap().trim().parse().unwrap();
    let start = Instant::now();
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rsplit(')')
            .next()
            .and_then(|r| r.split_whitespace().next())
            .unwrap_or("");
        if stat.is_empty() || state == "Z" {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "grandchild {pid} survived"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The pid of the `ags` process: `setsid` execs it directly when it need not fork, else it
/// is `setsid`'s child.
fn find_child_pid(parent: u32) -> Option<i32> {
    let start = Instant::now();
    loop {
        let comm = std::fs::read_to_string(format!("/proc/{parent}/comm")).unwrap_or_default();
        if comm.trim() == "ags" {
            return Some(parent as i32);
        }
        let children =
            std::fs::read_to_string(format!("/proc/{parent}/task/{parent}/children")).unwrap_or_default();
        if let Some(pid) = children.split_whitespace().next().and_then(|p| p.parse().ok()) {
            return Some(pid);
        }
        if start.elapsed() > Duration::from_secs(30) {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
