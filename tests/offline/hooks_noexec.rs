//! Every place for execution copies on a `noexec` file system: the RAM-backed roots are passed
//! over, the copy goes to the approval store and cannot run there, `ags` says to check that
//! mount (naming the store), and never falls back to running the original entrypoint; and a
//! `noexec` store is no obstacle when a RAM-backed root allows exec. Performed for real: the
//! store and the RAM-backed roots are tmpfs mounts in a private mount namespace (`unshare -m`,
//! so the host's mounts are untouched); needs root.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::launch::{approve_hooks, decl, paths};
use common::{TestEnv, show, tool};

/// How the RAM-backed root `$XDG_RUNTIME_DIR/ags` is mounted (and `/dev/shm/ags-<uid>`, when
/// `noexec`; with `exec` it is left as it is, the runtime directory comes first).
const NOEXEC: &str = "noexec,nosuid,nodev,mode=0700";
const EXEC: &str = "nosuid,nodev,mode=0700";

/// A hook that writes its `$0` to `<root>/ran`, approved; then `ags plan` in a private mount
/// namespace where the approval store is a `noexec` tmpfs (holding the approvals) and the
/// RAM-backed roots are tmpfs mounted with `ram_options`. `None` without root.
fn plan_with_noexec_store(ram_options: &str) -> Option<(TestEnv, Output, PathBuf)> {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: mounting a tmpfs in a private mount namespace needs root");
        return None;
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
    let shm_root = PathBuf::from(format!("/dev/shm/ags-{}", env.uid()));
    let shm = if ram_options == NOEXEC {
        shm_root.as_path()
    } else {
        Path::new("")
    };
    let script = r#"set -e
cp -a "$1/." "$2/"
mount -t tmpfs -o noexec,nosuid,nodev,mode=0700 ags-noexec "$1"
cp -a "$2/." "$1/"
for ram in "$5" "$6"; do
    [ -n "$ram" ] || continue
    mkdir -p -m 0700 "$ram"
    mount -t tmpfs -o "$4" ags-ram "$ram"
done
exec "$3" plan"#;
    let args = [
        store.as_path(),
        stash.as_path(),
        common::ags_bin(),
        Path::new(ram_options),
        &env.runtime_dir().join("ags"),
        shm,
    ];
    let mut argv: Vec<&str> = vec!["-m", "--propagation", "private", "sh", "-c", script, "sh"];
    argv.extend(args.iter().map(|a| a.to_str().unwrap()));
    let out = env.command(tool("unshare"), argv).output().expect("unshare runs");
    Some((env, out, marker))
}

#[test]
fn noexec_approval_store_fails_with_the_mount_hint_and_no_fallback() {
    let Some((env, out, marker)) = plan_with_noexec_store(NOEXEC) else {
        return;
    };
    assert_eq!(out.status.code(), Some(125), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("execution was denied") && err.contains("not mounted noexec"),
        "{err}"
    );
    let store = paths(&env).hook_trust_dir();
    assert!(err.contains(store.to_str().unwrap()), "names the store: {err}");
    assert!(!marker.exists(), "the original entrypoint must never run instead");
}

/// The approval store `noexec`, a RAM-backed root usable: the copy runs from the RAM root.
#[test]
fn noexec_approval_store_is_no_obstacle_when_a_ram_root_allows_exec() {
    let Some((env, out, marker)) = plan_with_noexec_store(EXEC) else {
        return;
    };
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let argv0 = std::fs::read_to_string(&marker).expect("the hook ran");
    let ram = env.runtime_dir().join("ags");
    assert!(
        argv0.starts_with(&format!("{}/ags-hook-exec-", ram.display())),
        "the copy ran from the RAM-backed root: {argv0}"
    );
}
