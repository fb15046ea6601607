//! Stage 2 (trust input): read a declared hook entrypoint's bytes exactly once.
//!
//! Input: a [`HookDecl`]. Output: the entrypoint bytes that approval hashes and that the runner
//! later executes from a private copy. I/O: opens and reads one file; never executes anything.
//!
//! Symlinks: the declared path is *followed*. A declared `./prepare` may legitimately be a
//! symlink into a checkout or a package. Approval binds the declaration (including the declared
//! path) and the entrypoint BYTES, and the runner executes a copy of exactly those bytes, so the
//! link target can neither change what was approved nor what runs.
//!
//! The file is opened with `O_NONBLOCK | O_CLOEXEC`, so a FIFO or device can never block `ags`.
//! Every check (type, size, executable bit) is made on the opened descriptor with `fstat`, and the
//! bytes are read from that same descriptor: there is no window between check and read. A cheap
//! `stat` before opening refuses non-regular files without even opening them.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use nix::unistd::{AccessFlags, access};

use super::trust::approval_hash;
use crate::config::{HookDecl, HookEvent};

/// Largest accepted entrypoint (64 MiB).
pub const MAX_ENTRYPOINT_BYTES: u64 = 64 * 1024 * 1024;

/// The entrypoint of a hook cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{event} hook {name}: {problem}")]
pub struct EntrypointError {
    /// The hook's event.
    pub event: HookEvent,
    /// Hook name.
    pub name: String,
    /// What is wrong with the declared entrypoint (named in each message).
    #[source]
    pub problem: EntrypointProblem,
}

