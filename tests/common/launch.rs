//! Helpers of the launch tests (`tests/launch*.rs`): launch arguments carrying the test label,
//! prepare-hook fixtures and their approval (owned by the mode's user), a launch running in the
//! background (its pid, its output so far, signals), Podman container events, searches for
//! sentinel values on disk, and the host-side leftover check.
//!
//! I/O: spawns `ags`, grep and curl (through [`super::api`]); writes under the test root.

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ags::config::{LoadOptions, Paths, load_with};
use ags::hooks::entrypoint::PreparedHook;
use ags::hooks::trust::{ApprovalRecord, TrustStore};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::Value;

use super::process::Collector;
use super::{Mode, RUN_TIMEOUT, TestEnv, api, describe_status, tool};

/// The launch test fixtures (hook scripts).
pub const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/launch");
/// The prepare-hook fixtures shared with the hook tests.
pub const HOOK_FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/hooks");

/// `--image IMAGE --label io.ags.test=ID EXTRA… -- CMD…`: every launch of a test carries the
/// test label (on the container and the staging volume), so the leftover checks find them.
pub fn launch_args(env: &TestEnv, extra: &[&str], cmd: &[&str]) -> Vec<String> {
    let mut args = vec!["--image".to_string(), env.image(), "--label".into(), env.label()];
    args.extend(extra.iter().map(|s| s.to_string()));
    args.push("--".into());
    args.extend(cmd.iter().map(|s| s.to_string()));
    args
}

/// Run a launch without a terminal (`--tty=false` plus [`launch_args`]) to completion.
pub fn run_agent(env: &TestEnv, extra: &[&str], cmd: &[&str]) -> Output {
    let mut all = vec!["--tty=false"];
    all.extend_from_slice(extra);
    env.run(launch_args(env, &all, cmd))
}

/// [`run_agent`] for a fixed amount of work that takes minutes under load (a flood): `ags
/// --timeout` and the test's own limit at `limit` (its `--timeout` 10 s before) instead of
/// [`crate::common::RUN_TIMEOUT`].
pub fn run_agent_within(env: &TestEnv, limit: std::time::Duration, cmd: &[&str]) -> Output {
    let timeout = limit.as_secs().saturating_sub(10).to_string();
    let args = launch_args(env, &["--tty=false", "--timeout", &timeout], cmd);
    crate::common::run_command(env.cmd(args), None, limit)
}

/// [`run_agent`] with `stdin` as standard input.
pub fn run_agent_with_stdin(env: &TestEnv, extra: &[&str], cmd: &[&str], stdin: &[u8]) -> Output {
    let mut all = vec!["--tty=false"];
    all.extend_from_slice(extra);
    env.run_with_stdin(launch_args(env, &all, cmd), stdin)
}

/// The state volume `ags --agent AGENT` would mount in `workdir` (from `ags plan --json`).
pub fn state_volume(env: &TestEnv, agent: &str, workdir: &Path) -> String {
    let w = workdir.display().to_string();
    let out = env.run([
        "plan",
        "--json",
        "--agent",
        agent,
        "--workdir",
        &w,
        "--image",
        &env.image(),
    ]);
    assert!(out.status.success(), "{}", super::show(&out));
    let plan: Value = serde_json::from_str(&stdout(&out)).expect("plan --json is JSON");
    plan["state_volumes"][0]["name"]
        .as_str()
        .expect("a state volume")
        .to_string()
}

/// `ags login import AGENT --workdir WORKDIR --image <the test image>`.
pub fn login_import(env: &TestEnv, agent: &str, workdir: &Path) -> Output {
    let w = workdir.display().to_string();
    env.run(["login", "import", agent, "--workdir", &w, "--image", &env.image()])
}

/// Standard output as text.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Standard error as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Standard error without the warnings Podman gave on create (`ags: warning: podman: …`, e.g.
/// that a rootless service on cgroup v1 ignores resource limits): what remains is the agent's
/// output and `ags`'s own messages.
pub fn agent_stderr(out: &Output) -> String {
    stderr(out)
        .split_inclusive('\n')
        .filter(|l| !l.starts_with("ags: warning: podman: "))
        .collect()
}

