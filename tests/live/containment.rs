//! Containment of the host paths a launch mounts (issue 10, holes 1, 2, 3, 8 and the trust-file
//! part of 11), each attack performed against real Podman in every mode: a symlink planted by a
//! previous launch's agent, a sibling container swapping a mount source for a symlink while
//! launches happen, the home directory, `/` and credential directories as workdir or
//! `--add-dir`, a workdir reached through a symlink, a non-UTF-8 workdir, the directory of the
//! Podman socket in use and Podman's storage as hook mounts, and a dangling trust-file symlink.
//! A refusal is exit 125 with a message naming the input and the rule, and no container.

use crate::common;

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use nix::sys::signal::Signal;
use serde_json::json;

use common::launch::{
    Background, approve_hooks, assert_clean, launch_args, now_secs, paths, respond_hook, run_agent, stderr,
    stdout,
};
use common::{TestEnv, api, each_mode, run_command, show};

/// The label put on this test's launches that must never create a container.
fn refused_label(env: &TestEnv) -> String {
    format!("io.ags.test.refused={}", env.id())
}

/// A launch carrying [`refused_label`] with `extra` arguments, run to completion.
fn attempt(env: &TestEnv, extra: &[&str], cmd: &[&str]) -> Output {
    let label = refused_label(env);
    let mut all = vec!["--tty=false", "--label", &label];
    all.extend_from_slice(extra);
    env.run(launch_args(env, &all, cmd))
}

/// Assert that no container carrying [`refused_label`] was created since `since`: from the
/// service's events; when the events API answers with an error document instead (Podman 4.3's
/// file events backend can be left with a torn line by concurrent writers, and then every events
/// query fails), loudly fall back to the container list.
fn assert_no_container(env: &TestEnv, since: u64, context: &str) {
    let label = refused_label(env);
    let filters = api::encode(&json!({"label": [label], "type": ["container"]}).to_string());
    let path = format!(
        "/events?stream=false&since={since}&until={}&filters={filters}",
        now_secs() + 1
    );
    let reply = api::call(env.mode(), "GET", &path, None);
    let events: Vec<serde_json::Value> = serde_json::Deserializer::from_slice(&reply.body)
        .into_iter::<serde_json::Value>()
        .collect::<Result<_, _>>()
        .unwrap_or_default();
    let broken = !reply.ok()
        || events
            .iter()
            .any(|e| e.get("cause").is_some() && e.get("Action").is_none());
    if broken {
        eprintln!(
            "WARNING: {}: the events API is unusable ({}); checking the container list instead",
            env.mode(),
            reply.text().trim()
        );
        let left = api::containers_with_label(env.mode(), &label);
        assert!(left.is_empty(), "containers exist: {left:?}\n{context}");
        return;
    }
    assert!(events.is_empty(), "container events: {events:?}\n{context}");
}

/// Exit 125, every needle in stderr, and no container created since `since`.
fn assert_refused(env: &TestEnv, out: &Output, needles: &[&str], since: u64) {
    assert_eq!(out.status.code(), Some(125), "{}", show(out));
    let err = stderr(out);
    for needle in needles {
        assert!(err.contains(needle), "missing {needle:?}\n{}", show(out));
    }
    assert_no_container(env, since, &show(out));
}

/// A symlink made by the test process, owned by the mode's user.
fn plant(env: &TestEnv, target: &Path, link: &Path) {
    symlink(target, link).unwrap_or_else(|e| panic!("ln -s {} {}: {e}", target.display(), link.display()));
    env.give_tree(link);
}

/// A global config whose one hook answers a mount of `source` at `destination`.
fn mount_hook(env: &TestEnv, name: &str, source: &Path, destination: &str, mode: &str) {
    let response = json!({"version": 1, "mounts": [
        {"source": source, "destination": destination, "mode": mode}
    ]});
    env.write_global_config(&respond_hook(env, name, &response, None));
    approve_hooks(env);
}

