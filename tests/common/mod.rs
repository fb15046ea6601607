//! The shared harness of the integration tests: `tests/live/main.rs` and `tests/offline/main.rs`
//! declare it, every test module says `use crate::common;`.
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
//! - `AGS_TEST_SERVICE_ROOT`: where the services' file system is seen from here, when they run
//!   in a container (scripts/test-podman5: `/proc/PID/root` of the pinp container); unset: `/`.
//!
//! A live test looks like this (`each_mode` gives a fresh [`TestEnv`] per usable mode; its drop
//! removes the temporary directory and every container/volume labelled [`TestEnv::label`]):
//!
//! ```ignore
//! use crate::common::{each_mode, show};
//!
//! #[test]
//! fn exit_code_passes_through() {
//!     each_mode(|env| {
//!         let image = env.image();
//!         let out = env.run(["--image", image.as_str(), "--", "sh", "-c", "exit 7"]);
//!         assert_eq!(out.status.code(), Some(7), "{}", show(&out));
//!         env.assert_no_leftovers();
//!     });
//! }
//! ```
//!
//! Launch tests use [`launch`] on top of this: arguments carrying the test label, hook fixtures
//! and their approval, launches in the background (signals), events and leftover checks.
//!
//! I/O: spawns curl, setsid, stty and the `ags` binary; writes under /tmp. Style: STYLE.md 14, 15.

#![allow(dead_code)] // each test file uses a different part of the harness

pub mod agents;
pub mod api;
mod env;
pub mod git;
pub mod launch;
mod process;
pub mod pty;
pub mod sshd;

use std::cell::Cell;
use std::fmt;
use std::fs;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{OnceLock, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

// Not every test file uses every re-export.
#[allow(unused_imports)]
pub use {
    api::{cleanup_label, list_by_label},
    env::TestEnv,
    process::{describe_status, run_command, show},
    pty::PtySession,
};

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

/// Run `f` once per mode in [`modes`], each with a fresh [`TestEnv`]. Rootless runs overlap:
/// `ags` spells `keep-id` out for a local service; a test that creates a `keep-id` container
/// itself takes [`keep_id_turn`].
pub fn each_mode(f: impl Fn(&TestEnv)) {
    each_mode_with(|env| env, f);
}

/// [`each_mode`] with each fresh [`TestEnv`] passed through `adjust` first (e.g.
/// [`TestEnv::runtime_on_disk`]).
pub fn each_mode_with(adjust: impl Fn(TestEnv) -> TestEnv, f: impl Fn(&TestEnv)) {
    let _shared = shared();
    for mode in modes() {
        let env = adjust(TestEnv::new(mode));
        println!("=== {mode} mode, test id {}", env.id());
        f(&env);
    }
}

/// One `keep-id` create at a time in this process, for a test that creates such a container in
/// `env`'s rootless service itself (through the API or `kube play`): the service reads the
/// subordinate id ranges through libsubid, which is not thread-safe: concurrent `keep-id` creates
/// sometimes fail with "keep-id requires additional UIDs or GIDs defined in /etc/subuid and
/// /etc/subgid" (16 concurrent creates through the API fail about once in 50), and a crash of the
/// service in `subid_get_uid_ranges` was seen too. `ags`'s own launches spell `keep-id` out for a
/// local service (`podman::spell_out_keep_id`) and take a turn of their own otherwise.
pub fn keep_id_turn(env: &TestEnv) -> Option<std::sync::MutexGuard<'static, ()>> {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    (env.mode() == Mode::Rootless).then(|| TURN.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
}

/// Launches of all live tests share the services; a test that looks at what a SIGKILLed `ags` left
/// behind holds them alone ([`exclusive`]), since every launch sweeps the orphans of the whole
/// service. (Before the tests were one binary, cargo ran the files one after another.)
static SERVICE_WIDE: RwLock<()> = RwLock::new(());

thread_local! {
    static EXCLUSIVE_HERE: Cell<bool> = const { Cell::new(false) };
}

/// Held by a test that must be the only one launching on the services (see [`SERVICE_WIDE`]).
pub struct Exclusive(#[allow(dead_code)] RwLockWriteGuard<'static, ()>);

impl Drop for Exclusive {
    fn drop(&mut self) {
        EXCLUSIVE_HERE.with(|c| c.set(false));
    }
}

/// Wait until no other test runs [`each_mode`], and keep them out until the guard drops. Take it
/// before [`each_mode`] (its shared turn is then skipped on this thread).
pub fn exclusive() -> Exclusive {
    let guard = SERVICE_WIDE.write().unwrap_or_else(PoisonError::into_inner);
    EXCLUSIVE_HERE.with(|c| c.set(true));
    Exclusive(guard)
}

/// The shared turn of [`each_mode`]: taken before [`keep_id_turn`], so the two locks always come
/// in the same order.
fn shared() -> Option<RwLockReadGuard<'static, ()>> {
    (!EXCLUSIVE_HERE.with(Cell::get)).then(|| SERVICE_WIDE.read().unwrap_or_else(PoisonError::into_inner))
}

fn services() -> &'static Services {
    static SERVICES: OnceLock<Services> = OnceLock::new();
    SERVICES.get_or_init(|| Services {
        rootful: resolve(Mode::Rootful),
        rootless: resolve(Mode::Rootless),
    })
}

pub(crate) fn var(name: &str) -> Option<String> {
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

pub(crate) fn account_by_uid(uid: u32) -> Result<Account, String> {
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
        let meta = fs::symlink_metadata(&base).expect("stat of the binary copy directory");
        assert!(
            meta.is_dir() && meta.uid() == nix::unistd::geteuid().as_raw(),
            "{} is not a directory of ours",
            base.display()
        );
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
        wait_until_executable(&bin);
        bin
    })
}

/// Wait until `bin` can be executed. A process another test thread forked while the copy was
/// open for writing holds that descriptor until it execs, and exec of the copy fails with
/// ETXTBSY ("Text file busy") meanwhile.
fn wait_until_executable(bin: &Path) {
    for _ in 0..200 {
        match std::process::Command::new(bin).arg("--version").output() {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => {
                std::thread::sleep(Duration::from_millis(10))
            }
            _ => return,
        }
    }
}