/// The host locations `ags` uses in `env` (as the library computes them from its variables).
pub fn paths(env: &TestEnv) -> Paths {
    Paths {
        home: env.home(),
        config_home: env.config_home(),
        state_home: env.state_home(),
        cache_home: env.cache_home(),
        runtime_dir: Some(env.runtime_dir()),
    }
}

/// Copy the hook fixture `name` (from [`FIXTURES`], else [`HOOK_FIXTURES`]) to
/// `<root>/hooks/<name>` (0755, the mode's user's) and return that path.
pub fn install_hook(env: &TestEnv, name: &str) -> PathBuf {
    let source = [FIXTURES, HOOK_FIXTURES]
        .iter()
        .map(|dir| Path::new(dir).join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("no hook fixture {name}"));
    let bytes = fs::read(&source).unwrap_or_else(|e| panic!("reading {}: {e}", source.display()));
    env.write_file(format!("hooks/{name}"), bytes, 0o755)
}

/// A `[[prepare_hook]]` declaration; `extra` is more TOML (e.g. `timeout_seconds = 5`).
pub fn decl(name: &str, executable: &Path, args: &[&str], extra: &str) -> String {
    let quote = |s: &str| serde_json::to_string(s).expect("a string serializes");
    let args: Vec<String> = args.iter().map(|a| quote(a)).collect();
    format!(
        "[[prepare_hook]]\nname = {}\nexecutable = {}\nargs = [{}]\n{extra}\n",
        quote(name),
        quote(&executable.to_string_lossy()),
        args.join(", ")
    )
}

