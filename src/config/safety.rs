//! What a config file must be before `ags` believes it: small enough to read whole, not writable
//! by other users (nor its directory), and, when it does not parse, reported without replaying
//! its raw bytes on the terminal. Also the note shown when a nested `.git` hides the trusted
//! overlay of an enclosing repository.
//!
//! Who may write: besides the owner, group write is accepted only for
//! the user's own primary group when that group has no other members (the "user private group"
//! of a `umask 002` system); world write never. A world-writable directory with the sticky bit
//! (`/tmp`) is accepted as a parent: others can neither rename nor replace the user's file there.

use std::fs;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::{ConfigError, Paths, Result};
use crate::text::escape_controls;

/// Largest config file `ags` reads (1 MiB); a larger one is refused unread.
pub const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// Characters of one line of a parse error shown; the rest is cut.
const MAX_SHOWN_LINE_CHARS: usize = 200;
/// Lines of a parse error shown.
const MAX_SHOWN_LINES: usize = 12;

/// Read `path` as UTF-8 text, refusing more than [`MAX_CONFIG_BYTES`] and anything but a
/// regular file: it is opened without blocking, so a FIFO planted as a project overlay (or a
/// link to `/dev/tty`) cannot hang `ags` or read your terminal.
pub(super) fn read_bounded(path: &Path) -> Result<String> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY)
        .open(path)
        .map_err(|source| ConfigError::Read {
            path: path.into(),
            source,
        })?;
    read_open(file, path)
}

/// Read the project overlay `root/REL` (`.ags/config.toml`) like [`read_bounded`], but opened
/// from the project root one component at a time, each `openat` with `O_NOFOLLOW`: the agent can
/// write the repository, and a link there (`.ags/config.toml -> ~/project.env`, or `.ags`
/// itself a link) would make `ags` read a host file of the agent's choosing and quote its
/// failing line in the parse error. A link is refused as unreadable, its target never opened.
pub(super) fn read_overlay(root: &Path, rel: &Path) -> Result<String> {
    use rustix::fs::{AtFlags, CWD, FileType, Mode, OFlags, openat, statat};
    use std::path::Component;
    let path = root.join(rel);
    let read_err = |source| ConfigError::Read {
        path: path.clone(),
        source,
    };
    let names: Vec<&std::ffi::OsStr> = rel
        .components()
        .map(|c| match c {
            Component::Normal(n) => Ok(n),
            _ => Err(read_err(std::io::Error::other(
                "not a plain path below the project",
            ))),
        })
        .collect::<Result<_>>()?;
    let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let mut dir = openat(CWD, root, dir_flags, Mode::empty()).map_err(|e| read_err(e.into()))?;
    for (i, name) in names.iter().enumerate() {
        let last = i + 1 == names.len();
        let flags = match last {
            true => OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
            false => dir_flags,
        } | OFlags::NOFOLLOW;
        dir = openat(&dir, *name, flags, Mode::empty()).map_err(|e| {
            let link = statat(&dir, *name, AtFlags::SYMLINK_NOFOLLOW)
                .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Symlink);
            read_err(match link {
                true => std::io::Error::other(format!(
                    "{} is a symbolic link, which ags does not follow inside a project (the agent can write there, and point it at any file of yours); replace the link with the file itself",
                    root.join(names[..=i].iter().collect::<PathBuf>()).display()
                )),
                false => e.into(),
            })
        })?;
    }
    read_open(fs::File::from(dir), &path)
}

/// The rest of [`read_bounded`] once `file` is open: a regular file of at most
/// [`MAX_CONFIG_BYTES`] of UTF-8.
fn read_open(file: fs::File, path: &Path) -> Result<String> {
    let read_err = |source| ConfigError::Read {
        path: path.into(),
        source,
    };
    if !file.metadata().map_err(read_err)?.is_file() {
        return Err(read_err(std::io::Error::other(
            "it is not a regular file (a FIFO, socket or device); a config file must be a regular file",
        )));
    }
    let mut bytes = Vec::new();
    file.take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(read_err)?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(ConfigError::TooLarge {
            path: path.into(),
            limit: MAX_CONFIG_BYTES,
        });
    }
    String::from_utf8(bytes).map_err(|e| ConfigError::Parse {
        path: path.into(),
        message: format!(
            "not valid UTF-8 (first bad byte at offset {}); save it as UTF-8",
            e.utf8_error().valid_up_to()
        ),
    })
}

