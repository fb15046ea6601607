//! Stage 2 (run): private execution copies of approved entrypoint bytes.
//!
//! Input: [`PreparedHook`]s (declaration, bytes read once, approval hash) and the approval store
//! directory. Output: per phase an [`ExecDir`], `<store>/ags-hook-exec-<pid>-<random>/`, holding
//! `0700` files `<basename>` with exactly the approved bytes, re-hashed from disk before each use.
//! I/O: creates, reads and removes that directory; never executes anything (only `runner` spawns).
//!
//! Copies live in the approval store (owner-only, normally under `~/.local/state`), not in the
//! system temporary directory, so a `noexec` `/tmp` does not matter. The directory is removed
//! when the [`ExecDir`] is dropped at the end of the phase, on every path (success, failure,
//! timeout, cancellation); [`sweep_stale`] removes what a crashed `ags` left behind.
//!
//! One directory per phase rather than per hook: each directory costs an inode allocation and an
//! `rmdir`, which took milliseconds on a busy ext4 journal in measurements.

use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::fs::{self, DirBuilder, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use nix::errno::Errno;
use nix::sys::signal::kill;
use nix::unistd::Pid;

use super::entrypoint::PreparedHook;
use super::trust::approval_hash;

/// Name prefix of execution-copy directories.
pub const EXEC_DIR_PREFIX: &str = "ags-hook-exec-";

/// The execution copy could not be made or verified.
#[derive(Debug, thiserror::Error)]
pub enum ExecCopyError {
    /// Creating or writing the copy failed.
    #[error("hook {name}: cannot create its private execution copy {}: {source}; the approval store must be writable", path.display())]
    Write {
        /// Hook name.
        name: String,
        /// The file or directory involved.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// What is on disk is not what was approved (fail closed).
    #[error("hook {name}: execution copy {} does not match the approved hash {expected} (found {found}); refusing to run it", path.display())]
    Mismatch {
        /// Hook name.
        name: String,
        /// The copy.
        path: PathBuf,
        /// The approved hash.
        expected: String,
        /// The hash of the declaration with the copy's bytes (or a description).
        found: String,
    },
}

/// The private execution directory of one prepare phase, `<store>/ags-hook-exec-<pid>-<random>`:
/// created at the first copy, removed with everything in it on drop. Each distinct approved hash
/// gets one copy, `<dir>/<basename>` (or `<dir>/alt-N/<basename>` when another hook of the phase
/// already uses that basename); hooks with the same hash share it.
#[derive(Debug)]
pub struct ExecDir {
    dir: PathBuf,
    state: Mutex<DirState>,
}

#[derive(Debug, Default)]
struct DirState {
    created: bool,
    by_hash: HashMap<String, PathBuf>,
    names: HashSet<OsString>,
}

impl ExecDir {
    /// Choose a fresh directory name inside `store_dir` (nothing is created yet).
    pub fn new(store_dir: &Path) -> Self {
        let pid = std::process::id();
        let start = crate::procfs::process_start_time(pid).unwrap_or(0);
        let name = format!("{EXEC_DIR_PREFIX}{pid}-{start}-{}", random_hex());
        Self {
            dir: store_dir.join(name),
            state: Mutex::default(),
        }
    }

    /// The directory (it exists once a copy was made).
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The path of a private 0700 copy of `hook`'s approved bytes, written on first use for
    /// its hash and re-read and re-hashed against `hook.hash` on every call (fail closed).
    pub fn copy(&self, hook: &PreparedHook) -> Result<PathBuf, ExecCopyError> {
        let program = self.materialize(hook)?;
        verify(&program, hook)?;
        Ok(program)
    }

    fn materialize(&self, hook: &PreparedHook) -> Result<PathBuf, ExecCopyError> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(program) = state.by_hash.get(&hook.hash) {
            return Ok(program.clone());
        }
        let write_err = |path: &Path| {
            let (name, path) = (hook.decl.name.clone(), path.to_path_buf());
            move |source| ExecCopyError::Write { name, path, source }
        };
        if !state.created {
            private_dir(&self.dir).map_err(write_err(&self.dir))?;
            state.created = true;
        }
        let base = hook.decl.executable.file_name().unwrap_or(OsStr::new("hook"));
        let parent = if state.names.insert(base.to_owned()) {
            self.dir.clone()
        } else {
            let alt = (1..)
                .map(|k| OsString::from(format!("alt-{k}")))
                .find(|n| !state.names.contains(n))
                .expect("an unused name exists");
            state.names.insert(alt.clone());
            let sub = self.dir.join(alt);
            private_dir(&sub).map_err(write_err(&sub))?;
            sub
        };
        let program = parent.join(base);
        write_private(&program, &hook.entrypoint).map_err(write_err(&program))?;
        state.by_hash.insert(hook.hash.clone(), program.clone());
        Ok(program)
    }
}

impl Drop for ExecDir {
    fn drop(&mut self) {
        let created = self.state.get_mut().map(|s| s.created).unwrap_or(true);
        if !created {
            return;
        }
        if let Err(e) = fs::remove_dir_all(&self.dir)
            && e.kind() != io::ErrorKind::NotFound
        {
            eprintln!(
                "ags: could not remove execution copies {}: {e}",
                self.dir.display()
            );
        }
    }
}

/// Re-read `program` and check that, with the declaration, it hashes to the approved hash.
fn verify(program: &Path, hook: &PreparedHook) -> Result<(), ExecCopyError> {
    let mismatch = |found: String| ExecCopyError::Mismatch {
        name: hook.decl.name.clone(),
        path: program.into(),
        expected: hook.hash.clone(),
        found,
    };
    let read_err = |source| ExecCopyError::Write {
        name: hook.decl.name.clone(),
        path: program.into(),
        source,
    };
    let mut file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(program)
        .map_err(read_err)?;
    let meta = file.metadata().map_err(read_err)?;
    if !meta.is_file() || meta.mode() & 0o7777 != 0o700 {
        return Err(mismatch(format!("a file of mode {:04o}", meta.mode() & 0o7777)));
    }
    let mut bytes = Vec::with_capacity(hook.entrypoint.len());
    file.read_to_end(&mut bytes).map_err(read_err)?;
    let found = approval_hash(&hook.decl, &bytes);
    if found != hook.hash {
        return Err(mismatch(found));
    }
    Ok(())
}

fn private_dir(dir: &Path) -> io::Result<()> {
    DirBuilder::new().mode(0o700).create(dir)
}

/// Create `path` (0700, never following a symlink) holding `bytes`, with no fork in between.
fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let _no_fork = crate::process::no_fork_guard();
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o700)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    // A partial copy is removed, so a retry reports the real error rather than "file exists".
    file.write_all(bytes).inspect_err(|_| {
        let _ = fs::remove_file(path);
    })
    // `file` is closed here, before the lock is released
}

