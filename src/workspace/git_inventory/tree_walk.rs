//! The directory walk of the git inventory (`workspace::git_inventory`): lists every directory
//! below a root and keeps, of each, what the inventory looks at — whether it holds `HEAD`,
//! `objects`, `commondir` or `refs`, each `.git` that is no directory, and the files of what
//! may be an object store — as [`Record`]s in the order a depth-first walk meets them, so that
//! judging them (`git_inventory`) does what one walk on one thread would. Directories holding
//! none of that (the bulk of a `node_modules`) leave no record.
//!
//! The listing runs on a few threads over a shared stack of directories. Each directory is
//! opened relative to its parent's descriptor (`openat`, `O_NOFOLLOW | O_DIRECTORY`: never
//! through a symbolic link, whatever replaced the entry since it was listed) and read with
//! `getdents` into a buffer kept per thread, taking an entry's type from the listing (`lstat`
//! only when the file system does not say). Nothing is judged by a time. A directory that
//! cannot be opened or read is a record of its own ([`Met::Unlisted`]); one deeper than
//! [`MAX_DEPTH`] is not opened ([`Met::Deep`]); past [`MAX_ENTRIES`] entries the walk stops
//! ([`Met::Stopped`]).

use std::ffi::OsStr;
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawDir, Stat};

use super::{MAX_DEPTH, MAX_ENTRIES};

/// What an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Dir,
    File,
    Link,
    Other,
}

impl Kind {
    fn of(kind: FileType) -> Kind {
        match kind {
            FileType::Directory => Kind::Dir,
            FileType::RegularFile => Kind::File,
            FileType::Symlink => Kind::Link,
            _ => Kind::Other,
        }
    }

    /// The kind of a file as `std` says it.
    pub(super) fn of_std(kind: std::fs::FileType) -> Kind {
        match kind {
            k if k.is_dir() => Kind::Dir,
            k if k.is_file() => Kind::File,
            k if k.is_symlink() => Kind::Link,
            _ => Kind::Other,
        }
    }
}

/// A directory the inventory looks at.
pub(super) struct Record {
    /// Where a depth-first walk meets it: the position of each directory on the way among its
    /// parent's subdirectories, as listed.
    key: Box<[u32]>,
    pub(super) path: PathBuf,
    /// Levels below the walked tree's top (counting from the depth the walk started at).
    pub(super) depth: usize,
    pub(super) met: Met,
}

/// What the walk met at a directory.
pub(super) enum Met {
    /// Deeper than [`MAX_DEPTH`]: not opened.
    Deep,
    /// Could not be opened or listed.
    Unlisted(std::io::Error),
    /// The walk stopped here, past [`MAX_ENTRIES`] entries.
    Stopped,
    /// Listed.
    Listed(Listing),
}

/// What a listed directory holds that the inventory looks at.
#[derive(Default)]
pub(super) struct Listing {
    pub(super) head: bool,
    pub(super) objects: bool,
    pub(super) commondir: bool,
    pub(super) refs: bool,
    /// In listing order: each `.git` that is no directory and, when the directory may be part
    /// of an object store (`objects`, `objects/ab`, `objects/pack`), every entry that is no
    /// directory.
    pub(super) entries: Vec<Entry>,
}

/// An entry of a listed directory that is no directory.
#[derive(Debug)]
pub(super) struct Entry {
    pub(super) name: Box<[u8]>,
    pub(super) kind: Kind,
    /// What `lstat` says of an entry of an object store (`None`: not asked, or it failed).
    pub(super) stat: Option<Stat>,
}

impl Listing {
    fn any(&self) -> bool {
        self.head || self.objects || self.commondir || self.refs || !self.entries.is_empty()
    }
}

