//! Small filesystem helpers shared by the stages: atomic private writes and owner-only
//! directory checks. Nothing here decides policy; callers say which mode they need.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Install an embedded program at `path` (0555, its directory created 0700), written atomically,
/// unless a file of the same size is already there (callers put a hash of the content in the
/// name). Used for the static binaries `ags` mounts read-only into containers.
pub fn install_program(path: &Path, program: &[u8]) -> io::Result<()> {
    if fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && m.len() == program.len() as u64) {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    }
    atomic_write(path, program, 0o555)?;
    fs::set_permissions(path, fs::Permissions::from_mode(0o555))
}

/// Create the private directory `dir` of a listening socket (0700; it must not exist yet). Its
/// missing ancestors are created owner-only too (the state directory may be one), and its parent
/// must then be owner-only. Serves the per-launch socket directories of the egress proxy and the
/// agent-hook record.
pub fn create_socket_dir(dir: &Path) -> io::Result<()> {
    if let Some(parent) = dir.parent() {
        fs::DirBuilder::new().recursive(true).mode(0o700).create(parent)?;
        ensure_private_dir(parent).map_err(|e| io::Error::other(e.to_string()))?;
    }
    fs::DirBuilder::new().mode(0o700).create(dir)
}

/// Write `bytes` to `path` atomically: a temp file in the same directory with `mode`, fsync,
/// rename over the target, fsync the directory. A crash leaves either the old or the new file.
pub fn atomic_write(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    write_whole(path, bytes, mode, true)
}

/// [`atomic_write`] that never replaces: an `AlreadyExists` error when `path` exists (the
/// file there is left as it is).
pub fn atomic_create(path: &Path, bytes: &[u8], mode: u32) -> io::Result<()> {
    write_whole(path, bytes, mode, false)
}

fn write_whole(path: &Path, bytes: &[u8], mode: u32, replace: bool) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::other("path has no file name"))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{}.", name.to_string_lossy()))
        .suffix(".tmp")
        .permissions(fs::Permissions::from_mode(mode))
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    match replace {
        true => tmp.persist(path).map_err(|e| e.error)?,
        false => tmp.persist_noclobber(path).map_err(|e| e.error)?,
    };
    File::open(dir)?.sync_all()
}

/// Why `root` (it may not exist yet) cannot hold short-lived private files in RAM, if it
/// cannot: [`private_root_problem`], or its
/// file system (the nearest existing ancestor's) is not RAM-backed ([`ram_backed`]), or, when
/// `exec` is asked, that file system is mounted `noexec`.
pub fn ram_root_problem(root: &Path, exec: bool) -> Option<String> {
    if let Some(why) = private_root_problem(root) {
        return Some(why);
    }
    let probe = root.ancestors().find(|p| p.exists()).unwrap_or(Path::new("/"));
    match ram_backed(probe) {
        Ok(Ok(())) => {}
        Ok(Err(kind)) => return Some(format!("{} is on {kind}", probe.display())),
        Err(e) => return Some(format!("{}: {e}", probe.display())),
    }
    let noexec = |st: nix::sys::statvfs::Statvfs| st.flags().contains(nix::sys::statvfs::FsFlags::ST_NOEXEC);
    match nix::sys::statvfs::statvfs(probe) {
        Ok(st) if exec && noexec(st) => Some(format!("{} is mounted noexec", probe.display())),
        Err(e) if exec => Some(format!("{}: {e}", probe.display())),
        _ => None,
    }
}

/// Why `root` (it may not exist yet) cannot be a private directory of this user: another user
/// could replace a directory on its way ([`check_ancestors_private`]), or it exists and is not
/// an owner-only directory of ours (in `/dev/shm`, any local user can create `ags-<uid>` first:
/// such a squatted directory is passed over, never used).
pub fn private_root_problem(root: &Path) -> Option<String> {
    if let Err(why) = check_ancestors_private(root) {
        return Some(why);
    }
    match fs::symlink_metadata(root) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => Some(format!("{}: {e}", root.display())),
        Ok(_) => check_private_dir(root).err().map(|e| {
            format!(
                "{e} (another local user may have created {} first)",
                root.display()
            )
        }),
    }
}

