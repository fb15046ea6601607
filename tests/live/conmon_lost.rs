//! Podman 5.4 sometimes loses a container's monitor while it prepares the container: the attach
//! (which initialises it) fails with "container create failed (no logs from conmon): conmon
//! bytes "": readObjectStart…" (an upstream flake, containers/podman#10927; seen in this
//! project's runs under load). Nothing ran then, so `ags` repeats the step. The fault is made
//! real: a Podman service of the mode's user, on the same storage as the user's own service,
//! whose `--conmon` is a wrapper that behaves like the lost monitor (exits without a word) when
//! armed and runs the real conmon otherwise. A launch through it succeeds with the agent's exit
//! code; a monitor that is lost every time fails the launch (125, the message kept) after a few
//! tries and leaves no container behind.

use crate::common;

use std::fs;
use std::path::PathBuf;
use std::process::Child;
use std::time::Duration;

use common::launch::{stderr, stdout, wait_until};
use common::{TestEnv, api, each_mode, show, tool};

/// `conmon`: with `armed` present, remove it, count the failure in `lost` and exit like the lost
/// monitor (after Podman wrote its configuration, before the status it waits for; exiting at
/// once gives "write child: broken pipe" instead); with `always` present, every time.
const WRAPPER: &str = r#"#!/bin/sh
dir=$(dirname "$0")
case " $* " in *" --version "*) exec conmon "$@" ;; esac
if [ -e "$dir/always" ] || rm "$dir/armed" 2>/dev/null; then
    echo lost >>"$dir/lost"
    sleep 0.5
    exit 0
fi
exec conmon "$@"
"#;

/// The OCI runtime (`runc`): with `armed` present (or `always`), a `create` fails as runc's
/// init does when it dies before its preliminary setup under load (seen on 5.4.2 and 4.3.1).
const RUNTIME_WRAPPER: &str = r#"#!/bin/sh
dir=$(dirname "$0")
case " $* " in *" create "*)
    if [ -e "$dir/always" ] || rm "$dir/armed" 2>/dev/null; then
        echo lost >>"$dir/lost"
        echo "runc create failed: unable to start container process: waiting for init preliminary setup: read init-p: connection reset by peer" >&2
        exit 1
    fi
esac
exec runc "$@"
"#;

/// The faulty service: stopped (SIGTERM, then waited for) on drop.
struct FaultyService {
    child: Child,
    dir: PathBuf,
}

impl FaultyService {
    fn start(env: &TestEnv) -> FaultyService {
        Self::wrapping(env, "conmon", WRAPPER)
    }

    /// A service whose `--conmon` or `--runtime` (`what`) is the `wrapper` script.
    fn wrapping(env: &TestEnv, what: &str, wrapper: &str) -> FaultyService {
        let dir = env.mkdir(format!("faulty-{what}"), 0o700);
        let wrapper = env.write_file(format!("faulty-{what}/{what}"), wrapper, 0o755);
        let socket = dir.join("podman.sock");
        let user = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(env.uid()))
            .unwrap()
            .expect("the mode's user");
        let args = [
            format!("--{}", if what == "conmon" { "conmon" } else { "runtime" }),
            wrapper.display().to_string(),
            "system".into(),
            "service".into(),
            "--time=0".into(),
            format!("unix://{}", socket.display()),
        ];
        let mut cmd = env.command(tool("podman"), args);
        // The user's own storage configuration, as their service has it.
        cmd.env("HOME", &user.dir)
            .env_remove("CONTAINER_HOST") // else the podman CLI is a remote client
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_CACHE_HOME")
            .env_remove("XDG_STATE_HOME");
        if env.mode() == common::Mode::Rootless {
            cmd.env("XDG_RUNTIME_DIR", format!("/run/user/{}", env.uid()));
        }
        let child = cmd.spawn().expect("podman system service starts");
        let service = FaultyService { child, dir };
        let up = wait_until(Duration::from_secs(60), || api::ping(&socket).is_ok());
        assert!(up, "{}: the faulty service did not answer", env.mode());
        service
    }

    fn url(&self) -> String {
        format!("unix://{}", self.dir.join("podman.sock").display())
    }

    fn lost(&self) -> usize {
        fs::read_to_string(self.dir.join("lost")).map_or(0, |s| s.lines().count())
    }

    fn touch(&self, name: &str) {
        fs::write(self.dir.join(name), b"").unwrap();
    }
}

impl Drop for FaultyService {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let _ = self.child.wait();
    }
}

fn launch(env: &TestEnv, service: &FaultyService) -> std::process::Output {
    let url = service.url();
    let image = env.image();
    let label = env.label();
    let args = [
        "--url",
        &url,
        "--image",
        &image,
        "--label",
        &label,
        "--network",
        "none",
        "--tty=false",
        "--agent",
        "shell",
        "--",
        "sh",
        "-c",
        "echo ran; exit 7",
    ];
    env.run(args)
}

#[test]
fn a_lost_monitor_is_retried_and_one_lost_every_time_fails_cleanly() {
    each_mode(|env| {
        let service = FaultyService::start(env);
        service.touch("armed");
        let out = launch(env, &service);
        assert_eq!(out.status.code(), Some(7), "{}: {}", env.mode(), show(&out));
        assert!(stdout(&out).contains("ran"), "{}", show(&out));
        assert_eq!(service.lost(), 1, "{}: the fault was not injected", env.mode());

        service.touch("always");
        let out = launch(env, &service);
        assert_eq!(out.status.code(), Some(125), "{}: {}", env.mode(), show(&out));
        assert!(stderr(&out).contains("no logs from conmon"), "{}", show(&out));
        assert!(!stdout(&out).contains("ran"), "{}", show(&out));
        assert_eq!(service.lost(), 1 + 3, "{}: one try and two more", env.mode());
        let left = api::containers_with_label(env.mode(), &env.label());
        assert!(left.is_empty(), "{}: left {left:?}", env.mode());
    });
}

#[test]
fn a_runtime_whose_init_dies_early_is_retried() {
    each_mode(|env| {
        let service = FaultyService::wrapping(env, "runc", RUNTIME_WRAPPER);
        service.touch("armed");
        let out = launch(env, &service);
        assert_eq!(out.status.code(), Some(7), "{}: {}", env.mode(), show(&out));
        assert!(stdout(&out).contains("ran"), "{}", show(&out));
        assert_eq!(service.lost(), 1, "{}: the fault was not injected", env.mode());
        service.touch("always");
        let out = launch(env, &service);
        assert_eq!(out.status.code(), Some(125), "{}: {}", env.mode(), show(&out));
        assert!(stderr(&out).contains("read init-p"), "{}", show(&out));
        let left = api::containers_with_label(env.mode(), &env.label());
        assert!(left.is_empty(), "{}: left {left:?}", env.mode());
    });
}