/// Write `response` to `<root>/responses/<name>.json` and return a declaration of the `respond`
/// fixture answering it. With `marker`, the hook also creates that file when it runs.
pub fn respond_hook(env: &TestEnv, name: &str, response: &Value, marker: Option<&Path>) -> String {
    let hook = install_hook(env, "respond");
    let file = env.write_file(format!("responses/{name}.json"), response.to_string(), 0o644);
    let mut args = vec![file.to_string_lossy().into_owned()];
    args.extend(marker.map(|m| m.to_string_lossy().into_owned()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    decl(name, &hook, &args, "")
}

/// Make the work directory a repository root with the project overlay `toml`
/// (`<work>/.git/`, `<work>/.ags/config.toml`); returns the overlay path.
pub fn write_overlay(env: &TestEnv, toml: &str) -> PathBuf {
    env.mkdir("work/.git", 0o755);
    env.write_file("work/.ags/config.toml", toml, 0o644)
}

/// Trust the overlays of the work directory (as answering "yes" on a terminal would).
pub fn trust_overlay(env: &TestEnv) {
    let root = env.work_dir().canonicalize().expect("canonical work dir");
    let file = paths(env).overlay_trust_file();
    env.write_file(file, format!("{}\n", root.display()), 0o600);
}

/// Approve every hook of the effective configuration (global config and, when trusted, the
/// project overlay) through the library, as a "yes" on a terminal would. The approval store is
/// then given to the mode's user: a rootless `ags` refuses a store it does not own.
pub fn approve_hooks(env: &TestEnv) {
    let p = paths(env);
    let opts = LoadOptions {
        workdir: Some(env.work_dir()),
        ..Default::default()
    };
    let cfg = load_with(p.clone(), &opts).expect("config loads");
    assert!(!cfg.prepare_hooks.is_empty(), "nothing to approve");
    // The store refuses a directory owned by someone else: take back what an earlier call gave.
    chown_tree(&p.hook_trust_dir(), nix::unistd::geteuid().as_raw());
    let store = TrustStore::open(&p, Some(&cfg.project)).expect("approval store opens");
    for d in cfg.prepare_hooks {
        let prepared = PreparedHook::load(d.clone()).expect("entrypoint loads");
        store
            .approve(&prepared.hash, &ApprovalRecord::new(&d))
            .expect("approve");
    }
    env.give_tree(p.hook_trust_dir());
}

/// Give `path` and everything below it (symlinks not followed) to `uid`; nothing
/// when `path` does not exist.
fn chown_tree(path: &Path, uid: u32) {
    let Ok(meta) = fs::symlink_metadata(path) else {
        return;
    };
    if meta.uid() != uid {
        std::os::unix::fs::lchown(path, Some(uid), None)
            .unwrap_or_else(|e| panic!("chown {}: {e}", path.display()));
    }
    if meta.is_dir() {
        for entry in fs::read_dir(path).into_iter().flatten().flatten() {
            chown_tree(&entry.path(), uid);
        }
    }
}

/// Everything that must be gone after a test: no container or volume with the test label, no
/// host staging directory under `$XDG_RUNTIME_DIR/ags/` (the test's own) or of this test's
/// launches under `/dev/shm/ags-<uid>/`, and no hook execution copy there or in the approval
/// store.
pub fn assert_clean(env: &TestEnv) {
    env.assert_no_leftovers();
    let left = host_leftovers(env);
    assert!(left.is_empty(), "{}: left on the host: {left:?}", env.mode());
}

/// The host-side part of [`assert_clean`].
pub fn host_leftovers(env: &TestEnv) -> Vec<PathBuf> {
    let mut left: Vec<PathBuf> = (fs::read_dir(env.runtime_dir().join("ags"))
        .into_iter()
        .flatten()
        .flatten())
    .map(|entry| entry.path())
    .collect();
    // The RAM-backed staging root when the runtime directory is on disk: shared by every launch
    // of the user, so only entries of dead owners count.
    // Hook execution copies may live there too (`ags-hook-exec-<pid>-<start>-…`).
    let shm_root = PathBuf::from(format!("/dev/shm/ags-{}", env.uid()));
    for entry in fs::read_dir(&shm_root).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let ours = name.starts_with("stage-") || name.starts_with("ags-hook-exec-");
        if ours && stage_dir_of_a_dead_launch_of(env, &name) {
            left.push(entry.path());
        }
    }
    let store = paths(env).hook_trust_dir();
    for entry in fs::read_dir(&store).into_iter().flatten().flatten() {
        if entry.file_name().to_string_lossy().starts_with("ags-hook-exec-") {
            left.push(entry.path());
        }
    }
    left
}

/// Whether a `stage-<pid>-<start>-<suffix>` or `ags-hook-exec-<pid>-<start>-<suffix>` directory
/// (anything else: yes) belongs to a process that started after `env` was made and no longer runs.
fn stage_dir_of_a_dead_launch_of(env: &TestEnv, name: &str) -> bool {
    let rest = name
        .strip_prefix("stage-")
        .or_else(|| name.strip_prefix("ags-hook-exec-"));
    let mut parts = rest.unwrap_or("").split('-');
    let (Some(pid), Some(start)) = (parts.next(), parts.next()) else {
        return true;
    };
    let Ok(started) = start.parse::<u64>() else {
        return true;
    };
    started >= env.created_ticks() && process_start_time(pid).is_none_or(|t| t != start)
}

/// Field 22 of /proc/PID/stat (start time in clock ticks), as text.
fn process_start_time(pid: &str) -> Option<String> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split_whitespace().nth(19).map(str::to_owned)
}

/// Whether process `pid` exists and is not a zombie.
pub fn process_running(pid: i32) -> bool {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat
        .rsplit(')')
        .next()
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or("");
    !stat.is_empty() && state != "Z"
}

/// Poll `cond` every 20 ms until it holds; false after `timeout`.
pub fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Seconds since the epoch (for event windows).
pub fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
}

