//! Stage 2 (run): private execution copies of approved entrypoint bytes.
//!
//! Input: a [`PreparedHook`] (declaration, bytes read once, approval hash) and the approval store
//! directory. Output: an [`ExecCopy`], a `0700` file `<store>/ags-hook-exec-<pid>-<random>/<basename>`
//! holding exactly the approved bytes, re-hashed from disk before use. I/O: creates, reads and
//! removes that directory; never executes anything (only `runner` spawns).
//!
//! Copies live in the approval store (owner-only, normally under `~/.local/state`), not in the
//! system temporary directory, so a `noexec` `/tmp` does not matter. The directory is removed
//! when the [`ExecCopy`] is dropped, on every path (success, failure, timeout, cancellation);
//! [`sweep_stale`] removes what a crashed `ags` left behind.

use std::fs::{self, DirBuilder, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
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
    #[error("prepare hook {name}: cannot create its private execution copy {}: {source}; the approval store must be writable", path.display())]
    Write {
        /// Hook name.
        name: String,
        /// The file or directory involved.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// What is on disk is not what was approved (fail closed).
    #[error("prepare hook {name}: execution copy {} does not match the approved hash {expected} (found {found}); refusing to run it", path.display())]
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

/// A verified private copy; its directory is removed on drop.
#[derive(Debug)]
pub struct ExecCopy {
    dir: PathBuf,
    program: PathBuf,
}

impl ExecCopy {
    /// Write `hook`'s approved bytes into a fresh private directory inside `store_dir`, then
    /// re-read the copy and check that it hashes (with the declaration) to `hook.hash`.
    pub fn create(store_dir: &Path, hook: &PreparedHook) -> Result<Self, ExecCopyError> {
        let name = &hook.decl.name;
        let dir = store_dir.join(format!(
            "{EXEC_DIR_PREFIX}{}-{}",
            std::process::id(),
            random_hex()
        ));
        let write_err = |path: &Path| {
            let (name, path) = (name.clone(), path.to_path_buf());
            move |source| ExecCopyError::Write { name, path, source }
        };
        DirBuilder::new()
            .mode(0o700)
            .create(&dir)
            .map_err(write_err(&dir))?;
        // From here on the guard removes the directory, whatever happens.
        let copy = Self {
            program: dir.join(basename(&hook.decl.executable)),
            dir,
        };
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o700)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&copy.program)
            .map_err(write_err(&copy.program))?;
        file.write_all(&hook.entrypoint)
            .map_err(write_err(&copy.program))?;
        drop(file); // no writable descriptor may outlive this point (ETXTBSY on exec)
        copy.verify(hook)?;
        Ok(copy)
    }

    /// The file to execute (keeps the declared entrypoint's basename).
    pub fn program(&self) -> &Path {
        &self.program
    }

    /// The private directory holding the copy.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn verify(&self, hook: &PreparedHook) -> Result<(), ExecCopyError> {
        let mismatch = |found: String| ExecCopyError::Mismatch {
            name: hook.decl.name.clone(),
            path: self.program.clone(),
            expected: hook.hash.clone(),
            found,
        };
        let read_err = |source| ExecCopyError::Write {
            name: hook.decl.name.clone(),
            path: self.program.clone(),
            source,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&self.program)
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
}

impl Drop for ExecCopy {
    fn drop(&mut self) {
        if let Err(e) = fs::remove_dir_all(&self.dir)
            && e.kind() != io::ErrorKind::NotFound
        {
            eprintln!("ags: could not remove execution copy {}: {e}", self.dir.display());
        }
    }
}

fn basename(executable: &Path) -> &std::ffi::OsStr {
    executable.file_name().unwrap_or(std::ffi::OsStr::new("hook"))
}

fn random_hex() -> String {
    let mut buf = [0u8; 8];
    getrandom::fill(&mut buf).expect("the OS random number generator is available");
    hex::encode(buf)
}

/// Remove `ags-hook-exec-<pid>-*` directories in `store_dir` that are older than `min_age` and
/// whose creating process no longer exists. Returns how many were removed; failures to remove
/// are collected, not fatal (call this at startup).
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
        let Some(pid) = entry.file_name().to_str().and_then(creator_pid) else {
            continue;
        };
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        let old_enough = meta
            .modified()
            .ok()
            .and_then(|m| SystemTime::now().duration_since(m).ok())
            .is_some_and(|age| age >= min_age);
        if !meta.is_dir() || !old_enough || process_exists(pid) {
            continue;
        }
        match fs::remove_dir_all(&path) {
            Ok(()) => removed += 1,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => errors.push(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
        }
    }
    (removed, errors)
}

/// The pid encoded in `ags-hook-exec-<pid>-<random>`.
fn creator_pid(name: &str) -> Option<i32> {
    let rest = name.strip_prefix(EXEC_DIR_PREFIX)?;
    let (pid, random) = rest.split_once('-')?;
    (!random.is_empty()).then_some(())?;
    pid.parse().ok().filter(|p| *p > 0)
}

fn process_exists(pid: i32) -> bool {
    pid == std::process::id() as i32 || !matches!(kill(Pid::from_raw(pid), None), Err(Errno::ESRCH))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creator_pid_parses_only_our_names() {
        assert_eq!(creator_pid("ags-hook-exec-123-abcd"), Some(123));
        assert_eq!(creator_pid("ags-hook-exec-123-"), None);
        assert_eq!(creator_pid("ags-hook-exec-x-ab"), None);
        assert_eq!(creator_pid("ags-hook-exec-0-ab"), None);
        assert_eq!(creator_pid(&"a".repeat(64)), None);
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
