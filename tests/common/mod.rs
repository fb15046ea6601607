//! The shared harness of the integration tests: every `tests/*.rs` says `mod common;`.
//!
//! It answers three questions for a test: which Podman services to run against ([`modes`]), how
//! to run the real `ags` binary in an isolated, clean environment as the right user
//! ([`TestEnv`]), and how to find and remove what a test left in Podman ([`cleanup_label`],
//! [`list_by_label`]) without going through the `ags` library under test (curl, see [`api`]).
//!
//! Environment (set by `scripts/test`; see also [`modes`]):
//! - `AGS_TEST_ROOTFUL_URL`, `AGS_TEST_ROOTLESS_URL`: `unix://` URLs of the two services.
//! - `AGS_TEST_ROOTLESS_USER`: the user owning the rootless service; tests run `ags` as that user.
//! - `AGS_TEST_IMAGE`: the small test image (default `localhost/ags-busybox:latest`).
//! - `AGS_TEST_REQUIRE_PODMAN=1`: a configured but unusable service fails the test (no skip).
//! - `AGS_TEST_RUN_ID`: prefix of every test id, so `scripts/test` can find this run's leftovers.
//! - `AGS_TEST_KEEP=1`: keep each test's temporary directory (printed) for debugging.
//!
//! I/O: spawns curl, setsid, stty and the `ags` binary; writes under /tmp. Style: STYLE.md 14, 15.

#![allow(dead_code)] // each test file uses a different part of the harness

pub mod api;
pub mod pty;

use std::ffi::OsStr;
use std::fmt;
use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub use api::{cleanup_label, list_by_label};
pub use pty::PtySession;

/// Label key carried by everything a test creates; the value is the test's id ([`TestEnv::id`]).
pub const TEST_LABEL_KEY: &str = "io.ags.test";
/// Label key `ags` puts on everything it creates.
pub const MANAGED_LABEL_KEY: &str = "io.ags.managed";
/// The test image built by `scripts/setup-podman`.
pub const DEFAULT_IMAGE: &str = "localhost/ags-busybox:latest";
/// PATH inside the clean environment.
pub const CLEAN_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/// How long [`TestEnv::run`] waits before it kills `ags` and fails the test.
pub const RUN_TIMEOUT: Duration = Duration::from_secs(180);
/// How long the pty runners wait for the child to exit.
pub const PTY_TIMEOUT: Duration = Duration::from_secs(120);

/// Which Podman service a test talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Root's service (/run/podman/podman.sock); `ags` runs as the test process's user.
    Rootful,
    /// A user's rootless service; `ags` runs as that user (`AGS_TEST_ROOTLESS_USER`).
    Rootless,
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::Rootful => "rootful",
            Mode::Rootless => "rootless",
        })
    }
}

impl Mode {
    /// The service of this mode; panics when [`modes`] would not have returned it.
    pub fn service(self) -> &'static Service {
        let found = match self {
            Mode::Rootful => &services().rootful,
            Mode::Rootless => &services().rootless,
        };
        found
            .as_ref()
            .unwrap_or_else(|e| panic!("{self} Podman is not usable: {}", e.reason))
    }

    /// The service URL (`unix:///…/podman.sock`), as given to `ags` in `CONTAINER_HOST`.
    pub fn url(self) -> String {
        self.service().url.clone()
    }

    /// The service's socket path.
    pub fn socket(self) -> PathBuf {
        self.service().socket.clone()
    }

    /// The account `ags` runs as in this mode.
    pub fn account(self) -> &'static Account {
        &self.service().account
    }
}

/// A user account from the passwd database.
#[derive(Debug, Clone)]
pub struct Account {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
}

/// A reachable Podman service and who runs `ags` against it.
#[derive(Debug)]
pub struct Service {
    pub mode: Mode,
    pub url: String,
    pub socket: PathBuf,
    pub account: Account,
    /// Whether commands switch to `account` (the test process runs as someone else, i.e. root).
    pub switch_user: bool,
}

/// Why a mode is not available.
#[derive(Debug)]
pub struct Unavailable {
    /// Whether the mode was asked for through its environment variable.
    pub configured: bool,
    pub reason: String,
}

#[derive(Debug)]
struct Services {
    rootful: Result<Service, Unavailable>,
    rootless: Result<Service, Unavailable>,
}

