//! The launch through the real `ags` binary against real Podman, in every mode (issue 2, item 7):
//! exit codes, stdout/stderr separation, stdin and its EOF, the workdir mount and its ownership,
//! the TTY path on a pseudo-terminal (size, resize, Ctrl-C, terminal restored), and the failure
//! paths (missing image, unreachable socket, bad config key, untrusted overlays). Every test ends
//! with nothing labelled in Podman and nothing under `$XDG_RUNTIME_DIR/ags/`.

use crate::common;

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::launch::{
    agent_stderr, assert_clean, container_events, decl, find_ags_pid, install_hook, launch_args, now_secs,
    run_agent, run_agent_with_stdin, stderr, stdout, trust_overlay, write_overlay,
};
use common::{Mode, describe_status, each_mode, show, tool};

#[test]
fn exit_codes_pass_through() {
    each_mode(|env| {
        let plain = env.write_file("work/not-executable", "#!/bin/sh\necho never\n", 0o644);
        let plain = plain.to_str().unwrap();
        let cases: [(&[&str], i32, &str); 5] = [
            (&["sh", "-c", "exit 7"], 7, ""),
            (&["true"], 0, ""),
            (&["sh", "-c", "kill -INT $$"], 130, ""),
            (&["no-such-command-ags"], 127, "no-such-command-ags"),
            (&[plain], 126, "permission denied"),
        ];
        for (cmd, code, message) in cases {
            let out = run_agent(env, &[], cmd);
            assert_eq!(out.status.code(), Some(code), "{cmd:?}: {}", show(&out));
            assert_eq!(stdout(&out), "", "{cmd:?}: {}", show(&out));
            if message.is_empty() {
                assert_eq!(agent_stderr(&out), "", "{cmd:?}: {}", show(&out));
            } else {
                let err = stderr(&out);
                assert!(
                    err.contains("could not be started") && err.contains(message),
                    "{cmd:?}: {}",
                    show(&out)
                );
            }
        }
        assert_clean(env);
    });
}