/// Whether the file system holding `path` keeps its content in RAM only (tmpfs or ramfs), by
/// `statfs`: its type name otherwise (`ext4`, …, or the magic number in hex).
pub fn ram_backed(path: &Path) -> io::Result<Result<(), String>> {
    let st = nix::sys::statfs::statfs(path).map_err(io::Error::from)?;
    let kind: libc::c_long = st.filesystem_type().0;
    // ramfs's magic number (linux/magic.h); the libc crate does not name it.
    const RAMFS_MAGIC: libc::c_long = 0x8584_58f6;
    let known: &[(libc::c_long, &str)] = &[
        (libc::TMPFS_MAGIC, "tmpfs"),
        (RAMFS_MAGIC, "ramfs"),
        (libc::EXT4_SUPER_MAGIC, "ext2/3/4"),
        (libc::XFS_SUPER_MAGIC, "xfs"),
        (libc::BTRFS_SUPER_MAGIC, "btrfs"),
        (libc::OVERLAYFS_SUPER_MAGIC, "overlay"),
    ];
    match known.iter().find(|(m, _)| *m == kind) {
        Some((_, "tmpfs" | "ramfs")) => Ok(Ok(())),
        Some((_, name)) => Ok(Err((*name).to_string())),
        None => Ok(Err(format!("file system type {kind:#x}"))),
    }
}

/// Create `dir` (and missing parents) and make sure it is a real directory owned by the current
/// user with mode 0700. Refuses a symlink or a directory with group/other permissions instead of
/// silently changing them, so a misconfiguration is noticed.
pub fn ensure_private_dir(dir: &Path) -> Result<(), PrivateDirError> {
    match fs::symlink_metadata(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if let Some(parent) = dir.parent() {
                fs::create_dir_all(parent).map_err(|e| PrivateDirError::Io {
                    path: dir.into(),
                    source: e,
                })?;
            }
            fs::DirBuilder::new()
                .mode(0o700)
                .create(dir)
                .or_else(|e| {
                    if e.kind() == io::ErrorKind::AlreadyExists {
                        Ok(())
                    } else {
                        Err(e)
                    }
                })
                .map_err(|e| PrivateDirError::Io {
                    path: dir.into(),
                    source: e,
                })?;
            check_private_dir(dir)
        }
        Err(e) => Err(PrivateDirError::Io {
            path: dir.into(),
            source: e,
        }),
        Ok(_) => check_private_dir(dir),
    }
}

/// Check that no other user can replace a directory on the way to `path`: each existing proper
/// ancestor is a real directory (not a symlink) owned by root or by us, writable by group or
/// others only when sticky (nobody else may then rename or remove what we own in it: `/tmp`,
/// `/dev/shm`). Otherwise the owner of an ancestor (e.g. another user's runtime directory, which
/// `su` keeps in `$XDG_RUNTIME_DIR`) could rename a directory we made there and put a symlink in
/// its place between a check and a use. The error names the ancestor and the rule.
pub fn check_ancestors_private(path: &Path) -> Result<(), String> {
    let uid = nix::unistd::geteuid().as_raw();
    for dir in path.ancestors().skip(1).filter(|d| !d.as_os_str().is_empty()) {
        let meta = match fs::symlink_metadata(dir) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(format!("{}: {e}", dir.display())),
        };
        let mode = meta.mode() & 0o7777;
        let why = if meta.file_type().is_symlink() {
            "is a symbolic link".to_string()
        } else if !meta.is_dir() {
            "is not a directory".to_string()
        } else if meta.uid() != 0 && meta.uid() != uid {
            format!("is owned by uid {}, neither root nor you (uid {uid})", meta.uid())
        } else if mode & 0o022 != 0 && mode & 0o1000 == 0 {
            format!("has mode {mode:04o}: others may write it and it is not sticky")
        } else {
            continue;
        };
        return Err(format!("{} {why}", dir.display()));
    }
    Ok(())
}

/// Check that `dir` is a directory (not a symlink), owned by us, mode 0700 exactly.
pub fn check_private_dir(dir: &Path) -> Result<(), PrivateDirError> {
    let meta = fs::symlink_metadata(dir).map_err(|e| PrivateDirError::Io {
        path: dir.into(),
        source: e,
    })?;
    if meta.file_type().is_symlink() {
        return Err(PrivateDirError::Symlink(dir.into()));
    }
    if !meta.is_dir() {
        return Err(PrivateDirError::NotDir(dir.into()));
    }
    check_owner_mode(dir, &meta, 0o700)
}

