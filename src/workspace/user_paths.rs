//! Host paths the user names on the command line that `ags` itself reads or writes (`--env-file`,
//! `--report`), resolved so that a symlink an agent planted cannot redirect them (issue 22,
//! finding 5; docs/security.md, "Paths you name").
//!
//! The rule: a path that lies under a directory an agent can write (the workdir, a read-write
//! `--add-dir` or `[[mount]]`, another running launch's read-write mount), or that reaches one
//! through a symlink, may pass through no symlink at all, except the system's own layout
//! (`/home -> /var/home`, [`containment::is_system_link`]); a symlink inside such a directory is
//! refused wherever the path ends. Elsewhere the user's own symlinks are followed. The answer is
//! a [`CheckedHostPath`]: the physical path (no symlink in it) and the identity of the entry.
//!
//! Between the check and the use, the agent may still swap a directory on the way for a link.
//! So the file is opened again component by component from `/`, each step an `openat` with
//! `O_NOFOLLOW` relative to the directory opened before ([`open_dir`]): a link swapped in fails
//! the step (the kernel opens no link), a directory renamed away after its step changes nothing
//! (the walk holds its descriptor). That walk needs no `openat2` (any kernel), and the file read
//! must still be the entry that was checked (same device and inode), or the read is refused.
//! A report is written as a temporary file created exclusively in the directory opened that way
//! and renamed over the name inside that same directory.

use std::ffi::OsStr;
use std::io::{self, Read, Write};
use std::path::{Component, Path, PathBuf};

use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{self as rfs, Mode, OFlags};

use crate::containment::{self, WritableRoot};
use crate::safepath::{self, Kind, Missing, ResolveError};

/// A user-named path that passed [`check_file`] or [`check_new_file`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedHostPath {
    /// How messages name it, e.g. `--env-file config/dev.env` (escaped).
    what: String,
    /// The path as named, made absolute (against the physical current directory).
    named: PathBuf,
    /// The physical path: no symlink, `.` or `..` in it.
    physical: PathBuf,
    /// Device and inode of the entry when it was checked; `None` for a file still to be written.
    identity: Option<(u64, u64)>,
}

/// Why a user-named path is refused.
#[derive(Debug, thiserror::Error)]
pub enum UserPathError {
    /// It (or its directory) cannot be resolved.
    #[error("{what}: {source}; name an existing file")]
    Resolve {
        /// The input.
        what: String,
        /// Why.
        source: ResolveError,
    },
    /// A symlink on the way lies inside a directory an agent can write.
    #[error(
        "{what} passes through the symlink {link}, which lies inside {inside}: an agent can write there and \
         plant such a link to make ags read or write another host file; remove the link (if you did not \
         make it, the agent did) or name a path without symlinks"
    )]
    PlantedLink {
        /// The input.
        what: String,
        /// `link -> target`.
        link: String,
        /// The writable root holding the link, with its owner.
        inside: String,
    },
    /// A symlink on the way leads into a directory an agent can write.
    #[error(
        "{what} passes through the symlink {link} and reaches {inside}, which an agent can write: paths \
         there must not pass through symlinks; name the real path {real}"
    )]
    LinkIntoWritable {
        /// The input.
        what: String,
        /// `link -> target`.
        link: String,
        /// The writable root reached, with its owner.
        inside: String,
        /// The physical path.
        real: String,
    },
    /// Not the kind of entry wanted.
    #[error("{what} is {kind}; {wanted}")]
    WrongKind {
        /// The input.
        what: String,
        /// What it is.
        kind: &'static str,
        /// What is wanted and what to do.
        wanted: &'static str,
    },
    /// It changed between the check and the use.
    #[error(
        "{what} changed since ags checked it ({why}): something replaced a file or directory on its way, \
         perhaps an agent; nothing was read or written there, check the path and run again"
    )]
    Changed {
        /// The input.
        what: String,
        /// What was seen.
        why: String,
    },
    /// Reading or writing failed.
    #[error("{what}: {source}")]
    Io {
        /// The input.
        what: String,
        /// Why.
        source: io::Error,
    },
}

impl CheckedHostPath {
    /// The physical path (no symlink in it).
    pub fn physical(&self) -> &Path {
        &self.physical
    }

    /// Check again (with more writable roots, e.g. other running launches'): the path must
    /// pass and still resolve to the same entry.
    pub fn recheck(&self, roots: &[WritableRoot]) -> Result<(), UserPathError> {
        let again = if self.identity.is_some() {
            check_file_abs(&self.what, &self.named, roots)?
        } else {
            check_new_file_abs(&self.what, &self.named, roots)?
        };
        if again.physical != self.physical || again.identity != self.identity {
            return Err(self.changed(format!(
                "it now resolves to {}",
                safepath::display(&again.physical)
            )));
        }
        Ok(())
    }