#[test]
fn stdout_and_stderr_stay_separate() {
    each_mode(|env| {
        let script = "for i in 1 2 3; do echo out$i; echo err$i >&2; done";
        let out = run_agent(env, &[], &["sh", "-c", script]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert_eq!(stdout(&out), "out1\nout2\nout3\n", "{}", show(&out));
        assert_eq!(agent_stderr(&out), "err1\nerr2\nerr3\n", "{}", show(&out));
        // Megabytes on both streams at once: nothing lost, nothing crosses over.
        let script =
            "head -c 1000000 /dev/zero | tr '\\0' e >&2 & head -c 2000000 /dev/zero | tr '\\0' o; wait";
        let out = run_agent(env, &[], &["sh", "-c", script]);
        assert_eq!(out.status.code(), Some(0), "{}", describe_status(&out.status));
        assert!(
            out.stdout.len() == 2_000_000 && out.stdout.iter().all(|&b| b == b'o'),
            "stdout: {} bytes",
            out.stdout.len()
        );
        let err = agent_stderr(&out);
        assert!(
            err.len() == 1_000_000 && err.bytes().all(|b| b == b'e'),
            "stderr: {} bytes",
            err.len()
        );
        // The same with a staged environment (the command then runs through the env wrapper).
        let out = run_agent(
            env,
            &["--env", "X=1"],
            &["sh", "-c", "echo out$X; echo err$X >&2"],
        );
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert_eq!(
            (stdout(&out), agent_stderr(&out)),
            ("out1\n".into(), "err1\n".into())
        );
        assert_clean(env);
    });
}

#[test]
fn stdin_reaches_the_agent_and_its_end_is_delivered() {
    each_mode(|env| {
        let out = run_agent_with_stdin(env, &[], &["cat"], b"hello\n");
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert_eq!(stdout(&out), "hello\n");

        // 300 KiB with every byte value, stored by the agent in the shared work directory.
        let big: Vec<u8> = (0..300 * 1024u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let script = "cat > stdin.bin; wc -c < stdin.bin";
        let out = run_agent_with_stdin(env, &[], &["sh", "-c", script], &big);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert_eq!(stdout(&out).trim(), "307200", "{}", show(&out));
        let copied = std::fs::read(env.work_dir().join("stdin.bin")).unwrap();
        assert!(copied == big, "the agent received different bytes");

        // Without a final newline only the end of input ends `read`.
        let script = "read x; echo got:$x";
        let out = run_agent_with_stdin(env, &[], &["sh", "-c", script], b"abc");
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert_eq!(stdout(&out), "got:abc\n", "{}", show(&out));
        // Empty input (/dev/null): `cat` sees the end at once.
        let out = run_agent(env, &["--env", "X=1"], &["sh", "-c", "cat; echo end$X"]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert_eq!(stdout(&out), "end1\n", "{}", show(&out));
        assert_clean(env);
    });
}

#[test]
fn workdir_is_shared_with_the_host_and_files_belong_to_the_user() {
    each_mode(|env| {
        env.write_file("work/from-host.txt", "host content\n", 0o644);
        let script = "pwd; cat from-host.txt; echo container > from-container.txt; mkdir sub; : > sub/f";
        let out = run_agent(env, &[], &["sh", "-c", script]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let work = env.work_dir();
        assert_eq!(stdout(&out), format!("{}\nhost content\n", work.display()));
        assert_eq!(
            std::fs::read_to_string(work.join("from-container.txt")).unwrap(),
            "container\n"
        );
        for p in ["from-container.txt", "sub", "sub/f"] {
            let meta = std::fs::metadata(work.join(p)).unwrap();
            assert_eq!((meta.uid(), meta.gid()), (env.uid(), env.gid()), "{p}");
        }

        // --workdir: another directory, given explicitly.
        let other = env.mkdir("other", 0o755);
        let arg = format!("--workdir={}", other.display());
        let out = run_agent(env, &[&arg], &["sh", "-c", "pwd; : > made-here"]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert_eq!(stdout(&out), format!("{}\n", other.display()));
        let meta = std::fs::metadata(other.join("made-here")).unwrap();
        assert_eq!((meta.uid(), meta.gid()), (env.uid(), env.gid()));
        assert_clean(env);
    });
}

/// The words of `stty -a` for the terminal at `slave` (settings like `icanon` or `-echo`).
fn stty_flags(slave: &Path) -> Vec<String> {
    let out = Command::new(tool("stty"))
        .arg("-a")
        .arg("-F")
        .arg(slave)
        .output()
        .expect("running stty");
    assert!(out.status.success(), "stty -a -F {}: {out:?}", slave.display());
    String::from_utf8_lossy(&out.stdout)
        .split(|c: char| c.is_whitespace() || c == ';')
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn tty_size_resize_ctrl_c_and_terminal_restored() {
    each_mode(|env| {
        // Podman hands the size sent before start to conmon's control FIFO and returns, so under
        // load the agent can start before conmon has set it (as with `podman run -t`): wait until
        // the window has a size. Without the initial resize it never gets one and READY never comes.
        let script = "until [ -n \"$(stty size 2>/dev/null)\" ]; do sleep 0.1; done; stty size; \
                      trap 'stty size; echo WINCHED' WINCH; trap 'echo GOT-INT; exit 5' INT; \
                      echo READY; while :; do sleep 1 & wait $!; done";
        let mut s = env.spawn_pty(launch_args(env, &[], &["sh", "-c", script]), 24, 80);
        let t = Duration::from_secs(60);
        assert!(s.wait_for("READY", t), "{}", s.output());
        assert!(s.output().contains("24 80"), "initial size: {:?}", s.output());
        let raw = stty_flags(s.slave_path());
        assert!(
            raw.iter().any(|w| w == "-icanon") && raw.iter().any(|w| w == "-echo"),
            "the host terminal is not in raw mode while the agent runs: {raw:?}"
        );
        s.resize(30, 100);
        assert!(s.wait_for("30 100", t), "resized size not seen: {:?}", s.output());
        // The trap prints the size, then this: it may not have arrived yet.
        assert!(s.wait_for("WINCHED", t), "{:?}", s.output());
        s.write(b"\x03");
        let status = s.wait(t).expect("ags exits after Ctrl-C");
        assert_eq!(status.code(), Some(5), "{:?}", s.output());
        assert!(s.output().contains("GOT-INT"), "{:?}", s.output());
        let restored = stty_flags(s.slave_path());
        for flag in ["icanon", "echo", "isig", "icrnl", "opost"] {
            assert!(
                restored.iter().any(|w| w == flag),
                "{flag} not restored after exit: {restored:?}"
            );
        }
        drop(s);
        assert_clean(env);
    });
}

#[test]
fn tty_failure_and_signal_paths_restore_the_terminal() {
    each_mode(|env| {
        let t = Duration::from_secs(60);
        let sane = |s: &common::PtySession| {
            let flags = stty_flags(s.slave_path());
            assert!(
                ["icanon", "echo", "isig"]
                    .iter()
                    .all(|f| flags.iter().any(|w| w == f)),
                "terminal left in raw mode: {flags:?}"
            );
        };
        let mut s = env.spawn_pty(launch_args(env, &[], &["no-such-command-ags"]), 24, 80);
        let status = s.wait(t).expect("ags exits");
        assert_eq!(status.code(), Some(127), "{:?}", s.output());
        assert!(s.output().contains("could not be started"), "{:?}", s.output());
        sane(&s);

        let script = "trap 'echo GOT-TERM; exit 6' TERM; echo READY; while :; do sleep 1 & wait $!; done";
        let mut s = env.spawn_pty(launch_args(env, &[], &["sh", "-c", script]), 24, 80);
        assert!(s.wait_for("READY", t), "{:?}", s.output());
        let ags = find_ags_pid(s.pid());
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(ags), nix::sys::signal::Signal::SIGTERM).unwrap();
        let status = s.wait(t).expect("ags exits after SIGTERM");
        assert_eq!(status.code(), Some(6), "{:?}", s.output());
        assert!(s.output().contains("GOT-TERM"), "{:?}", s.output());
        sane(&s);
        drop(s);
        assert_clean(env);
    });
}

#[test]
fn missing_image_is_reported_with_advice() {
    each_mode(|env| {
        let mut args = launch_args(env, &["--tty=false", "--env", "X=1"], &["true"]);
        args[1] = "localhost/ags-no-such-image:0".into();
        let out = env.run(&args);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        let err = stderr(&out);
        assert!(
            err.contains("localhost/ags-no-such-image:0")
                && err.contains("not present")
                && err.contains("ags image build"),
            "{}",
            show(&out)
        );
        assert_eq!(stdout(&out), "");
        assert_clean(env);
    });
}

#[test]
fn unreachable_socket_lists_what_was_tried_and_how_to_start_a_service() {
    each_mode(|env| {
        let since = now_secs();
        let out = run_agent(env, &["--url", "unix:///nonexistent.sock"], &["true"]);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        let err = stderr(&out);
        let start = match env.mode() {
            Mode::Rootful => "podman system service --time=0 unix:///run/podman/podman.sock",
            Mode::Rootless => "systemctl --user start podman.socket",
        };
        assert!(
            err.contains("unix:///nonexistent.sock") && err.contains("does not exist") && err.contains(start),
            "{}",
            show(&out)
        );
        assert_eq!(
            container_events(env.mode(), &env.label(), since),
            Vec::<String>::new()
        );
        assert_clean(env);
    });
}

#[test]
fn bad_config_key_is_named() {
    each_mode(|env| {
        let cfg = env.write_global_config("[sandbox]\nimage = \"x\"\nfrobnicate = 1\n");
        let out = run_agent(env, &[], &["true"]);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        let err = stderr(&out);
        assert!(
            err.contains("frobnicate") && err.contains(cfg.to_str().unwrap()),
            "{}",
            show(&out)
        );
        assert_clean(env);
    });
}

#[test]
fn untrusted_overlay_without_hooks_is_skipped_with_a_warning() {
    each_mode(|env| {
        // Loaded, this overlay would be an error (an overlay may not set the image).
        let overlay = write_overlay(env, "[sandbox]\nimage = \"localhost/overlay-must-not-load\"\n");
        let out = run_agent(env, &[], &["sh", "-c", "echo ran"]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert_eq!(stdout(&out), "ran\n");
        let err = stderr(&out);
        assert!(
            err.contains("warning") && err.contains("skipping untrusted project overlay"),
            "{}",
            show(&out)
        );
        assert!(err.contains(overlay.to_str().unwrap()), "{}", show(&out));
        // Trusted, the same overlay is loaded (and refused for the field it sets).
        trust_overlay(env);
        let out = run_agent(env, &[], &["sh", "-c", "echo ran"]);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        assert!(stderr(&out).contains("sandbox.image"), "{}", show(&out));
        assert_clean(env);
    });
}

#[test]
fn untrusted_overlay_with_hooks_is_refused() {
    each_mode(|env| {
        let marker = env.root().join("hook-ran");
        let hook = install_hook(env, "respond");
        let response = env.write_file("responses/p.json", "{\"version\":1}", 0o644);
        let overlay = write_overlay(
            env,
            &decl(
                "p",
                &hook,
                &[response.to_str().unwrap(), marker.to_str().unwrap()],
                "",
            ),
        );
        let since = now_secs();
        let out = run_agent(env, &[], &["true"]);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        let err = stderr(&out);
        assert!(
            err.contains(overlay.to_str().unwrap())
                && err.contains("declares prepare hooks")
                && err.contains("not trusted"),
            "{}",
            show(&out)
        );
        assert!(!marker.exists(), "the hook of an untrusted overlay ran");
        assert_eq!(
            container_events(env.mode(), &env.label(), since),
            Vec::<String>::new()
        );
        assert_clean(env);
    });
}

/// A `podman` first on PATH is never run (tests/live/no_podman_binary.rs traces every execve).
#[test]
fn ags_never_executes_podman() {
    each_mode(|env| {
        let marker = env.root().join("podman-ran");
        let fake = format!("#!/bin/sh\necho \"$@\" >> {}\nexit 1\n", marker.display());
        let bin = env.mkdir("bin", 0o755);
        env.write_file("bin/podman", fake, 0o755);
        let path = format!("{}:{}", bin.display(), common::CLEAN_PATH);
        let mut cmd = env.cmd(launch_args(env, &["--tty=false", "--env", "X=1"], &["true"]));
        cmd.env("PATH", &path);
        let out = common::run_command(cmd, None, common::RUN_TIMEOUT);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let mut cmd = env.cmd(["gc"]);
        cmd.env("PATH", &path);
        let out = common::run_command(cmd, None, common::RUN_TIMEOUT);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert!(
            !marker.exists(),
            "ags ran podman: {:?}",
            std::fs::read_to_string(&marker)
        );
        assert_clean(env);
    });
}
