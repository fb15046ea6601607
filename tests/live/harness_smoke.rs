//! Checks of the integration-test harness itself (tests/common), in every mode: the binary
//! copy, the clean environment, file ownership, the pty runner and the curl-based Podman helpers.

use crate::common;

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::time::Duration;

use common::{Mode, TestEnv, api, each_mode, show};

/// Run a host program through the harness and return its stdout (asserting success).
fn stdout_of(env: &TestEnv, program: &str, args: &[&str]) -> String {
    let out = common::run_command(env.command(program, args), None, common::RUN_TIMEOUT);
    assert!(out.status.success(), "{program} {args:?}: {}", show(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn configured_modes_are_all_usable() {
    let modes = common::modes();
    if common::require_podman() {
        for (var, mode) in [
            ("AGS_TEST_ROOTFUL_URL", Mode::Rootful),
            ("AGS_TEST_ROOTLESS_URL", Mode::Rootless),
        ] {
            if std::env::var_os(var).is_some() {
                assert!(
                    modes.contains(&mode),
                    "{var} is set but {mode} is not among {modes:?}"
                );
            }
        }
    }
    for mode in modes {
        assert!(api::ping(&mode.socket()).is_ok(), "{mode} stopped answering");
    }
}

#[test]
fn binary_copy_runs_and_prints_version() {
    each_mode(|env| {
        let bin = common::ags_bin();
        assert!(
            !bin.starts_with(env!("CARGO_MANIFEST_DIR")),
            "{} is not a copy",
            bin.display()
        );
        assert_eq!(std::fs::metadata(bin).unwrap().mode() & 0o777, 0o755);
        let out = env.run(["--version"]);
        assert!(out.status.success(), "{}", show(&out));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.starts_with("ags "), "unexpected version output: {text:?}");
    });
}

#[test]
fn env_without_podman_runs_as_the_test_user() {
    let env = TestEnv::without_podman();
    let out = env.run(["--version"]);
    assert!(out.status.success(), "{}", show(&out));
    assert_eq!(
        stdout_of(&env, "id", &["-u"]).trim(),
        nix::unistd::geteuid().to_string()
    );
    assert_eq!(
        env.url(),
        format!("unix://{}/run/none.sock", env.root().display())
    );
    assert_eq!(
        env.runtime_dir(),
        std::path::Path::new(&format!("/dev/shm/ags-test-{}", env.id()))
    );
    assert!(env.runtime_dir().is_dir());
}

#[test]
fn commands_get_exactly_the_clean_environment() {
    each_mode(|env| {
        let printed: BTreeMap<String, String> = stdout_of(env, "env", &[])
            .lines()
            .filter_map(|l| l.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())))
            .collect();
        let expected: BTreeMap<String, String> = env.envs().into_iter().collect();
        assert_eq!(printed, expected);
        assert_eq!(expected["CONTAINER_HOST"], env.mode().url());
        assert_eq!(stdout_of(env, "id", &["-u"]).trim(), env.uid().to_string());
        assert_eq!(stdout_of(env, "id", &["-g"]).trim(), env.gid().to_string());
        assert_eq!(
            stdout_of(env, "pwd", &[]).trim(),
            env.work_dir().to_str().unwrap()
        );
        // No controlling terminal: a prompt on /dev/tty must fail closed.
        let out = common::run_command(
            env.command("sh", ["-c", ": </dev/tty"]),
            None,
            common::RUN_TIMEOUT,
        );
        assert!(!out.status.success(), "/dev/tty opened: {}", show(&out));
        // The user can use every directory of its world.
        let dirs = [
            env.home(),
            env.config_home(),
            env.state_home(),
            env.cache_home(),
            env.work_dir(),
        ];
        for dir in dirs.iter().chain([&env.runtime_dir()]) {
            let dir = dir.to_str().unwrap();
            stdout_of(env, "test", &["-d", dir, "-a", "-w", dir, "-a", "-x", dir]);
        }
    });
}