fn random_hex() -> String {
    let mut buf = [0u8; 8];
    getrandom::fill(&mut buf).expect("the OS random number generator is available");
    hex::encode(buf)
}

/// Remove execution directories whose creating `ags` is gone, after killing the hook process
/// groups recorded in them (an `ags` killed by SIGKILL cannot kill its hooks itself).
///
/// Directories named `ags-hook-exec-<pid>-<start>-<random>` are judged by pid and start time
/// (pid reuse is detected); older `ags-hook-exec-<pid>-<random>` names only once they are older
/// than `min_age` and no process has that pid. Returns how many were removed; failures are
/// collected, not fatal (call this at startup).
pub fn sweep_stale(store_dir: &Path, min_age: Duration) -> (usize, Vec<io::Error>) {
    let mut removed = 0;
    let mut errors = Vec::new();
    let entries = match fs::read_dir(store_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return (0, errors),
        Err(e) => return (0, vec![e]),
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(creator) = entry.file_name().to_str().and_then(creator) else {
            continue;
        };
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        let old_enough = || {
            meta.modified()
                .ok()
                .and_then(|m| SystemTime::now().duration_since(m).ok())
                .is_some_and(|age| age >= min_age)
        };
        let gone = match creator {
            Creator::Exact { pid, start } => !crate::procfs::alive(pid, start),
            Creator::Pid(pid) => old_enough() && !process_exists(pid),
        };
        if !meta.is_dir() || !gone {
            continue;
        }
        kill_recorded_groups(&path);
        match fs::remove_dir_all(&path) {
            Ok(()) => removed += 1,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => errors.push(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
        }
    }
    (removed, errors)
}

/// Who created an execution directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Creator {
    /// `<pid>-<start>-<random>`.
    Exact { pid: u32, start: u64 },
    /// `<pid>-<random>` (older name).
    Pid(i32),
}

/// Parse `ags-hook-exec-<pid>-<start>-<random>` or `ags-hook-exec-<pid>-<random>`.
fn creator(name: &str) -> Option<Creator> {
    let rest = name.strip_prefix(EXEC_DIR_PREFIX)?;
    let parts: Vec<&str> = rest.split('-').collect();
    match parts.as_slice() {
        [pid, start, random] if !random.is_empty() => Some(Creator::Exact {
            pid: pid.parse().ok().filter(|p| *p > 0)?,
            start: start.parse().ok()?,
        }),
        [pid, random] if !random.is_empty() => Some(Creator::Pid(pid.parse().ok().filter(|p| *p > 0)?)),
        _ => None,
    }
}

/// Directory (inside an execution directory) recording the hooks' process groups.
const GROUPS_DIR: &str = "groups";