/// Whether `AGS_TEST_REQUIRE_PODMAN` asks for failures instead of skips.
pub fn require_podman() -> bool {
    std::env::var("AGS_TEST_REQUIRE_PODMAN").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// The test image (`AGS_TEST_IMAGE` or [`DEFAULT_IMAGE`]).
pub fn image() -> String {
    std::env::var("AGS_TEST_IMAGE")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| DEFAULT_IMAGE.into())
}

/// The modes this test should run in: each mode whose service answers and has the test image.
///
/// A mode is configured by its env var (`AGS_TEST_ROOTFUL_URL`, `AGS_TEST_ROOTLESS_URL`). When
/// `AGS_TEST_REQUIRE_PODMAN` is set, only configured modes are used and an unusable one panics.
/// Otherwise (a run by hand) an unconfigured mode falls back to the usual place (root's socket;
/// the rootless user `agstest` when running as root, else the current user's own service) and a
/// mode that does not work is left out with a loud `SKIP:` line on stderr.
pub fn modes() -> Vec<Mode> {
    let s = services();
    let mut out = Vec::new();
    for (mode, state) in [(Mode::Rootful, &s.rootful), (Mode::Rootless, &s.rootless)] {
        match state {
            Ok(_) => out.push(mode),
            Err(u) if require_podman() && u.configured => {
                panic!(
                    "{mode} Podman is required (AGS_TEST_REQUIRE_PODMAN) but unusable: {}",
                    u.reason
                )
            }
            Err(u) => loud(&format!("SKIP: {}: {mode} mode: {}", test_name(), u.reason)),
        }
    }
    out
}

/// Run `f` once per mode in [`modes`], each with a fresh [`TestEnv`].
pub fn each_mode(f: impl Fn(&TestEnv)) {
    for mode in modes() {
        let env = TestEnv::new(mode);
        println!("=== {mode} mode, test id {}", env.id());
        f(&env);
    }
}

fn services() -> &'static Services {
    static SERVICES: OnceLock<Services> = OnceLock::new();
    SERVICES.get_or_init(|| Services {
        rootful: resolve(Mode::Rootful),
        rootless: resolve(Mode::Rootless),
    })
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// Find the URL and account of `mode` and check that its service is usable.
fn resolve(mode: Mode) -> Result<Service, Unavailable> {
    let euid = nix::unistd::geteuid().as_raw();
    let url_var = match mode {
        Mode::Rootful => "AGS_TEST_ROOTFUL_URL",
        Mode::Rootless => "AGS_TEST_ROOTLESS_URL",
    };
    let configured = var(url_var).is_some();
    let fail = |reason: String| Unavailable { configured, reason };
    if !configured && require_podman() {
        return Err(fail(format!("{url_var} is not set")));
    }
    let account = match mode {
        Mode::Rootful => account_by_uid(euid),
        Mode::Rootless => {
            let default_user = if euid == 0 {
                Some("agstest".to_owned())
            } else {
                None
            };
            match var("AGS_TEST_ROOTLESS_USER").or(default_user) {
                Some(name) => account_by_name(&name),
                None => account_by_uid(euid),
            }
        }
    }
    .map_err(fail)?;
    let url = var(url_var).unwrap_or_else(|| match mode {
        Mode::Rootful => "unix:///run/podman/podman.sock".into(),
        Mode::Rootless => format!("unix:///run/user/{}/podman/podman.sock", account.uid),
    });
    let socket = PathBuf::from(
        url.strip_prefix("unix://")
            .ok_or_else(|| fail(format!("{url_var}={url}: only unix:// URLs")))?,
    );
    let switch_user = account.uid != euid;
    if switch_user && euid != 0 {
        return Err(fail(format!(
            "running as {} needs root (the tests run as uid {euid})",
            account.name
        )));
    }
    api::ping(&socket).map_err(|e| {
        fail(format!(
            "no Podman service at {url}: {e} (run scripts/setup-podman)"
        ))
    })?;
    let image = image();
    match api::image_exists(&socket, &image) {
        Ok(true) => {}
        Ok(false) => {
            return Err(fail(format!(
                "image {image} missing at {url} (run scripts/setup-podman)"
            )));
        }
        Err(e) => return Err(fail(e)),
    }
    Ok(Service {
        mode,
        url,
        socket,
        account,
        switch_user,
    })
}

fn account_by_name(name: &str) -> Result<Account, String> {
    match nix::unistd::User::from_name(name) {
        Ok(Some(u)) => Ok(Account {
            name: u.name,
            uid: u.uid.as_raw(),
            gid: u.gid.as_raw(),
        }),
        Ok(None) => Err(format!(
            "no user {name} (run scripts/setup-podman --rootless-user {name})"
        )),
        Err(e) => Err(format!("looking up user {name}: {e}")),
    }
}

