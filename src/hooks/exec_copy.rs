//! Stage 2 (run): private execution copies of approved entrypoint bytes.
//!
//! Input: [`PreparedHook`]s (declaration, bytes read once, approval hash) and the directory to
//! put copies in ([`exec_root`]). Output: per phase an [`ExecDir`], `<root>/ags-hook-exec-<pid>-<start>-<random>/`,
//! holding `0700` files `<basename>` with exactly the approved bytes: the bytes are hashed (with
//! the declaration) against the approved hash in the same pass that writes them, and before each
//! use the file is checked to still be the one written (same inode, size, mode and times).
//! I/O: creates, checks and removes that directory; never executes anything (only `runner` spawns).
//!
//! Copies live in an owner-only directory that allows execution ([`exec_root`]): the RAM-backed
//! `$XDG_RUNTIME_DIR/ags` or `/dev/shm/ags-<uid>` when one is usable (creating 64 files on
//! ext4 took ~6 ms of a 40 ms phase: inode allocation scans recently deleted inodes), else the
//! approval store (normally under `~/.local/state`), also when the copies cannot be written in
//! RAM ([`write_copies`]: another user may fill `/dev/shm`); never the system temporary
//! directory, so a `noexec` `/tmp` does not matter. The directory is removed when the [`ExecDir`] is dropped
//! at the end of the phase, on every path (success, failure, timeout, cancellation);
//! [`sweep_stale`] removes what a crashed `ags` left behind.
//!
//! One directory per phase rather than per hook: each directory costs an inode allocation and an
//! `rmdir`, which took milliseconds on a busy ext4 journal in measurements.

use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::fs::{self, DirBuilder, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use super::entrypoint::PreparedHook;
use super::trust::approval_hash;

mod sweep;

pub use sweep::sweep_stale;

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

/// Where a phase's execution directory goes: the first of `ram_roots` whose file system keeps
/// its content in RAM (tmpfs, ramfs) and is not mounted `noexec`, once it is (or was just made)
/// an owner-only directory (`fsutil::ensure_private_dir`: a symlink, a foreign owner or loose
/// permissions disqualify it) that no other user can replace (`fsutil::check_ancestors_private`,
/// checked before anything is created and again after: root's `ags` run after `su` still has the
/// other user's `$XDG_RUNTIME_DIR`, who could swap root's directory there for a symlink and the
/// copy for its own file between the spawn-time check and the exec); otherwise `store_dir`, the
/// approval store, which the caller has already checked. Blocking (a few metadata calls).
pub fn exec_root(ram_roots: &[PathBuf], store_dir: &Path) -> PathBuf {
    // Judged before anything is created (by the nearest existing ancestor), and again once the
    // directory exists: a mount or a swapped directory may sit exactly there.
    let fit = |root: &Path| crate::fsutil::ram_root_problem(root, true).is_none();
    let usable = |root: &Path| fit(root) && crate::fsutil::ensure_private_dir(root).is_ok() && fit(root);
    ram_roots
        .iter()
        .find(|root| usable(root))
        .cloned()
        .unwrap_or_else(|| store_dir.to_path_buf())
}

/// A phase's execution directory in `root` ([`exec_root`]) with the copies of `hooks` written
/// (see [`ExecDir::write`]). When writing there fails (another local user may fill `/dev/shm`:
/// a tmpfs has no per-user limit, and the copies then failed with ENOSPC where the approval
/// store had room), the directory is removed and the copies are written in a new one in
/// `store_dir` instead. A failure left over is reported by that hook's own copy step. Once
/// `stop()` holds (the phase was interrupted) no further copy is started. Blocking.
pub fn write_copies(
    hooks: &[PreparedHook],
    root: &Path,
    store_dir: &Path,
    stop: &dyn Fn() -> bool,
) -> ExecDir {
    let write = |dir: &ExecDir| {
        hooks
            .iter()
            .take_while(|_| !stop())
            .try_for_each(|h| dir.write(h))
    };
    let dir = ExecDir::new(root);
    match write(&dir) {
        Err(ExecCopyError::Write { .. }) if root != store_dir => {
            drop(dir);
            let dir = ExecDir::new(store_dir);
            let _ = write(&dir);
            dir
        }
        _ => dir,
    }
}

/// The private execution directory of one prepare phase, `<root>/ags-hook-exec-<pid>-<start>-<random>`:
/// created at the first copy, removed with everything in it on drop. Each distinct approved hash
/// gets one copy, `<dir>/<basename>` (or `<dir>/alt-N/<basename>` when another hook of the phase
/// already uses that basename); hooks with the same hash share it.
#[derive(Debug)]
pub struct ExecDir {
    dir: PathBuf,
    state: Mutex<DirState>,
    /// The open `groups` file of [`sweep`], once a group was recorded.
    groups: Mutex<Option<fs::File>>,
}

#[derive(Debug, Default)]
struct DirState {
    created: bool,
    by_hash: HashMap<String, Written>,
    names: HashSet<OsString>,
}

/// A copy as `ags` wrote it: where, and the identity of the file (from the descriptor it wrote).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Written {
    path: PathBuf,
    id: FileId,
}

