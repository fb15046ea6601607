//! `ags doctor` through the binary: against the live service (required checks pass, nothing is
//! left behind), without a service (explains how to start one), and with a loose approval
//! store and a missing image (each a FAIL line with its fix).

mod cli_support;

use std::os::unix::fs::PermissionsExt;

use cli_support::{ags, ags_pid, block_on, client, text, url};

/// A temp HOME whose config selects `image`.
fn home_with_image(image: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join(".config/ags");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.toml"),
        format!("[sandbox]\nimage = \"{image}\"\n"),
    )
    .unwrap();
    home
}

fn line<'a>(stdout: &'a str, name: &str) -> &'a str {
    stdout
        .lines()
        .find(|l| l.get(5..).is_some_and(|rest| rest.starts_with(name)))
        .unwrap_or_else(|| panic!("no {name} line in:\n{stdout}"))
}

#[test]
fn required_checks_pass_against_the_service() {
    let Some(client) = client() else { return };
    let home = home_with_image("localhost/ags-busybox:latest");
    let (pid, out) = ags_pid(home.path(), home.path(), &["doctor", "--url", &url()]);
    let (stdout, err) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{err}");
    for name in [
        "config",
        "socket",
        "podman",
        "image",
        "runtime",
        "tmpfs volume",
        "approval store",
    ] {
        assert!(line(&stdout, name).starts_with("ok "), "{stdout}");
    }
    assert!(line(&stdout, "socket").contains(&format!("{} (from --url) answers", url())));
    assert!(line(&stdout, "runtime").contains("ran `true` in localhost/ags-busybox:latest"));

    let json = ags(home.path(), home.path(), &["doctor", "--json", "--url", &url()]);
    let report: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(report["ok"], true, "{report:#}");
    let checks = report["checks"].as_array().unwrap();
    assert!(checks.iter().all(|c| c["status"] != "fail"), "{report:#}");

    // The run removed its container and volume.
    let owner = format!("io.ags.owner-pid={pid}");
    let leftovers = block_on(async {
        let c = client.list(&["io.ags.doctor=1", &owner]).await.unwrap();
        let v = client.volume_list(&["io.ags.doctor=1", &owner]).await.unwrap();
        (c.len(), v.len())
    });
    assert_eq!(leftovers, (0, 0), "doctor left resources behind");
}

#[test]
fn without_a_service_doctor_explains_how_to_start_one() {
    let home = tempfile::tempdir().unwrap();
    let out = ags(
        home.path(),
        home.path(),
        &["doctor", "--url", "unix:///nonexistent.sock"],
    );
    let (stdout, err) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{err}");
    let socket = line(&stdout, "socket");
    assert!(socket.starts_with("FAIL "), "{stdout}");
    assert!(
        socket.contains("unix:///nonexistent.sock (from --url): the socket does not exist"),
        "{socket}"
    );
    assert!(socket.contains("fix: "), "{socket}");
    assert!(socket.contains("podman system service --time=0"), "{socket}");
    assert!(line(&stdout, "runtime").starts_with("skip "), "{stdout}");
}

#[test]
fn loose_approval_store_and_trust_file_fail_with_their_fix() {
    let home = tempfile::tempdir().unwrap();
    let store = home.path().join(".local/state/ags-hook-trust");
    std::fs::create_dir_all(&store).unwrap();
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o755)).unwrap();
    let trust = home.path().join(".config/ags/trusted-repo-overlays.txt");
    std::fs::create_dir_all(trust.parent().unwrap()).unwrap();
    std::fs::write(&trust, "/nowhere\n").unwrap();
    std::fs::set_permissions(&trust, std::fs::Permissions::from_mode(0o666)).unwrap();
    let out = ags(
        home.path(),
        home.path(),
        &["doctor", "--url", "unix:///nonexistent.sock"],
    );
    let (stdout, _) = text(&out);
    assert_eq!(out.status.code(), Some(1));
    let l = line(&stdout, "approval store");
    assert!(
        l.starts_with("FAIL ") && l.contains(&format!("`chmod 700 {}`", store.display())),
        "{l}"
    );
    let l = line(&stdout, "overlay trust");
    assert!(
        l.starts_with("FAIL ") && l.contains(&format!("`chmod 600 {}`", trust.display())),
        "{l}"
    );
}

#[test]
fn missing_image_fails_and_skips_the_runtime_check() {
    if client().is_none() {
        return;
    }
    let image = "localhost/ags-test-doctor-no-such-image:latest";
    let home = home_with_image(image);
    let out = ags(home.path(), home.path(), &["doctor", "--url", &url()]);
    let (stdout, _) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let l = line(&stdout, "image");
    assert!(
        l.starts_with("FAIL ") && l.contains("is not present — fix: build or import"),
        "{l}"
    );
    assert!(line(&stdout, "runtime").starts_with("skip "), "{stdout}");
    assert!(line(&stdout, "tmpfs volume").starts_with("ok "), "{stdout}");
}