/// Walk the tree at `top` (`depth` levels below a root; `entries` already counted by earlier
/// walks): the records, in depth-first order, and the entries counted in all.
pub(super) fn walk(top: &Path, depth: usize, entries: usize) -> (Vec<Record>, usize) {
    let shared = Shared {
        // The first directory is this thread's.
        stack: Mutex::new((Vec::new(), 1)),
        ready: Condvar::new(),
        entries: AtomicUsize::new(entries),
        stop: AtomicBool::new(entries > MAX_ENTRIES),
    };
    let first = Job {
        parent: None,
        path: top.to_path_buf(),
        key: Box::new([]),
        depth,
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().clamp(1, 8));
    let mut records = std::thread::scope(|s| {
        let helpers: Vec<_> = (1..threads).map(|_| s.spawn(|| work(&shared, None))).collect();
        let mut records = work(&shared, Some(first));
        for helper in helpers {
            // A thread that failed leaves the walk incomplete: never passed over in silence.
            records.extend(helper.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
        }
        records
    });
    records.sort_unstable_by(|a, b| a.key.cmp(&b.key));
    (records, shared.entries.load(Ordering::Relaxed))
}

/// A directory to list.
struct Job {
    /// The directory it is an entry of (`None`: the top, opened by its path).
    parent: Option<Arc<OwnedFd>>,
    path: PathBuf,
    key: Box<[u32]>,
    depth: usize,
}

/// What the threads of one walk share.
struct Shared {
    /// The directories still to list, and how many threads are listing one.
    stack: Mutex<(Vec<Job>, usize)>,
    ready: Condvar,
    /// Entries counted so far.
    entries: AtomicUsize,
    /// Set past [`MAX_ENTRIES`].
    stop: AtomicBool,
}

impl Shared {
    /// The next directory to list, once this thread is done with its last (`busy`); `None`
    /// when none is left and no thread could add one.
    fn pop(&self, busy: bool) -> Option<Job> {
        let mut stack = self.stack.lock().unwrap_or_else(|e| e.into_inner());
        if busy {
            stack.1 -= 1;
        }
        loop {
            if self.stop.load(Ordering::Relaxed) {
                stack.0.clear();
            }
            if let Some(job) = stack.0.pop() {
                stack.1 += 1;
                return Some(job);
            }
            if stack.1 == 0 {
                self.ready.notify_all();
                return None;
            }
            stack = self.ready.wait(stack).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn push(&self, jobs: Vec<Job>) {
        if jobs.is_empty() {
            return;
        }
        let mut stack = self.stack.lock().unwrap_or_else(|e| e.into_inner());
        stack.0.extend(jobs);
        drop(stack);
        self.ready.notify_all();
    }

    /// Count `n` more entries: `Err` past [`MAX_ENTRIES`] (the walk stops), telling whether
    /// these crossed the limit (that directory is recorded as where it stopped).
    fn count(&self, n: usize) -> Result<(), bool> {
        let before = self.entries.fetch_add(n, Ordering::Relaxed);
        if before + n <= MAX_ENTRIES {
            return Ok(());
        }
        self.stop.store(true, Ordering::Relaxed);
        Err(before <= MAX_ENTRIES)
    }
}

/// Stops the walk when its thread panics, so that the others end (and the panic goes on).
struct Leaving<'a>(&'a Shared);

impl Drop for Leaving<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.stop.store(true, Ordering::Relaxed);
            let mut stack = self.0.stack.lock().unwrap_or_else(|e| e.into_inner());
            stack.1 = stack.1.saturating_sub(1);
            drop(stack);
            self.0.ready.notify_all();
        }
    }
}

/// One thread of the walk, starting with `first` if given: its records.
fn work(shared: &Shared, first: Option<Job>) -> Vec<Record> {
    let _leaving = Leaving(shared);
    let mut buf = vec![MaybeUninit::<u8>::uninit(); 64 * 1024];
    let mut out = Vec::new();
    let mut busy = first.is_some();
    let mut next = first;
    loop {
        let job = match next.take() {
            Some(job) => job,
            None => match shared.pop(busy) {
                Some(job) => job,
                None => return out,
            },
        };
        busy = true;
        next = visit(shared, job, &mut buf, &mut out);
    }
}

