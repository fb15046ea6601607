//! The approval store on a `noexec` file system: the private execution copy cannot run, `ags`
//! says to check the store's mount policy (naming it), and never falls back to running the
//! original entrypoint. Performed for real: the store is a `noexec` tmpfs in a private mount
//! namespace (`unshare -m`, so the host's mounts are untouched); needs root.

mod common;

use common::launch::{approve_hooks, decl, paths};
use common::{TestEnv, show, tool};

#[test]
fn noexec_approval_store_fails_with_the_mount_hint_and_no_fallback() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: mounting a noexec tmpfs in a private mount namespace needs root");
        return;
    }
    let env = TestEnv::without_podman();
    let marker = env.root().join("ran");
    let h = env.write_file(
        "hooks/h",
        format!(
            "#!/bin/sh\ntouch {}\necho '{{\"version\":1}}'\n",
            marker.display()
        ),
        0o755,
    );
    env.write_global_config(&decl("h", &h, &[], ""));
    approve_hooks(&env);
    let store = paths(&env).hook_trust_dir();
    let stash = env.mkdir("stash", 0o700);
    // Move the approvals onto a noexec tmpfs mounted over the store, then run `ags plan`.
    let script = r#"set -e
cp -a "$1/." "$2/"
mount -t tmpfs -o noexec,nosuid,nodev,mode=0700 ags-noexec "$1"
cp -a "$2/." "$1/"
exec "$3" plan"#;
    let out = env
        .command(
            tool("unshare"),
            [
                "-m",
                "--propagation",
                "private",
                "sh",
                "-c",
                script,
                "sh",
                store.to_str().unwrap(),
                stash.to_str().unwrap(),
                common::ags_bin().to_str().unwrap(),
            ],
        )
        .output()
        .expect("unshare runs");
    assert_eq!(out.status.code(), Some(125), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("execution was denied") && err.contains("not mounted noexec"),
        "{err}"
    );
    assert!(err.contains(store.to_str().unwrap()), "names the store: {err}");
    assert!(!marker.exists(), "the original entrypoint must never run instead");
}
