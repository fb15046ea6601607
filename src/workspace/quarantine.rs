//! Moving aside what a launch planted: the one mechanism under the git check
//! (`git::quarantine`) and the protected project files (`workspace::protected_state`).
//!
//! `root/rel` is renamed to `NAME.ags-quarantine` in its own directory; when the agent took that
//! name (and `-2` … `-9`), to `NAME.ags-quarantine-<16 random hex digits>`, which it cannot
//! guess. Refs (which git reads by their start) get the mark in front instead, with a leading dot
//! ([`Naming::Prefix`]). Nothing is deleted and nothing is replaced (`RENAME_NOREPLACE`). The directory is
//! reached from `root` one component at a time with `O_NOFOLLOW`, so a directory another
//! container swapped for a symbolic link makes the move fail, never rename a file elsewhere.
//!
//! A root of the launch is never moved (the whole project would go), and one the agent made
//! unreadable to its owner gets its permissions back first ([`restore_access`]).
//!
//! A directory the agent made read-only (`chmod 555`, which a rootless agent can do to the
//! user's own directories) would stop the rename: when the directory belongs to this user, write
//! and search permission are added for the rename (through the descriptor already opened, never
//! by path) and the old mode is put back. A piece that still cannot be moved is an error the
//! launch ends with (exit 125), so that neither the user nor a script goes on as if it were gone.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use rustix::fd::{AsFd, AsRawFd, OwnedFd};
use rustix::fs::{self as rfs, Mode, OFlags, RenameFlags};
use rustix::io::Errno;

/// The suffix of a moved piece.
pub const SUFFIX: &str = ".ags-quarantine";

/// Why a piece could not be moved aside.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{why}")]
pub struct NotMoved {
    /// What went wrong, for the message next to the piece's name.
    pub why: String,
}

/// The launch ends with this (exit 125) when planted pieces are still in place.
#[derive(Debug, thiserror::Error)]
#[error(
    "{count} planted file(s) that would run programs on this host could not be moved aside (named above: NOT MOVED); remove them before you run git or the named tool in that directory"
)]
pub struct LeftInPlace {
    /// How many.
    pub count: usize,
}

fn not_moved(why: impl Into<String>) -> NotMoved {
    NotMoved { why: why.into() }
}

/// Move `root/rel` aside; the new path.
pub fn move_aside(root: &Path, rel: &Path) -> Result<PathBuf, NotMoved> {
    move_aside_as(root, rel, Naming::Suffix)
}

/// How a moved piece is named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Naming {
    /// `NAME.ags-quarantine`: for files git reads by their whole name.
    Suffix,
    /// `.ags-quarantine.NAME`: for refs, which git reads by their start — a replace ref's
    /// object id is the first 40 hex digits of its last component (`<oid>.ags-quarantine`
    /// would still replace `<oid>`; session-18 attack A2) — and whose directories it follows
    /// through links (attack C4). Git skips every entry starting with `.` in a ref directory.
    Prefix,
    /// `NAME.ags-quarantine-<16 random hex digits>`: for what git finds by a name the agent
    /// chooses elsewhere — a submodule's git dir, `modules/NAME`, where `.gitmodules` can name
    /// the submodule `NAME.ags-quarantine` (session-18 attack G1).
    Random,
}

/// [`move_aside`] with the naming chosen.
pub fn move_aside_as(root: &Path, rel: &Path, naming: Naming) -> Result<PathBuf, NotMoved> {
    let parts: Vec<&OsStr> = rel.iter().collect();
    let Some((name, way)) = parts.split_last() else {
        return Err(not_moved(
            "a root of the launch is never moved; look into it yourself",
        ));
    };
    let (dir, parent) = open_dir(root, way, OFlags::PATH)?;
    let new = match rename_free(&dir, name, naming) {
        Err(Errno::ACCESS | Errno::PERM) => with_write_permission(&dir, || rename_free(&dir, name, naming)),
        other => other,
    }
    .map_err(|e| not_moved(format!("renaming it in {}: {e}", parent.display())))?;
    Ok(parent.join(new))
}

/// Open `root/way…` one component at a time, never through a symbolic link (`extra`: `PATH`
/// for a handle only); the descriptor and the path.
fn open_dir(root: &Path, way: &[&OsStr], extra: OFlags) -> Result<(OwnedFd, PathBuf), NotMoved> {
    let flags = extra | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let mut dir =
        rfs::open(root, flags, Mode::empty()).map_err(|e| not_moved(format!("{}: {e}", root.display())))?;
    let mut parent = root.to_path_buf();
    for part in way {
        dir = rfs::openat(&dir, *part, flags | OFlags::NOFOLLOW, Mode::empty()).map_err(|e| {
            not_moved(format!(
                "{} is no longer a directory ({e})",
                parent.join(part).display()
            ))
        })?;
        parent.push(part);
    }
    Ok((dir, parent))
}

/// Create `root/rel`, which must not exist, holding `bytes` (mode 0644 before the umask),
/// reached like [`move_aside`]: one component at a time, no symbolic link followed.
pub fn create_new(root: &Path, rel: &Path, bytes: &[u8]) -> Result<(), NotMoved> {
    let parts: Vec<&OsStr> = rel.iter().collect();
    let Some((name, way)) = parts.split_last() else {
        return Err(not_moved("not a file"));
    };
    let (dir, parent) = open_dir(root, way, OFlags::empty())?;
    let wr = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rfs::openat(&dir, *name, wr, Mode::from_raw_mode(0o644))
        .map_err(|e| not_moved(format!("creating it in {}: {e}", parent.display())))?;
    let mut file = std::fs::File::from(fd);
    std::io::Write::write_all(&mut file, bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| not_moved(format!("writing it: {e}")))
}