#[test]
fn a_symlink_planted_by_a_previous_launch_does_not_reach_the_host() {
    each_mode(|env| {
        let target = env.mkdir("home/.local/bin", 0o755);
        env.mkdir("work/data", 0o755);
        env.mkdir("shared/data", 0o755);
        let shared = env.root().join("shared");
        // Launch 1: the agent replaces `data` in its workdir and in its --add-dir by symlinks to
        // a host directory it was never given.
        let script = format!(
            "rm -rf data {s}/data && ln -s {t} data && ln -s {t} {s}/data && echo planted",
            t = target.display(),
            s = shared.display()
        );
        let shared_arg = shared.to_string_lossy().into_owned();
        let out = run_agent(env, &["--add-dir", &shared_arg], &["sh", "-c", &script]);
        assert_eq!(stdout(&out), "planted\n", "{}", show(&out));

        // Launch 2: a hook mounts the workdir's `data` read-write; the agent would drop a trojan.
        let trojan = "echo trojan > /workspace/data/op";
        let since = now_secs();
        mount_hook(env, "data", &env.work_dir().join("data"), "/workspace/data", "rw");
        let out = attempt(env, &[], &["sh", "-c", trojan]);
        let link = format!("passes through the symlink {}/data", env.work_dir().display());
        assert_refused(
            env,
            &out,
            &[&link, "which lies inside this launch's workdir"],
            since,
        );

        // Launch 3: a hook mounts `data` of a directory a previous launch had read-write.
        mount_hook(env, "shared", &shared.join("data"), "/workspace/data", "rw");
        let out = attempt(env, &[], &["sh", "-c", trojan]);
        let link = format!("passes through the symlink {}/data", shared.display());
        assert_refused(
            env,
            &out,
            &[&link, "may only pass through root-owned symlinks"],
            since,
        );
        assert!(!target.join("op").exists(), "the trojan reached the host");
        assert_clean(env);
    });
}

#[test]
fn a_sibling_swapping_a_source_for_a_symlink_never_gets_the_protected_dir_mounted() {
    each_mode(|env| {
        let shared = env.mkdir("shared", 0o755);
        env.mkdir("shared/data", 0o755);
        env.write_file("shared/data/honest.txt", "honest\n", 0o644);
        mount_hook(env, "data", &shared.join("data"), "/workspace/data", "ro");
        let store = paths(env).hook_trust_dir();
        assert!(store.is_dir(), "approving created the store");
        // The sibling: another launch on the same workspace, without the hook, with `shared`
        // read-write, swapping `data` and a symlink to the approval store as fast as it can.
        let empty = env.write_file("sibling.toml", "", 0o644);
        let script = format!(
            "cd {s} && ln -s {p} link && echo swapping && \
             while :; do mv data tmp; mv link data; mv data link; mv tmp data; done",
            s = shared.display(),
            p = store.display()
        );
        let empty = empty.to_string_lossy().into_owned();
        let shared_arg = shared.to_string_lossy().into_owned();
        let extra = ["--tty=false", "--config", &empty, "--add-dir", &shared_arg];
        let sibling = Background::spawn(env, &launch_args(env, &extra, &["sh", "-c", &script]));
        sibling.expect_stdout("swapping", Duration::from_secs(60));

        let since = now_secs();
        let show_store = "ls -a /workspace/data";
        let accepted = [
            "lies inside running ags container",
            "passes through the symlink",
            "does not exist",
        ];
        for _ in 0..8 {
            let out = attempt(env, &[], &["sh", "-c", show_store]);
            assert_eq!(out.status.code(), Some(125), "{}", show(&out));
            let err = stderr(&out);
            assert!(accepted.iter().any(|a| err.contains(a)), "{}", show(&out));
            assert!(!stdout(&out).contains(".json"), "{}", show(&out));
        }
        assert_no_container(env, since, "after the race");
        sibling.signal(Signal::SIGTERM);
        let _ = sibling.wait();
        assert_clean(env);
    });
}

/// Run `ags` (a refused launch) with cwd `dir` and the shell's `PWD` set to it.
fn attempt_in(env: &TestEnv, dir: &Path, extra: &[&str]) -> Output {
    let label = refused_label(env);
    let mut all = vec!["--tty=false", "--label", &label];
    all.extend_from_slice(extra);
    let mut cmd = env.cmd(launch_args(env, &all, &["pwd"]));
    cmd.current_dir(dir).env("PWD", dir);
    run_command(cmd, None, common::RUN_TIMEOUT)
}

