//! Every place for execution copies on a `noexec` file system: the RAM-backed roots are passed
//! over, the copy goes to the approval store and cannot run there, `ags` says to check that
//! mount (naming the store), and never falls back to running the original entrypoint. Performed
//! for real: the store and the RAM-backed roots are `noexec` tmpfs mounts in a private mount
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
    // Move the approvals onto a noexec tmpfs mounted over the store, mount noexec tmpfs over
    // the RAM-backed roots (`$XDG_RUNTIME_DIR/ags`, `/dev/shm/ags-<uid>`), then run `ags plan`.
    let script = r#"set -e
cp -a "$1/." "$2/"
mount -t tmpfs -o noexec,nosuid,nodev,mode=0700 ags-noexec "$1"
cp -a "$2/." "$1/"
for ram in "$4" "$5"; do
    mkdir -p -m 0700 "$ram"
    mount -t tmpfs -o noexec,nosuid,nodev,mode=0700 ags-noexec "$ram"
done
exec "$3" plan"#;
    let ram_roots = [
        env.runtime_dir().join("ags"),
        std::path::PathBuf::from(format!("/dev/shm/ags-{}", env.uid())),
    ];
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
                ram_roots[0].to_str().unwrap(),
                ram_roots[1].to_str().unwrap(),
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

/// The approval store `noexec`, a RAM-backed root usable: the copy runs from the RAM root.
#[test]
fn noexec_approval_store_is_no_obstacle_when_a_ram_root_allows_exec() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: mounting a noexec tmpfs in a private mount namespace needs root");
        return;
    }
    let env = TestEnv::without_podman();
    let marker = env.root().join("ran");
    let h = env.write_file(
        "hooks/h",
        format!(
            "#!/bin/sh\necho \"$0\" >{}\necho '{{\"version\":1}}'\n",
            marker.display()
        ),
        0o755,
    );
    env.write_global_config(&decl("h", &h, &[], ""));
    approve_hooks(&env);
    let store = paths(&env).hook_trust_dir();
    let stash = env.mkdir("stash", 0o700);
    let ram = env.runtime_dir().join("ags");
    // The store on a noexec tmpfs; `$XDG_RUNTIME_DIR/ags` an exec-allowed tmpfs.
    let script = r#"set -e
cp -a "$1/." "$2/"
mount -t tmpfs -o noexec,nosuid,nodev,mode=0700 ags-noexec "$1"
cp -a "$2/." "$1/"
mkdir -p -m 0700 "$4"
mount -t tmpfs -o nosuid,nodev,mode=0700 ags-ram "$4"
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
                ram.to_str().unwrap(),
            ],
        )
        .output()
        .expect("unshare runs");
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let argv0 = std::fs::read_to_string(&marker).expect("the hook ran");
    assert!(
        argv0.starts_with(&format!("{}/ags-hook-exec-", ram.display())),
        "the copy ran from the RAM-backed root: {argv0}"
    );
}