#[test]
fn written_files_belong_to_the_mode_user() {
    each_mode(|env| {
        let path = env.write_file("work/sub/dir/file.txt", "hello\n", 0o640);
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(
            (meta.uid(), meta.gid(), meta.mode() & 0o777),
            (env.uid(), env.gid(), 0o640)
        );
        let parent = std::fs::metadata(path.parent().unwrap()).unwrap();
        assert_eq!((parent.uid(), parent.mode() & 0o777), (env.uid(), 0o755));
        assert_eq!(stdout_of(env, "cat", &["sub/dir/file.txt"]), "hello\n");

        let config = env.write_global_config("[sandbox]\n");
        assert_eq!(config, env.config_home().join("ags/config.toml"));
        let meta = std::fs::metadata(&config).unwrap();
        assert_eq!((meta.uid(), meta.mode() & 0o777), (env.uid(), 0o600));
        assert_eq!(stdout_of(env, "cat", &[config.to_str().unwrap()]), "[sandbox]\n");
    });
}

#[test]
fn pty_runner_sets_size_types_input_and_exit_code() {
    each_mode(|env| {
        let script = "test -t 0 && test -t 1 && stty size && read line && echo \"got $line\" && exit 7";
        let input: &[(Duration, &[u8])] = &[(Duration::from_millis(100), b"hello\n")];
        let (code, output) = env.run_program_in_pty("sh", ["-c", script], 24, 80, input);
        assert_eq!(code, Some(7), "output: {output:?}");
        assert!(output.contains("24 80"), "output: {output:?}");
        assert!(output.contains("got hello"), "output: {output:?}");
    });
}

#[test]
fn pty_resize_reaches_the_foreground_process_as_sigwinch() {
    each_mode(|env| {
        let script = "trap 'stty size; exit 0' WINCH; echo ready; i=0; \
                      while [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; exit 3";
        let mut pty = env.spawn_pty_program("sh", ["-c", script], 24, 80);
        assert!(
            pty.wait_for("ready", Duration::from_secs(60)),
            "output: {:?}",
            pty.output()
        );
        pty.resize(40, 100);
        let status = pty
            .wait(Duration::from_secs(60))
            .expect("sh exits after SIGWINCH");
        assert_eq!(status.code(), Some(0), "output: {:?}", pty.output());
        assert!(pty.output().contains("40 100"), "output: {:?}", pty.output());
    });
}

#[test]
fn label_helpers_list_and_remove_volumes_and_containers() {
    each_mode(|env| {
        let mode = env.mode();
        let label = env.label();
        let (key, value) = label.split_once('=').unwrap();
        let other = format!("{}-other", env.id());
        let volume = env.unique_name("vol");
        let stranger = env.unique_name("stranger");
        let container = env.unique_name("ctr");
        api::create_volume(mode, &volume, &[(key, value)]);
        api::create_volume(mode, &stranger, &[(key, &other)]);
        api::create_container(mode, &container, &env.image(), &[(key, value)]);

        let listed = common::list_by_label(mode, &label);
        assert_eq!(
            listed,
            [format!("container:{container}"), format!("volume:{volume}")]
        );
        assert_eq!(env.leftovers(), listed);

        let mut removed = common::cleanup_label(mode, &label);
        removed.sort();
        assert_eq!(
            removed,
            [format!("container:{container}"), format!("volume:{volume}")]
        );
        assert!(common::list_by_label(mode, &label).is_empty());
        env.assert_no_leftovers();

        let other_label = format!("{key}={other}");
        assert_eq!(
            common::list_by_label(mode, &other_label),
            [format!("volume:{stranger}")]
        );
        assert_eq!(
            common::cleanup_label(mode, &other_label),
            [format!("volume:{stranger}")]
        );
        assert!(
            common::cleanup_label(mode, &other_label).is_empty(),
            "cleanup is idempotent"
        );
    });
}