/// List the directory of `job`: its record, if any, goes to `out`, its subdirectories to the
/// stack but one, returned (this thread lists it next).
fn visit(shared: &Shared, job: Job, buf: &mut [MaybeUninit<u8>], out: &mut Vec<Record>) -> Option<Job> {
    let Job {
        parent,
        path,
        key,
        depth,
    } = job;
    if depth > MAX_DEPTH {
        out.push(record(key, path, depth, Met::Deep));
        return None;
    }
    if shared.stop.load(Ordering::Relaxed) {
        return None;
    }
    let fd = match open(parent.as_deref(), &path) {
        Ok(fd) => Arc::new(fd),
        Err(e) => {
            out.push(record(key, path, depth, Met::Unlisted(e.into())));
            return None;
        }
    };
    drop(parent);
    let (listing, subdirs) = match list(shared, &fd, &path, buf) {
        Ok(Ok(listed)) => listed,
        Ok(Err(crossed)) => {
            out.extend(crossed.then(|| record(key, path, depth, Met::Stopped)));
            return None;
        }
        Err(e) => {
            out.push(record(key, path, depth, Met::Unlisted(e.into())));
            return None;
        }
    };
    let mut jobs: Vec<Job> = subdirs
        .into_iter()
        .enumerate()
        .map(|(i, path)| Job {
            parent: Some(fd.clone()),
            path,
            key: key.iter().copied().chain([i as u32]).collect(),
            depth: depth + 1,
        })
        .collect();
    if listing.any() || path.file_name().is_some_and(|n| n == ".git") {
        out.push(record(key, path, depth, Met::Listed(listing)));
    }
    let mine = jobs.pop();
    shared.push(jobs);
    mine
}

fn record(key: Box<[u32]>, path: PathBuf, depth: usize, met: Met) -> Record {
    Record {
        key,
        path,
        depth,
        met,
    }
}

/// Open the directory `path`, an entry of `parent` (never through a link), or the top.
fn open(parent: Option<&OwnedFd>, path: &Path) -> rustix::io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NONBLOCK;
    match (parent, path.file_name()) {
        (Some(parent), Some(name)) => {
            rustix::fs::openat(parent, name, flags | OFlags::NOFOLLOW, Mode::empty())
        }
        _ => rustix::fs::open(path, flags, Mode::empty()),
    }
}

/// What a directory holds that the inventory looks at, and the paths of its subdirectories.
type Listed = (Listing, Vec<PathBuf>);

/// List the open directory `fd` (at `path`); `Ok(Err(crossed))` once the walk stopped
/// ([`Shared::count`]).
fn list(
    shared: &Shared,
    fd: &OwnedFd,
    path: &Path,
    buf: &mut [MaybeUninit<u8>],
) -> rustix::io::Result<Result<Listed, bool>> {
    let store = may_be_store(path);
    let (mut listing, mut subdirs) = (Listing::default(), Vec::new());
    let mut counted = 0;
    let mut dir = RawDir::new(fd, buf);
    while let Some(entry) = dir.next() {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        counted += 1;
        if counted == 4096 {
            if let Err(crossed) = shared.count(counted) {
                return Ok(Err(crossed));
            }
            counted = 0;
        }
        let lstat = || rustix::fs::statat(fd, entry.file_name(), AtFlags::SYMLINK_NOFOLLOW);
        let (kind, stat) = match entry.file_type() {
            FileType::Unknown => match lstat() {
                Ok(stat) => (Kind::of(FileType::from_raw_mode(stat.st_mode)), Some(stat)),
                Err(_) => continue,
            },
            kind => (Kind::of(kind), None),
        };
        match name {
            b"HEAD" => listing.head = true,
            b"objects" => listing.objects = true,
            b"commondir" => listing.commondir = true,
            b"refs" => listing.refs = true,
            _ => {}
        }
        if kind == Kind::Dir {
            subdirs.push(path.join(OsStr::from_bytes(name)));
        } else if name == b".git" {
            let name = name.into();
            listing.entries.push(Entry {
                name,
                kind,
                stat: None,
            });
        } else if store {
            // Read here, on this thread: an object file is judged by its identity and size.
            let stat = stat.map_or_else(lstat, Ok).ok();
            let name = name.into();
            listing.entries.push(Entry { name, kind, stat });
        }
    }
    if let Err(crossed) = shared.count(counted) {
        return Ok(Err(crossed));
    }
    Ok(Ok((listing, subdirs)))
}

/// Whether `dir` may be part of an object store (`GIT_DIR/objects`, a fan-out directory
/// `objects/ab` or `objects/pack`), by its name: whether it is one is told while judging.
fn may_be_store(dir: &Path) -> bool {
    fn name(p: &Path) -> &[u8] {
        p.file_name().map(OsStr::as_bytes).unwrap_or_default()
    }
    let own = name(dir);
    let fan_out = own.len() == 2 && own.iter().all(u8::is_ascii_hexdigit);
    own == b"objects" || (fan_out || own == b"pack") && dir.parent().is_some_and(|p| name(p) == b"objects")
}

#[cfg(test)]
#[path = "tree_walk_tests.rs"]
mod tests;