fn account_by_uid(uid: u32) -> Result<Account, String> {
    match nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)) {
        Ok(Some(u)) => Ok(Account {
            name: u.name,
            uid,
            gid: u.gid.as_raw(),
        }),
        Ok(None) => Err(format!("uid {uid} has no passwd entry")),
        Err(e) => Err(format!("looking up uid {uid}: {e}")),
    }
}

/// Print on the real stderr, bypassing the test runner's output capture.
pub fn loud(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// The running test's name (libtest names each test thread after its test).
pub fn test_name() -> String {
    std::thread::current().name().unwrap_or("?").to_owned()
}

/// Absolute path of a system tool (the test process's PATH is not trusted to have it).
pub fn tool(name: &str) -> PathBuf {
    CLEAN_PATH
        .split(':')
        .map(|dir| Path::new(dir).join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from(name))
}

/// This run's id prefix: `AGS_TEST_RUN_ID` (set by scripts/test) or `m<unix seconds>`.
pub fn run_id() -> &'static str {
    static RUN: OnceLock<String> = OnceLock::new();
    RUN.get_or_init(|| {
        let given = var("AGS_TEST_RUN_ID").map(|v| {
            v.chars()
                .filter(|c| c.is_ascii_alphanumeric() || "_.-".contains(*c))
                .collect::<String>()
        });
        given
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| format!("m{}", unix_now().as_secs()))
    })
}

fn unix_now() -> Duration {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default()
}

/// A copy of the `ags` binary that every user can execute, made once per test process: the
/// build tree may sit below a directory the rootless user cannot traverse (e.g. /root).
/// Copies left by dead test processes are removed on the way.
pub fn ags_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let base = PathBuf::from(format!("/tmp/ags-test-bin-{}", nix::unistd::geteuid()));
        fs::create_dir_all(&base).expect("creating the binary copy directory");
        fs::set_permissions(&base, fs::Permissions::from_mode(0o755)).expect("chmod binary dir");
        for entry in fs::read_dir(&base).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let pid = name.split('-').next().unwrap_or_default();
            if !pid.is_empty() && !Path::new("/proc").join(pid).exists() {
                let _ = fs::remove_dir_all(entry.path());
            }
        }
        let dir = base.join(format!("{}-{}", std::process::id(), unix_now().as_nanos()));
        fs::create_dir(&dir).expect("creating the binary copy directory");
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).expect("chmod binary dir");
        let bin = dir.join("ags");
        fs::copy(env!("CARGO_BIN_EXE_ags"), &bin).expect("copying the ags binary");
        fs::set_permissions(&bin, fs::Permissions::from_mode(0o755)).expect("chmod ags copy");
        bin
    })
}

/// One test's isolated world in one mode: a temporary root (removed on drop, together with every
/// Podman object labelled with the test's id) holding
///
/// ```text
/// /tmp/ags-test-<id>/            0700, owned by the mode's user
///   home/                        HOME
///   home/.config/                XDG_CONFIG_HOME
///   home/.local/state/           XDG_STATE_HOME
///   home/.cache/                 XDG_CACHE_HOME
///   run/                         XDG_RUNTIME_DIR (not rootless: that uses /run/user/<uid>)
///   work/                        the project directory and cwd of every command
/// ```
#[derive(Debug)]
pub struct TestEnv {
    /// `None` for [`TestEnv::without_podman`].
    mode: Option<Mode>,
    id: String,
    root: PathBuf,
    account: Account,
    switch_user: bool,
    url: String,
}

impl TestEnv {
    /// A fresh environment for the running test in `mode` (which must come from [`modes`]).
    pub fn new(mode: Mode) -> Self {
        let service = mode.service();
        let env = Self::create(Some(mode), service.account.clone(), service.switch_user, |_| {
            mode.url()
        });
        cleanup_label(mode, &env.label());
        env
    }

    /// An environment for tests that need no Podman (e.g. `ags plan`): `ags` runs as the test
    /// process's user and `CONTAINER_HOST` names a socket that does not exist (`root/run/none.sock`).
    pub fn without_podman() -> Self {
        let euid = nix::unistd::geteuid().as_raw();
        let account = account_by_uid(euid).unwrap_or_else(|e| panic!("{e}"));
        Self::create(None, account, false, |root| {
            format!("unix://{}/run/none.sock", root.display())
        })
    }

