//! Issue 16 item 1: `ssh://` services like podman-remote. A real OpenSSH server on 127.0.0.1
//! ([`common::sshd`]) forwards to the real rootful and rootless Podman sockets; `ags` reaches
//! them through the system `ssh` client it starts and tears down itself. The whole launch runs
//! over it: staged environment, workdir bind, exit code, and a terminal (attach, resize). A
//! named connection from containers.conf or podman-connections.json selects the same service.
//! Failures (an unknown host key, a missing remote socket) are clear and leave no `ssh`
//! process, no socket directory and no Podman object behind.

use crate::common;

use std::fs;
use std::path::PathBuf;
use std::process::Output;
use std::time::Duration;

use common::launch::{Background, agent_stderr, assert_clean, launch_args, stdout};
use common::sshd::Sshd;
use common::{TestEnv, ags_bin, each_mode, show};

/// Run `ags args…` in `env` with the sshd's client wrapper first on `PATH`, plus `vars`.
fn run_over(env: &TestEnv, sshd: &Sshd, args: &[String], vars: &[(&str, String)]) -> Output {
    let mut cmd = env.cmd(args);
    cmd.env("PATH", sshd.path()).env_remove("CONTAINER_HOST");
    for (k, v) in vars {
        cmd.env(k, v);
    }
    common::run_command(cmd, None, common::RUN_TIMEOUT)
}

/// What must be gone after a launch: the `ssh` client and its private socket directory.
fn assert_no_transport_left(env: &TestEnv, sshd: &Sshd) {
    let clients = sshd.clients();
    assert!(
        clients.is_empty(),
        "{}: ssh clients left: {clients:?}",
        env.mode()
    );
    let dirs: Vec<PathBuf> = fs::read_dir(env.runtime_dir())
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("ags-ssh-"))
        })
        .collect();
    assert!(
        dirs.is_empty(),
        "{}: socket directories left: {dirs:?}",
        env.mode()
    );
}

fn start(env: &TestEnv) -> Option<Sshd> {
    Sshd::start(env.id(), env.account())
}

#[test]
fn a_launch_over_ssh_stages_env_mounts_the_workdir_and_returns_the_exit_code() {
    each_mode(|env| {
        let Some(sshd) = start(env) else { return };
        env.write_file("work/marker.txt", "from-the-workdir\n", 0o644);
        let url = sshd.url(&env.account().name, &env.mode().socket());
        let key = sshd.key().display().to_string();
        let mut args = vec!["--url".to_string(), url.clone(), "--identity".into(), key];
        args.extend(launch_args(
            env,
            &["--tty=false", "-e", "STAGED=over-ssh"],
            &["sh", "-c", "echo \"$STAGED $(cat marker.txt) $(id -u)\"; exit 7"],
        ));
        let out = run_over(env, &sshd, &args, &[]);
        assert_eq!(out.status.code(), Some(7), "{}\n{}", show(&out), sshd.log());
        assert_eq!(
            stdout(&out).trim(),
            format!("over-ssh from-the-workdir {}", env.uid()),
            "{}",
            show(&out)
        );
        assert_eq!(agent_stderr(&out), "", "{}", show(&out));
        assert!(
            sshd.log().contains("Accepted publickey for"),
            "the launch did not go through sshd: {}",
            sshd.log()
        );
        assert_no_transport_left(env, &sshd);
        assert_clean(env);
    });
}

#[test]
fn a_terminal_session_over_ssh_gets_its_size_and_input() {
    each_mode(|env| {
        let Some(sshd) = start(env) else { return };
        let url = sshd.url(&env.account().name, &env.mode().socket());
        let mut args = vec![
            format!("PATH={}", sshd.path()),
            ags_bin().display().to_string(),
            "--url".into(),
            url,
            "--identity".into(),
            sshd.key().display().to_string(),
        ];
        args.extend(launch_args(
            env,
            &[],
            &["sh", "-c", "stty size; read line; echo \"got:$line\"; exit 5"],
        ));
        let (code, output) = env.run_program_in_pty(
            "/usr/bin/env",
            &args,
            31,
            97,
            &[(Duration::from_secs(3), b"typed-over-ssh\r")],
        );
        assert_eq!(code, Some(5), "{}: {output}\n{}", env.mode(), sshd.log());
        assert!(
            output.contains("31 97"),
            "{}: no terminal size in {output:?}",
            env.mode()
        );
        assert!(
            output.contains("got:typed-over-ssh"),
            "{}: {output:?}",
            env.mode()
        );
        assert_no_transport_left(env, &sshd);
        assert_clean(env);
    });
}

