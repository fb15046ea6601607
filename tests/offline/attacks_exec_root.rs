//! Attacks on where `ags` puts hook execution copies (`exec_copy::exec_root`: the RAM-backed
//! `$XDG_RUNTIME_DIR/ags` or `/dev/shm/ags-<uid>`, else the approval store) and on their crash
//! sweep, performed for real by another local user (`agstest`, or `AGS_TEST_ROOTLESS_USER`)
//! against `ags plan` run as root. Needs root and that user; skipped otherwise. The same
//! attacker owns root's `$XDG_RUNTIME_DIR` after `su`: what else `ags` put there (staged files,
//! socket directories, the default Podman socket, the ssh tunnel's socket) is attacked too;
//! and the agent's way in, mounting a RAM root into a launch.

use crate::common;

use std::fs;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use common::launch::{approve_hooks, decl};
use common::{TestEnv, loud, show, tool};

/// The other local user, when the test can act as it.
fn attacker() -> Option<nix::unistd::User> {
    if !nix::unistd::geteuid().is_root() {
        loud("SKIP: attacks_exec_root needs root (to act as a second local user)");
        return None;
    }
    let name = std::env::var("AGS_TEST_ROOTLESS_USER").unwrap_or_else(|_| "agstest".into());
    let user = nix::unistd::User::from_name(&name).ok().flatten();
    if user.is_none() {
        loud(&format!("SKIP: attacks_exec_root: no user {name}"));
    }
    user
}

/// A directory in `/dev/shm` (RAM-backed, exec allowed) owned by the attacker, removed on drop
/// with everything `ags` or the attacker left in it.
struct AttackerDir(PathBuf);