    fn create(
        mode: Option<Mode>,
        account: Account,
        switch_user: bool,
        url: impl Fn(&Path) -> String,
    ) -> Self {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let id = format!("{}-{}-{n}", run_id(), std::process::id());
        let root = PathBuf::from(format!("/tmp/ags-test-{id}"));
        let url = url(&root);
        let env = Self {
            mode,
            id,
            root,
            account,
            switch_user,
            url,
        };
        fs::create_dir(&env.root).unwrap_or_else(|e| panic!("creating {}: {e}", env.root.display()));
        env.chown_mode(&env.root, 0o700);
        let dirs = [
            "home",
            "home/.config",
            "home/.local",
            "home/.local/state",
            "home/.cache",
            "work",
        ];
        for dir in dirs {
            env.mkdir(dir, 0o700);
        }
        if mode != Some(Mode::Rootless) {
            env.mkdir("run", 0o700);
        }
        env
    }

    /// The Podman mode (panics for [`TestEnv::without_podman`]).
    pub fn mode(&self) -> Mode {
        self.mode.expect("this TestEnv was made without Podman")
    }

    /// The unique id of this test environment (`<run id>-<pid>-<n>`).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The label (`io.ags.test=<id>`) to put on everything this test creates.
    pub fn label(&self) -> String {
        format!("{TEST_LABEL_KEY}={}", self.id)
    }

    /// A unique Podman object name for this test, e.g. `ags-test-<id>-vol`.
    pub fn unique_name(&self, what: &str) -> String {
        format!("ags-test-{}-{what}", self.id)
    }

    /// The test image.
    pub fn image(&self) -> String {
        image()
    }

    /// The service URL of this mode (also `CONTAINER_HOST` of every command).
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// The account `ags` runs as.
    pub fn account(&self) -> &Account {
        &self.account
    }

    pub fn uid(&self) -> u32 {
        self.account().uid
    }

    pub fn gid(&self) -> u32 {
        self.account().gid
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    pub fn config_home(&self) -> PathBuf {
        self.root.join("home/.config")
    }

    pub fn state_home(&self) -> PathBuf {
        self.root.join("home/.local/state")
    }

    pub fn cache_home(&self) -> PathBuf {
        self.root.join("home/.cache")
    }

    /// The project directory (cwd of every command).
    pub fn work_dir(&self) -> PathBuf {
        self.root.join("work")
    }

    /// XDG_RUNTIME_DIR: /run/user/<uid> for rootless (where its socket lives), else `root/run`.
    pub fn runtime_dir(&self) -> PathBuf {
        match self.mode {
            Some(Mode::Rootless) => PathBuf::from(format!("/run/user/{}", self.uid())),
            _ => self.root.join("run"),
        }
    }

    /// The complete environment of every command, in this order.
    pub fn envs(&self) -> Vec<(String, String)> {
        let path = |p: PathBuf| p.to_string_lossy().into_owned();
        vec![
            ("PATH".into(), CLEAN_PATH.into()),
            ("HOME".into(), path(self.home())),
            ("XDG_CONFIG_HOME".into(), path(self.config_home())),
            ("XDG_STATE_HOME".into(), path(self.state_home())),
            ("XDG_CACHE_HOME".into(), path(self.cache_home())),
            ("XDG_RUNTIME_DIR".into(), path(self.runtime_dir())),
            ("LANG".into(), "C.UTF-8".into()),
            ("CONTAINER_HOST".into(), self.url()),
        ]
    }

    /// `program args…` as the mode's user, in its own session without a controlling terminal
    /// (`setsid -w`: opening /dev/tty fails, so prompts fail closed), with exactly [`Self::envs`],
    /// cwd [`Self::work_dir`] and stdin from /dev/null.
    pub fn command<I, S>(&self, program: impl AsRef<OsStr>, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = Command::new(tool("setsid"));
        cmd.arg("-w").arg(program).args(args);
        self.prepare(&mut cmd);
        cmd.stdin(Stdio::null());
        cmd
    }

    /// [`Self::command`] for the `ags` binary.
    pub fn cmd<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.command(ags_bin(), args)
    }