#[test]
fn named_connections_come_from_containers_conf_and_podman_connections_json() {
    each_mode(|env| {
        let Some(sshd) = start(env) else { return };
        let url = sshd.url(&env.account().name, &env.mode().socket());
        let key = sshd.key().display().to_string();
        // containers.conf: [engine.service_destinations.NAME] with uri and identity.
        let conf = env.write_file(
            "conf/containers.conf",
            format!(
                "[engine]\nactive_service = \"elsewhere\"\n[engine.service_destinations.viassh]\nuri = \"{url}\"\nidentity = \"{key}\"\n"
            ),
            0o644,
        );
        let mut args = vec!["--connection".to_string(), "viassh".into()];
        args.extend(launch_args(
            env,
            &["--tty=false"],
            &["sh", "-c", "echo conf; exit 3"],
        ));
        let vars = [("CONTAINERS_CONF", conf.display().to_string())];
        let out = run_over(env, &sshd, &args, &vars);
        assert_eq!(out.status.code(), Some(3), "{}\n{}", show(&out), sshd.log());
        assert_eq!(stdout(&out).trim(), "conf", "{}", show(&out));
        // podman-connections.json (Podman 5), chosen by CONTAINER_CONNECTION; the key from
        // CONTAINER_SSHKEY.
        let json = env.write_file(
            "conf/podman-connections.json",
            format!(
                r#"{{"Connection":{{"Default":"other","Connections":{{"fromjson":{{"URI":"{url}","IsMachine":false}}}}}},"Farm":{{}}}}"#
            ),
            0o644,
        );
        let args = launch_args(env, &["--tty=false"], &["sh", "-c", "echo json; exit 4"]);
        let vars = [
            ("CONTAINERS_CONF", "/nonexistent/containers.conf".to_string()),
            ("PODMAN_CONNECTIONS_CONF", json.display().to_string()),
            ("CONTAINER_CONNECTION", "fromjson".into()),
            ("CONTAINER_SSHKEY", key.clone()),
        ];
        let out = run_over(env, &sshd, &args, &vars);
        assert_eq!(out.status.code(), Some(4), "{}\n{}", show(&out), sshd.log());
        assert_eq!(stdout(&out).trim(), "json", "{}", show(&out));
        // An unknown name is refused before anything starts.
        let mut args = vec!["--connection".to_string(), "nosuch".into()];
        args.extend(launch_args(env, &["--tty=false"], &["true"]));
        let out = run_over(env, &sshd, &args, &vars);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        assert!(
            common::launch::stderr(&out).contains("no Podman connection named \"nosuch\""),
            "{}",
            show(&out)
        );
        assert_no_transport_left(env, &sshd);
        assert_clean(env);
    });
}

#[test]
fn ssh_failures_are_clear_and_leave_nothing() {
    each_mode(|env| {
        let Some(sshd) = start(env) else { return };
        let key = sshd.key().display().to_string();
        // The host key is not known to the user's own OpenSSH configuration (no wrapper on
        // PATH): OpenSSH refuses, ags does not prompt or bypass it.
        let url = sshd.url(&env.account().name, &env.mode().socket());
        let mut args = vec!["--url".to_string(), url, "--identity".into(), key.clone()];
        args.extend(launch_args(env, &["--tty=false"], &["true"]));
        let out = env.run(&args);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        let err = common::launch::stderr(&out);
        assert!(err.contains("Host key verification failed"), "{}", show(&out));
        assert!(err.contains("BatchMode"), "no advice in: {err}");
        // A remote socket that does not exist.
        let missing = env.root().join("no/podman.sock");
        let url = sshd.url(&env.account().name, &missing);
        let mut args = vec!["--url".to_string(), url, "--identity".into(), key];
        args.extend(launch_args(env, &["--tty=false"], &["true"]));
        let out = run_over(env, &sshd, &args, &[]);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        assert!(
            common::launch::stderr(&out).contains("ssh said: "),
            "{}",
            show(&out)
        );
        assert_no_transport_left(env, &sshd);
        assert_clean(env);
    });
}

