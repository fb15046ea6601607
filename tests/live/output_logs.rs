//! Issue 10, hole 6: the agent's output never lands on disk. Podman's default log driver keeps
//! a `ctr.log` of everything the container prints (with a terminal, echoed keystrokes too) in
//! its storage; `ags` creates the container with the `none` driver. The attack: the agent prints
//! a sentinel (computed inside, so it is not in the spec) and waits; while it runs, no file
//! under Podman's storage holds the sentinel, inspect names no log file, and attach still
//! delivered the output — with and without a terminal.

use crate::common;

use std::time::Duration;

use common::launch::{
    Background, assert_clean, files_containing, launch_args, podman_storage_dirs, the_container,
};
use common::{TestEnv, api, each_mode};

/// Printed by the agent as `$A-$B` so the argv never contains it.
fn sentinel(env: &TestEnv) -> (String, String) {
    let word = format!("LOGLEAK{}", env.id().replace(['-', '.', '_'], ""));
    let script = format!(
        "A={word}; B=sentinel; echo \"$A-$B\"; echo \"$A-$B-err\" >&2; while [ ! -e go ]; do sleep 0.1; done"
    );
    (format!("{word}-sentinel"), script)
}

/// While the container runs: no log path, no file in Podman's storage with the sentinel.
fn assert_nothing_logged(env: &TestEnv, needle: &str, marker: &std::path::Path) {
    let hits = files_containing(&podman_storage_dirs(env), &[needle], Some(marker));
    assert!(
        hits.is_empty(),
        "{}: agent output on disk in {hits:?}",
        env.mode()
    );
    let (id, _) = the_container(env);
    let inspect = api::call(env.mode(), "GET", &format!("/containers/{id}/json"), None).json();
    assert_eq!(
        inspect["HostConfig"]["LogConfig"]["Type"],
        "none",
        "{}: log config {}",
        env.mode(),
        inspect["HostConfig"]["LogConfig"]
    );
    let log_path = inspect["LogPath"].as_str().unwrap_or("");
    assert!(
        log_path.is_empty() || !std::path::Path::new(log_path).exists(),
        "{}: a log file exists: {log_path}",
        env.mode()
    );
}

#[test]
fn agent_output_is_not_logged_without_a_terminal() {
    each_mode(|env| {
        let (needle, script) = sentinel(env);
        let marker = env.write_file("marker", "", 0o644);
        let args = launch_args(env, &["--tty=false"], &["sh", "-c", &script]);
        let bg = Background::spawn(env, &args);
        bg.expect_stdout(&needle, Duration::from_secs(120));
        assert_nothing_logged(env, &needle, &marker);
        env.write_file("work/go", "", 0o644);
        let out = bg.wait();
        assert_eq!(out.status.code(), Some(0));
        assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("{needle}-err")));
        assert_clean(env);
    });
}

#[test]
fn agent_output_and_echo_are_not_logged_with_a_terminal() {
    each_mode(|env| {
        let (needle, script) = sentinel(env);
        let script = format!("{script}; read line; echo \"got $line\"");
        let marker = env.write_file("marker", "", 0o644);
        let mut s = env.spawn_pty(launch_args(env, &[], &["sh", "-c", &script]), 24, 80);
        let t = Duration::from_secs(120);
        assert!(s.wait_for(&needle, t), "{}", s.output());
        // Typed input is echoed by the container's terminal: not logged either.
        let typed = format!("TYPED{}", env.id().replace(['-', '.', '_'], ""));
        s.write(format!("{typed}\r").as_bytes());
        assert!(s.wait_for(&typed, t), "{}", s.output());
        assert_nothing_logged(env, &needle, &marker);
        let hits = files_containing(&podman_storage_dirs(env), &[&typed], Some(&marker));
        assert!(hits.is_empty(), "{}: typed input on disk in {hits:?}", env.mode());
        env.write_file("work/go", "", 0o644);
        // The agent reads the already-typed line and exits.
        let status = s.wait(t).expect("ags exits");
        assert_eq!(status.code(), Some(0), "{}", s.output());
        assert!(s.output().contains(&format!("got {typed}")), "{}", s.output());
        drop(s);
        assert_clean(env);
    });
}