/// Check that `file` is a regular file (not a symlink) owned by us with no group/other bits.
pub fn check_private_file(file: &Path) -> Result<(), PrivateDirError> {
    let meta = fs::symlink_metadata(file).map_err(|e| PrivateDirError::Io {
        path: file.into(),
        source: e,
    })?;
    if meta.file_type().is_symlink() {
        return Err(PrivateDirError::Symlink(file.into()));
    }
    if !meta.is_file() {
        return Err(PrivateDirError::NotFile(file.into()));
    }
    check_owner_mode(file, &meta, 0o600)
}

fn check_owner_mode(path: &Path, meta: &fs::Metadata, want: u32) -> Result<(), PrivateDirError> {
    match exposure(meta) {
        None => Ok(()),
        Some(Exposure::Owner { owner, uid }) => Err(PrivateDirError::Owner {
            path: path.into(),
            owner,
            uid,
        }),
        Some(Exposure::Mode(mode)) => Err(PrivateDirError::Mode {
            path: path.into(),
            mode,
            want,
        }),
    }
}

/// Why a file or directory is not private to us.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exposure {
    /// Another user owns it.
    Owner {
        /// Its owner.
        owner: u32,
        /// Our effective uid.
        uid: u32,
    },
    /// Group or other permission bits are set (the permission bits, `0o7777`).
    Mode(u32),
}

/// Whether `meta` (of a file or directory) is owned by our effective uid with no group/other
/// permission bits; what is wrong otherwise (the owner is checked first).
pub fn exposure(meta: &fs::Metadata) -> Option<Exposure> {
    let uid = nix::unistd::geteuid().as_raw();
    if meta.uid() != uid {
        return Some(Exposure::Owner {
            owner: meta.uid(),
            uid,
        });
    }
    let mode = meta.mode() & 0o7777;
    (mode & 0o077 != 0).then_some(Exposure::Mode(mode))
}

/// Open a file for appending with mode 0600 (created if missing), refusing symlinks.
pub fn open_private_append(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// A private directory or file is not what it must be.
#[derive(Debug, thiserror::Error)]
pub enum PrivateDirError {
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error("{} is a symbolic link; replace it with a real directory or file owned by you", .0.display())]
    Symlink(PathBuf),
    #[error("{} is not a directory; move it away", .0.display())]
    NotDir(PathBuf),
    #[error("{} is not a regular file; move it away", .0.display())]
    NotFile(PathBuf),
    #[error("{} is owned by uid {owner}, not by you (uid {uid}); remove it or fix its owner", path.display())]
    Owner { path: PathBuf, owner: u32, uid: u32 },
    #[error("{} has mode {mode:04o}; it must be owner-only: run `chmod {want:o} {}`", path.display(), path.display())]
    Mode { path: PathBuf, mode: u32, want: u32 },
}

/// Open `path` to read without blocking on a FIFO and, unless `follow`, without following a
/// symbolic link at its last component: what an agent can write may be a FIFO (`open` would
/// hang `ags`) or a link to `/dev/zero`.
pub fn open_nonblocking(path: &Path, follow: bool) -> io::Result<File> {
    let nofollow = if follow { 0 } else { libc::O_NOFOLLOW };
    OpenOptions::new()
        .read(true)
        .custom_flags(nofollow | libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY)
        .open(path)
}

/// The bytes of the regular file `path` ([`open_nonblocking`]), at most `max` of them. Errors
/// say which rule failed: not a regular file (`InvalidInput`), larger than `max`.
pub fn read_bounded(path: &Path, max: u64, follow: bool) -> io::Result<Vec<u8>> {
    use std::io::Read;
    let file = open_nonblocking(path, follow)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "is not a regular file",
        ));
    }
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(io::Error::other(format!("is larger than {max} bytes")));
    }
    Ok(bytes)
}

