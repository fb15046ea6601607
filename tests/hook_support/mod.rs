//! Shared helpers of the hook integration tests: a private state store in a temp dir, fixture
//! declarations, a capturing stderr sink, and process/exec-copy observations.

#![allow(dead_code)]

use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ags::config::{HookDecl, HookScope, Paths};
use ags::hooks::entrypoint::PreparedHook;
use ags::hooks::exec_copy::EXEC_DIR_PREFIX;
use ags::hooks::runner::{HookRun, Limits, RunError, RunSetup, StderrSink, interrupt_channel, run_hooks};
use ags::hooks::trust::{ApprovalRecord, TrustStore};

/// A temp HOME/XDG layout with an opened approval store and a workdir.
pub struct TestEnv {
    pub tmp: tempfile::TempDir,
    /// `$XDG_RUNTIME_DIR`: RAM-backed (in `/dev/shm`), so execution copies go to its `ags/`.
    pub runtime: tempfile::TempDir,
    pub paths: Paths,
    pub workdir: PathBuf,
    pub store: TrustStore,
}

impl TestEnv {
    pub fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let runtime = tempfile::tempdir_in("/dev/shm").unwrap();
        let paths = Paths {
            home: root.join("home"),
            config_home: root.join("config"),
            state_home: root.join("state"),
            cache_home: root.join("cache"),
            runtime_dir: Some(runtime.path().to_path_buf()),
        };
        let workdir = root.join("work");
        std::fs::create_dir_all(&workdir).unwrap();
        let store = TrustStore::open(&paths, Some(&workdir)).unwrap();
        Self {
            tmp,
            runtime,
            paths,
            workdir,
            store,
        }
    }

    /// A global declaration of fixture `fixture` named `name`.
    pub fn decl(&self, name: &str, fixture: &str, args: &[&str], timeout_seconds: u32) -> HookDecl {
        HookDecl {
            event: ags::config::HookEvent::Prepare,
            name: name.into(),
            executable: fixture_path(fixture),
            args: args.iter().map(|a| a.to_string()).collect(),
            timeout_seconds,
            scope: HookScope::Global,
            config_path: self.paths.global_config(),
        }
    }

    /// Load and approve.
    pub fn approved(&self, decl: HookDecl) -> PreparedHook {
        let hook = PreparedHook::load(decl).unwrap();
        self.store
            .approve(&hook.hash, &ApprovalRecord::new(&hook.decl))
            .unwrap();
        hook
    }

    /// A path in the temp dir for a pid file.
    pub fn file(&self, name: &str) -> String {
        self.tmp.path().join(name).to_string_lossy().into_owned()
    }

    pub fn setup(&self, limits: Limits) -> (RunSetup, Captured) {
        let captured = Captured::default();
        let mut setup = RunSetup::new(
            self.store.clone(),
            self.workdir.clone(),
            br#"{"version":1,"event":"prepare"}"#.to_vec().into(),
        );
        setup.limits = limits;
        setup.stderr = captured.sink();
        (setup, captured)
    }

    /// Run with default limits, parsing stdout as text; asserts no execution copy is left.
    pub async fn run(&self, hooks: Vec<PreparedHook>) -> (Result<Vec<HookRun<String>>, RunError>, Captured) {
        self.run_with(hooks, Limits::default()).await
    }

    pub async fn run_with(
        &self,
        hooks: Vec<PreparedHook>,
        limits: Limits,
    ) -> (Result<Vec<HookRun<String>>, RunError>, Captured) {
        let (setup, captured) = self.setup(limits);
        let result = run_hooks(hooks, setup, text).await;
        assert_eq!(
            self.exec_dirs(),
            Vec::<PathBuf>::new(),
            "execution copies left behind"
        );
        (result, captured)
    }

    /// Run, triggering the interrupt once `ready` holds.
    pub async fn run_interrupted(
        &self,
        hooks: Vec<PreparedHook>,
        signal: i32,
        ready: impl Fn() -> bool + Send + 'static,
    ) -> Result<Vec<HookRun<String>>, RunError> {
        let (mut setup, _captured) = self.setup(Limits::default());
        let (handle, interrupt) = interrupt_channel();
        setup.interrupt = interrupt;
        tokio::spawn(async move {
            let start = Instant::now();
            while !ready() && start.elapsed() < Duration::from_secs(120) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            handle.trigger(signal);
        });
        let result = run_hooks(hooks, setup, text).await;
        assert_eq!(
            self.exec_dirs(),
            Vec::<PathBuf>::new(),
            "execution copies left behind"
        );
        result
    }

    /// Execution directories in the approval store and in the RAM-backed runtime directory.
    pub fn exec_dirs(&self) -> Vec<PathBuf> {
        [self.store.dir().to_path_buf(), self.paths.stage_root()]
            .iter()
            .flat_map(|dir| std::fs::read_dir(dir).into_iter().flatten())
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with(EXEC_DIR_PREFIX)
            })
            .collect()
    }
}

pub fn text(_: &PreparedHook, stdout: &[u8]) -> Result<String, Infallible> {
    Ok(String::from_utf8_lossy(stdout).into_owned())
}

pub fn fixture_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hooks")
        .join(name)
}

/// Stderr lines the runner emitted.
#[derive(Clone, Default)]
pub struct Captured(Arc<Mutex<Vec<String>>>);

impl Captured {
    pub fn sink(&self) -> StderrSink {
        let lines = self.0.clone();
        Arc::new(move |l: &str| lines.lock().unwrap().push(l.to_string()))
    }

    pub fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

/// Pids written by a fixture into `file` (empty if it never ran that far).
pub fn pids_in(file: &str) -> Vec<i32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// Alive = exists and is not a zombie (zombies of killed grandchildren wait for the host's reaper).
pub fn is_alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => false,
        Ok(stat) => {
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.trim_start().chars().next());
            !matches!(state, Some('Z' | 'X') | None)
        }
    }
}

/// Wait (generously) until `pid` is gone; SIGKILL delivery to group members is asynchronous.
pub fn assert_gone(pid: i32) {
    let start = Instant::now();
    while is_alive(pid) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "process {pid} survived"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Poll until `file` holds at least `n` pids.
pub fn wait_for_pids(file: &str, n: usize) -> impl Fn() -> bool + Send + 'static {
    let file = file.to_string();
    move || pids_in(&file).len() >= n
}