/// Replace the git index `root/rel` by `bytes`, as git does (`index.lock` created exclusively,
/// written, renamed over it), only while it still holds what was checked (SHA-256 `read`):
/// a `git` of yours that wrote it since, or holds the lock, wins.
pub fn replace_index(root: &Path, rel: &Path, read: [u8; 32], bytes: &[u8]) -> Result<(), NotMoved> {
    use sha2::Digest;
    let parts: Vec<&OsStr> = rel.iter().collect();
    let Some((name, way)) = parts.split_last() else {
        return Err(not_moved("not an index"));
    };
    let (dir, parent) = open_dir(root, way, OFlags::empty())?;
    let fail = |what: &str, e: Errno| not_moved(format!("{what} in {}: {e}", parent.display()));
    let rd = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let current = rfs::openat(&dir, *name, rd, Mode::empty()).map_err(|e| fail("opening it", e))?;
    let st = rfs::fstat(&current).map_err(|e| fail("reading it", e))?;
    let mut now = Vec::new();
    std::io::Read::read_to_end(&mut std::fs::File::from(current), &mut now)
        .map_err(|e| not_moved(format!("reading it: {e}")))?;
    if <[u8; 32]>::from(sha2::Sha256::digest(&now)) != read {
        return Err(not_moved("it changed since it was checked (git ran there?)"));
    }
    let lock = std::ffi::OsString::from("index.lock");
    let wr = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rfs::openat(&dir, &lock, wr, Mode::from_raw_mode(st.st_mode & 0o666))
        .map_err(|e| fail("creating index.lock (git running there?)", e))?;
    let mut file = std::fs::File::from(fd);
    let written = std::io::Write::write_all(&mut file, bytes).and_then(|()| file.sync_all());
    let done = written
        .map_err(|e| not_moved(format!("writing index.lock: {e}")))
        .and_then(|()| rfs::renameat(&dir, &lock, &dir, *name).map_err(|e| fail("renaming index.lock", e)));
    if done.is_err() {
        let _ = rfs::unlinkat(&dir, &lock, rfs::AtFlags::empty());
    }
    done
}

/// Give back read and search permission on each of `roots` (the workdir, read-write
/// `--add-dir`s) that is this user's and lost them: a rootless agent can `chmod 000` its own
/// workdir, and the checks after the launch would then see nothing inside (session-10 attack
/// S10-8). The roots are the paths `ags` itself chose, never a name the agent made. A note for
/// each root given back.
pub fn restore_access(roots: &[PathBuf]) -> Vec<String> {
    let euid = rustix::process::geteuid().as_raw();
    let mut notes = Vec::new();
    for root in roots {
        let Ok(st) = rfs::stat(root) else { continue };
        let mode = st.st_mode & 0o7777;
        if st.st_uid != euid || mode & 0o500 == 0o500 {
            continue;
        }
        if rfs::chmod(root, Mode::from_raw_mode(mode | 0o500)).is_ok() {
            notes.push(format!(
                "ags: note: the launch took your own permissions on {} (mode {mode:04o}); read and search given back ({:04o}) to check what it left\n",
                crate::text::escape_line(&root.display().to_string()),
                mode | 0o500
            ));
        }
    }
    notes
}

/// Rename `name` in `dir` to the first free quarantine name: the plain one, `-2` … `-9`, then
/// random ones.
fn rename_free(dir: &OwnedFd, name: &OsStr, naming: Naming) -> Result<std::ffi::OsString, Errno> {
    let numbered = (1..10).map(|n| match n {
        1 => SUFFIX.to_string(),
        n => format!("{SUFFIX}-{n}"),
    });
    let random = (0..4).map(|_| format!("{SUFFIX}-{}", random_hex()));
    let numbered = numbered.filter(|_| naming != Naming::Random);
    for suffix in numbered.chain(random) {
        let new = match naming {
            Naming::Suffix | Naming::Random => {
                let mut new = name.to_os_string();
                new.push(&suffix);
                new
            }
            Naming::Prefix => {
                let mut new = std::ffi::OsString::from(format!("{suffix}."));
                new.push(name);
                new
            }
        };
        match rfs::renameat_with(dir, name, dir, new.as_os_str(), RenameFlags::NOREPLACE) {
            Ok(()) => return Ok(new),
            Err(Errno::EXIST) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(Errno::EXIST)
}

/// 16 hex digits from the system's random source (for temporary names too: they are created
/// exclusively anyway).
pub(crate) fn random_hex() -> String {
    let mut bytes = [0u8; 8];
    // Without randomness the name stays taken and the move fails: reported, never silent.
    let _ = getrandom::fill(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Run `f` with user write and search permission on `dir` when it is this user's directory
/// and lacks them, then put its mode back. Otherwise `f`'s error stands.
fn with_write_permission<T>(dir: &OwnedFd, f: impl FnOnce() -> Result<T, Errno>) -> Result<T, Errno> {
    let st = rfs::fstat(dir)?;
    let mode = st.st_mode & 0o7777;
    let mine = st.st_uid == rustix::process::geteuid().as_raw();
    if !mine || mode & 0o300 == 0o300 {
        return Err(Errno::ACCESS);
    }
    // An O_PATH descriptor cannot be fchmod'ed; its /proc/self/fd link names this very inode.
    let by_fd = format!("/proc/self/fd/{}", dir.as_fd().as_raw_fd());
    rfs::chmod(by_fd.as_str(), Mode::from_raw_mode(mode | 0o300))?;
    let result = f();
    // Best effort: the piece is gone either way, which is what matters.
    let _ = rfs::chmod(by_fd.as_str(), Mode::from_raw_mode(mode));
    result
}

#[cfg(test)]
#[path = "quarantine_tests.rs"]
mod tests;