/// Issue 22, finding 3: a `bin/ssh` the agent planted in the workspace, first on `PATH`
/// (direnv's `PATH_add bin`), would get the user's SSH agent at the next `ssh://` launch. It is
/// passed over (and named in a note): the trusted `ssh` after it runs and the launch works; with
/// `[ssh] path` pinning the trusted one, nothing on `PATH` is looked at.
#[test]
fn an_ssh_planted_in_the_workspace_never_runs() {
    each_mode(|env| {
        let Some(sshd) = start(env) else { return };
        let ran = env.root().join("planted-ssh-ran");
        let wrapper = sshd.path().split(':').next().unwrap().to_string() + "/ssh";
        // It would pass everything on to the real client: the launch works either way.
        let planted = env.write_file(
            "work/bin/ssh",
            format!(
                "#!/bin/sh\necho \"$SSH_AUTH_SOCK\" >> {}\nexec {wrapper} \"$@\"\n",
                ran.display()
            ),
            0o755,
        );
        let work_bin = planted.parent().unwrap().display().to_string();
        let url = sshd.url(&env.account().name, &env.mode().socket());
        let key = sshd.key().display().to_string();
        let mut args = vec!["--url".to_string(), url, "--identity".into(), key];
        args.extend(launch_args(env, &["--tty=false"], &["sh", "-c", "echo over-ssh"]));
        let path = format!("{work_bin}:{}", sshd.path());
        let out = run_over(env, &sshd, &args, &[("PATH", path)]);
        assert_eq!(out.status.code(), Some(0), "{}\n{}", show(&out), sshd.log());
        assert_eq!(stdout(&out).trim(), "over-ssh", "{}", show(&out));
        assert!(!ran.exists(), "{}: the planted ssh ran", env.mode());
        assert!(
            common::launch::stderr(&out).contains(&format!("passed over {}", planted.display())),
            "{}",
            show(&out)
        );
        // Pinned: PATH holds only the planted one and the system's (which lacks the test's host key).
        env.write_global_config(&format!("[ssh]\npath = \"{wrapper}\"\n"));
        let path = format!("{work_bin}:{}", common::CLEAN_PATH);
        let out = run_over(env, &sshd, &args, &[("PATH", path)]);
        assert_eq!(out.status.code(), Some(0), "{}\n{}", show(&out), sshd.log());
        assert!(!ran.exists(), "{}: the planted ssh ran", env.mode());
        assert_no_transport_left(env, &sshd);
        assert_clean(env);
    });
}

/// Issue 22, finding 3, another launch's reach: an `ssh` planted in a directory that a running
/// local launch mounts read-write (its `--add-dir`), first on `PATH`, is passed over at an
/// `ssh://` launch that does not mount it: the tunnel asks this machine's services for the
/// read-write mounts of every running `ags` container before it picks `ssh`.
#[test]
fn an_ssh_planted_in_a_running_launchs_mount_never_runs() {
    each_mode(|env| {
        let Some(sshd) = start(env) else { return };
        let shared = env.mkdir("shared", 0o755);
        let ran = env.root().join("planted-ssh-ran");
        let wrapper = sshd.path().split(':').next().unwrap().to_string() + "/ssh";
        env.write_file(
            "shared/bin/ssh",
            format!(
                "#!/bin/sh\necho \"$SSH_AUTH_SOCK\" >> {}\nexec {wrapper} \"$@\"\n",
                ran.display()
            ),
            0o755,
        );
        let script = "echo READY; while [ ! -e go ]; do sleep 0.1; done";
        let first = Background::spawn(
            env,
            &launch_args(
                env,
                &["--tty=false", "--add-dir", &shared.display().to_string()],
                &["sh", "-c", script],
            ),
        );
        first.expect_stdout("READY", Duration::from_secs(120));
        let url = sshd.url(&env.account().name, &env.mode().socket());
        let key = sshd.key().display().to_string();
        let mut args = vec!["--url".to_string(), url, "--identity".into(), key];
        args.extend(launch_args(env, &["--tty=false"], &["sh", "-c", "echo over-ssh"]));
        let path = format!("{}/bin:{}", shared.display(), sshd.path());
        // The user's launches go to CONTAINER_HOST (in the Podman 5 suite not a default
        // socket); `--url` picks the ssh:// service for this one.
        let vars = [("PATH", path), ("CONTAINER_HOST", env.url())];
        let out = run_over(env, &sshd, &args, &vars);
        env.write_file("work/go", "", 0o644);
        let done = first.wait();
        assert_eq!(out.status.code(), Some(0), "{}\n{}", show(&out), sshd.log());
        assert_eq!(stdout(&out).trim(), "over-ssh", "{}", show(&out));
        assert!(!ran.exists(), "{}: the planted ssh ran", env.mode());
        assert_eq!(done.status.code(), Some(0), "{}", show(&done));
        assert_no_transport_left(env, &sshd);
        assert_clean(env);
    });
}