/// Read a small regular file without following a symlink in its last component (`O_NOFOLLOW`)
/// and refuse anything larger than `max` bytes or not UTF-8. Errors say which rule failed.
pub fn read_small_text_nofollow(path: &Path, max: usize) -> io::Result<String> {
    let bytes = read_bounded(path, max as u64, false).map_err(|e| match e.raw_os_error() {
        Some(libc::ELOOP) => io::Error::other("is a symbolic link; name the file itself"),
        _ => e,
    })?;
    String::from_utf8(bytes).map_err(|_| io::Error::other("is not UTF-8 text"))
}

/// Compare the committed file `rel` (from the repository root) with `fresh`, what the code
/// generates now; with `AGS_BLESS=1`, rewrite it instead. `how`: the command that regenerates it.
#[cfg(test)]
pub fn check_committed(rel: &str, fresh: &str, how: &str) {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel);
    if std::env::var_os("AGS_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&path, fresh).expect("write the generated file");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == fresh,
        "{} is out of date with the code; regenerate it with `AGS_BLESS=1 {how}` and commit the result",
        path.display()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ram_backed_knows_tmpfs_from_other_file_systems() {
        // /dev/shm is tmpfs on every Linux host these tests run on; /proc never is.
        assert_eq!(ram_backed(Path::new("/dev/shm")).unwrap(), Ok(()));
        let proc = ram_backed(Path::new("/proc")).unwrap().unwrap_err();
        assert!(proc.starts_with("file system type 0x"), "{proc}");
    }

    #[test]
    fn atomic_write_replaces_and_sets_mode() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        atomic_write(&p, b"one", 0o600).unwrap();
        atomic_write(&p, b"two", 0o600).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        assert_eq!(fs::metadata(&p).unwrap().mode() & 0o777, 0o600);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1, "no temp file left");
    }

    #[test]
    fn ancestors_another_user_could_replace_are_named() {
        assert_eq!(
            check_ancestors_private(Path::new("/dev/shm/ags-x/y")),
            Ok(()),
            "sticky"
        );
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let loose = root.join("loose");
        fs::create_dir(&loose).unwrap();
        fs::set_permissions(&loose, fs::Permissions::from_mode(0o777)).unwrap();
        let err = check_ancestors_private(&loose.join("ags")).unwrap_err();
        assert!(err.contains("others may write it and it is not sticky"), "{err}");
        fs::set_permissions(&loose, fs::Permissions::from_mode(0o1777)).unwrap();
        assert_eq!(check_ancestors_private(&loose.join("missing/ags")), Ok(()));
        let link = root.join("link");
        std::os::unix::fs::symlink(&loose, &link).unwrap();
        let err = check_ancestors_private(&link.join("ags")).unwrap_err();
        assert!(err.ends_with("link is a symbolic link"), "{err}");
    }

    #[test]
    fn private_dir_refuses_loose_mode_and_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("store");
        ensure_private_dir(&d).unwrap();
        fs::set_permissions(&d, fs::Permissions::from_mode(0o755)).unwrap();
        let err = check_private_dir(&d).unwrap_err().to_string();
        assert!(err.contains("chmod 700"), "{err}");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&d, &link).unwrap();
        assert!(matches!(
            check_private_dir(&link),
            Err(PrivateDirError::Symlink(_))
        ));
    }

    #[test]
    fn a_root_someone_else_made_first_is_a_problem() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let mine = root.join("ags-mine");
        assert_eq!(private_root_problem(&mine), None, "missing: it will be made");
        ensure_private_dir(&mine).unwrap();
        assert_eq!(private_root_problem(&mine), None);
        let loose = root.join("ags-loose");
        fs::create_dir(&loose).unwrap();
        fs::set_permissions(&loose, fs::Permissions::from_mode(0o755)).unwrap();
        let why = private_root_problem(&loose).unwrap();
        assert!(why.contains("another local user may have created"), "{why}");
        std::os::unix::fs::symlink(&mine, root.join("ags-link")).unwrap();
        assert!(private_root_problem(&root.join("ags-link")).is_some());
        if nix::unistd::geteuid().is_root() {
            std::os::unix::fs::chown(&mine, Some(65534), Some(65534)).unwrap();
            let why = private_root_problem(&mine).unwrap();
            assert!(why.contains("65534"), "{why}");
            assert!(ram_root_problem(&mine, false).is_some());
        }
    }
}
