//! Shared helpers of the lifecycle-event tests (`tests/live/lifecycle_events.rs`, `tests/live/oci_hooks.rs`):
//! hook scripts and configs, approval as the mode's user, reading the JSON lines hooks write,
//! running `ags` so that it can be SIGKILLed, and a separate Podman service with storage of its
//! own whose containers.conf may carry ags's OCI hooks (installed with `ags setup oci-hooks`).
//!
//! I/O: files under the test root, the `ags` and `ags-oci-hook` binaries, `podman system service`
//! (started and stopped here; `ags` itself never runs the podman program).

#![allow(dead_code)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use ags::config::{LoadOptions, Paths, load_with};
use ags::hooks::entrypoint::PreparedHook;
use ags::hooks::trust::{ApprovalRecord, TrustStore};
use serde_json::Value;

use crate::common::{CLEAN_PATH, Mode, TestEnv, ags_bin, api, loud, tool};

/// The `Paths` the env's `ags` sees.
pub fn paths(env: &TestEnv) -> Paths {
    Paths {
        home: env.home(),
        config_home: env.config_home(),
        state_home: env.state_home(),
        cache_home: env.cache_home(),
        runtime_dir: Some(env.runtime_dir()),
    }
}

/// The env's spool directory.
pub fn spool_dir(env: &TestEnv) -> PathBuf {
    paths(env).spool_dir()
}

/// A hook script under `<root>/hooks/NAME`.
pub fn hook(env: &TestEnv, name: &str, body: &str) -> PathBuf {
    env.write_file(format!("hooks/{name}"), format!("#!/bin/sh\n{body}\n"), 0o755)
}

/// A hook that appends its context (one line) to `<root>/<file>`, then answers `{"version":1}`.
pub fn recording_hook(env: &TestEnv, name: &str, file: &str) -> PathBuf {
    let out = env.root().join(file);
    hook(
        env,
        name,
        &format!(
            "ctx=$(cat)\nprintf '%s\\n' \"$ctx\" >> {}\necho \"{name} ran\" >&2\necho '{{\"version\":1}}'",
            out.display()
        ),
    )
}

/// One `[[EVENT_hook]]` declaration.
pub fn decl(event: &str, name: &str, path: &Path, args: &[&str]) -> String {
    let args: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    format!(
        "[[{event}_hook]]\nname = \"{name}\"\nexecutable = \"{}\"\nargs = [{}]\n",
        path.display(),
        args.join(", ")
    )
}

/// Approve every declaration of the env's global config (as a "yes" on the terminal would),
/// with the store and tokens owned by the env's user.
pub fn approve_all(env: &TestEnv) {
    let p = paths(env);
    let opts = LoadOptions {
        workdir: Some(env.work_dir()),
        ..Default::default()
    };
    let cfg = load_with(p.clone(), &opts).expect("config loads");
    let store = TrustStore::open(&p, Some(&cfg.project)).expect("store opens");
    for d in cfg
        .prepare_hooks
        .iter()
        .chain(&cfg.started_hooks)
        .chain(&cfg.finished_hooks)
    {
        let prepared = PreparedHook::load(d.clone()).expect("entrypoint loads");
        store
            .approve(&prepared.hash, &ApprovalRecord::new(d))
            .expect("approve");
    }
    chown_tree(env, &env.state_home());
}

/// Give everything below `dir` to the env's user (the test process may be root).
pub fn chown_tree(env: &TestEnv, dir: &Path) {
    if nix::unistd::geteuid().as_raw() == env.uid() {
        return;
    }
    let status = Command::new(tool("chown"))
        .arg("-R")
        .arg(format!("{}:{}", env.uid(), env.gid()))
        .arg(dir)
        .status()
        .expect("chown runs");
    assert!(status.success(), "chown -R {}", dir.display());
}

/// The JSON lines of `<root>/<file>` (none when it does not exist).
pub fn json_lines(env: &TestEnv, file: &str) -> Vec<Value> {
    let text = fs::read_to_string(env.root().join(file)).unwrap_or_default();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{file}: {e}: {l}")))
        .collect()
}

