//! Race-aware path resolution that never follows a symlink behind the caller's back.
//!
//! A leaf module (no other `ags` module is used): [`resolve`] walks an absolute path one
//! component at a time from `/`, each step an `openat(O_PATH | O_NOFOLLOW)` relative to the
//! directory opened before, and reads each entry's type from the opened descriptor (`fstat`), so
//! a concurrent rename cannot slip a symlink between "looked at" and "stepped into". Every
//! symlink met is reported as a [`Link`] (where it is, its target, its owner and its directory's
//! owner and mode) and then followed, so the caller decides which links are acceptable and gets
//! the physical path either way. When the path is plain (absolute, normalized) the walk is first
//! tried in one `openat2(RESOLVE_NO_SYMLINKS)` call; any failure there falls back to the walk,
//! which then explains it.
//!
//! [`Missing::Append`] resolves a path that does not exist (yet): the nearest existing ancestor
//! is resolved physically, a dangling symlink's target is followed as far as it exists, and the
//! missing rest is appended. That is what a protected location "will be" once created.
//!
//! The answer describes the file system at one instant. It is not a lock: whoever uses the path
//! later (Podman binding a mount source) resolves it again, so callers must also make sure no
//! one else can change it in between (see `crate::containment`).

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fd::OwnedFd;
use rustix::fs::{self as rfs, FileType, Mode, OFlags, ResolveFlags};

/// At most this many symlinks are followed in one resolution (Linux's own limit).
pub const MAX_LINKS: usize = 40;

/// What to do when a component does not exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    /// Fail with [`ResolveError::NotFound`].
    Refuse,
    /// Append the missing rest lexically and report [`Resolution::found`] as `None`.
    Append,
}

/// One symlink met during a resolution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// Physical path of the symlink itself.
    pub at: PathBuf,
    /// Its target, as stored.
    pub target: PathBuf,
    /// Owner of the symlink.
    pub uid: u32,
    /// Owner of the directory holding it.
    pub dir_uid: u32,
    /// Permission bits of the directory holding it.
    pub dir_mode: u32,
}

impl Link {
    /// A root-owned link in a root-owned directory that group and others cannot write: part
    /// of the system's layout (`/home -> /var/home`), which an unprivileged agent cannot plant.
    pub fn is_system_layout(&self) -> bool {
        self.uid == 0 && self.dir_uid == 0 && self.dir_mode & 0o022 == 0
    }
}

/// The type of the resolved entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A directory.
    Directory,
    /// A regular file.
    File,
    /// Anything else; the name says what ("FIFO", "socket", …).
    Special(&'static str),
}

/// The resolved entry (when it exists).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    /// What it is.
    pub kind: Kind,
    /// Device and inode: the entry's identity.
    pub dev: u64,
    /// See `dev`.
    pub ino: u64,
}

/// The outcome of [`resolve`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolution {
    /// The physical absolute path: no symlink, `.` or `..` in it (the missing rest appended
    /// lexically under [`Missing::Append`]).
    pub path: PathBuf,
    /// The symlinks followed, in order.
    pub links: Vec<Link>,
    /// The entry, or `None` when (part of) the path does not exist.
    pub found: Option<Found>,
}

/// Why a path could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// Relative paths have no meaning here.
    #[error("{} is not an absolute path", .0.display())]
    Relative(PathBuf),
    /// A component does not exist.
    #[error("{} does not exist", .0.display())]
    NotFound(PathBuf),
    /// A non-directory was met where a directory was needed.
    #[error("{} is not a directory", .0.display())]
    NotADirectory(PathBuf),
    /// More than [`MAX_LINKS`] symlinks.
    #[error("too many symlinks while resolving {}", .0.display())]
    TooManyLinks(PathBuf),
    /// A system call failed.
    #[error("{}: {source}", at.display())]
    Io {
        /// Where.
        at: PathBuf,
        /// The failure.
        source: io::Error,
    },
}

/// Resolve the absolute `path` physically, reporting every symlink on the way.
pub fn resolve(path: &Path, missing: Missing) -> Result<Resolution, ResolveError> {
    if !path.is_absolute() {
        return Err(ResolveError::Relative(path.into()));
    }
    if let Some(done) = without_symlinks(path) {
        return Ok(done);
    }
    Walk::new(path)?.run(path, missing)
}

/// The one-call fast path: a plain path that opens with `RESOLVE_NO_SYMLINKS` has no symlink.
fn without_symlinks(path: &Path) -> Option<Resolution> {
    if !is_plain(path) {
        return None;
    }
    let flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let resolve = ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    let fd = rfs::openat2(rfs::CWD, path, flags, Mode::empty(), resolve).ok()?;
    // With O_PATH | O_NOFOLLOW a trailing symlink opens as itself: leave it to the walk.
    let found = found(&fd).ok().filter(|f| f.kind != Kind::Special("symlink"))?;
    Some(Resolution {
        path: path.into(),
        links: Vec::new(),
        found: Some(found),
    })
}

/// Absolute, no `.`/`..`, no doubled or trailing slash: the path is its own normal form.
fn is_plain(path: &Path) -> bool {
    let normal: PathBuf = path.components().collect();
    normal.as_os_str() == path.as_os_str()
        && !path
            .components()
            .any(|c| matches!(c, Component::CurDir | Component::ParentDir))
}