    /// Read the checked regular file (at most `max` bytes of UTF-8), never through a symlink,
    /// and only if it is still the entry that was checked.
    pub fn read_small_text(&self, max: usize) -> Result<String, UserPathError> {
        let (dir, name) = self.open_parent()?;
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd =
            rfs::openat(&dir, name, flags, Mode::empty()).map_err(|e| self.step_error(e, &self.physical))?;
        let st = rfs::fstat(&fd).map_err(|e| self.io(e.into()))?;
        if Some((st.st_dev as u64, st.st_ino as u64)) != self.identity {
            return Err(self.changed("it is another file now".into()));
        }
        if rfs::FileType::from_raw_mode(st.st_mode) != rfs::FileType::RegularFile {
            return Err(self.changed("it is no longer a regular file".into()));
        }
        let mut bytes = Vec::new();
        std::fs::File::from(fd)
            .take(max as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| self.io(e))?;
        if bytes.len() > max {
            return Err(self.io(io::Error::other(format!("is larger than {max} bytes"))));
        }
        String::from_utf8(bytes).map_err(|_| self.io(io::Error::other("is not UTF-8 text")))
    }

    /// Replace the file with `bytes` (mode `mode`) atomically: a temporary file created
    /// exclusively in the checked directory, renamed over the name there.
    pub fn write_atomic(&self, bytes: &[u8], mode: u32) -> Result<(), UserPathError> {
        let (dir, name) = self.open_parent()?;
        let tmp = format!(
            ".{}.{}.{}.tmp",
            name.to_string_lossy(),
            std::process::id(),
            super::quarantine::random_hex()
        );
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rfs::openat(&dir, &tmp, flags, Mode::from_raw_mode(mode)).map_err(|e| self.io(e.into()))?;
        let written = (|| {
            rfs::fchmod(&fd, Mode::from_raw_mode(mode))?;
            let mut file = std::fs::File::from(fd);
            file.write_all(bytes)?;
            file.sync_all()?;
            rfs::renameat(&dir, &tmp, &dir, name)?;
            let synced = rfs::openat(
                &dir,
                ".",
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            rfs::fsync(&synced)?;
            Ok::<(), io::Error>(())
        })();
        if let Err(e) = written {
            let _ = rfs::unlinkat(&dir, &tmp, rfs::AtFlags::empty());
            return Err(self.io(e));
        }
        Ok(())
    }

    /// The checked path's directory, opened without following any link, and its last name.
    fn open_parent(&self) -> Result<(OwnedFd, &OsStr), UserPathError> {
        let (Some(parent), Some(name)) = (self.physical.parent(), self.physical.file_name()) else {
            return Err(self.io(io::Error::other("has no file name")));
        };
        let dir = open_dir(parent).map_err(|(at, e)| self.step_error(e, &at))?;
        Ok((dir, name))
    }

    fn step_error(&self, e: impl Into<io::Error>, at: &Path) -> UserPathError {
        let e: io::Error = e.into();
        match e.raw_os_error() {
            Some(libc::ELOOP | libc::ENOTDIR) => {
                self.changed(format!("{} is a symlink now", safepath::display(at)))
            }
            Some(libc::ENOENT) => self.changed(format!("{} is gone", safepath::display(at))),
            _ => self.io(e),
        }
    }

    fn changed(&self, why: String) -> UserPathError {
        UserPathError::Changed {
            what: self.what.clone(),
            why,
        }
    }

    fn io(&self, source: io::Error) -> UserPathError {
        UserPathError::Io {
            what: self.what.clone(),
            source,
        }
    }
}

/// Check a file the user named for `ags` to read (`what` names the input, e.g.
/// `--env-file config/dev.env`): it must exist, be a regular file, and pass the link rule
/// against `roots`.
pub fn check_file(
    what: &str,
    named: &Path,
    roots: &[WritableRoot],
) -> Result<CheckedHostPath, UserPathError> {
    check_file_abs(what, &absolute(what, named)?, roots)
}

/// Check a file the user named for `ags` to write (replace): its directory must exist and pass
/// the link rule against `roots`; the file itself may be missing and must not be a directory.
pub fn check_new_file(
    what: &str,
    named: &Path,
    roots: &[WritableRoot],
) -> Result<CheckedHostPath, UserPathError> {
    check_new_file_abs(what, &absolute(what, named)?, roots)
}

fn absolute(what: &str, named: &Path) -> Result<PathBuf, UserPathError> {
    std::path::absolute(named).map_err(|source| UserPathError::Io {
        what: what.into(),
        source,
    })
}

fn check_file_abs(
    what: &str,
    named: &Path,
    roots: &[WritableRoot],
) -> Result<CheckedHostPath, UserPathError> {
    let res = safepath::resolve(named, Missing::Refuse).map_err(|source| UserPathError::Resolve {
        what: what.into(),
        source,
    })?;
    check_links(what, named, &res, roots)?;
    let found = res
        .found
        .filter(|f| f.kind == Kind::File)
        .ok_or(UserPathError::WrongKind {
            what: what.into(),
            kind: kind_name(res.found.map(|f| f.kind)),
            wanted: "name a regular file",
        })?;
    Ok(CheckedHostPath {
        what: what.into(),
        named: named.into(),
        physical: res.path,
        identity: Some((found.dev, found.ino)),
    })
}

fn check_new_file_abs(
    what: &str,
    named: &Path,
    roots: &[WritableRoot],
) -> Result<CheckedHostPath, UserPathError> {
    let wrong = |kind| UserPathError::WrongKind {
        what: what.into(),
        kind,
        wanted: "give a file path (or `-` for standard output)",
    };
    let (Some(parent), Some(Component::Normal(name))) = (named.parent(), named.components().next_back())
    else {
        return Err(wrong("a directory"));
    };
    let res = safepath::resolve(parent, Missing::Refuse).map_err(|source| UserPathError::Resolve {
        what: what.into(),
        source,
    })?;
    check_links(what, named, &res, roots)?;
    if res.found.map(|f| f.kind) != Some(Kind::Directory) {
        return Err(UserPathError::Resolve {
            what: what.into(),
            source: ResolveError::NotADirectory(res.path),
        });
    }
    let physical = res.path.join(name);
    if std::fs::symlink_metadata(&physical).is_ok_and(|m| m.is_dir()) {
        return Err(wrong("a directory"));
    }
    Ok(CheckedHostPath {
        what: what.into(),
        named: named.into(),
        physical,
        identity: None,
    })
}

/// The link rule (module doc): a link inside a writable root is refused; any other link that
/// is not the system's layout is refused when the path touches a writable root (as named, as
/// resolved, or where a link lies).
fn check_links(
    what: &str,
    named: &Path,
    res: &safepath::Resolution,
    roots: &[WritableRoot],
) -> Result<(), UserPathError> {
    let root_of = |p: &Path| roots.iter().find(|r| p.starts_with(&r.path));
    for link in &res.links {
        if let Some(root) = root_of(&link.at) {
            return Err(UserPathError::PlantedLink {
                what: what.into(),
                link: link_text(link),
                inside: describe(root),
            });
        }
    }
    let touched = root_of(&res.path).or_else(|| root_of(named));
    let Some(root) = touched else {
        return Ok(());
    };
    match res.links.iter().find(|l| !containment::is_system_link(l)) {
        Some(link) => Err(UserPathError::LinkIntoWritable {
            what: what.into(),
            link: link_text(link),
            inside: describe(root),
            real: safepath::display(&res.path),
        }),
        None => Ok(()),
    }
}

fn link_text(link: &safepath::Link) -> String {
    format!(
        "{} -> {}",
        safepath::display(&link.at),
        safepath::display(&link.target)
    )
}

fn describe(root: &WritableRoot) -> String {
    format!("{} {}", root.owner, safepath::display(&root.path))
}

fn kind_name(kind: Option<Kind>) -> &'static str {
    match kind {
        Some(Kind::Directory) => "a directory",
        Some(Kind::File) => "a regular file",
        Some(Kind::Special(s)) => s,
        None => "missing",
    }
}

/// Open the physical directory `path` from `/`, one `openat(O_PATH | O_NOFOLLOW | O_DIRECTORY)`
/// per component relative to the one before: a symlink anywhere fails (`ENOTDIR`/`ELOOP`).
/// The error carries the path of the step that failed.
fn open_dir(path: &Path) -> Result<OwnedFd, (PathBuf, io::Error)> {
    let flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let mut at = PathBuf::from("/");
    let mut dir = rfs::openat(rfs::CWD, "/", flags, Mode::empty()).map_err(|e| (at.clone(), e.into()))?;
    for c in path.components() {
        let Component::Normal(name) = c else {
            continue;
        };
        at.push(name);
        dir = rfs::openat(dir.as_fd(), name, flags, Mode::empty()).map_err(|e| (at.clone(), e.into()))?;
    }
    Ok(dir)
}

#[cfg(test)]
#[path = "user_paths_tests.rs"]
mod tests;