impl ExecDir {
    /// Record that a hook's process group `pgid` (led by the hook, started at its start time)
    /// belongs to this phase, so a sweep can kill it if `ags` dies without doing so.
    pub fn record_group(&self, pgid: u32) {
        let Some(start) = crate::procfs::process_start_time(pgid) else {
            return;
        };
        let dir = self.dir.join(GROUPS_DIR);
        let _ = fs::DirBuilder::new().mode(0o700).create(&dir);
        let _ = fs::write(dir.join(format!("{pgid}-{start}")), b"");
    }
}

/// SIGKILL the recorded groups of a dead phase. A group whose leader still runs with the
/// recorded start time is ours; a group whose leader is gone may still have members, and its
/// id cannot have been reused while they live; a leader pid now running with another start
/// time means the group is long gone and the pid belongs to someone else.
fn kill_recorded_groups(exec_dir: &Path) {
    let Ok(entries) = fs::read_dir(exec_dir.join(GROUPS_DIR)) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some((pgid, start)) = name.to_str().and_then(|n| n.split_once('-')) else {
            continue;
        };
        let (Ok(pgid), Ok(start)) = (pgid.parse::<u32>(), start.parse::<u64>()) else {
            continue;
        };
        let ours = match crate::procfs::process_start_time(pgid) {
            Some(now) => now == start,
            None => true,
        };
        if ours && pgid > 1 {
            let _ = nix::sys::signal::killpg(Pid::from_raw(pgid as i32), nix::sys::signal::Signal::SIGKILL);
        }
    }
}

fn process_exists(pid: i32) -> bool {
    pid == std::process::id() as i32 || !matches!(kill(Pid::from_raw(pid), None), Err(Errno::ESRCH))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{HookDecl, HookScope};

    fn hook(exe: &str, bytes: &[u8]) -> PreparedHook {
        let decl = HookDecl {
            event: crate::config::HookEvent::Prepare,
            name: "h".into(),
            executable: exe.into(),
            args: vec![],
            timeout_seconds: 30,
            scope: HookScope::Global,
            config_path: "/c.toml".into(),
        };
        let hash = approval_hash(&decl, bytes);
        PreparedHook {
            decl,
            entrypoint: bytes.to_vec().into(),
            hash,
        }
    }

    #[test]
    fn copies_keep_basename_share_by_hash_and_vanish_on_drop() {
        let store = tempfile::tempdir().unwrap();
        let dir = ExecDir::new(store.path());
        let (a, b) = (hook("/x/prep", b"one"), hook("/y/prep", b"two"));
        let pa = dir.copy(&a).unwrap();
        assert_eq!(pa, dir.path().join("prep"));
        assert_eq!(fs::read(&pa).unwrap(), b"one");
        assert_eq!(fs::metadata(&pa).unwrap().mode() & 0o7777, 0o700);
        assert_eq!(dir.copy(&a).unwrap(), pa, "same hash, same copy");
        let pb = dir.copy(&b).unwrap();
        assert_eq!(pb, dir.path().join("alt-1/prep"));
        let path = dir.path().to_path_buf();
        drop(dir);
        assert!(!path.exists());
    }

    #[test]
    fn tampered_copy_fails_closed() {
        let store = tempfile::tempdir().unwrap();
        let dir = ExecDir::new(store.path());
        let a = hook("/x/prep", b"one");
        let pa = dir.copy(&a).unwrap();
        fs::write(&pa, b"evil").unwrap();
        let err = dir.copy(&a).unwrap_err().to_string();
        assert!(err.contains("does not match the approved hash"), "{err}");
    }

    #[test]
    fn creator_parses_only_our_names() {
        assert_eq!(creator("ags-hook-exec-123-abcd"), Some(Creator::Pid(123)));
        assert_eq!(
            creator("ags-hook-exec-123-456-abcd"),
            Some(Creator::Exact { pid: 123, start: 456 })
        );
        assert_eq!(creator("ags-hook-exec-123-"), None);
        assert_eq!(creator("ags-hook-exec-x-ab"), None);
        assert_eq!(creator("ags-hook-exec-0-ab"), None);
        assert_eq!(creator(&"a".repeat(64)), None);
    }

    #[test]
    fn sweep_removes_dead_creators_only() {
        let store = tempfile::tempdir().unwrap();
        let dead = store.path().join(format!("{EXEC_DIR_PREFIX}{}-00", i32::MAX));
        let ours = store
            .path()
            .join(format!("{EXEC_DIR_PREFIX}{}-00", std::process::id()));
        let other = store.path().join("not-a-copy");
        for d in [&dead, &ours, &other] {
            fs::create_dir(d).unwrap();
            fs::write(d.join("f"), b"x").unwrap();
        }
        let (removed, errors) = sweep_stale(store.path(), Duration::ZERO);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(removed, 1);
        assert!(!dead.exists() && ours.exists() && other.exists());
        fs::create_dir(&dead).unwrap();
        let (removed, _) = sweep_stale(store.path(), Duration::from_secs(3600));
        assert_eq!(removed, 0, "too young to sweep");
    }
}
