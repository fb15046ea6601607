//! Creating the missing pieces of the guarded git repositories right before the container
//! (`git::model::guard` decides what they are; docs/security.md): an empty `hooks/` or `config`
//! (git treats them like missing ones) and a `commondir` containing `.` (the git dir itself).
//! They are kept afterwards: removing a file that another launch has mounted would unmount it
//! there.

use std::io::{ErrorKind, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

use crate::git::model::guard::{GitCreate, GitGuard, is_self_commondir};

/// A missing piece of a guarded git repository could not be created.
#[derive(Debug, thiserror::Error)]
#[error(
    "protecting the git repository: {}: {source}; fix it, or set `[sandbox] protect_git = false` in the global config (docs/security.md)",
    path.display()
)]
pub struct CreateError {
    path: std::path::PathBuf,
    source: std::io::Error,
}

/// Create what the git guards need and is missing.
pub fn create_missing(guards: &[GitGuard]) -> Result<(), CreateError> {
    for g in guards {
        let fail = |source| CreateError {
            path: g.path.clone(),
            source,
        };
        let unsafe_meanwhile = |what: &str| {
            fail(std::io::Error::other(format!(
                "it appeared meanwhile as {what}; remove it"
            )))
        };
        match g.create {
            None => {}
            Some(GitCreate::Dir) => {
                match std::fs::DirBuilder::new().mode(0o755).create(&g.path) {
                    Err(e) if e.kind() != ErrorKind::AlreadyExists => return Err(fail(e)),
                    _ => {}
                }
                if !std::fs::symlink_metadata(&g.path).is_ok_and(|m| m.is_dir()) {
                    return Err(unsafe_meanwhile("something other than a directory"));
                }
            }
            Some(file) => {
                let content: &[u8] = match file {
                    GitCreate::ParentCommonDir => b"../..\n",
                    GitCreate::SelfCommonDir => b".\n",
                    _ => b"",
                };
                create_file(&g.path, content).map_err(fail)?;
                let plain = std::fs::symlink_metadata(&g.path).is_ok_and(|m| m.is_file());
                // `is_self_commondir` reads a regular file only.
                if file == GitCreate::SelfCommonDir && !is_self_commondir(&g.path) {
                    return Err(unsafe_meanwhile("a commondir naming another directory"));
                } else if !plain {
                    return Err(unsafe_meanwhile("something other than a file"));
                }
            }
        }
    }
    Ok(())
}

/// Create `path` with `content` unless it exists (never following a symlink).
fn create_file(path: &Path, content: &[u8]) -> std::io::Result<()> {
    let created = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path);
    match created {
        Ok(mut f) => f.write_all(content),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}
