//! The state of one path as the git inventory records it (`workspace::git_inventory`): its
//! identity (device, inode), type and permissions, and a SHA-256 of a file's bytes or a link's
//! target — never a timestamp. Files are opened without following a link or blocking on a FIFO.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::{MAX_CONFIG_BYTES, MAX_DIGEST_BYTES};
use crate::git::model::guard;

/// What a path was to the walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub(super) enum Seen {
    /// A git dir.
    GitDir,
    /// A `.git` file or link, or a piece git reads to run a program.
    Piece,
    /// A directory that could not be listed.
    Unlisted,
    /// A file of an object store (loose object, pack, pack index).
    Object,
    /// A directory deeper than the walk goes.
    Deep,
}

/// What a path held: identity, type and permissions, and the content of a file or link.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(super) struct State {
    dev: u64,
    ino: u64,
    mode: u32,
    content: Content,
}

impl State {
    /// Whether the content could not be read: such a state is never proven unchanged.
    pub(super) fn unproven(&self) -> bool {
        self.content == Content::Unproven
    }

    /// Whether `other` is the same file (device, inode, mode), whatever its content.
    pub(super) fn same_file(&self, other: &State) -> bool {
        (self.dev, self.ino, self.mode) == (other.dev, other.ino, other.mode)
    }
}

/// What a path held besides its identity and mode.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
enum Content {
    /// A directory, a FIFO, …: identity and mode say it all.
    None,
    /// The SHA-256 of a regular file's bytes or a link's target.
    Digest([u8; 32]),
    /// A file's size (and change time, or zeros), unread (an object file: git writes one
    /// once and never changes it).
    Size(u64, (i64, i64)),
    /// Not read (too big, unreadable): never equal to what was there.
    Unproven,
}

/// A file's identity, type, permissions and size, without reading it; with `touched`, also its
/// change time, which every write sets and no process can set back (a loose object rewritten
/// in place to the same size: session-13 attack J6).
// The types of `stat`'s fields vary by architecture; the values are what `std`'s `Metadata`
// gives (`dev`, `ino`, `mode`, `len`, `ctime`, `ctime_nsec`), so states compare across both.
#[allow(clippy::unnecessary_cast)]
pub(super) fn unread(meta: &rustix::fs::Stat, touched: bool) -> State {
    let ctime = if touched {
        (meta.st_ctime as i64, meta.st_ctime_nsec as i64)
    } else {
        (0, 0)
    };
    State {
        dev: meta.st_dev as u64,
        ino: meta.st_ino as u64,
        mode: meta.st_mode as u32,
        content: Content::Size(meta.st_size as u64, ctime),
    }
}

/// A path's state, and the bytes of a regular file of at most [`MAX_CONFIG_BYTES`] (or why
/// they could not be read).
pub(super) fn observe(path: &Path, meta: &std::fs::Metadata) -> (State, Result<Vec<u8>, String>) {
    let mut state = State {
        dev: meta.dev(),
        ino: meta.ino(),
        mode: meta.mode(),
        content: Content::None,
    };
    let mut bytes = Err("not a regular file".to_string());
    if meta.file_type().is_symlink() {
        state.content = match std::fs::read_link(path) {
            Ok(t) => Content::Digest(Sha256::digest(t.as_os_str().as_encoded_bytes()).into()),
            Err(_) => Content::Unproven,
        };
    } else if meta.is_file() {
        state.content = Content::Unproven;
        match digest_file(path) {
            Ok((file, digest, kept)) if (file.dev(), file.ino()) == (state.dev, state.ino) => {
                state.content = digest.map_or(Content::Unproven, Content::Digest);
                bytes = kept.ok_or_else(|| "over 1 MiB".to_string());
            }
            Ok(_) => bytes = Err("replaced while read".into()),
            Err(e) => bytes = Err(e.to_string()),
        }
    }
    (state, bytes)
}

/// A regular file's metadata (as opened), its digest (`None` over [`MAX_DIGEST_BYTES`]), and
/// its bytes when at most [`MAX_CONFIG_BYTES`]; opened without following a link or blocking.
type Digested = (std::fs::Metadata, Option<[u8; 32]>, Option<Vec<u8>>);

fn digest_file(path: &Path) -> std::io::Result<Digested> {
    use std::io::Read;
    let mut file = crate::fsutil::open_nonblocking(path, false)?;
    let meta = file.metadata()?;
    let (mut hash, mut kept, mut total) = (Sha256::new(), Vec::new(), 0u64);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        total += n as u64;
        if total > MAX_DIGEST_BYTES {
            return Ok((meta, None, None));
        }
        hash.update(&buf[..n]);
        if total <= MAX_CONFIG_BYTES {
            kept.extend_from_slice(&buf[..n]);
        }
    }
    let kept = (total <= MAX_CONFIG_BYTES).then_some(kept);
    Ok((meta, Some(hash.finalize().into()), kept))
}

