//! `ags doctor` through the binary: against each live service (required checks pass, nothing is
//! left behind), without a service (explains how to start one), with loose permissions on the
//! approval store and the overlay trust file, and with a missing image.
//!
//! Doctor runs are serialised: the leftover check looks for every `io.ags.doctor=1` resource.

use crate::common;

use std::sync::Mutex;

use common::api::{containers_with_label, volumes_with_label};
use common::{TestEnv, each_mode, show};

static DOCTOR: Mutex<()> = Mutex::new(());

/// The line of check `name` (after the five-column status).
fn line<'a>(stdout: &'a str, name: &str) -> &'a str {
    stdout
        .lines()
        .find(|l| l.get(5..).is_some_and(|rest| rest.starts_with(name)))
        .unwrap_or_else(|| panic!("no {name} line in:\n{stdout}"))
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn required_checks_pass_against_the_service() {
    let _one = DOCTOR.lock().unwrap_or_else(|e| e.into_inner());
    each_mode(|env| {
        env.write_global_config(&format!("[sandbox]\nimage = \"{}\"\n", env.image()));
        let out = env.run(["doctor"]);
        let text = stdout(&out);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        for name in [
            "config",
            "socket",
            "podman",
            "image",
            "runtime",
            "tmpfs volume",
            "approval store",
        ] {
            assert!(line(&text, name).starts_with("ok "), "{text}");
        }
        let kind = if env.mode() == common::Mode::Rootless {
            "rootless"
        } else {
            "rootful"
        };
        let socket = line(&text, "socket");
        assert!(
            socket.contains(&format!(
                "{} (from CONTAINER_HOST) answers: a {kind} service",
                env.url()
            )),
            "{socket}"
        );
        assert!(line(&text, "runtime").contains(&format!("ran `true` in {}", env.image())));
        // Whether the launch's memory, CPU and process limits apply: not for a rootless service
        // on cgroup v1 (Podman drops them), which is a warning.
        let v1 = common::launch::fs_type("/sys/fs/cgroup".as_ref()) != "cgroup2fs";
        let limits = line(&text, "limits");
        match (env.mode(), v1) {
            (common::Mode::Rootless, true) => assert!(
                limits.starts_with("warn") && limits.contains("rootless service on cgroup v1"),
                "{limits}"
            ),
            _ => assert!(limits.starts_with("ok "), "{limits}"),
        }

        // The upstream security fixes the service lacks: each named by its CVE (Podman 4.3.1,
        // 5.4.2 and 5.8.6 all lack some; docs/doctor.md).
        let fixes = line(&text, "fixes");
        assert!(fixes.starts_with("ok ") || fixes.starts_with("warn"), "{fixes}");
        assert!(fixes.starts_with("ok ") || fixes.contains("CVE-"), "{fixes}");
        let major = common::api::podman_major(env.mode());
        if env.mode() == common::Mode::Rootless && major >= 5 {
            // Podman 5's rootless default is pasta; the pinp images keep it.
            let network = line(&text, "network");
            assert!(
                network.starts_with("ok ") && network.contains("pasta"),
                "{network}"
            );
        }

        let json = env.run(["doctor", "--json"]);
        let report: serde_json::Value = serde_json::from_slice(&json.stdout).expect("doctor --json");
        assert_eq!(report["ok"], true, "{report:#}");
        assert!(
            report["checks"]
                .as_array()
                .unwrap()
                .iter()
                .all(|c| c["status"] != "fail")
        );

        let mode = env.mode();
        let left = (
            containers_with_label(mode, "io.ags.doctor=1"),
            volumes_with_label(mode, "io.ags.doctor=1"),
        );
        assert_eq!(left, (vec![], vec![]), "{mode}: doctor left resources behind");
    });
}

#[test]
fn without_a_service_doctor_explains_how_to_start_one() {
    let env = TestEnv::without_podman();
    let out = env.run(["doctor", "--url", "unix:///nonexistent.sock"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let socket = line(&text, "socket");
    assert!(socket.starts_with("FAIL "), "{text}");
    assert!(
        socket.contains("unix:///nonexistent.sock (from --url): the socket does not exist"),
        "{socket}"
    );
    assert!(
        socket.contains(" — fix: ") && socket.contains("podman system service --time=0"),
        "{socket}"
    );
    assert!(line(&text, "runtime").starts_with("skip "), "{text}");
    // Podman 6 does not start on a cgroup v1 host: the fix says so there.
    let v1 = common::launch::fs_type("/sys/fs/cgroup".as_ref()) != "cgroup2fs";
    assert_eq!(socket.contains("Podman 6 and later do not start"), v1, "{socket}");

    // CONTAINER_HOST names a missing socket in this environment.
    let out = env.run(["doctor"]);
    assert!(line(&stdout(&out), "socket").contains("(from CONTAINER_HOST): the socket does not exist"));
}

#[test]
fn loose_approval_store_and_trust_file_fail_with_their_fix() {
    let env = TestEnv::without_podman();
    let store = env.mkdir(env.state_home().join("ags-hook-trust"), 0o755);
    let trust = env.write_file(
        env.config_home().join("ags/trusted-repo-overlays.txt"),
        "/nowhere\n",
        0o666,
    );
    let out = env.run(["doctor"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let l = line(&text, "approval store");
    assert!(
        l.starts_with("FAIL ") && l.contains(&format!("`chmod 700 {}`", store.display())),
        "{l}"
    );
    let l = line(&text, "overlay trust");
    assert!(
        l.starts_with("FAIL ") && l.contains(&format!("`chmod 600 {}`", trust.display())),
        "{l}"
    );
}

#[test]
fn missing_image_fails_and_skips_the_runtime_check() {
    let _one = DOCTOR.lock().unwrap_or_else(|e| e.into_inner());
    each_mode(|env| {
        let image = env.unique_name("no-such-image");
        env.write_global_config(&format!("[sandbox]\nimage = \"localhost/{image}:latest\"\n"));
        let out = env.run(["doctor"]);
        let text = stdout(&out);
        assert_eq!(out.status.code(), Some(1), "{}", show(&out));
        let l = line(&text, "image");
        assert!(
            l.starts_with("FAIL ") && l.contains("is not present — fix: build or import"),
            "{l}"
        );
        assert!(line(&text, "runtime").starts_with("skip "), "{text}");
        assert!(line(&text, "tmpfs volume").starts_with("ok "), "{text}");
    });
}