    /// Run `ags args…` to completion (killed and failed after [`RUN_TIMEOUT`]).
    pub fn run<I, S>(&self, args: I) -> Output
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        run_command(self.cmd(args), None, RUN_TIMEOUT)
    }

    /// Like [`Self::run`], with `stdin` as standard input.
    pub fn run_with_stdin<I, S>(&self, args: I, stdin: &[u8]) -> Output
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        run_command(self.cmd(args), Some(stdin), RUN_TIMEOUT)
    }

    /// `program args…` like [`Self::command`], but on a new pseudo-terminal of `rows` x `cols`
    /// that is its controlling terminal (`setsid --ctty`), with `TERM=xterm` added.
    pub fn spawn_pty_program<I, S>(
        &self,
        program: impl AsRef<OsStr>,
        args: I,
        rows: u16,
        cols: u16,
    ) -> PtySession
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut cmd = Command::new(tool("setsid"));
        cmd.args(["--ctty", "-w"]).arg(program).args(args);
        self.prepare(&mut cmd);
        cmd.env("TERM", "xterm");
        let owner = self.switch_user.then(|| (self.uid(), self.gid()));
        PtySession::spawn(cmd, rows, cols, owner).expect("spawning on a pty")
    }

    /// [`Self::spawn_pty_program`] for `ags args…`.
    pub fn spawn_pty<I, S>(&self, args: I, rows: u16, cols: u16) -> PtySession
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.spawn_pty_program(ags_bin(), args, rows, cols)
    }

    /// Run `ags args…` on a `rows` x `cols` terminal, typing each input after its delay; returns
    /// the exit code (`None`: killed by a signal or timed out after [`PTY_TIMEOUT`]) and the
    /// terminal output.
    pub fn run_in_pty<I, S>(
        &self,
        args: I,
        rows: u16,
        cols: u16,
        input: &[(Duration, &[u8])],
    ) -> (Option<i32>, String)
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.run_program_in_pty(ags_bin(), args, rows, cols, input)
    }

    /// [`Self::run_in_pty`] for any program.
    pub fn run_program_in_pty<I, S>(
        &self,
        program: impl AsRef<OsStr>,
        args: I,
        rows: u16,
        cols: u16,
        input: &[(Duration, &[u8])],
    ) -> (Option<i32>, String)
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut session = self.spawn_pty_program(program, args, rows, cols);
        for (delay, bytes) in input {
            std::thread::sleep(*delay);
            session.write(bytes);
        }
        let status = session.wait(PTY_TIMEOUT);
        (status.and_then(|s| s.code()), session.output())
    }

    /// Write `content` to `rel` (relative to [`Self::root`], or absolute inside it) with
    /// permission bits `mode`, owned by the mode's user; missing parents are created (0755).
    pub fn write_file(&self, rel: impl AsRef<Path>, content: impl AsRef<[u8]>, mode: u32) -> PathBuf {
        let path = self.inside(rel.as_ref());
        if let Some(parent) = path.parent() {
            self.create_parents(parent);
        }
        fs::write(&path, content).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        self.chown_mode(&path, mode);
        path
    }

    /// Create directory `rel` (and missing parents, 0755) with permission bits `mode`.
    pub fn mkdir(&self, rel: impl AsRef<Path>, mode: u32) -> PathBuf {
        let path = self.inside(rel.as_ref());
        if let Some(parent) = path.parent() {
            self.create_parents(parent);
        }
        if !path.is_dir() {
            fs::create_dir(&path).unwrap_or_else(|e| panic!("creating {}: {e}", path.display()));
        }
        self.chown_mode(&path, mode);
        path
    }

    /// Write the global config file ($XDG_CONFIG_HOME/ags/config.toml, 0600).
    pub fn write_global_config(&self, toml: &str) -> PathBuf {
        self.write_file(self.config_home().join("ags/config.toml"), toml, 0o600)
    }

    /// Everything in Podman labelled with this test's id (`container:NAME`, `volume:NAME`).
    pub fn leftovers(&self) -> Vec<String> {
        list_by_label(self.mode(), &self.label())
    }

    /// Panic if anything labelled with this test's id is still in Podman.
    pub fn assert_no_leftovers(&self) {
        let left = self.leftovers();
        assert!(left.is_empty(), "{}: left in Podman: {left:?}", self.mode());
    }

    fn inside(&self, rel: &Path) -> PathBuf {
        let path = if rel.is_absolute() {
            rel.to_path_buf()
        } else {
            self.root.join(rel)
        };
        assert!(
            path.starts_with(&self.root) && !path.components().any(|c| c.as_os_str() == ".."),
            "{} is outside the test root {}",
            path.display(),
            self.root.display()
        );
        path
    }

    fn create_parents(&self, dir: &Path) {
        if dir.is_dir() {
            return;
        }
        if let Some(parent) = dir.parent() {
            self.create_parents(parent);
        }
        fs::create_dir(dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
        self.chown_mode(dir, 0o755);
    }

    /// Set permission bits and give `path` to the mode's user.
    fn chown_mode(&self, path: &Path, mode: u32) {
        fs::set_permissions(path, fs::Permissions::from_mode(mode))
            .unwrap_or_else(|e| panic!("chmod {}: {e}", path.display()));
        if self.switch_user {
            std::os::unix::fs::chown(path, Some(self.uid()), Some(self.gid()))
                .unwrap_or_else(|e| panic!("chown {}: {e}", path.display()));
        }
    }

    /// Clean environment, cwd and user of every command.
    fn prepare(&self, cmd: &mut Command) {
        cmd.env_clear().envs(self.envs()).current_dir(self.work_dir());
        if self.switch_user {
            // std drops supplementary groups, then sets gid and uid (no unsafe pre_exec).
            cmd.gid(self.account.gid).uid(self.account.uid);
        }
    }
}

