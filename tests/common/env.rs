//! [`TestEnv`]: one test's temporary world (directories, clean environment, user) and the ways
//! to run `ags` or any program in it: piped, with stdin, or on a pseudo-terminal.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use super::{
    Account, CLEAN_PATH, Mode, PTY_TIMEOUT, PtySession, RUN_TIMEOUT, TEST_LABEL_KEY, account_by_uid, ags_bin,
    cleanup_label, image, list_by_label, loud, run_command, run_id, tool, var,
};

/// One test's isolated world in one mode: a temporary root (removed on drop, together with every
/// Podman object labelled with the test's id) holding
///
/// ```text
/// /tmp/ags-test-<id>/            0700, owned by the mode's user
///   home/                        HOME
///   home/.config/                XDG_CONFIG_HOME
///   home/.local/state/           XDG_STATE_HOME
///   home/.cache/                 XDG_CACHE_HOME
///   run/                         XDG_RUNTIME_DIR with [`TestEnv::runtime_on_disk`]
///   work/                        the project directory and cwd of every command
/// /dev/shm/ags-test-<id>/        0700: XDG_RUNTIME_DIR otherwise (rootless too: `ags` finds its
///                                service through CONTAINER_HOST), removed on drop too
/// ```
///
/// The runtime directory is RAM-backed, as a login session's is, so a launch keeps its
/// execution copies and staging directories in it rather than in the user's shared
/// `/dev/shm/ags-<uid>`: tests run concurrently, and another test's SIGKILLed `ags` must not
/// look like this one's leftover.
#[derive(Debug)]
pub struct TestEnv {
    /// `None` for [`TestEnv::without_podman`].
    mode: Option<Mode>,
    id: String,
    root: PathBuf,
    account: Account,
    switch_user: bool,
    url: String,
    /// When it was made, in clock ticks since boot (the unit of a process's start time).
    created_ticks: u64,
    /// `root/run` (disk-backed) instead of the RAM-backed runtime directory.
    runtime_on_disk: bool,
}

impl TestEnv {
    /// A fresh environment for the running test in `mode` (which must come from [`super::modes`]).
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
            created_ticks: ticks_since_boot(),
            runtime_on_disk: false,
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
        env.mkdir("run", 0o700);
        let ram = env.ram_runtime_dir();
        fs::create_dir(&ram).unwrap_or_else(|e| panic!("creating {}: {e}", ram.display()));
        env.chown_mode(&ram, 0o700);
        env
    }

    /// This environment with its runtime directory on disk (`root/run`), for tests of where
    /// `ags` goes when `$XDG_RUNTIME_DIR` is not RAM-backed (no effect in rootless mode).
    pub fn runtime_on_disk(mut self) -> Self {
        self.runtime_on_disk = true;
        self
    }

    fn ram_runtime_dir(&self) -> PathBuf {
        PathBuf::from(format!("/dev/shm/ags-test-{}", self.id))
    }

    /// When this environment was made, in clock ticks since boot: a process started later has a
    /// start time (`/proc/PID/stat` field 22) at least this.
    pub fn created_ticks(&self) -> u64 {
        self.created_ticks
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

    /// XDG_RUNTIME_DIR: `/dev/shm/ags-test-<id>`, or `root/run` with [`Self::runtime_on_disk`]
    /// (not rootless). Each test has its own, so another test's SIGKILLed `ags` never leaves
    /// anything in it; the rootless service's socket stays in `/run/user/<uid>`, named by
    /// CONTAINER_HOST.
    pub fn runtime_dir(&self) -> PathBuf {
        match self.mode {
            Some(Mode::Rootless) => self.ram_runtime_dir(),
            _ if self.runtime_on_disk => self.root.join("run"),
            _ => self.ram_runtime_dir(),
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
        self.spawn_pty_typed_ahead(program, args, rows, cols, b"")
    }

    /// [`Self::spawn_pty_program`] with `typed` already waiting in the terminal's input
    /// ([`PtySession::spawn_typed_ahead`]).
    pub fn spawn_pty_typed_ahead<I, S>(
        &self,
        program: impl AsRef<OsStr>,
        args: I,
        rows: u16,
        cols: u16,
        typed: &[u8],
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
        PtySession::spawn_typed_ahead(cmd, rows, cols, owner, typed).expect("spawning on a pty")
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

    /// Give `path` and everything below it (not following symlinks) to the mode's user, e.g.
    /// files the test process wrote through a library call. A no-op when no user switch happens.
    pub fn give_tree(&self, path: impl AsRef<Path>) {
        let path = self.inside(path.as_ref());
        if !self.switch_user {
            return;
        }
        let meta = fs::symlink_metadata(&path).unwrap_or_else(|e| panic!("stat {}: {e}", path.display()));
        std::os::unix::fs::lchown(&path, Some(self.uid()), Some(self.gid()))
            .unwrap_or_else(|e| panic!("chown {}: {e}", path.display()));
        if meta.is_dir() {
            for entry in fs::read_dir(&path).unwrap_or_else(|e| panic!("listing {}: {e}", path.display())) {
                self.give_tree(entry.expect("directory entry").path());
            }
        }
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
            let mut removed = cleanup_label(mode, &self.label());
            removed.extend(super::api::cleanup_state_volumes_under(mode, &self.root));
            if !removed.is_empty() {
                println!("cleanup of {} removed: {removed:?}", self.id);
            }
        }
        for dir in [self.root.clone(), self.ram_runtime_dir()] {
            if var("AGS_TEST_KEEP").is_some() {
                loud(&format!("AGS_TEST_KEEP: kept {}", dir.display()));
            } else if let Err(e) = fs::remove_dir_all(&dir) {
                loud(&format!("WARNING: removing {}: {e}", dir.display()));
            }
        }
    }
}

/// Clock ticks since boot now (`/proc/uptime` in USER_HZ, 100 on Linux), rounded down.
fn ticks_since_boot() -> u64 {
    let uptime = fs::read_to_string("/proc/uptime").expect("reading /proc/uptime");
    let secs = uptime.split_whitespace().next().expect("the uptime");
    let (whole, frac) = secs.split_once('.').unwrap_or((secs, "0"));
    let frac: String = frac.chars().chain(std::iter::repeat('0')).take(2).collect();
    whole.parse::<u64>().expect("whole seconds") * 100 + frac.parse::<u64>().expect("hundredths")
}