/// Why an entrypoint cannot be used; `path` is the declared entrypoint.
#[derive(Debug, thiserror::Error)]
pub enum EntrypointProblem {
    /// Opening or inspecting the file failed.
    #[error("cannot open entrypoint {}: {source}; check the `executable` of this hook", path.display())]
    Open {
        /// Declared entrypoint.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// The entrypoint is a directory, FIFO, socket or device.
    #[error("entrypoint {} is a {kind}, not a regular file; declare an executable regular file", path.display())]
    NotRegular {
        /// Declared entrypoint.
        path: PathBuf,
        /// What it is instead.
        kind: &'static str,
    },
    /// No execute permission for the current user.
    #[error("entrypoint {} (mode {mode:04o}) is not executable by you; run `chmod u+x {}`", path.display(), path.display())]
    NotExecutable {
        /// Declared entrypoint.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// Larger than [`MAX_ENTRYPOINT_BYTES`].
    #[error("entrypoint {} has {size} bytes; at most {MAX_ENTRYPOINT_BYTES} (64 MiB) are accepted", path.display())]
    TooLarge {
        /// Declared entrypoint.
        path: PathBuf,
        /// Observed size (at least).
        size: u64,
    },
    /// Reading the opened file failed.
    #[error("reading entrypoint {} failed: {source}", path.display())]
    Read {
        /// Declared entrypoint.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
}

fn fail(decl: &HookDecl, problem: EntrypointProblem) -> EntrypointError {
    EntrypointError {
        event: decl.event,
        name: decl.name.clone(),
        problem,
    }
}

/// A declaration with its entrypoint bytes (read once) and their approval hash: what approval
/// checks and what the runner executes a copy of.
#[derive(Debug, Clone)]
pub struct PreparedHook {
    /// The declaration.
    pub decl: HookDecl,
    /// The entrypoint bytes as read by [`read_entrypoint`].
    pub entrypoint: Arc<[u8]>,
    /// [`approval_hash`] of `decl` and `entrypoint`.
    pub hash: String,
}

impl PreparedHook {
    /// Read and check `decl`'s entrypoint and compute its approval hash. Executes nothing.
    pub fn load(decl: HookDecl) -> Result<Self, EntrypointError> {
        let bytes = read_entrypoint(&decl)?;
        let hash = approval_hash(&decl, &bytes);
        Ok(Self {
            decl,
            entrypoint: bytes.into(),
            hash,
        })
    }
}

/// Read the bytes of `decl`'s entrypoint after checking that it is an executable regular file of
/// at most 64 MiB. Never blocks on FIFOs or devices.
pub fn read_entrypoint(decl: &HookDecl) -> Result<Vec<u8>, EntrypointError> {
    let path = decl.executable.as_path();
    let open_err = |source| {
        let path = path.into();
        fail(decl, EntrypointProblem::Open { path, source })
    };
    // Refuse special files before opening them (opening some devices has side effects).
    let pre = std::fs::metadata(path).map_err(open_err)?;
    check_metadata(decl, &pre)?;
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY)
        .open(path)
        .map_err(open_err)?;
    // The authoritative checks: on the descriptor we read from.
    let meta = file.metadata().map_err(open_err)?;
    check_metadata(decl, &meta)?;
    check_access(decl, path, &meta)?;
    read_capped(decl, file, meta.len())
}

fn check_metadata(decl: &HookDecl, meta: &Metadata) -> Result<(), EntrypointError> {
    let ft = meta.file_type();
    if !ft.is_file() {
        let kind = if ft.is_dir() {
            "directory"
        } else if ft.is_fifo() {
            "FIFO"
        } else if ft.is_socket() {
            "socket"
        } else if ft.is_char_device() {
            "character device"
        } else if ft.is_block_device() {
            "block device"
        } else {
            "special file"
        };
        let path = decl.executable.clone();
        return Err(fail(decl, EntrypointProblem::NotRegular { path, kind }));
    }
    if meta.len() > MAX_ENTRYPOINT_BYTES {
        return Err(too_large(decl, meta.len()));
    }
    Ok(())
}

/// At least one execute bit, and `access(X_OK)` for the real user (which also covers ACLs).
fn check_access(decl: &HookDecl, path: &Path, meta: &Metadata) -> Result<(), EntrypointError> {
    let mode = meta.mode() & 0o7777;
    if mode & 0o111 == 0 || access(path, AccessFlags::X_OK).is_err() {
        let path = decl.executable.clone();
        return Err(fail(decl, EntrypointProblem::NotExecutable { path, mode }));
    }
    Ok(())
}

/// Read at most the cap plus one byte, so a file that grew after `fstat` is still refused.
fn read_capped(decl: &HookDecl, file: File, size_hint: u64) -> Result<Vec<u8>, EntrypointError> {
    let mut bytes = Vec::with_capacity(size_hint as usize);
    let read = file
        .take(MAX_ENTRYPOINT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| {
            let path = decl.executable.clone();
            fail(decl, EntrypointProblem::Read { path, source })
        })?;
    if read as u64 > MAX_ENTRYPOINT_BYTES {
        return Err(too_large(decl, read as u64));
    }
    Ok(bytes)
}

fn too_large(decl: &HookDecl, size: u64) -> EntrypointError {
    let path = decl.executable.clone();
    fail(decl, EntrypointProblem::TooLarge { path, size })
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;
    use crate::config::HookScope;

    fn decl(path: &Path) -> HookDecl {
        HookDecl {
            event: crate::config::HookEvent::Prepare,
            name: "h".into(),
            executable: path.into(),
            args: vec![],
            timeout_seconds: 30,
            scope: HookScope::Global,
            config_path: "/cfg.toml".into(),
        }
    }

    fn write(path: &Path, bytes: &[u8], mode: u32) {
        std::fs::write(path, bytes).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn reads_executable_regular_file_through_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        write(&real, b"#!/bin/sh\n", 0o700);
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert_eq!(read_entrypoint(&decl(&link)).unwrap(), b"#!/bin/sh\n");
    }

    #[test]
    fn refuses_fifo_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o700)).unwrap();
        let err = read_entrypoint(&decl(&fifo)).unwrap_err();
        assert!(
            matches!(err.problem, EntrypointProblem::NotRegular { kind: "FIFO", .. }),
            "{err}"
        );
    }

    #[test]
    fn refuses_directory_device_and_missing() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_entrypoint(&decl(dir.path())).unwrap_err().to_string();
        assert!(err.contains("is a directory, not a regular file"), "{err}");
        let err = read_entrypoint(&decl(Path::new("/dev/null")))
            .unwrap_err()
            .to_string();
        assert!(err.contains("character device"), "{err}");
        let err = read_entrypoint(&decl(&dir.path().join("nope")))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("prepare hook h: cannot open entrypoint"), "{err}");
    }

    #[test]
    fn refuses_non_executable_and_too_large() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("plain");
        write(&p, b"x", 0o600);
        let err = read_entrypoint(&decl(&p)).unwrap_err().to_string();
        assert!(err.contains("is not executable by you; run `chmod u+x"), "{err}");
        let big = dir.path().join("big");
        let f = File::create(&big).unwrap();
        f.set_len(MAX_ENTRYPOINT_BYTES + 1).unwrap();
        std::fs::set_permissions(&big, std::fs::Permissions::from_mode(0o700)).unwrap();
        let err = read_entrypoint(&decl(&big)).unwrap_err();
        assert!(matches!(err.problem, EntrypointProblem::TooLarge { .. }), "{err}");
    }
}