#[test]
fn home_root_system_and_credential_directories_are_refused_as_workdir_or_add_dir() {
    each_mode(|env| {
        let since = now_secs();
        let home = env.home();
        let ssh = env.mkdir("home/.ssh", 0o700);
        let remedy = "run ags from a project directory";
        let out = attempt_in(env, &home, &[]);
        let named = format!("workdir {}", home.display());
        assert_refused(env, &out, &[&named, remedy], since);
        let out = attempt_in(env, Path::new("/"), &[]);
        assert_refused(env, &out, &["workdir / overlaps the", remedy], since);
        let out = attempt_in(env, Path::new("/usr/share"), &[]);
        assert_refused(
            env,
            &out,
            &[
                "overlaps the system directory /usr: its real path /usr/share is inside that location",
                remedy,
            ],
            since,
        );
        let out = attempt_in(env, &ssh, &[]);
        assert_refused(env, &out, &["overlaps the credential directory", remedy], since);
        let ssh_arg = ssh.to_string_lossy().into_owned();
        let out = attempt(env, &["--add-dir", &ssh_arg], &["true"]);
        let named = format!(
            "--add-dir {ssh_arg} overlaps the credential directory {ssh_arg}: its real path {ssh_arg} is that location"
        );
        assert_refused(
            env,
            &out,
            &[&named, "pass a project directory to --add-dir"],
            since,
        );
        let out = attempt(env, &["--add-dir", "/"], &["true"]);
        assert_refused(env, &out, &["--add-dir / overlaps the"], since);
        assert_clean(env);
    });
}

/// The credential stores beyond keys and cloud logins: the GitHub and 1Password CLIs' logins, the
/// `pass` store, and the token files git, curl and the package registries read. The attack: the
/// agent plants `packages` → `~/.config/gh` and the user launches there (the old list mounted the
/// GitHub token read-write); a user's `--add-dir ~/.cargo` would expose the registry token.
#[test]
fn credential_logins_and_token_files_are_refused_too() {
    each_mode(|env| {
        let since = now_secs();
        let gh = env.mkdir("home/.config/gh", 0o700);
        let packages = env.work_dir().join("packages");
        plant(env, &gh, &packages);
        let out = attempt_in(env, &packages, &[]);
        let real = format!(
            "workdir {} overlaps the credential directory {s}: its real path {s} is that location",
            packages.display(),
            s = gh.display()
        );
        assert_refused(env, &out, &[&real], since);
        for dir in ["home/.password-store", "home/.config/op"] {
            let d = env.mkdir(dir, 0o700).to_string_lossy().into_owned();
            let out = attempt(env, &["--add-dir", &d], &["true"]);
            let named = format!("--add-dir {d} overlaps the credential directory {d}");
            assert_refused(env, &out, &[&named], since);
        }
        let cargo = env.mkdir("home/.cargo", 0o755);
        let token = cargo.join("credentials.toml");
        let arg = cargo.to_string_lossy().into_owned();
        let out = attempt(env, &["--add-dir", &arg], &["true"]);
        let named = format!(
            "--add-dir {arg} overlaps the credential file {t}: its real path {arg} contains that location",
            t = token.display()
        );
        assert_refused(env, &out, &[&named], since);
        assert_clean(env);
    });
}