/// What changes when a file is replaced, truncated, extended, rewritten (the times; a process
/// may reset the modification time, not the change time) or has its mode changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileId {
    dev: u64,
    ino: u64,
    len: u64,
    mode: u32,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl FileId {
    fn of(meta: &fs::Metadata) -> Self {
        Self {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mode: meta.mode(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }
}

impl ExecDir {
    /// Choose a fresh directory name inside `root` ([`exec_root`]; nothing is created yet).
    pub fn new(root: &Path) -> Self {
        let pid = std::process::id();
        let start = crate::procfs::process_start_time(pid).unwrap_or(0);
        let name = format!("{EXEC_DIR_PREFIX}{pid}-{start}-{}", random_hex());
        Self {
            dir: root.join(name),
            state: Mutex::default(),
            groups: Mutex::default(),
        }
    }

    /// The directory (it exists once a copy was made).
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The path of a private 0700 copy of `hook`'s approved bytes: written on first use for its
    /// hash (from bytes that hash to `hook.hash`, checked in the same pass), and checked on every
    /// call to still be the file written (fail closed).
    pub fn copy(&self, hook: &PreparedHook) -> Result<PathBuf, ExecCopyError> {
        let written = self.materialize(hook)?;
        verify(&written, hook)?;
        Ok(written.path)
    }

    /// Write `hook`'s copy now if its hash has none yet (the runner does this for every hook
    /// before the first spawn, see `runner::run_hooks`).
    pub fn write(&self, hook: &PreparedHook) -> Result<(), ExecCopyError> {
        self.materialize(hook).map(drop)
    }

    fn materialize(&self, hook: &PreparedHook) -> Result<Written, ExecCopyError> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(written) = state.by_hash.get(&hook.hash) {
            return Ok(written.clone());
        }
        // The bytes about to be written are the approved ones: hashed here, in the pass that
        // writes them, whatever the caller's `PreparedHook` claims.
        let found = approval_hash(&hook.decl, &hook.entrypoint);
        if found != hook.hash {
            return Err(mismatch(hook, &self.dir, found));
        }
        let write_err = |path: &Path| {
            let (name, path) = (hook.decl.name.clone(), path.to_path_buf());
            move |source| ExecCopyError::Write { name, path, source }
        };
        if !state.created {
            private_dir(&self.dir).map_err(write_err(&self.dir))?;
            state.created = true;
            // The phase's sweep record lives next to the copies: a hook whose file is named
            // `groups` must not get that name, or `record_group` appends to its copy.
            state.names.insert(OsString::from(sweep::GROUPS));
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
        let path = parent.join(base);
        let id = write_private(&path, &hook.entrypoint).map_err(|e| match e.kind() {
            io::ErrorKind::InvalidData => mismatch(hook, &path, CHANGED_WHILE_WRITTEN.into()),
            _ => write_err(&path)(e),
        })?;
        let written = Written { path, id };
        state.by_hash.insert(hook.hash.clone(), written.clone());
        Ok(written)
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

/// Check that the copy is still the file `ags` wrote: a regular file (never followed through a
/// symlink) with the same inode, size, mode and times. Its bytes were hashed as they were written;
/// any later write, truncation, replacement or `chmod` changes one of these.
fn verify(written: &Written, hook: &PreparedHook) -> Result<(), ExecCopyError> {
    let program = &written.path;
    let meta = fs::symlink_metadata(program).map_err(|source| ExecCopyError::Write {
        name: hook.decl.name.clone(),
        path: program.clone(),
        source,
    })?;
    if !meta.is_file() || meta.mode() & 0o7777 != 0o700 {
        let found = format!("a file of mode {:04o}", meta.mode() & 0o7777);
        return Err(mismatch(hook, program, found));
    }
    if FileId::of(&meta) != written.id {
        let found = "a file changed since ags wrote it".to_string();
        return Err(mismatch(hook, program, found));
    }
    Ok(())
}

fn mismatch(hook: &PreparedHook, path: &Path, found: String) -> ExecCopyError {
    ExecCopyError::Mismatch {
        name: hook.decl.name.clone(),
        path: path.into(),
        expected: hook.hash.clone(),
        found,
    }
}

fn private_dir(dir: &Path) -> io::Result<()> {
    DirBuilder::new().mode(0o700).create(dir)
}

/// Create `path` (0700, never following a symlink) holding `bytes`, with no fork in between.
/// Returns the identity of the file written (from its descriptor).
fn write_private(path: &Path, bytes: &[u8]) -> io::Result<FileId> {
    let _no_fork = crate::process::no_fork_guard();
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o700)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    // A partial copy is removed, so a retry reports the real error rather than "file exists".
    let written = file
        .write_all(bytes)
        .and_then(|()| identity_of_unchanged(&file, bytes));
    written.inspect_err(|_| {
        let _ = fs::remove_file(path);
    })
    // `file` is closed here, before the lock is released
}

/// The identity of `file`, taken first, and then its content read back equal to `bytes`: a
/// change made before the identity was taken (another process of the user that opened the new
/// file and wrote to it right after `ags` did) is seen here; one made after it changes the times
/// that [`verify`] compares. (Not a second hash: the bytes are compared with the ones hashed.)
fn identity_of_unchanged(file: &fs::File, bytes: &[u8]) -> io::Result<FileId> {
    let id = FileId::of(&file.metadata()?);
    let mut back = vec![0u8; bytes.len()];
    let same = id.len == bytes.len() as u64 && file.read_exact_at(&mut back, 0).is_ok() && back == bytes;
    if !same {
        return Err(io::Error::new(io::ErrorKind::InvalidData, CHANGED_WHILE_WRITTEN));
    }
    Ok(id)
}

const CHANGED_WHILE_WRITTEN: &str = "a file changed by another process while ags wrote it";

fn random_hex() -> String {
    let mut buf = [0u8; 8];
    getrandom::fill(&mut buf).expect("the OS random number generator is available");
    hex::encode(buf)
}

#[cfg(test)]
pub(super) mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;
    use crate::config::{HookDecl, HookScope};

    pub(super) fn hook(exe: &str, bytes: &[u8]) -> PreparedHook {
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
    fn copies_that_cannot_be_written_in_the_ram_root_go_to_the_store() {
        let store = tempfile::tempdir().unwrap();
        let full = store.path().join("not-a-directory");
        fs::write(&full, b"").unwrap();
        let a = hook("/x/prep", b"one");
        let dir = write_copies(std::slice::from_ref(&a), &full, store.path(), &|| false);
        assert_eq!(dir.path().parent(), Some(store.path()));
        assert_eq!(fs::read(dir.copy(&a).unwrap()).unwrap(), b"one");
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
    fn bytes_not_matching_the_hash_are_never_written() {
        let store = tempfile::tempdir().unwrap();
        let dir = ExecDir::new(store.path());
        let mut a = hook("/x/prep", b"one");
        a.entrypoint = b"evil".to_vec().into();
        let err = dir.copy(&a).unwrap_err().to_string();
        assert!(err.contains("does not match the approved hash"), "{err}");
        assert!(!dir.path().exists(), "nothing written");
    }

    #[test]
    fn replaced_or_rechmodded_copies_fail_closed() {
        let store = tempfile::tempdir().unwrap();
        let dir = ExecDir::new(store.path());
        let a = hook("/x/prep", b"one");
        let pa = dir.copy(&a).unwrap();
        let other = dir.path().join("other");
        fs::write(&other, b"one").unwrap();
        fs::set_permissions(&other, fs::Permissions::from_mode(0o700)).unwrap();
        fs::rename(&other, &pa).unwrap();
        let err = dir.copy(&a).unwrap_err().to_string();
        assert!(
            err.contains("changed since ags wrote it"),
            "same bytes, another file: {err}"
        );
        let b = hook("/x/other", b"two");
        let pb = dir.copy(&b).unwrap();
        fs::set_permissions(&pb, fs::Permissions::from_mode(0o755)).unwrap();
        let err = dir.copy(&b).unwrap_err().to_string();
        assert!(err.contains("mode 0755"), "{err}");
    }

    /// The race an inotify watcher of the user won about half the time on a loaded machine: it
    /// opened the new copy and rewrote it (same length) right after `ags`'s write, before `ags`
    /// took the identity, so the spawn-time check saw the rewritten file as the one written.
    #[test]
    fn a_copy_rewritten_before_its_identity_was_taken_is_refused() {
        let store = tempfile::tempdir().unwrap();
        let path = store.path().join("prep");
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .unwrap();
        file.write_all(b"one").unwrap();
        assert!(identity_of_unchanged(&file, b"one").is_ok());
        let other_writer = || OpenOptions::new().write(true).open(&path).unwrap();
        other_writer().write_all(b"bad").unwrap();
        let err = identity_of_unchanged(&file, b"one").unwrap_err();
        assert_eq!(err.to_string(), CHANGED_WHILE_WRITTEN);
        other_writer().write_all(b"bad\nextra").unwrap();
        assert!(identity_of_unchanged(&file, b"bad").is_err(), "a longer file");
    }

    /// The attack: a hook whose file is named like the phase's sweep record (`groups`). The
    /// records of the hooks started in the phase were appended to its copy (a shell running it
    /// then executed `PGID-START` lines it had not been approved with; a later spawn of it failed).
    #[test]
    fn a_hook_named_like_the_sweep_record_keeps_its_own_copy() {
        let store = tempfile::tempdir().unwrap();
        let dir = ExecDir::new(store.path());
        let g = hook("/x/groups", b"#!/bin/sh\necho '{}'\n");
        let pg = dir.copy(&g).unwrap();
        assert_eq!(pg, dir.path().join("alt-1/groups"));
        dir.record_group(i32::MAX as u32 - 1, Some(7));
        assert_eq!(fs::read(&pg).unwrap(), &*g.entrypoint, "the copy is untouched");
        assert_eq!(dir.copy(&g).unwrap(), pg, "and still verifies");
        assert_eq!(
            fs::read(dir.path().join("groups")).unwrap(),
            format!("{}-7\n", i32::MAX as u32 - 1).as_bytes()
        );
    }
}
