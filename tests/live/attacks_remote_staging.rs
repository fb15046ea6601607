//! Attacks on the remote staging of hook-generated files (issue 16 item 2): on a remote Podman 5
//! service the files travel in the launch's tmpfs staging volume, filled through a keeper
//! container and mounted read-only at each destination by a volume subpath (docs/remote.md).
//! The services are reached over `tcp://` (a byte relay to the mode's socket); Podman 4 services
//! are skipped (generated files are refused there, `tests/live/remote_files.rs`).
//!
//! - The agent tries to write, remove, replace and remount its staged files and to plant
//!   symlinks in the volume, and two launches at once look for each other's values.
//! - `ags` is SIGKILLed after the keeper holds the staged values and before the agent's container
//!   exists (the relay holds that create back), and while the agent runs: what is left, and that
//!   the next launch's sweep or `ags gc` removes it (keeper, volume, values in RAM).

use crate::common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::{Duration, Instant};

use common::launch::{
    Background, approve_hooks, assert_clean, decl, files_containing, fs_type, launch_args, stderr, stdout,
    wait_until,
};
use common::{Mode, TestEnv, api, each_mode, show};
use nix::sys::signal::Signal;

/// A TCP relay to a unix socket (the service as a remote one). When `hold` is set, the first
/// container create after an archive upload is held back (not forwarded, its connection kept
/// open): `ags` then waits between the keeper's staging and the agent's container. The held
/// request is then forwarded ([`Relay::release`]) or dropped ([`Relay::discard`]).
struct Relay {
    port: u16,
    hold: Arc<AtomicBool>,
    held: Arc<AtomicU8>,
    stop: Arc<AtomicBool>,
    uploaded: Arc<AtomicBool>,
}

impl Relay {
    fn start(socket: PathBuf) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind relay");
        let port = listener.local_addr().expect("addr").port();
        let relay = Relay {
            port,
            hold: Arc::new(AtomicBool::new(false)),
            held: Arc::new(AtomicU8::new(NONE)),
            stop: Arc::new(AtomicBool::new(false)),
            uploaded: Arc::new(AtomicBool::new(false)),
        };
        let (hold, held, stop) = (relay.hold.clone(), relay.held.clone(), relay.stop.clone());
        let uploaded = relay.uploaded.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(tcp) = conn else { continue };
                let Ok(unix) = UnixStream::connect(&socket) else {
                    continue;
                };
                let (t2, u2) = (tcp.try_clone().expect("clone"), unix.try_clone().expect("clone"));
                let (hold, held, stop, uploaded) =
                    (hold.clone(), held.clone(), stop.clone(), uploaded.clone());
                std::thread::spawn(move || forward_requests(t2, u2, &hold, &held, &stop, &uploaded));
                let (mut unix, mut tcp) = (unix, tcp);
                std::thread::spawn(move || std::io::copy(&mut unix, &mut tcp));
            }
        });
        relay
    }

    fn url(&self) -> String {
        format!("tcp://127.0.0.1:{}", self.port)
    }

    /// Hold back the next container create that follows an archive upload (or stop holding).
    fn hold(&self, on: bool) {
        self.uploaded.store(false, Ordering::SeqCst);
        self.hold.store(on, Ordering::SeqCst);
    }

    /// Forward the held create after all.
    fn release(&self) {
        self.held.store(RELEASE, Ordering::SeqCst);
    }

    /// Drop the held create (and its connection) without forwarding it.
    fn discard(&self) {
        self.held.store(DISCARD, Ordering::SeqCst);
    }

    /// Wait (bounded) until a create was held back.
    fn wait_held(&self, timeout: Duration) -> bool {
        wait_until(timeout, || self.held.load(Ordering::SeqCst) == HELD)
    }
}

/// States of the held create.
const NONE: u8 = 0;
const HELD: u8 = 1;
const RELEASE: u8 = 2;
const DISCARD: u8 = 3;

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn forward_requests(
    mut from: TcpStream,
    mut to: UnixStream,
    hold: &AtomicBool,
    held: &AtomicU8,
    stop: &AtomicBool,
    uploaded: &AtomicBool,
) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let chunk = &buf[..n];
        let has = |needle: &[u8]| chunk.windows(needle.len()).any(|w| w == needle);
        if hold.load(Ordering::SeqCst) && uploaded.load(Ordering::SeqCst) && has(b"/containers/create") {
            hold.store(false, Ordering::SeqCst);
            held.store(HELD, Ordering::SeqCst);
            // Keep both ends open and forward nothing until released.
            loop {
                match held.load(Ordering::SeqCst) {
                    RELEASE => break,
                    HELD if !stop.load(Ordering::SeqCst) => std::thread::sleep(Duration::from_millis(50)),
                    _ => return,
                }
            }
        }
        if has(b"PUT ") && has(b"/archive") {
            uploaded.store(true, Ordering::SeqCst);
        }
        if to.write_all(chunk).is_err() {
            return;
        }
    }
}