/// Container events (`"ACTION NAME"`) of containers carrying `label` since `since` (seconds).
/// When the events API answers with an error document instead (Podman 4.3's file events backend
/// can be left with a torn line by concurrent writers, and then every events query fails; seen on
/// the rootful service), it says so loudly and falls back to the containers that carry `label`
/// now (`"exists NAME"`).
pub fn container_events(mode: Mode, label: &str, since: u64) -> Vec<String> {
    let filters = api::encode(&serde_json::json!({ "label": [label], "type": ["container"] }).to_string());
    let path = format!(
        "/events?stream=false&since={since}&until={}&filters={filters}",
        now_secs() + 1
    );
    let reply = api::call(mode, "GET", &path, None);
    let events: Result<Vec<Value>, _> = serde_json::Deserializer::from_slice(&reply.body)
        .into_iter::<Value>()
        .collect();
    let broken = match &events {
        Ok(events) => {
            !reply.ok()
                || events
                    .iter()
                    .any(|e| e.get("cause").is_some() && e.get("Action").is_none())
        }
        Err(_) => true,
    };
    if broken {
        super::loud(&format!(
            "WARNING: {mode}: GET {path}: the events API is unusable ({} {}); listing the containers instead",
            reply.status,
            reply.text().trim()
        ));
        return api::containers_with_label(mode, label)
            .into_iter()
            .map(|(_, name)| format!("exists {name}"))
            .collect();
    }
    events
        .unwrap_or_default()
        .into_iter()
        .map(|v| {
            format!(
                "{} {}",
                v["Action"].as_str().unwrap_or("?"),
                v["Actor"]["Attributes"]["name"].as_str().unwrap_or("?")
            )
        })
        .collect()
}

/// The one container with the test label: (id, name). Waits up to a minute for it to appear.
pub fn the_container(env: &TestEnv) -> (String, String) {
    let mut found = Vec::new();
    wait_until(Duration::from_secs(60), || {
        found = api::containers_with_label(env.mode(), &env.label());
        !found.is_empty()
    });
    assert_eq!(
        found.len(),
        1,
        "{}: containers with the test label: {found:?}",
        env.mode()
    );
    found.remove(0)
}

/// The directories where this mode's Podman keeps state: graph root, run root, volume path
/// (from `/info`), its events and runtime state directories, and the rootless user's
/// `~/.local/share/containers`.
pub fn podman_storage_dirs(env: &TestEnv) -> Vec<PathBuf> {
    let info = api::call(env.mode(), "GET", "/info", None).json();
    let mut dirs: BTreeSet<PathBuf> = ["graphRoot", "runRoot", "volumePath"]
        .iter()
        .filter_map(|k| info["store"][k].as_str().map(PathBuf::from))
        .collect();
    let graph = PathBuf::from(info["store"]["graphRoot"].as_str().unwrap_or("/"));
    if let Some(parent) = graph.parent().filter(|p| p.ends_with("containers")) {
        dirs.insert(parent.to_path_buf());
    }
    let extra: Vec<String> = match env.mode() {
        Mode::Rootful => ["/run/libpod", "/run/runc", "/run/crun", "/var/lib/containers"]
            .map(String::from)
            .to_vec(),
        Mode::Rootless => ["libpod", "runc", "crun", "containers"]
            .map(|d| format!("/run/user/{}/{d}", env.uid()))
            .to_vec(),
    };
    dirs.extend(extra.into_iter().map(PathBuf::from));
    dirs.into_iter().filter(|d| d.exists()).collect()
}

/// Regular files below `dirs` whose bytes contain any of `needles`; with `newer`, only files
/// whose inode changed (ctime: creation or any write, which no one can set back, unlike the
/// mtime that e.g. a tar extraction restores) after that file was modified: a value written
/// during a test can be nowhere else, and this skips the gigabytes of image layers. Symlinks are not followed, devices and FIFOs skipped, files
/// that vanish meanwhile ignored; at most five minutes.
pub fn files_containing(dirs: &[PathBuf], needles: &[&str], newer: Option<&Path>) -> Vec<PathBuf> {
    if dirs.is_empty() {
        return Vec::new();
    }
    let mut cmd = Command::new(tool("timeout"));
    cmd.arg("300").arg(tool("find")).args(dirs).args(["-type", "f"]);
    if let Some(marker) = newer {
        cmd.arg("-cnewer").arg(marker);
    }
    cmd.arg("-exec")
        .arg(tool("grep"))
        .args(["-lsF", "-D", "skip", "--binary-files=text"]);
    for n in needles {
        cmd.arg("-e").arg(n);
    }
    cmd.args(["--", "{}", "+"]);
    let out = super::run_command(cmd, None, Duration::from_secs(330));
    // 0: all went well; 1: grep found nothing in some batch, or a file vanished meanwhile.
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "find/grep failed: {}: {}",
        describe_status(&out.status),
        String::from_utf8_lossy(&out.stderr)
    );
    let found: BTreeSet<PathBuf> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(PathBuf::from)
        .collect();
    found.into_iter().collect()
}