/// The states of the containers labelled with the env's test label on the service at `socket`.
pub fn container_states(env: &TestEnv, socket: &Path) -> Vec<String> {
    let path = format!(
        "/containers/json?all=true&filters={}",
        api::encode(&serde_json::json!({ "label": [env.label()] }).to_string())
    );
    let reply = api::request(socket, "GET", &path, None).expect("listing containers");
    let list = reply.json();
    let states = list.as_array().cloned().unwrap_or_default();
    states
        .iter()
        .map(|c| c["State"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// Poll `cond` every 50 ms until it holds or `timeout` passes.
pub fn wait_for(what: &str, timeout: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !cond() {
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Start `ags args…` in the env without waiting. `setsid` execs `ags` in place (the child is
/// not a group leader), so killing the child kills `ags` itself.
pub fn spawn_ags(env: &TestEnv, args: &[&str]) -> Child {
    let mut cmd = env.cmd(args);
    cmd.stdout(Stdio::null()).stderr(Stdio::piped());
    cmd.spawn().expect("spawning ags")
}

/// `ags-oci-hook` next to the harness's copy of `ags`, where `ags setup oci-hooks` looks for it
/// by default (a directory every test user can read; the build tree may not be).
pub fn oci_hook_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let bin = ags_bin().with_file_name("ags-oci-hook");
        fs::copy(env!("CARGO_BIN_EXE_ags-oci-hook"), &bin).expect("copying ags-oci-hook");
        fs::set_permissions(&bin, fs::Permissions::from_mode(0o755)).expect("chmod ags-oci-hook");
        bin
    })
}

/// Tests that SIGKILL `ags` hold this: every launch reconciles the orphans of dead `ags`
/// processes on the host, so a concurrent test's launch would remove (and kill) the orphan
/// whose end the test wants to observe.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// A Podman service of the env's mode with storage of its own (so no other `ags` on the host
/// can see, and reconcile, its containers), run as the env's user and reading only its own
/// containers.conf: the system's runtime and ulimit settings, plus — `with_oci_hooks` —
/// ags's OCI hooks installed by `ags setup oci-hooks`. The test image is copied in from the
/// mode's service. Launches against it must use `[sandbox] network = "none"` (no second IPAM
/// on the host's bridge). Stopped, with its test containers removed, on drop.
pub struct IsolatedService {
    child: Child,
    socket: PathBuf,
    label: String,
    /// Its containers.conf (`CONTAINERS_CONF`).
    pub conf: PathBuf,
}

/// The global config line every launch against an [`IsolatedService`] needs.
pub const NO_NETWORK: &str = "[sandbox]\nnetwork = \"none\"\n";

impl IsolatedService {
    /// Set up `<root>/podman/` (containers.conf, storage.conf, storage, hooks.d) and start the
    /// service on `<root>/podman/podman.sock`.
    pub fn start(env: &TestEnv, with_oci_hooks: bool) -> Self {
        let dir = env.mkdir("podman", 0o700);
        let conf = env.write_file("podman/containers.conf", base_conf(&dir), 0o600);
        let storage = format!(
            "[storage]\ndriver = \"vfs\"\ngraphroot = \"{0}/storage\"\nrunroot = \"{0}/runroot\"\n",
            dir.display()
        );
        // Rootful Podman reads CONTAINERS_STORAGE_CONF. Rootless ignores its graphroot (and then
        // skips the user's file): it must find $XDG_CONFIG_HOME/containers/storage.conf instead.
        let storage_conf = env.write_file("podman/config/containers/storage.conf", storage, 0o600);
        if with_oci_hooks {
            oci_hook_bin();
            let mut setup = env.cmd(["setup", "oci-hooks", "--yes", "--hooks-dir"]);
            setup.arg(dir.join("hooks.d")).env("CONTAINERS_CONF", &conf);
            let out = crate::common::run_command(setup, None, Duration::from_secs(60));
            assert!(
                out.status.success(),
                "ags setup oci-hooks: {}",
                crate::common::show(&out)
            );
        }
        let socket = dir.join("podman.sock");
        let account = env.account().clone();
        let home = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(account.uid))
            .ok()
            .flatten()
            .map(|u| u.dir)
            .expect("the mode's user has a home");
        let mut cmd = Command::new(tool("podman"));
        if crate::common::var("AGS_TEST_PODMAN_DEBUG").is_some() {
            cmd.arg("--log-level=debug");
        }
        cmd.args(["system", "service", "--time=0"])
            .arg(format!("unix://{}", socket.display()))
            .env_clear()
            .env("PATH", CLEAN_PATH)
            .env("HOME", home)
            .env("CONTAINERS_CONF", &conf)
            .env("XDG_CONFIG_HOME", dir.join("config"))
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(fs::File::create(dir.join("service.log")).expect("service log"));
        match env.mode() {
            Mode::Rootless => cmd.env("XDG_RUNTIME_DIR", env.runtime_dir()),
            Mode::Rootful => cmd.env("CONTAINERS_STORAGE_CONF", &storage_conf),
        };
        if nix::unistd::geteuid().as_raw() != account.uid {
            cmd.gid(account.gid).uid(account.uid);
        }
        let child = cmd
            .process_group(0)
            .spawn()
            .expect("starting podman system service");
        let service = Self {
            child,
            socket,
            label: env.label(),
            conf,
        };
        wait_for("the isolated Podman service", Duration::from_secs(120), || {
            api::ping(&service.socket).is_ok()
        });
        let info = api::request(&service.socket, "GET", "/info", None)
            .expect("info")
            .json();
        let graph = info["store"]["graphRoot"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(
            graph.starts_with(dir.to_str().unwrap()),
            "the service must use its own storage, not {graph}"
        );
        service.copy_image(env, &dir);
        service
    }

    fn copy_image(&self, env: &TestEnv, dir: &Path) {
        let tar = dir.join("image.tar");
        let image = api::encode(&env.image());
        let curl = |socket: &Path, args: &[&str]| {
            let out = Command::new(tool("curl"))
                .args(["-sS", "--fail", "--max-time", "120", "--unix-socket"])
                .arg(socket)
                .args(args)
                .output()
                .expect("running curl");
            assert!(
                out.status.success(),
                "curl {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        let get = format!(
            "http://d{}/images/{image}/get?format=docker-archive",
            api::API_PREFIX
        );
        curl(&env.mode().socket(), &["-o", tar.to_str().unwrap(), &get]);
        let load = format!("http://d{}/images/load", api::API_PREFIX);
        let data = format!("@{}", tar.display());
        curl(
            &self.socket,
            &[
                "-X",
                "POST",
                "-H",
                "Content-Type: application/x-tar",
                "--data-binary",
                &data,
                &load,
            ],
        );
        let _ = fs::remove_file(&tar);
    }

    /// The `--url` of this service.
    pub fn url(&self) -> String {
        format!("unix://{}", self.socket.display())
    }

    /// Its socket.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// Panic if anything labelled with the env's test id is left in this service.
    pub fn assert_no_leftovers(&self, env: &TestEnv) {
        let containers = container_states(env, &self.socket);
        assert!(containers.is_empty(), "containers left: {containers:?}");
        let path = format!(
            "/volumes/json?filters={}",
            api::encode(&serde_json::json!({ "label": [env.label()] }).to_string())
        );
        let volumes = api::request(&self.socket, "GET", &path, None)
            .expect("listing volumes")
            .json();
        assert_eq!(
            volumes.as_array().map(Vec::len),
            Some(0),
            "volumes left: {volumes}"
        );
    }

    fn cleanup(&self) {
        let path = format!(
            "/containers/json?all=true&filters={}",
            api::encode(&serde_json::json!({ "label": [&self.label] }).to_string())
        );
        let Ok(reply) = api::request(&self.socket, "GET", &path, None) else {
            return;
        };
        for c in reply.json().as_array().cloned().unwrap_or_default() {
            let id = c["Id"].as_str().unwrap_or_default();
            let _ = api::request(
                &self.socket,
                "DELETE",
                &format!("/containers/{id}?force=true&v=true"),
                None,
            );
        }
    }
}

impl Drop for IsolatedService {
    fn drop(&mut self) {
        self.cleanup();
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::killpg(pid, nix::sys::signal::Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        loud("WARNING: the isolated Podman service ignored SIGTERM; killing it");
        let _ = nix::sys::signal::killpg(pid, nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

/// The runtime and ulimit settings the system's containers.conf files make (they are not read
/// when CONTAINERS_CONF is set), as TOML.
fn base_conf(dir: &Path) -> String {
    let mut files = vec![PathBuf::from("/etc/containers/containers.conf")];
    let mut drop_ins: Vec<PathBuf> = fs::read_dir("/etc/containers/containers.conf.d")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "conf"))
        .collect();
    drop_ins.sort();
    files.extend(drop_ins);
    let (mut runtime, mut ulimits) = (None, None);
    for f in files {
        let Ok(text) = fs::read_to_string(&f) else {
            continue;
        };
        let table: toml::Table = toml::from_str(&text).unwrap_or_default();
        if let Some(r) = table.get("engine").and_then(|e| e.get("runtime")) {
            runtime = Some(r.clone());
        }
        if let Some(u) = table.get("containers").and_then(|c| c.get("default_ulimits")) {
            ulimits = Some(u.clone());
        }
    }
    let mut out = String::from("# written by tests/lifecycle_support\n");
    if let Some(u) = ulimits {
        out.push_str(&format!("[containers]\ndefault_ulimits = {u}\n"));
    }
    // Its own temporary directory: a second rootful service would otherwise share /run/libpod
    // (exit files, locks) with the machine's main service, and under load the isolated
    // service's container cleanup (which runs the poststop hooks) went astray.
    out.push_str(&format!("[engine]\ntmp_dir = \"{}/tmp\"\n", dir.display()));
    // File locks under that directory, not the user's shared-memory lock segment
    // (/dev/shm/libpod_lock, libpod_rootless_lock_UID): a service with a fresh tmp_dir "refreshes"
    // at start and frees every lock in the segment, including those of the main service's live
    // containers, which then share locks with new ones; the main rootless service deadlocked
    // that way under concurrent tests.
    out.push_str("lock_type = \"file\"\n");
    if let Some(r) = runtime {
        out.push_str(&format!("runtime = {r}\n"));
    }
    out
}