#[test]
fn a_workdir_through_a_symlink_is_checked_at_its_target_and_reported() {
    each_mode(|env| {
        let since = now_secs();
        let ssh = env.mkdir("home/.ssh", 0o700);
        let packages = env.work_dir().join("packages");
        plant(env, &ssh, &packages);
        let out = attempt_in(env, &packages, &[]);
        let real = format!(
            "workdir {} overlaps the credential directory {s}: its real path {s} is that location",
            packages.display(),
            s = ssh.display()
        );
        assert_refused(env, &out, &[&real], since);

        // An honest symlinked project still works; the user is told what is mounted.
        let elsewhere = env.mkdir("elsewhere", 0o755);
        let link = env.work_dir().join("link");
        plant(env, &elsewhere, &link);
        let mut cmd = env.cmd(launch_args(env, &["--tty=false"], &["pwd"]));
        cmd.current_dir(&link).env("PWD", &link);
        let out = run_command(cmd, None, common::RUN_TIMEOUT);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert_eq!(
            stdout(&out),
            format!("{}\n", elsewhere.display()),
            "{}",
            show(&out)
        );
        let note = format!(
            "ags: note: workdir {} is reached through the symlink {} -> {}; the container gets the real directory {}",
            link.display(),
            link.display(),
            elsewhere.display(),
            elsewhere.display()
        );
        assert!(stderr(&out).contains(&note), "{}", show(&out));

        // An --add-dir through a symlink planted in the workdir is refused.
        let planted = env.work_dir().join("planted");
        plant(env, &elsewhere, &planted);
        let arg = planted.to_string_lossy().into_owned();
        let out = attempt(env, &["--add-dir", &arg], &["true"]);
        assert_refused(env, &out, &["which lies inside this launch's workdir"], since);
        assert_clean(env);
    });
}

#[test]
fn a_non_utf8_workdir_is_refused() {
    each_mode(|env| {
        let since = now_secs();
        let name = std::ffi::OsStr::from_bytes(b"caf\xe9");
        let dir = env.mkdir(PathBuf::from("work").join(name), 0o755);
        let out = attempt_in(env, &dir, &[]);
        assert_refused(env, &out, &["is not valid UTF-8"], since);
        assert_clean(env);
    });
}

#[test]
fn the_podman_socket_directory_in_use_and_podman_storage_are_protected() {
    each_mode(|env| {
        let dir = env.mkdir("x", 0o700);
        plant(env, &env.mode().socket(), &dir.join("podman.sock"));
        let url = format!("unix://{}/podman.sock", dir.display());
        let since = now_secs();
        mount_hook(env, "sock", &dir, "/workspace/podman", "ro");
        let out = attempt(env, &["--url", &url], &["ls", "/workspace/podman"]);
        let named = format!("overlaps the Podman API socket directory {}", dir.display());
        assert_refused(env, &out, &[&named, "the agent could control Podman"], since);

        let info = api::call(env.mode(), "GET", "/info", None).json();
        let graph_root = PathBuf::from(info["store"]["graphRoot"].as_str().expect("graphRoot"));
        mount_hook(env, "storage", &graph_root, "/workspace/storage", "ro");
        let out = attempt(env, &[], &["true"]);
        let named = format!("mount source {} of hook `storage`", graph_root.display());
        // Where the user cannot even reach the graph root (Podman 5's rootless store under
        // /var/lib/containers/rootless in the podman-in-podman image), it is refused as
        // unresolvable instead, and where that path is not on this machine at all (the
        // podman-in-podman service of scripts/test-fresh), as missing: refused either way.
        let reason = if stderr(&out).contains("cannot be resolved") {
            "Permission denied"
        } else if !graph_root.exists() {
            "does not exist"
        } else {
            "the agent could control Podman"
        };
        assert_refused(env, &out, &[&named, reason], since);
        assert_clean(env);
    });
}

#[test]
fn a_dangling_trust_file_symlink_does_not_let_a_hook_expose_its_target() {
    each_mode(|env| {
        let dotfiles = env.mkdir("dotfiles", 0o755);
        let future = dotfiles.join("ags/trusted-repo-overlays.txt");
        mount_hook(env, "dots", &dotfiles, "/workspace/dotfiles", "rw");
        plant(env, &future, &paths(env).overlay_trust_file());
        let since = now_secs();
        let script =
            "mkdir -p /workspace/dotfiles/ags && echo / > /workspace/dotfiles/ags/trusted-repo-overlays.txt";
        let out = attempt(env, &[], &["sh", "-c", script]);
        let named = format!("overlaps the repository-overlay trust file {}", future.display());
        assert_refused(env, &out, &[&named], since);
        assert!(!dotfiles.join("ags").exists(), "the agent wrote the trust file");
        assert_clean(env);
    });
}