impl AttackerDir {
    fn new(env: &TestEnv, owner: &nix::unistd::User) -> Self {
        let dir = PathBuf::from(format!("/dev/shm/ags-attack-{}", env.id()));
        fs::create_dir(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::chown(&dir, Some(owner.uid.as_raw()), Some(owner.gid.as_raw())).unwrap();
        Self(dir)
    }
}

impl Drop for AttackerDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A hook that appends the path it runs from (its execution copy) to `<root>/argv0`.
fn install_recording_hook(env: &TestEnv) -> PathBuf {
    let log = env.root().join("argv0");
    let h = env.write_file(
        "hooks/h",
        format!(
            "#!/bin/sh\necho \"$0\" >>{}\necho '{{\"version\":1}}'\n",
            log.display()
        ),
        0o755,
    );
    env.write_global_config(&decl("h", &h, &[], ""));
    approve_hooks(env);
    log
}

fn plan_with_runtime_dir(env: &TestEnv, runtime: &Path) -> std::process::Output {
    let mut cmd = env.cmd(["plan"]);
    cmd.env("XDG_RUNTIME_DIR", runtime);
    common::run_command(cmd, None, common::RUN_TIMEOUT)
}

/// `su` from another user's session keeps that user's `$XDG_RUNTIME_DIR`: root's `ags` then
/// saw `<their runtime dir>/ags` as RAM-backed, exec-allowed and owner-only (it made it 0700
/// itself) and put the execution copies there. The other user owns the parent, so it may rename
/// root's directory and put a symlink in its place: swapping the two in a tight loop, the
/// checks saw root's directory and the later uses the attacker's, whose copy it replaced between
/// the spawn-time check and the exec. The attacker's payload ran as root (on the first of 60
/// runs in one trial, 2 of 300 in another). The root is refused unless no other user can
/// replace a directory on its way: the copies go to `/dev/shm/ags-0` or the store instead, and
/// nothing is created in the other user's directory.
#[test]
fn a_runtime_dir_of_another_user_never_holds_execution_copies() {
    let Some(attacker) = attacker() else { return };
    let env = TestEnv::without_podman();
    let log = install_recording_hook(&env);
    let theirs = AttackerDir::new(&env, &attacker);
    let out = plan_with_runtime_dir(&env, &theirs.0);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let ran = fs::read_to_string(&log).unwrap();
    assert!(
        !ran.contains(theirs.0.to_str().unwrap()),
        "the copy ran from {ran}"
    );
    assert!(
        !theirs.0.join("ags").exists(),
        "ags made a directory in another user's runtime directory"
    );

    // Now the attacker races: see exec_root_attacker.py.
    let marker = theirs.0.join("pwned");
    let code = include_str!("../support/exec_root_attacker.py");
    let args = ["h", marker.to_str().unwrap(), "600"];
    let mut child = start_attacker_script(&theirs.0, "attacker.py", code, &args, &attacker);
    let mut results = Vec::new();
    for _ in 0..40 {
        results.push(plan_with_runtime_dir(&env, &theirs.0));
        if marker.exists() {
            break;
        }
    }
    stop_group(&mut child);
    assert!(
        !marker.exists(),
        "the attacker's payload ran as uid {} after {} runs",
        fs::read_to_string(&marker).unwrap_or_default().trim(),
        results.len()
    );
    for out in &results {
        assert_eq!(out.status.code(), Some(0), "{}", show(out));
    }
    let ran = fs::read_to_string(&log).unwrap();
    assert!(!ran.contains(theirs.0.to_str().unwrap()), "a copy ran from {ran}");
}

/// Run `ags plan` as root in a private mount namespace whose `/dev/shm` is a fresh tmpfs
/// (`mode=1777`, `size`), after `attack` ran there as the attacker (`sh -c`), with no
/// `$XDG_RUNTIME_DIR` (so `/dev/shm/ags-0` is the only RAM-backed candidate). What is in
/// `/dev/shm` afterwards (`find`, as root) is written to `<root>/shm-after`.
fn plan_after_shm_attack(
    env: &TestEnv,
    attacker: &nix::unistd::User,
    size: &str,
    attack: &str,
) -> (std::process::Output, String) {
    let script = r#"set -e
mount -t tmpfs -o "mode=1777,nosuid,nodev,size=$1" ags-attack-shm /dev/shm
setpriv --reuid "$2" --regid "$3" --clear-groups sh -c "$4"
rc=0
env -u XDG_RUNTIME_DIR "$5" plan || rc=$?
find /dev/shm -mindepth 1 >"$6"
exit $rc"#;
    let after = env.root().join("shm-after");
    let (uid, gid) = (attacker.uid.to_string(), attacker.gid.to_string());
    let args = [
        "-m",
        "--propagation",
        "private",
        "sh",
        "-c",
        script,
        "sh",
        size,
        &uid,
        &gid,
        attack,
        common::ags_bin().to_str().unwrap(),
        after.to_str().unwrap(),
    ];
    let out = common::run_command(env.command(tool("unshare"), args), None, common::RUN_TIMEOUT);
    (out, fs::read_to_string(&after).unwrap_or_default())
}

/// Another local user creates `/dev/shm/ags-<uid>` first (a directory of its own, open or
/// owner-only, a symlink to its own directory or to one of root's, a file, a FIFO), with a
/// crash-sweep record naming a process of root's in it: `ags` passes the root over and runs the
/// copy from the approval store, writes nothing into what the attacker made, and its sweep
/// neither reads that record nor kills the process. Held.
#[test]
fn a_dev_shm_root_made_by_another_user_is_passed_over() {
    let Some(attacker) = attacker() else { return };
    let env = TestEnv::without_podman();
    let log = install_recording_hook(&env);
    let store = common::launch::paths(&env).hook_trust_dir();
    let roots = env.mkdir("roots", 0o700);
    let mut bait = Command::new(tool("sleep"))
        .arg("600")
        .process_group(0)
        .spawn()
        .expect("sleep runs");
    let start = ags::procfs::process_start_time(bait.id()).expect("bait start time");
    let record = format!(
        "mkdir -p /dev/shm/ags-0/ags-hook-exec-1-1-aa && echo {}-{start} >/dev/shm/ags-0/ags-hook-exec-1-1-aa/groups",
        bait.id()
    );
    let attacks = [
        format!("mkdir -m 0777 /dev/shm/ags-0 && {record}"),
        format!("mkdir -m 0700 /dev/shm/ags-0 && {record}"),
        "mkdir -m 0777 /dev/shm/theirs && ln -s /dev/shm/theirs /dev/shm/ags-0".to_string(),
        format!("ln -s {} /dev/shm/ags-0", roots.display()),
        "echo x >/dev/shm/ags-0".to_string(),
        "mkfifo /dev/shm/ags-0".to_string(),
    ];
    let mut failures = Vec::new();
    for attack in &attacks {
        let _ = fs::remove_file(&log);
        let (out, after) = plan_after_shm_attack(&env, &attacker, "16m", attack);
        let ran = fs::read_to_string(&log).unwrap_or_default();
        let ours: Vec<&str> = after
            .lines()
            .filter(|l| !l.starts_with("/dev/shm/ags-0/ags-hook-exec-1-1-aa"))
            .filter(|l| *l != "/dev/shm/ags-0" && *l != "/dev/shm/theirs")
            .collect();
        if out.status.code() != Some(0)
            || !ran.starts_with(&format!("{}/ags-hook-exec-", store.display()))
            || !ours.is_empty()
            || fs::read_dir(&roots).unwrap().next().is_some()
        {
            failures.push(format!(
                "{attack}: ran from {ran:?}, /dev/shm after: {ours:?}, {}",
                show(&out)
            ));
        }
    }
    let bait_alive = bait.try_wait().unwrap().is_none();
    let _ = bait.kill();
    let _ = bait.wait();
    assert!(failures.is_empty(), "{failures:#?}");
    assert!(
        bait_alive,
        "the sweep killed a process named by another user's record"
    );
}

/// Another local user fills `/dev/shm` (any user may; tmpfs has no per-user limit): writing the
/// copies in `/dev/shm/ags-0` fails with ENOSPC. The launch failed ("cannot create its private
/// execution copy …: No space left on device; the approval store must be writable") where the
/// copies in the approval store had worked. The copies are written in the store instead.
#[test]
fn a_full_dev_shm_does_not_fail_the_prepare_phase() {
    let Some(attacker) = attacker() else { return };
    let env = TestEnv::without_podman();
    let log = install_recording_hook(&env);
    let store = common::launch::paths(&env).hook_trust_dir();
    let fill = "dd if=/dev/zero of=/dev/shm/fill bs=4k 2>/dev/null || true";
    let (out, after) = plan_after_shm_attack(&env, &attacker, "256k", fill);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let ran = fs::read_to_string(&log).unwrap_or_default();
    assert!(
        ran.starts_with(&format!("{}/ags-hook-exec-", store.display())),
        "ran from {ran:?}"
    );
    let left: Vec<&str> = after
        .lines()
        .filter(|l| *l != "/dev/shm/fill" && *l != "/dev/shm/ags-0")
        .collect();
    assert!(left.is_empty(), "left in /dev/shm: {left:?}");
}

/// While a phase's hook runs from its copy in `$XDG_RUNTIME_DIR/ags`, another `ags` of the same
/// user starts and sweeps that root: it removes the directory of a dead `ags` (the control) and
/// nothing else, neither the live phase's directory nor entries that are not execution
/// directories (`stage-*` and its `-hooks` socket directory, lookalike names). Held.
#[test]
fn a_sweep_leaves_a_live_phase_and_other_entries_alone() {
    if !nix::unistd::geteuid().is_root() {
        loud("SKIP: a_sweep_leaves_a_live_phase_and_other_entries_alone needs root");
        return;
    }
    use common::launch::{Background, wait_until};
    let env = TestEnv::without_podman();
    // The environment's runtime directory: root-owned, 0700, in `/dev/shm`.
    let root = env.runtime_dir().join("ags");
    fs::create_dir(&root).unwrap();
    fs::set_permissions(&root, fs::Permissions::from_mode(0o700)).unwrap();
    let (started, go, result) = (
        env.root().join("started"),
        env.root().join("go"),
        env.root().join("result"),
    );
    let h = env.write_file(
        "hooks/slow",
        format!(
            "#!/bin/sh\necho \"$0\" >{started}\nn=0\nwhile [ ! -e {go} ] && [ $n -lt 500 ]; do sleep 0.1; n=$((n+1)); done\n\
             if [ -f \"$0\" ]; then echo present >{result}; else echo gone >{result}; fi\necho '{{\"version\":1}}'\n",
            started = started.display(),
            go = go.display(),
            result = result.display()
        ),
        0o755,
    );
    env.write_global_config(&decl("slow", &h, &[], "timeout_seconds = 120"));
    approve_hooks(&env);
    let others = [
        "stage-1-1-aa",
        "stage-1-1-aa-hooks",
        "ags-hook-execX",
        "ags-hook-exec-",
    ];
    let dead = root.join("ags-hook-exec-1-1-dead");
    for name in others {
        fs::create_dir(root.join(name)).unwrap();
    }
    let live = Background::spawn_cmd(env.cmd(["plan"]));
    // The whole line: the shell creates the file before it writes it.
    let line = || fs::read_to_string(&started).is_ok_and(|s| s.ends_with('\n'));
    let seen = wait_until(std::time::Duration::from_secs(120), line);
    assert!(seen, "the hook did not start: {}", live.stderr_so_far());
    let copy = PathBuf::from(fs::read_to_string(&started).unwrap().trim());
    // From the RAM root, unless `/dev/shm` is mounted noexec (a container's is): then from the
    // approval store, and the sweep of the RAM root still must leave the live copy alone.
    let shm_exec = nix::sys::statvfs::statvfs("/dev/shm")
        .is_ok_and(|st| !st.flags().contains(nix::sys::statvfs::FsFlags::ST_NOEXEC));
    let expected = match shm_exec {
        true => root.clone(),
        false => common::launch::paths(&env).hook_trust_dir(),
    };
    assert!(
        copy.starts_with(&expected),
        "the copy runs from {}",
        copy.display()
    );
    // Planted now, after the live phase's own sweep: only the next `ags` can remove it.
    fs::create_dir(&dead).unwrap();
    fs::write(dead.join("h"), b"").unwrap();

    let empty = env.write_file("empty.toml", "", 0o600);
    let cmd = env.cmd(["--config", empty.to_str().unwrap(), "plan"]);
    let out = common::run_command(cmd, None, common::RUN_TIMEOUT);
    fs::write(&go, b"").unwrap();
    let first = live.wait();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(!dead.exists(), "the dead ags's directory was not swept");
    for name in others {
        assert!(root.join(name).exists(), "{name} was removed");
    }
    assert_eq!(first.status.code(), Some(0), "{}", show(&first));
    assert_eq!(fs::read_to_string(&result).unwrap(), "present\n");
}

/// The same `su` situation for what a launch stages: the egress proxy's and the agent-hook
/// record's socket directories and the generated files were planned in the other user's
/// runtime directory (`<theirs>/ags/stage-…`), whose owner can swap a directory root's `ags`
/// made there for its own (as in the test above) and take the sockets or read the files. They
/// are planned in `/dev/shm/ags-0` instead, with generated files (claude's wiring) and without.
#[test]
fn a_runtime_dir_of_another_user_never_holds_staged_files_or_sockets() {
    let Some(attacker) = attacker() else { return };
    let env = TestEnv::without_podman();
    let theirs = AttackerDir::new(&env, &attacker);
    for agent in ["shell", "claude"] {
        let mut cmd = env.cmd(["plan", "--network", "allowlist", "--agent", agent]);
        cmd.env("XDG_RUNTIME_DIR", &theirs.0);
        let out = common::run_command(cmd, None, common::RUN_TIMEOUT);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let plan = String::from_utf8_lossy(&out.stdout);
        assert!(
            !plan.contains(theirs.0.to_str().unwrap()),
            "{agent}: planned in another user's directory:\n{plan}"
        );
        assert!(plan.contains("<- bind /dev/shm/ags-0/stage-"), "{agent}:\n{plan}");
    }
    assert!(!theirs.0.join("ags").exists());
}

/// The agent's way in: a directory it can write that a later launch mounts. The RAM roots
/// (where execution copies, staged files and socket directories live) are protected locations:
/// `/dev/shm`, the runtime directory, a root itself, and paths reaching them through a symlink
/// the agent planted in the workdir or through `/proc/self/root` are refused as `--add-dir`
/// before anything runs. Held.
#[test]
fn the_ram_roots_cannot_be_mounted_into_a_launch() {
    let env = TestEnv::without_podman();
    let link = env.work_dir().join("shm");
    std::os::unix::fs::symlink("/dev/shm", &link).unwrap();
    let shm_root = format!("/dev/shm/ags-{}", env.uid());
    let runtime = env.runtime_dir();
    let candidates = [
        "/dev/shm".to_string(),
        shm_root,
        "/proc/self/root/dev/shm".to_string(),
        runtime.display().to_string(),
        runtime.join("ags").display().to_string(),
        link.display().to_string(),
    ];
    // Both roots exist, as after a launch (made the way `ags` makes them).
    for root in [Path::new(&candidates[1]), &runtime.join("ags")] {
        let made = std::fs::DirBuilder::new().mode(0o700).create(root);
        assert!(made.is_ok() || root.is_dir(), "{}: {made:?}", root.display());
    }
    for dir in &candidates {
        let out = env.run(["plan", "--add-dir", dir]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "--add-dir {dir} was accepted");
        assert!(
            err.contains("staging directory") || err.contains("symbolic link") || err.contains("symlink"),
            "--add-dir {dir}: {err}"
        );
    }
}

/// Write the Python program `code` to `<dir>/<name>` and run it as `attacker` with `dir` and
/// `args` as its arguments, in its own process group; returns once it printed its first line,
/// `ready`.
fn start_attacker_script(
    dir: &Path,
    name: &str,
    code: &str,
    args: &[&str],
    attacker: &nix::unistd::User,
) -> Child {
    let script = dir.join(name);
    fs::write(&script, code).unwrap();
    let mut child = Command::new(tool("python3"))
        .arg(&script)
        .arg(dir)
        .args(args)
        .uid(attacker.uid.as_raw())
        .gid(attacker.gid.as_raw())
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python3 runs");
    let mut first = String::new();
    let _ = BufReader::new(child.stdout.take().unwrap()).read_line(&mut first);
    if first.trim() != "ready" {
        stop_group(&mut child);
        panic!("the attacker's {name} did not start: {first:?}");
    }
    child
}

/// SIGKILL the process group `child` leads, and reap `child`.
fn stop_group(child: &mut Child) {
    let group = nix::unistd::Pid::from_raw(child.id() as i32);
    let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
    let _ = child.wait();
}

/// The `su` situation once more, for the service `ags` talks to: with no `--url` or
/// `CONTAINER_HOST`, root's `ags` tried `$XDG_RUNTIME_DIR/podman/podman.sock` first, a socket in
/// the other user's directory. That user serves a fake API there (here: a listener that records
/// each connection and answers the ping), and `ags` would send it the launch, staged values
/// included. A runtime-directory socket another user could replace is not tried.
#[test]
fn a_podman_socket_in_another_users_runtime_dir_is_not_used() {
    let Some(attacker) = attacker() else { return };
    let env = TestEnv::without_podman();
    let theirs = AttackerDir::new(&env, &attacker);
    let fake = r#"import os, socket, sys
d = sys.argv[1]
os.makedirs(d + "/podman", exist_ok=True)
s = socket.socket(socket.AF_UNIX)
s.bind(d + "/podman/podman.sock")
s.listen(8)
print("ready", flush=True)
while True:
    c, _ = s.accept()
    open(d + "/connected", "a").write("x\n")
    c.recv(65536)
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nLibpod-API-Version: 4.3.1\r\nAPI-Version: 1.41\r\n\r\nOK")
    c.close()
"#;
    let mut child = start_attacker_script(&theirs.0, "fake_podman.py", fake, &[], &attacker);
    let mut cmd = env.cmd(["plan"]);
    cmd.env("XDG_RUNTIME_DIR", &theirs.0).env_remove("CONTAINER_HOST");
    let out = common::run_command(cmd, None, common::RUN_TIMEOUT);
    stop_group(&mut child);
    assert!(
        !theirs.0.join("connected").exists(),
        "ags connected to another user's socket: {}",
        show(&out)
    );
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
}

/// And for an `ssh://` service: the forwarded local socket's private directory was made in
/// `$XDG_RUNTIME_DIR` (`ags-ssh-…`), in the other user's directory, whose owner may rename it
/// and put one with its own socket in its place, seeing the API traffic. A watcher run as that
/// user records every entry that appears there while root's `ags plan` talks to the service
/// through a real sshd: none does (the socket goes to the temporary directory).
#[test]
fn an_ssh_tunnel_socket_is_not_made_in_another_users_runtime_dir() {
    let Some(attacker) = attacker() else { return };
    let env = TestEnv::without_podman();
    let Some(sshd) = common::sshd::Sshd::start(env.id(), env.account()) else {
        return;
    };
    let theirs = AttackerDir::new(&env, &attacker);
    let watch = r#"import os, sys, time
d = sys.argv[1]
print("ready", flush=True)
seen = set(os.listdir(d))
while True:
    for n in os.listdir(d):
        if n not in seen:
            seen.add(n)
            open(d + "/seen", "a").write(n + "\n")
    time.sleep(0.001)
"#;
    let mut child = start_attacker_script(&theirs.0, "watch.py", watch, &[], &attacker);
    let url = sshd.url(&env.account().name, Path::new("/run/podman/podman.sock"));
    let key = sshd.key().display().to_string();
    let mut cmd = env.cmd(["--url", &url, "--identity", &key, "plan"]);
    cmd.env("PATH", sshd.path())
        .env("XDG_RUNTIME_DIR", &theirs.0)
        .env_remove("CONTAINER_HOST");
    let out = common::run_command(cmd, None, common::RUN_TIMEOUT);
    stop_group(&mut child);
    let seen = fs::read_to_string(theirs.0.join("seen")).unwrap_or_default();
    assert!(
        !seen.contains("ags-ssh-"),
        "made in another user's directory: {seen}\n{}\n{}",
        show(&out),
        sshd.log()
    );
    assert_eq!(out.status.code(), Some(0), "{}\n{}", show(&out), sshd.log());
}