/// The filesystem type of `path` (`stat -f -c %T`), e.g. `tmpfs`.
pub fn fs_type(path: &Path) -> String {
    let out = Command::new(tool("stat"))
        .args(["-f", "-c", "%T"])
        .arg(path)
        .output()
        .expect("running stat");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// The pid of `ags` started as `setsid -w ags …` with pid `parent`: setsid execs `ags` directly
/// when it need not fork, else `ags` is its child.
pub fn find_ags_pid(parent: u32) -> i32 {
    let mut pid = None;
    let found = wait_until(Duration::from_secs(30), || {
        let comm = fs::read_to_string(format!("/proc/{parent}/comm")).unwrap_or_default();
        if comm.trim() == "ags" {
            pid = Some(parent as i32);
            return true;
        }
        let children =
            fs::read_to_string(format!("/proc/{parent}/task/{parent}/children")).unwrap_or_default();
        pid = children.split_whitespace().next().and_then(|p| p.parse().ok());
        pid.is_some()
    });
    assert!(found, "no ags process below {parent}");
    pid.expect("found")
}

/// An `ags` invocation running in the background (no terminal, stdin /dev/null), with its
/// output collected as it comes. Dropping it kills `ags` if it still runs.
pub struct Background {
    child: Child,
    pid: i32,
    stdout: Option<Collector>,
    stderr: Option<Collector>,
    status: Option<ExitStatus>,
}

impl Background {
    /// Start `ags args…` in `env`.
    pub fn spawn(env: &TestEnv, args: &[String]) -> Self {
        Self::spawn_cmd(env.cmd(args))
    }

    /// Start `cmd`, an `ags` command made by [`TestEnv::cmd`] (and changed by the caller, e.g.
    /// more environment).
    pub fn spawn_cmd(mut cmd: Command) -> Self {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawning ags");
        let stdout = Collector::start(child.stdout.take().expect("piped stdout"));
        let stderr = Collector::start(child.stderr.take().expect("piped stderr"));
        let pid = find_ags_pid(child.id());
        Self {
            child,
            pid,
            stdout: Some(stdout),
            stderr: Some(stderr),
            status: None,
        }
    }

    /// The pid of the `ags` process.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Standard output so far.
    pub fn stdout_so_far(&self) -> String {
        let bytes = self.stdout.as_ref().map(Collector::snapshot).unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// Standard error so far.
    pub fn stderr_so_far(&self) -> String {
        let bytes = self.stderr.as_ref().map(Collector::snapshot).unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// Wait until standard output contains `needle`; panics (with the output) after `timeout`.
    pub fn expect_stdout(&self, needle: &str, timeout: Duration) {
        let seen = wait_until(timeout, || self.stdout_so_far().contains(needle));
        assert!(
            seen,
            "no {needle:?} on stdout after {timeout:?}\n--- stdout\n{}\n--- stderr\n{}",
            self.stdout_so_far(),
            self.stderr_so_far()
        );
    }

    /// Send `signal` to `ags`.
    pub fn signal(&self, signal: Signal) {
        kill(Pid::from_raw(self.pid), signal).unwrap_or_else(|e| panic!("kill -{signal} {}: {e}", self.pid));
    }

    /// Wait for `ags` to exit (killed and failed after [`RUN_TIMEOUT`]) and return its output.
    pub fn wait(mut self) -> Output {
        let deadline = Instant::now() + RUN_TIMEOUT;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("waiting for ags") {
                break status;
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "ags still running after {RUN_TIMEOUT:?}: killed\n--- stdout\n{}\n--- stderr\n{}",
                    self.stdout_so_far(),
                    self.stderr_so_far()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        self.status = Some(status);
        let grace = Duration::from_secs(10);
        Output {
            status,
            stdout: self.stdout.take().map(|c| c.finish(grace)).unwrap_or_default(),
            stderr: self.stderr.take().map(|c| c.finish(grace)).unwrap_or_default(),
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if self.status.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
