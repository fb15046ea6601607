//! Issue 16 item 2, the remote half of issue 10 hole 9: hook-generated files on a remote Podman
//! service (`tcp://` and `ssh://`). The services under test are reached over TCP (a byte relay
//! to the service's socket) and over SSH (a real sshd, [`common::sshd`]), so `ags` treats them
//! as remote: nothing of this machine can be bind-mounted.
//!
//! - Podman 5 (the podman-in-podman service of scripts/test-podman5): the files are readable at
//!   their destinations, read-only, on tmpfs; their content is not in inspect output, not in
//!   Podman's storage (`AGS_TEST_SERVICE_ROOT` is where the service's file system is seen from
//!   here), and nothing is left (no keeper container, no volume).
//! - Podman 4 (the host's 4.3): the launch is refused with an error that says why and what to do,
//!   and nothing is created.
//! - Either version: a workdir that does not exist on the service's machine is refused before
//!   anything is created, and a missing `--add-dir` with a clear error and nothing left (the
//!   directories exist only in `ags`'s own mount namespace).

use crate::common;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use common::launch::{
    Background, approve_hooks, assert_clean, decl, files_containing, fs_type, launch_args, stderr, stdout,
    the_container, wait_until,
};
use common::sshd::Sshd;
use common::{Mode, TestEnv, api, each_mode, show, tool};

/// A TCP relay to a unix socket: the service, reached as a `tcp://` (remote) one.
fn tcp_relay_to(socket: PathBuf) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind relay");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(tcp) = conn else { continue };
            let Ok(unix) = std::os::unix::net::UnixStream::connect(&socket) else {
                continue;
            };
            let (mut t2, mut u2) = (tcp.try_clone().expect("clone"), unix.try_clone().expect("clone"));
            let (mut tcp, mut unix) = (tcp, unix);
            std::thread::spawn(move || std::io::copy(&mut t2, &mut u2));
            std::thread::spawn(move || std::io::copy(&mut unix, &mut tcp));
        }
    });
    port
}

/// The service's storage (graph root, run root, volume path), as seen from here: under
/// `AGS_TEST_SERVICE_ROOT` (the pinp container's root, `/proc/PID/root`) when it is set.
fn service_storage_dirs(env: &TestEnv) -> Vec<PathBuf> {
    let root = PathBuf::from(std::env::var("AGS_TEST_SERVICE_ROOT").unwrap_or_else(|_| "/".into()));
    let info = api::call(env.mode(), "GET", "/info", None).json();
    ["graphRoot", "runRoot", "volumePath"]
        .iter()
        .filter_map(|k| info["store"][k].as_str())
        .map(|p| root.join(p.trim_start_matches('/')))
        .filter(|p| p.exists())
        .collect()
}

/// The ways to reach the mode's service as a remote one: `(transport, ags arguments, sshd)`.
fn transports(env: &TestEnv) -> Vec<(&'static str, Vec<String>, Option<Sshd>)> {
    let port = tcp_relay_to(env.mode().socket());
    let mut out = vec![(
        "tcp",
        vec!["--url".into(), format!("tcp://127.0.0.1:{port}")],
        None,
    )];
    if let Some(sshd) = Sshd::start(env.id(), env.account()) {
        let url = sshd.url(&env.account().name, &env.mode().socket());
        let args = vec![
            "--url".into(),
            url,
            "--identity".into(),
            sshd.key().display().to_string(),
        ];
        out.push(("ssh", args, Some(sshd)));
    }
    out
}

/// `ags args…` in `env`, with the sshd's client wrapper first on `PATH` when there is one.
fn spawn(env: &TestEnv, sshd: Option<&Sshd>, args: &[String]) -> Background {
    let mut cmd = env.cmd(args);
    cmd.env_remove("CONTAINER_HOST");
    if let Some(sshd) = sshd {
        cmd.env("PATH", sshd.path());
    }
    Background::spawn_cmd(cmd)
}

/// A prepare hook generating two files whose content holds `sentinel` (assembled at run time,
/// so that no file of the test holds it).
fn generating_hook(env: &TestEnv, word: &str) {
    let hook = env.write_file(
        "hooks/gen",
        format!(
            "#!/bin/sh\ncat >/dev/null\nA=GENFILE\nprintf '{{\"version\":1,\"files\":[\
             {{\"destination\":\"/home/dev/generated.txt\",\"content\":\"%s-{word}-one\\\\n\"}},\
             {{\"destination\":\"/home/dev/sub/second.txt\",\"content\":\"%s-{word}-two\\\\n\"}}]}}' \"$A\" \"$A\"\n"
        ),
        0o755,
    );
    env.write_global_config(&decl("gen", &hook, &[], ""));
    approve_hooks(env);
}