fn found(fd: &OwnedFd) -> io::Result<Found> {
    let st = rfs::fstat(fd)?;
    let kind = match FileType::from_raw_mode(st.st_mode) {
        FileType::Directory => Kind::Directory,
        FileType::RegularFile => Kind::File,
        FileType::Fifo => Kind::Special("FIFO"),
        FileType::Socket => Kind::Special("socket"),
        FileType::CharacterDevice => Kind::Special("character device"),
        FileType::BlockDevice => Kind::Special("block device"),
        FileType::Symlink => Kind::Special("symlink"),
        FileType::Unknown => Kind::Special("special file"),
    };
    Ok(Found {
        kind,
        dev: st.st_dev as u64,
        ino: st.st_ino as u64,
    })
}

/// The component walk: the opened directories from `/` down, and what is left to visit.
struct Walk {
    /// `(name, fd)` per directory below `/`; `root` is the fd of `/`.
    stack: Vec<(OsString, OwnedFd)>,
    root: OwnedFd,
    todo: VecDeque<OsString>,
    links: Vec<Link>,
}

impl Walk {
    fn new(path: &Path) -> Result<Self, ResolveError> {
        let root = open(rfs::CWD, Path::new("/")).map_err(|source| ResolveError::Io {
            at: "/".into(),
            source,
        })?;
        let mut walk = Self {
            stack: Vec::new(),
            root,
            todo: VecDeque::new(),
            links: Vec::new(),
        };
        walk.push_front(path);
        Ok(walk)
    }

    /// The physical path of the current directory.
    fn here(&self) -> PathBuf {
        let mut p = PathBuf::from("/");
        p.extend(self.stack.iter().map(|(name, _)| name));
        p
    }

    fn dir(&self) -> &OwnedFd {
        self.stack.last().map_or(&self.root, |(_, fd)| fd)
    }

    /// Queue the components of `path` before what is left (a symlink's target).
    fn push_front(&mut self, path: &Path) {
        let parts: Vec<OsString> = path
            .components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n.to_os_string()),
                Component::ParentDir => Some("..".into()),
                _ => None,
            })
            .collect();
        for part in parts.into_iter().rev() {
            self.todo.push_front(part);
        }
    }

    fn run(mut self, original: &Path, missing: Missing) -> Result<Resolution, ResolveError> {
        let mut last = found(&self.root).map_err(|source| ResolveError::Io {
            at: "/".into(),
            source,
        })?;
        while let Some(name) = self.todo.pop_front() {
            if name == ".." {
                self.stack.pop();
                last = found(self.dir()).map_err(|source| self.io_error(source))?;
                continue;
            }
            let at = self.here().join(&name);
            let fd = match open(self.dir(), Path::new(&name)) {
                Ok(fd) => fd,
                Err(e) if e.kind() == io::ErrorKind::NotFound && missing == Missing::Append => {
                    return Ok(self.appended(at));
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(ResolveError::NotFound(at)),
                Err(source) => return Err(ResolveError::Io { at, source }),
            };
            let st = rfs::fstat(&fd).map_err(|e| ResolveError::Io {
                at: at.clone(),
                source: e.into(),
            })?;
            if FileType::from_raw_mode(st.st_mode) == FileType::Symlink {
                self.follow(&fd, at, st.st_uid, original)?;
                continue;
            }
            last = found(&fd).map_err(|source| ResolveError::Io {
                at: at.clone(),
                source,
            })?;
            if last.kind == Kind::Directory {
                self.stack.push((name, fd));
            } else if self.todo.is_empty() {
                return Ok(Resolution {
                    path: at,
                    links: self.links,
                    found: Some(last),
                });
            } else {
                return Err(ResolveError::NotADirectory(at));
            }
        }
        Ok(Resolution {
            path: self.here(),
            links: self.links,
            found: Some(last),
        })
    }

    /// Record the symlink opened as `fd` (at `at`) and queue its target.
    fn follow(&mut self, fd: &OwnedFd, at: PathBuf, uid: u32, original: &Path) -> Result<(), ResolveError> {
        if self.links.len() >= MAX_LINKS {
            return Err(ResolveError::TooManyLinks(original.into()));
        }
        let target = rfs::readlinkat(fd, "", Vec::new()).map_err(|e| ResolveError::Io {
            at: at.clone(),
            source: e.into(),
        })?;
        let target = PathBuf::from(OsStr::from_bytes(target.as_bytes()));
        let dir = rfs::fstat(self.dir()).map_err(|e| ResolveError::Io {
            at: self.here(),
            source: e.into(),
        })?;
        self.links.push(Link {
            at,
            target: target.clone(),
            uid,
            dir_uid: dir.st_uid,
            dir_mode: dir.st_mode & 0o7777,
        });
        if target.is_absolute() {
            self.stack.clear();
        }
        self.push_front(&target);
        Ok(())
    }

    /// `at` does not exist: append it and the rest lexically (`..` removes a component).
    fn appended(mut self, at: PathBuf) -> Resolution {
        let mut path = at;
        while let Some(name) = self.todo.pop_front() {
            if name == ".." {
                path.pop();
            } else {
                path.push(name);
            }
        }
        Resolution {
            path,
            links: self.links,
            found: None,
        }
    }

    fn io_error(&self, source: io::Error) -> ResolveError {
        ResolveError::Io {
            at: self.here(),
            source,
        }
    }
}

/// `openat(dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC)`: opens a symlink itself, never its target.
fn open(dir: impl rustix::fd::AsFd, name: &Path) -> io::Result<OwnedFd> {
    let flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    rfs::openat(dir, name, flags, Mode::empty()).map_err(io::Error::from)
}

/// A path for messages: lossy, control characters escaped.
pub fn display(path: &Path) -> String {
    path.to_string_lossy().escape_debug().to_string()
}

/// Lexical normalization: drop `.`, resolve `..` against the preceding component.
pub fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
#[path = "safepath_tests.rs"]
mod tests;