impl Drop for TestEnv {
    fn drop(&mut self) {
        if let Some(mode) = self.mode {
            let removed = cleanup_label(mode, &self.label());
            if !removed.is_empty() {
                println!("cleanup of {} removed: {removed:?}", self.id);
            }
        }
        if var("AGS_TEST_KEEP").is_some() {
            loud(&format!("AGS_TEST_KEEP: kept {}", self.root.display()));
        } else if let Err(e) = fs::remove_dir_all(&self.root) {
            loud(&format!("WARNING: removing {}: {e}", self.root.display()));
        }
    }
}

/// A byte stream collected by a background thread.
struct Collector {
    buf: Arc<Mutex<Vec<u8>>>,
    thread: JoinHandle<()>,
}

impl Collector {
    fn start(mut source: impl Read + Send + 'static) -> Self {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&buf);
        let thread = std::thread::spawn(move || {
            let mut chunk = [0u8; 8192];
            loop {
                match source.read(&mut chunk) {
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Ok(0) | Err(_) => return,
                    Ok(n) => sink
                        .lock()
                        .expect("collector lock")
                        .extend_from_slice(&chunk[..n]),
                }
            }
        });
        Self { buf, thread }
    }

    /// The bytes so far, after waiting up to `grace` for the end of the stream (a descendant
    /// that keeps the pipe open must not hang the test).
    fn finish(self, grace: Duration) -> Vec<u8> {
        let deadline = Instant::now() + grace;
        while !self.thread.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let bytes = self.buf.lock().expect("collector lock").clone();
        if self.thread.is_finished() {
            let _ = self.thread.join();
        }
        bytes
    }
}

/// Run `cmd` with piped stdout/stderr (and `stdin` if given, else /dev/null), killing it and
/// failing the test after `timeout`.
pub fn run_command(mut cmd: Command, stdin: Option<&[u8]>, timeout: Duration) -> Output {
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let desc = format!("{:?} {:?}", cmd.get_program(), cmd.get_args().collect::<Vec<_>>());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawning {desc}: {e}"));
    if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
        let bytes = bytes.to_vec();
        // A child that does not read its input must not block the test: write from a thread.
        std::thread::spawn(move || {
            let _ = pipe.write_all(&bytes);
        });
    }
    let stdout = Collector::start(child.stdout.take().expect("piped stdout"));
    let stderr = Collector::start(child.stderr.take().expect("piped stderr"));
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child
            .try_wait()
            .unwrap_or_else(|e| panic!("waiting for {desc}: {e}"))
        {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            let out = String::from_utf8_lossy(&stdout.finish(Duration::from_secs(1))).into_owned();
            let err = String::from_utf8_lossy(&stderr.finish(Duration::from_secs(1))).into_owned();
            panic!("{desc} still running after {timeout:?}: killed\n--- stdout\n{out}\n--- stderr\n{err}");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let grace = Duration::from_secs(10);
    Output {
        status,
        stdout: stdout.finish(grace),
        stderr: stderr.finish(grace),
    }
}

/// "exit code N" or "killed by signal N", for assertion messages.
pub fn describe_status(status: &ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => format!("{status}"),
    }
}

/// Stdout and stderr of an [`Output`], for assertion messages.
pub fn show(out: &Output) -> String {
    format!(
        "{}\n--- stdout\n{}\n--- stderr\n{}",
        describe_status(&out.status),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}