/// A TOML error as shown to the user: every control character escaped (the file may come from
/// an untrusted repository and contain terminal escape sequences), each line cut to
/// [`MAX_SHOWN_LINE_CHARS`] characters, at most [`MAX_SHOWN_LINES`] lines, indented.
pub(super) fn parse_message(error: &toml::de::Error) -> String {
    let text = error.to_string();
    let lines: Vec<&str> = text.trim_end().lines().collect();
    let mut shown: Vec<String> = lines
        .iter()
        .take(MAX_SHOWN_LINES)
        .map(|line| shown_line(line))
        .collect();
    if lines.len() > MAX_SHOWN_LINES {
        shown.push(format!("[… {} more lines]", lines.len() - MAX_SHOWN_LINES));
    }
    shown.join("\n  ")
}

fn shown_line(line: &str) -> String {
    let cut: String = line.chars().take(MAX_SHOWN_LINE_CHARS).collect();
    let mut out = escape_controls(&cut);
    if line.chars().nth(MAX_SHOWN_LINE_CHARS).is_some() {
        out.push('…');
    }
    out
}

/// Refuse `path` (a config file, config directory or trust file; `what` says which) when
/// another user could change it, and refuse its directory likewise. A missing path is fine.
pub fn check_not_writable_by_others(path: &Path, what: &'static str) -> Result<()> {
    check_one(path, what)?;
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => check_one(dir, "the directory of a config or trust file"),
        _ => Ok(()),
    }
}

fn check_one(path: &Path, what: &'static str) -> Result<()> {
    let meta = match fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => {
            return Err(ConfigError::Read {
                path: path.into(),
                source,
            });
        }
    };
    let mode = meta.mode() & 0o7777;
    let sticky_dir = meta.is_dir() && mode & 0o1000 != 0;
    let world = mode & 0o002 != 0 && !sticky_dir;
    let group = mode & 0o020 != 0 && !sticky_dir && !private_group(meta.gid());
    if world || group {
        return Err(ConfigError::WritableByOthers {
            what,
            path: path.into(),
            mode,
        });
    }
    Ok(())
}

/// Whether `gid` is the user's primary group and has no members besides the user.
fn private_group(gid: u32) -> bool {
    if gid != nix::unistd::getegid().as_raw() {
        return false;
    }
    let user = nix::unistd::User::from_uid(nix::unistd::geteuid()).ok().flatten();
    match nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(gid)) {
        Ok(Some(group)) => group
            .mem
            .iter()
            .all(|m| user.as_ref().is_some_and(|u| &u.name == m)),
        _ => false,
    }
}

/// When `project` is a repository nested inside another repository whose overlay the user
/// trusts, the note that the outer overlay was not used (a `.git` the agent created in a
/// subdirectory would otherwise drop it silently).
pub(super) fn nested_repo_note(paths: &Paths, project: &Path, no_repo_config: bool) -> Option<String> {
    if no_repo_config || !project.join(".git").exists() {
        return None;
    }
    let outer: PathBuf = project
        .ancestors()
        .skip(1)
        .find(|dir| dir.join(".ags/config.toml").is_file())?
        .to_path_buf();
    if !super::overlay::is_trusted(&paths.overlay_trust_file(), &outer).unwrap_or(false) {
        return None;
    }
    Some(format!(
        "not using the project overlay {} of the trusted repository {}: {} has its own .git, which \
         makes it the project root (a nested repository, or a .git created inside the workspace); \
         run ags from {} to use that overlay, or remove {} if you did not create it",
        outer.join(".ags/config.toml").display(),
        outer.display(),
        project.display(),
        outer.display(),
        project.join(".git").display(),
    ))
}