/// The agent: hashes of both files, whether the first can be written or removed, its mount's
/// file system type and options, and the staged env value; then waits for `work/go`.
const AGENT: &str = "f=/home/dev/generated.txt; \
    echo \"SHA $(sha256sum $f | cut -c1-16) $(sha256sum /home/dev/sub/second.txt | cut -c1-16)\"; \
    if (echo x >>$f) 2>/dev/null; then echo WRITE yes; else echo WRITE no; fi; \
    if rm -f $f 2>/dev/null; then echo REMOVE yes; else echo REMOVE no; fi; \
    m=$(grep \" $f \" /proc/self/mountinfo); fs=${m##* - }; o=$(echo \"$m\" | cut -d' ' -f6); \
    echo \"MOUNT ${fs%% *} ${o%%,*}\"; \
    echo \"ENV $STAGED\"; echo READY; while [ ! -e go ]; do sleep 0.1; done";

fn sha16(text: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(text))[..16].to_string()
}

#[test]
fn generated_files_reach_a_remote_podman_5_in_ram_and_read_only() {
    each_mode(|env| {
        if api::podman_major(env.mode()) < 5 {
            return; // the_refusal_on_podman_4 covers it
        }
        let word = env.id().replace(['-', '.', '_'], "");
        let sentinel = format!("GENFILE-{word}");
        generating_hook(env, &word);
        for (transport, url_args, sshd) in transports(env) {
            let marker = env.write_file(format!("marker-{transport}"), "", 0o644);
            std::thread::sleep(Duration::from_millis(20)); // ctime granularity
            let _ = std::fs::remove_file(env.work_dir().join("go"));
            let mut args = url_args.clone();
            args.extend(launch_args(
                env,
                &["--tty=false", "-e", "STAGED=remote-env"],
                &["sh", "-c", AGENT],
            ));
            let bg = spawn(env, sshd.as_ref(), &args);
            bg.expect_stdout("READY", Duration::from_secs(120));

            // The keeper is removed while the agent starts; then the agent's container is the
            // only one, and its inspect and the volume's do not hold the content.
            let one = wait_until(Duration::from_secs(60), || {
                api::containers_with_label(env.mode(), &env.label()).len() == 1
            });
            assert!(one, "{transport}: the keeper is still there");
            let (id, _) = the_container(env);
            let inspect = api::call(env.mode(), "GET", &format!("/containers/{id}/json"), None);
            assert!(inspect.ok(), "{}", inspect.text());
            assert!(
                !inspect.text().contains(&sentinel),
                "{transport}: {}",
                inspect.text()
            );
            let volumes = api::volumes_with_label(env.mode(), &env.label());
            assert_eq!(volumes.len(), 1, "{transport}: one staging volume: {volumes:?}");
            let vol = api::call(env.mode(), "GET", &format!("/volumes/{}/json", volumes[0]), None);
            assert!(!vol.text().contains(&sentinel), "{}", vol.text());
            // While the agent runs the content is only in the staging volume's tmpfs.
            let dirs = service_storage_dirs(env);
            assert!(!dirs.is_empty(), "{}: no storage directory found", env.mode());
            let during = files_containing(&dirs, &[&sentinel], Some(&marker));
            println!(
                "{} over {transport}: files with the content during the launch: {during:?}",
                env.mode()
            );
            // The search does look where the content is: a rootful service mounts the volume's
            // tmpfs in its own mount namespace, which is seen from here (a rootless service's is
            // its user namespace's own).
            if env.mode() == Mode::Rootful {
                assert!(
                    !during.is_empty(),
                    "{transport}: the search did not find the staging volume"
                );
            }
            for hit in during {
                let in_volume = hit.to_string_lossy().contains(&format!("/{}/_data/", volumes[0]));
                assert!(
                    in_volume && fs_type(&hit) == "tmpfs",
                    "{} over {transport}: generated content in {} ({})",
                    env.mode(),
                    hit.display(),
                    fs_type(&hit)
                );
            }

            env.write_file("work/go", "", 0o644);
            let out = bg.wait();
            assert_eq!(out.status.code(), Some(0), "{transport}: {}", show(&out));
            let text = stdout(&out);
            let want = [
                format!(
                    "SHA {} {}",
                    sha16(&format!("{sentinel}-one\n")),
                    sha16(&format!("{sentinel}-two\n"))
                ),
                "WRITE no".into(),
                "REMOVE no".into(),
                "MOUNT tmpfs ro".into(),
                "ENV remote-env".into(),
                "READY".into(),
            ];
            println!("{} over {transport}: {text}", env.mode());
            let got: Vec<&str> = text.lines().collect();
            assert_eq!(got, want, "{} over {transport}: {}", env.mode(), show(&out));
            assert!(!stderr(&out).contains(&sentinel), "{}", show(&out));
            let hits = files_containing(&dirs, &[&sentinel], Some(&marker));
            assert!(
                hits.is_empty(),
                "{transport}: content left in the storage: {hits:?}"
            );
            let hits = files_containing(&[env.root().to_path_buf(), env.runtime_dir()], &[&sentinel], None);
            assert!(hits.is_empty(), "{transport}: content on this machine: {hits:?}");
            assert_clean(env);

            // A launch that fails after the keeper exists (the agent's command is missing:
            // the agent's container fails to initialise) leaves nothing either.
            let mut args = url_args.clone();
            args.extend(launch_args(env, &["--tty=false"], &["/nonexistent-agent"]));
            let out = spawn(env, sshd.as_ref(), &args).wait();
            assert_eq!(out.status.code(), Some(127), "{transport}: {}", show(&out));
            assert_clean(env);
        }
    });
}

