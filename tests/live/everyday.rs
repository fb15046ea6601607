//! The everyday habits of `podman run` and of a well-made CLI (issue 13), in every mode against
//! real Podman: values checked before any hook runs (a typo in `--agent` runs nothing and gets a
//! suggestion; a missing image or a taken `--name` is found before hooks), launch options before
//! a subcommand honoured or refused, argument errors exit 125, `--timeout` (124), init as PID 1
//! (Ctrl-C reaches `sleep`), `--publish` reached from the host, and the shell agent's bash.

use crate::common;

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use serde_json::json;

use common::launch::{
    Background, approve_hooks, assert_clean, launch_args, respond_hook, run_agent, stderr, stdout,
};
use common::{TestEnv, api, each_mode, show};

/// A global prepare hook that creates `<root>/hook-ran` when it runs; returns that path.
fn marker_hook(env: &TestEnv) -> std::path::PathBuf {
    let marker = env.root().join("hook-ran");
    let response = json!({"version": 1, "env": {"FROM_HOOK": "1"}});
    env.write_global_config(&respond_hook(env, "mark", &response, Some(&marker)));
    approve_hooks(env);
    marker
}

#[test]
fn bad_values_run_no_hook_and_say_what_to_do() {
    each_mode(|env| {
        let marker = marker_hook(env);
        let cases: [(&[&str], &str); 8] = [
            (&["--agent", "clade"], "did you mean \"claude\"?"),
            (&["--env", "1X=y"], "--env \"1X\": invalid variable name"),
            (&["--label", "io.ags.managed=x"], "reserved for ags"),
            (&["--name", "bad name"], "--name \"bad name\""),
            (&["--publish", "80"], "HOST_PORT:CONTAINER_PORT"),
            (&["--url", "ssh://host"], "ssh://host"),
            (
                &["--workdir", "/nonexistent-ags-dir"],
                "--workdir /nonexistent-ags-dir",
            ),
            (&["--image", "localhost/Bad Image"], "not a valid image reference"),
        ];
        for (extra, message) in cases {
            let mut args = vec!["--tty=false", "--label", &env.label()]
                .into_iter()
                .map(String::from)
                .collect::<Vec<_>>();
            args.extend(extra.iter().map(|s| s.to_string()));
            if !extra.contains(&"--image") {
                args.extend(["--image".into(), env.image()]);
            }
            args.extend(["--".into(), "true".into()]);
            let out = env.run(&args);
            assert_eq!(out.status.code(), Some(125), "{extra:?}: {}", show(&out));
            assert!(stderr(&out).contains(message), "{extra:?}: {}", show(&out));
            assert!(
                !marker.exists(),
                "{extra:?}: the hook ran for a launch refused on its arguments"
            );
        }
        // The service answers but has no such image: found before the hook runs.
        let mut args = launch_args(env, &["--tty=false"], &["true"]);
        args[1] = "localhost/ags-no-such-image:0".into();
        let out = env.run(&args);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        assert!(stderr(&out).contains("not present"), "{}", show(&out));
        assert!(!marker.exists(), "the hook ran for a missing image");
        // The same launch with good values runs the hook.
        let out = run_agent(env, &["--agent", "shell"], &["sh", "-c", "echo $FROM_HOOK"]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert_eq!(stdout(&out), "1\n");
        assert!(marker.exists(), "the hook did not run for a good launch");
        assert_clean(env);
    });
}

#[test]
fn argument_errors_exit_125_and_help_exits_0() {
    let env = TestEnv::without_podman();
    for args in [
        &["--no-such-option"][..],
        &["--tty=maybe"],
        &["plan", "--bogus"],
        &["hooks"],
    ] {
        let out = env.run(args);
        assert_eq!(out.status.code(), Some(125), "{args:?}: {}", show(&out));
    }
    for args in [&["--help"][..], &["--version"], &["plan", "--help"]] {
        let out = env.run(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", show(&out));
        assert!(!out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn launch_options_before_a_subcommand_are_honoured_or_refused() {
    each_mode(|env| {
        let image = env.image();
        let out = env.run([
            "--agent",
            "claude",
            "-e",
            "K=V",
            "plan",
            "--json",
            "--no-hooks",
            "--image",
            &image,
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(plan["agent"], "claude");
        assert!(
            plan["env"].as_array().unwrap().iter().any(|e| e["key"] == "K"),
            "{plan}"
        );
        let out = env.run(["--agent", "claude", "plan", "--agent", "pi"]);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        assert!(
            stderr(&out).contains("both before and after `plan`"),
            "{}",
            show(&out)
        );
        for sub in ["gc", "doctor"] {
            let out = env.run(["-e", "K=V", sub]);
            assert_eq!(out.status.code(), Some(125), "{}", show(&out));
            assert!(
                stderr(&out).contains(&format!("--env given before `ags {sub}`")),
                "{}",
                show(&out)
            );
        }
    });
}

#[test]
fn name_is_used_and_a_clash_is_refused_before_hooks() {
    each_mode(|env| {
        let name = env.unique_name("named");
        let out = run_agent(env, &["--name", &name], &["sh", "-c", "echo ok"]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        // A container of that name exists (ours, not ags's): refused before any hook runs.
        api::create_container(
            env.mode(),
            &name,
            &env.image(),
            &[(common::TEST_LABEL_KEY, env.id())],
        );
        let marker = marker_hook(env);
        let out = run_agent(env, &["--name", &name], &["true"]);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        assert!(stderr(&out).contains("already exists"), "{}", show(&out));
        assert!(!marker.exists(), "the hook ran for a launch with a taken name");
        // Our container was not touched: still created, never started.
        let state = api::call(env.mode(), "GET", &format!("/containers/{name}/json"), None).json();
        assert_eq!(state["State"]["Status"], "created", "{state}");
        common::cleanup_label(env.mode(), &env.label());
        assert_clean(env);
    });
}

#[test]
fn timeout_stops_the_agent_and_exits_124() {
    each_mode(|env| {
        let out = run_agent(env, &["--timeout", "1s"], &["sleep", "1000"]);
        assert_eq!(out.status.code(), Some(124), "{}", show(&out));
        assert!(stderr(&out).contains("--timeout reached"), "{}", show(&out));
        // An agent that ignores SIGTERM is killed after the grace period.
        let script = "trap '' TERM; echo READY; while :; do sleep 1; done";
        let out = run_agent(env, &["--timeout", "1s", "--no-init"], &["sh", "-c", script]);
        assert_eq!(out.status.code(), Some(124), "{}", show(&out));
        // A command that ends in time keeps its own exit code.
        let out = run_agent(env, &["--timeout", "1h"], &["sh", "-c", "exit 3"]);
        assert_eq!(out.status.code(), Some(3), "{}", show(&out));
        assert_clean(env);
    });
}

#[test]
fn init_is_pid_1_and_ctrl_c_reaches_sleep() {
    each_mode(|env| {
        let out = run_agent(
            env,
            &[],
            &["sh", "-c", "tr '\\0' ' ' < /proc/1/cmdline; echo; echo $$"],
        );
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let text = stdout(&out);
        assert!(
            text.contains("catatonit") || text.contains("init"),
            "PID 1: {text}"
        );
        assert_ne!(text.lines().nth(1), Some("1"), "the command is PID 1: {text}");
        // On a terminal, Ctrl-C ends a command that installs no handler (PID 1 would ignore it).
        let t = Duration::from_secs(60);
        let mut s = env.spawn_pty(
            launch_args(env, &[], &["sh", "-c", "echo READY; exec sleep 1000"]),
            24,
            80,
        );
        assert!(s.wait_for("READY", t), "{}", s.output());
        std::thread::sleep(Duration::from_millis(300)); // let `exec sleep` happen
        s.write(b"\x03");
        let status = s.wait(t).expect("ags exits after Ctrl-C");
        assert_eq!(status.code(), Some(130), "{:?}", s.output());
        drop(s);
        assert_clean(env);
    });
}

#[test]
fn published_port_is_reached_from_the_host() {
    if common::var("AGS_TEST_SERVICE_NETNS").as_deref() == Some("separate") {
        // scripts/test-podman5: the service runs inside the podman-in-podman container, so a
        // published port opens on that container's loopback, not on this host's.
        eprintln!("SKIP: the Podman service under test has its own network namespace");
        return;
    }
    each_mode(|env| {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let publish = format!("127.0.0.1:{port}:8080");
        let args = launch_args(
            env,
            &["--tty=false", "-p", &publish],
            &["sh", "-c", "echo READY; nc -l -p 8080"],
        );
        let bg = Background::spawn(env, &args);
        bg.expect_stdout("READY", Duration::from_secs(60));
        // The port forwarder may accept before nc listens: send until nc has printed it.
        let mut sent = false;
        for _ in 0..100 {
            if let Ok(mut c) = TcpStream::connect(("127.0.0.1", port)) {
                let _ = c.write_all(b"hello-from-host\n");
                sent = true;
            }
            std::thread::sleep(Duration::from_millis(200));
            if bg.stdout_so_far().contains("hello-from-host") {
                break;
            }
        }
        assert!(sent, "could not connect to 127.0.0.1:{port}");
        let out = bg.wait();
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert!(stdout(&out).contains("hello-from-host"), "{}", show(&out));
        assert_clean(env);
    });
}

#[test]
fn shell_agent_prefers_bash() {
    each_mode(|env| {
        // The busybox image has no bash: the shell agent falls back to sh.
        let out = common::launch::run_agent_with_stdin(env, &[], &[], b"echo shell=$0\n");
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert_eq!(stdout(&out), "shell=sh\n", "{}", show(&out));
        // With a bash on PATH, bash is chosen.
        let dir = env.mkdir("bin", 0o755);
        env.write_file("bin/bash", "#!/bin/sh\necho I-AM-BASH\n", 0o755);
        let path = format!("PATH={}:/usr/bin:/bin", dir.display());
        let out = common::launch::run_agent_with_stdin(
            env,
            &["--add-dir", dir.to_str().unwrap(), "-e", &path],
            &[],
            b"",
        );
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert_eq!(stdout(&out), "I-AM-BASH\n", "{}", show(&out));
        assert_clean(env);
    });
}