/// The service's storage and run directories as seen from here (`AGS_TEST_SERVICE_ROOT`: the
/// pinp container's root), its event log, temporary directories and log file.
fn service_dirs(env: &TestEnv) -> Vec<PathBuf> {
    let root = PathBuf::from(std::env::var("AGS_TEST_SERVICE_ROOT").unwrap_or_else(|_| "/".into()));
    let info = api::call(env.mode(), "GET", "/info", None).json();
    let mut dirs: Vec<PathBuf> = ["graphRoot", "runRoot", "volumePath"]
        .iter()
        .filter_map(|k| info["store"][k].as_str().map(str::to_owned))
        .collect::<Vec<_>>()
        .into_iter()
        .map(PathBuf::from)
        .collect();
    // Podman's event log (file logger) and temporary files of the service.
    dirs.extend(["/run/libpod", "/var/tmp"].map(PathBuf::from));
    dirs.push(PathBuf::from(format!("/run/user/{}/libpod", env.uid())));
    let mut dirs: Vec<PathBuf> = dirs
        .into_iter()
        .map(|p| root.join(p.strip_prefix("/").unwrap_or(&p)))
        .collect();
    // The service's own log (scripts/test-podman5 and scripts/setup-podman write it next to the
    // socket, here).
    dirs.extend(env.mode().socket().parent().map(Path::to_path_buf));
    dirs.into_iter().filter(|p| p.exists()).collect()
}

/// A global prepare hook: the env value `STAGED` and two files (in the container home and in
/// /tmp), each holding `GENFILE-<word>` where `<word>` is read from `.word` in the workdir (the
/// hook's cwd), so that no file of the test holds a whole value.
fn word_hook(env: &TestEnv) {
    let hook = env.write_file(
        "hooks/gen",
        "#!/bin/sh\ncat >/dev/null\nW=$(cat .word)\nA=GENFILE\n\
         printf '{\"version\":1,\"env\":{\"STAGED\":\"%s-%s-env\"},\"files\":[\
         {\"destination\":\"/home/dev/generated.txt\",\"content\":\"%s-%s-one\\\\n\"},\
         {\"destination\":\"/tmp/sub/second.txt\",\"content\":\"%s-%s-two\\\\n\"}]}' \
         \"$A\" \"$W\" \"$A\" \"$W\" \"$A\" \"$W\"\n",
        0o755,
    );
    env.write_global_config(&decl("gen", &hook, &[], ""));
    approve_hooks(env);
}

/// A workdir `name` whose hook word is `word` (and, for the agent, the other launch's word).
fn workdir(env: &TestEnv, name: &str, word: &str, other: &str) -> PathBuf {
    let dir = env.mkdir(name, 0o755);
    env.write_file(dir.join(".word"), word, 0o644);
    env.write_file(dir.join(".other"), other, 0o644);
    dir
}

/// `ags --url URL --workdir DIR … -- sh -c SCRIPT` in the background.
fn spawn(env: &TestEnv, url: &str, dir: &Path, extra: &[&str], script: &str) -> Background {
    let mut args = vec![
        "--url".to_string(),
        url.to_string(),
        "--workdir".into(),
        dir.display().to_string(),
    ];
    let mut all = vec!["--tty=false"];
    all.extend_from_slice(extra);
    args.extend(launch_args(env, &all, &["sh", "-c", script]));
    let mut cmd = env.cmd(&args);
    cmd.env_remove("CONTAINER_HOST");
    Background::spawn_cmd(cmd)
}