/// What a ref name under the replace namespace starts with.
pub(super) const REPLACE: &[u8] = b"refs/replace/";

/// The `packed-refs` file at `path` (one the check moved aside) without the lines naming a
/// replace ref, nor the peeled (`^`) lines that follow them: what is put back in its place so
/// that the user's packed branches and tags stay. Any line naming `refs/replace/` goes,
/// whatever blank follows the object id (session-18 attack C3). At most 64 MiB is read.
pub fn packed_refs_without_replace(path: &Path) -> std::io::Result<Vec<u8>> {
    let text = crate::fsutil::read_bounded(path, 64 * 1024 * 1024, false)?;
    let mut out = Vec::with_capacity(text.len());
    let mut dropping = false;
    for line in text.split_inclusive(|b| *b == b'\n') {
        if !line.starts_with(b"^") {
            dropping = line.windows(REPLACE.len()).any(|w| w == REPLACE);
        }
        if !dropping {
            out.extend_from_slice(line);
        }
    }
    Ok(out)
}

/// The git dir a `.git` file names, read as git reads it (`read_gitfile_gently`: up to 1 MiB,
/// `gitdir: PATH`, any bytes): `None` when git refuses it too (too long, another content); the
/// path as named, resolved by [`strict`], when it does not exist (yet); an error when it
/// cannot be read or its way passes a link (see [`strict`]).
pub(super) fn gitfile_target(path: &Path) -> std::io::Result<Option<PathBuf>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    crate::fsutil::open_nonblocking(path, false)?
        .take(MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Ok(None);
    }
    let Some(named) = guard::gitfile_path(&bytes) else {
        return Ok(None);
    };
    let named = path.parent().unwrap_or(Path::new("/")).join(named);
    strict(&named).map(Some).map_err(|at| {
        std::io::Error::other(format!(
            "it names a path through {}, a symbolic link in the workspace or a missing directory followed by `..`",
            crate::text::escape_line(&at.display().to_string())
        ))
    })
}

/// Whether the git dir `target` that the `.git` file `dot_git` names is one git pairs with
/// that file itself: a worktree entry (`…/worktrees/NAME`) whose `gitdir` names `dot_git`, or
/// a submodule's git dir (under a `modules/`) whose `core.worktree` is `dot_git`'s directory.
pub(super) fn names_back(dot_git: &Path, target: &Path) -> bool {
    let text = |p: &Path| {
        guard::read_small(p).ok().map(|b| {
            String::from_utf8_lossy(&b)
                .trim_end_matches(['\n', '\r'])
                .to_string()
        })
    };
    let resolved = |p: PathBuf| strict(&p).ok();
    if guard::entry_common(target).is_some() {
        let back = text(&target.join("gitdir")).and_then(|g| resolved(target.join(g)));
        return back.as_deref() == Some(dot_git);
    }
    let module = target
        .ancestors()
        .skip(1)
        .any(|a| a.file_name().is_some_and(|n| n == "modules"));
    let back = guard::core_worktree(target).and_then(|w| resolved(target.join(w)));
    module && back.is_some() && back.as_deref() == dot_git.parent()
}

/// Where the absolute path `named` leads, component by component as the kernel takes it,
/// whether or not it exists yet (a later launch can make what is missing: session-10 attack
/// S10-9). `Err(at)` — the path is the agent's to re-point later, so judged as planted — when a
/// component is a symbolic link (now pointing anywhere, or nowhere: session-18 attacks A3, A4;
/// in the workspace or in the agent's state volume alike), or a `..` follows a missing
/// component (once made, it leads back to whatever the agent chose: session-18 attacks C1,
/// C2). Git writes the paths of `.git` files without links; a URL typed through a system's
/// alias (`/home` -> `/usr/home`) in a changed config goes aside too, named.
pub(super) fn strict(named: &Path) -> Result<PathBuf, PathBuf> {
    use std::path::Component;
    let mut at = PathBuf::from("/");
    let mut missing = false;
    for part in named.components() {
        match part {
            Component::RootDir | Component::Prefix(_) | Component::CurDir => {}
            Component::ParentDir if missing => return Err(at),
            Component::ParentDir => {
                at.pop();
            }
            Component::Normal(name) => {
                at.push(name);
                if missing {
                    continue;
                }
                match std::fs::symlink_metadata(&at) {
                    // Inside the workspace or not (the agent's state volume, or a link to an
                    // ancestor of the workspace made there), a link can be re-pointed later.
                    Ok(meta) if meta.file_type().is_symlink() => return Err(at),
                    Ok(_) => {}
                    Err(_) => missing = true,
                }
            }
        }
    }
    Ok(at)
}