#[test]
fn the_refusal_on_podman_4() {
    each_mode(|env| {
        if api::podman_major(env.mode()) >= 5 {
            return;
        }
        generating_hook(env, "v4");
        for (transport, url_args, sshd) in transports(env) {
            let mut args = url_args.clone();
            args.extend(launch_args(env, &["--tty=false"], &["true"]));
            let out: Output = spawn(env, sshd.as_ref(), &args).wait();
            assert_eq!(out.status.code(), Some(125), "{transport}: {}", show(&out));
            let err = stderr(&out);
            for needle in [
                "hook-generated files reach a remote Podman service",
                "needs Podman 5 or later",
                "is Podman 4.",
                "upgrade Podman on that machine",
                "nothing was created",
            ] {
                assert!(
                    err.contains(needle),
                    "{transport}: {needle:?} missing: {}",
                    show(&out)
                );
            }
            assert_clean(env);
        }
    });
}

#[test]
fn paths_missing_on_the_service_machine_are_refused_and_nothing_is_left() {
    each_mode(|env| {
        // The directory exists only in ags's own mount namespace: unshare needs root.
        if env.mode() != Mode::Rootful {
            return;
        }
        let only_here = env.mkdir("only-here", 0o755);
        let workdir = only_here.join("proj");
        for (transport, url_args, sshd) in transports(env) {
            let script = format!(
                "mount -t tmpfs -o mode=0755 tmpfs {0} && mkdir {0}/proj && exec \"$@\"",
                only_here.display()
            );
            let mut args: Vec<String> = ["--mount", "--propagation", "private", "--", "sh", "-c"]
                .map(String::from)
                .to_vec();
            args.extend([script, "sh".into(), common::ags_bin().display().to_string()]);
            args.extend(url_args.clone());
            args.extend(["--workdir".into(), workdir.display().to_string()]);
            args.extend(launch_args(env, &["--tty=false"], &["true"]));
            let mut cmd = env.command(tool("unshare"), &args);
            cmd.env_remove("CONTAINER_HOST");
            if let Some(sshd) = &sshd {
                cmd.env("PATH", sshd.path());
            }
            let out = common::run_command(cmd, None, common::RUN_TIMEOUT);
            assert_eq!(out.status.code(), Some(125), "{transport}: {}", show(&out));
            let err = stderr(&out);
            let want = format!(
                "workdir {}: no such directory on the machine of the Podman service",
                workdir.display()
            );
            assert!(err.contains(&want), "{transport}: {}", show(&out));
            assert!(err.contains("nothing was created"), "{}", show(&out));
            assert!(Path::new(&only_here).read_dir().unwrap().next().is_none());
            assert_clean(env);

            // The workdir exists there, an --add-dir does not: the agent's create is refused
            // with the path named, and the launch's staging volume is removed.
            let extra = only_here.join("extra");
            let script = format!(
                "mount -t tmpfs -o mode=0755 tmpfs {0} && mkdir {0}/extra && exec \"$@\"",
                only_here.display()
            );
            let mut args: Vec<String> = ["--mount", "--propagation", "private", "--", "sh", "-c"]
                .map(String::from)
                .to_vec();
            args.extend([script, "sh".into(), common::ags_bin().display().to_string()]);
            args.extend(url_args.clone());
            args.extend(["--add-dir".into(), extra.display().to_string()]);
            args.extend(launch_args(env, &["--tty=false", "-e", "STAGED=1"], &["true"]));
            let mut cmd = env.command(tool("unshare"), &args);
            cmd.env_remove("CONTAINER_HOST");
            if let Some(sshd) = &sshd {
                cmd.env("PATH", sshd.path());
            }
            let out = common::run_command(cmd, None, common::RUN_TIMEOUT);
            assert_eq!(out.status.code(), Some(125), "{transport}: {}", show(&out));
            let want = format!(
                "mount source {}: no such file or directory on the machine of the Podman service",
                extra.display()
            );
            assert!(stderr(&out).contains(&want), "{transport}: {}", show(&out));
            assert_clean(env);
        }
    });
}