/// What the agent tries against its own staged files and the staging volume, one result line
/// each (`NAME held` when the attempt failed), then the other launch's values it can find.
const ATTACKS: &str = r#"f=/home/dev/generated.txt; g=/tmp/sub/second.txt
before=$(cat $f $g | sha256sum | cut -c1-16)
try() { n=$1; shift; if ( "$@" ) >/dev/null 2>&1; then echo "$n DONE"; else echo "$n held"; fi; }
try append sh -c "echo x >>$f"
try truncate sh -c ": >$f"
try remove rm -f $g
try rename-over sh -c "echo y >/tmp/y && mv -f /tmp/y $f"
try rename-away mv $f /home/dev/moved
try symlink-over ln -sf /etc/passwd $f
try chmod chmod 0666 $f
try bind-over sh -c "echo z >/tmp/z && mount --bind /tmp/z $f"
try ns-remount-file unshare -Urm sh -c "mount -o remount,bind,rw $f && echo w >>$f"
try ns-umount-file unshare -Urm sh -c "umount -l $f && test ! -e $f"
try ns-remount-volume unshare -Urm sh -c "mount -o remount,bind,rw /run/ags && touch /run/ags/w"
try volume-write touch /run/ags/planted
try volume-symlink ln -s / /run/ags/files/9
try volume-dotdot sh -c "ls /run/ags/files/../../../.. && touch /run/ags/files/../x"
after=$(cat $f $g | sha256sum | cut -c1-16)
[ "$before" = "$after" ] && echo "CONTENT unchanged" || echo "CONTENT changed"
m=$(grep " $f " /proc/self/mountinfo); echo "ROOT $(echo "$m" | cut -d' ' -f4) $(echo "$m" | cut -d' ' -f6 | cut -d, -f1)"
echo READY; while [ ! -e go ]; do sleep 0.1; done
o=GENFILE-$(cat .other)
hits=$(grep -rl "$o" /run /tmp /home /etc /var /dev/shm 2>/dev/null; for p in /proc/[0-9]*; do cat $p/environ $p/cmdline 2>/dev/null | grep -l "$o" >/dev/null && echo $p; done; grep -l "$o" /proc/*/mountinfo 2>/dev/null)
echo "OTHER ${hits:-none}"; echo "OWN $STAGED"
"#;

#[test]
fn the_agent_cannot_change_its_staged_files_or_reach_another_launchs() {
    each_mode(|env| {
        if api::podman_major(env.mode()) < 5 {
            return;
        }
        word_hook(env);
        let relay = Relay::start(env.mode().socket());
        let id = env.id().replace(['-', '.', '_'], "");
        let (wa, wb) = (format!("{id}a"), format!("{id}b"));
        let (da, db) = (workdir(env, "wa", &wa, &wb), workdir(env, "wb", &wb, &wa));
        let (a, b) = (
            spawn(env, &relay.url(), &da, &[], ATTACKS),
            spawn(env, &relay.url(), &db, &[], ATTACKS),
        );
        a.expect_stdout("READY", Duration::from_secs(180));
        b.expect_stdout("READY", Duration::from_secs(180));
        // Both agents run now: each looks for the other's values.
        env.write_file(da.join("go"), "", 0o644);
        env.write_file(db.join("go"), "", 0o644);
        for (out, word) in [(a.wait(), &wa), (b.wait(), &wb)] {
            assert_eq!(out.status.code(), Some(0), "{}", show(&out));
            let text = stdout(&out);
            println!("{}: {text}", env.mode());
            let done: Vec<&str> = text.lines().filter(|l| l.ends_with(" DONE")).collect();
            assert!(
                done.is_empty(),
                "{}: the agent succeeded: {done:?}\n{}",
                env.mode(),
                show(&out)
            );
            for want in [
                "CONTENT unchanged".to_string(),
                // The file's mount is the subpath of the volume, not the volume's root.
                "ROOT /files/0 ro".into(),
                "OTHER none".into(),
                format!("OWN GENFILE-{word}-env"),
            ] {
                assert!(
                    text.lines().any(|l| l == want),
                    "{}: {want:?} missing\n{}",
                    env.mode(),
                    show(&out)
                );
            }
            assert_eq!(
                text.lines().filter(|l| l.ends_with(" held")).count(),
                14,
                "{}",
                show(&out)
            );
        }
        assert_clean(env);
    });
}

/// The managed containers and volumes of the test, with each container's state.
fn leftovers(env: &TestEnv) -> (Vec<(String, String)>, Vec<String>) {
    let containers = api::containers_with_label(env.mode(), &env.label())
        .into_iter()
        .map(|(id, _)| {
            let j = api::call(env.mode(), "GET", &format!("/containers/{id}/json"), None).json();
            (
                j["Name"].as_str().unwrap_or_default().to_string(),
                j["State"]["Status"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    (containers, api::volumes_with_label(env.mode(), &env.label()))
}

/// Another Podman service of the mode's user with the test image, when there is one (under
/// scripts/test-podman5: the outer service, Podman 4.3, of the same user).
fn other_service(env: &TestEnv) -> Option<PathBuf> {
    let socket = match env.mode() {
        Mode::Rootful => PathBuf::from(
            std::env::var("AGS_PINP_OUTER_SOCKET").unwrap_or_else(|_| "/run/podman/podman.sock".into()),
        ),
        Mode::Rootless => PathBuf::from(format!("/run/user/{}/podman/podman.sock", env.uid())),
    };
    let usable = socket != env.mode().socket()
        && api::ping(&socket).is_ok()
        && api::image_exists(&socket, &env.image()).unwrap_or(false);
    usable.then_some(socket)
}

#[test]
fn a_killed_ags_leaves_the_keeper_until_the_next_launch_or_gc() {
    // Another test's launch would sweep the killed launch's keeper before this one looks.
    let _alone = common::exclusive();
    each_mode(|env| {
        if api::podman_major(env.mode()) < 5 {
            return;
        }
        let id = env.id().replace(['-', '.', '_'], "");
        let word = format!("{id}k");
        let sentinel = format!("GENFILE-{word}");
        let dir = workdir(env, "wk", &word, "none");
        let marker = env.write_file("marker", "", 0o644);
        std::thread::sleep(Duration::from_millis(20)); // ctime granularity
        let relay = Relay::start(env.mode().socket());
        // A first launch sweeps the service (never swept by this user): the next sweep of this
        // URL is then due only in 10 minutes, or when a killed launch left its owner mark.
        let out = spawn(env, &relay.url(), &dir, &[], "true").wait();
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));

        // 1. Killed between the keeper's staging and the agent's container.
        word_hook(env);
        relay.hold(true);
        let bg = spawn(env, &relay.url(), &dir, &[], "echo AGENT-RAN");
        assert!(
            relay.wait_held(Duration::from_secs(180)),
            "{}: the agent's create never came\n{}",
            env.mode(),
            bg.stderr_so_far()
        );
        // The keeper is started while the agent's container is created: wait for it.
        let mut containers = Vec::new();
        let running = wait_until(Duration::from_secs(60), || {
            containers = leftovers(env).0;
            containers.len() == 1 && containers[0].1 == "running"
        });
        let volumes = leftovers(env).1;
        assert_eq!(containers.len(), 1, "{}: {containers:?}", env.mode());
        let (keeper, _) = &containers[0];
        assert!(keeper.ends_with("-keeper"), "{keeper}");
        // Started, so that Podman kills and removes it after its timeout (the earlier keeper was
        // only initialised: it held the values until a sweep, however long that took).
        assert!(
            running,
            "{}: the keeper is not running: {containers:?}",
            env.mode()
        );
        assert_eq!(volumes.len(), 1, "{volumes:?}");
        // The values are in neither inspect; the volume is tmpfs.
        let ki = api::call(env.mode(), "GET", &format!("/containers/{keeper}/json"), None);
        assert!(ki.ok() && !ki.text().contains(&sentinel), "{}", ki.text());
        let kj = ki.json();
        assert_eq!(kj["Config"]["Timeout"], 600, "{kj}");
        assert_eq!(kj["HostConfig"]["AutoRemove"], true, "{kj}");
        let vi = api::call(env.mode(), "GET", &format!("/volumes/{}/json", volumes[0]), None).json();
        assert!(!vi.to_string().contains(&sentinel), "{vi}");
        assert_eq!(vi["Options"]["type"], "tmpfs", "{vi}");
        bg.signal(Signal::SIGKILL);
        let killed_at = Instant::now();
        let out = bg.wait();
        assert!(!stdout(&out).contains("AGENT-RAN"), "{}", show(&out));
        assert!(!stderr(&out).contains(&sentinel), "{}", show(&out));
        relay.discard();

        // Left: the keeper (running until its timeout) and the volume, the values in its tmpfs
        // only.
        let (containers, volumes) = leftovers(env);
        assert_eq!(
            (containers.len(), volumes.len()),
            (1, 1),
            "{containers:?} {volumes:?}"
        );
        let dirs = service_dirs(env);
        let hits = files_containing(&dirs, &[&sentinel], Some(&marker));
        println!("{}: after the kill, files with the values: {hits:?}", env.mode());
        for hit in &hits {
            assert!(
                hit.to_string_lossy().contains(&format!("/{}/_data/", volumes[0])) && fs_type(hit) == "tmpfs",
                "{}: values in {} outside the volume's tmpfs",
                env.mode(),
                hit.display()
            );
        }

        // A launch on another service sweeps that one; the killed launch's owner mark names
        // this service and stays (the earlier code cleared it, and the keeper then waited for
        // the periodic sweep of this service, 10 minutes after the last one).
        env.write_global_config("");
        match other_service(env) {
            Some(other) => {
                let url = format!("unix://{}", other.display());
                let out = spawn(env, &url, &dir, &[], "true").wait();
                assert_eq!(out.status.code(), Some(0), "{}", show(&out));
            }
            None => println!("{}: no other service to launch on", env.mode()),
        }

        // The next launch on this service (with no hook: nothing of its own is staged) sweeps.
        let next = spawn(env, &relay.url(), &dir, &[], "echo NEXT");
        let out = next.wait();
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        println!(
            "{}: the keeper of the killed launch was removed {:.1} s after the kill (by the next launch)",
            env.mode(),
            killed_at.elapsed().as_secs_f64()
        );
        assert_clean(env);
        let hits = files_containing(&dirs, &[&sentinel], Some(&marker));
        assert!(hits.is_empty(), "{}: values left: {hits:?}", env.mode());

        // 2. Killed while the agent runs: the agent's container keeps running (crash recovery),
        // holding the volume; `ags gc` removes it, the keeper (if its removal was cut short) and
        // the volume.
        word_hook(env);
        let _ = std::fs::remove_file(dir.join("go"));
        let bg = spawn(
            env,
            &relay.url(),
            &dir,
            &[],
            "echo READY; while [ ! -e go ]; do sleep 0.1; done",
        );
        bg.expect_stdout("READY", Duration::from_secs(180));
        bg.signal(Signal::SIGKILL);
        let _ = bg.wait();
        let (containers, volumes) = leftovers(env);
        println!(
            "{}: killed while the agent runs, left: {containers:?} {volumes:?}",
            env.mode()
        );
        assert!(
            containers.iter().any(|(_, s)| s == "running"),
            "{}: {containers:?}",
            env.mode()
        );
        let mut cmd = env.cmd(["--url", &relay.url(), "gc"]);
        cmd.env_remove("CONTAINER_HOST");
        let out = common::run_command(cmd, None, common::RUN_TIMEOUT);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert_clean(env);
        let hits = files_containing(&dirs, &[&sentinel], Some(&marker));
        assert!(hits.is_empty(), "{}: values left: {hits:?}", env.mode());
    });
}

#[test]
fn a_keeper_gone_before_the_agents_container_is_a_clear_error() {
    each_mode(|env| {
        if api::podman_major(env.mode()) < 5 {
            return;
        }
        word_hook(env);
        let id = env.id().replace(['-', '.', '_'], "");
        let dir = workdir(env, "wg", &format!("{id}g"), "none");
        let relay = Relay::start(env.mode().socket());
        relay.hold(true);
        let bg = spawn(env, &relay.url(), &dir, &[], "echo AGENT-RAN");
        assert!(
            relay.wait_held(Duration::from_secs(180)),
            "{}",
            bg.stderr_so_far()
        );
        // The keeper goes as its timeout would make it go (or someone removed it).
        let mut keeper = None;
        let found = wait_until(Duration::from_secs(60), || {
            keeper = leftovers(env)
                .0
                .into_iter()
                .find(|(n, s)| n.ends_with("-keeper") && s == "running");
            keeper.is_some()
        });
        assert!(found, "{}: no running keeper", env.mode());
        let (name, _) = keeper.expect("found");
        let gone = api::call(
            env.mode(),
            "DELETE",
            &format!("/containers/{name}?force=true&timeout=0"),
            None,
        );
        assert!(gone.ok(), "{}", gone.text());
        relay.release();
        let out = bg.wait();
        println!("{}: {}", env.mode(), show(&out));
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        assert!(!stdout(&out).contains("AGENT-RAN"), "{}", show(&out));
        let err = stderr(&out);
        for needle in [
            "keeper of this launch's staging volume",
            "ended before the agent's container was initialised",
            "run the launch again",
            "nothing was left",
        ] {
            assert!(
                err.contains(needle),
                "{}: {needle:?} missing: {}",
                env.mode(),
                show(&out)
            );
        }
        assert_clean(env);
    });
}
