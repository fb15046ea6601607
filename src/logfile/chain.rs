//! The per-launch hash chain of the host logs (issue 29): each record a launch writes to a log
//! carries `"chain": {"seq": N, "prev": DIGEST}`, the launch's record number in that log and the
//! SHA-256 of the launch's previous record there (the whole line, without its newline;
//! [`GENESIS`] for the first). A receipt (`crate::receipt`) closes each chain with its count and
//! the digest of its last record, so an edited, removed, inserted or reordered record breaks a
//! link or the closing digest.
//!
//! The chain's head lives in a small state file next to the log, `chains/<launch>/<log name>`
//! (0600 in 0700 directories), read and rewritten in place under the log's lock. So every process that
//! writes a launch's records (the launch's `ags`, `ags allow`, the crash recovery) continues one
//! chain, and the order of the chain is the order of the file.
//!
//! A launch is chained from [`open`] (a launch that will have a receipt) until its receipt
//! closes and [`forget`]s the heads. Records written outside that span (an `ags plan`, a grant
//! for every launch, a connection that ended after the receipt closed) carry no link: nothing
//! starts a second chain for a launch whose receipt is closed.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The `prev` of a launch's first record in a log.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The most bytes a link adds to a line (`,"chain":{"seq":N,"prev":"…"}` with a 20-digit N):
/// what a budget counts on top of each line (`crate::logfile::LaunchLog`).
pub const MAX_LINK_BYTES: u64 = 112;

/// The link a record carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Link {
    /// The record's number among the launch's records in this log, from 0.
    pub seq: u64,
    /// The digest of the launch's previous record in this log ([`GENESIS`] for the first).
    pub prev: String,
}

/// Where a launch's chain in a log stands: how many records, the digest of the last.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Head {
    /// Records written.
    pub count: u64,
    /// The digest of the last ([`GENESIS`] when none).
    pub head: String,
}

impl Default for Head {
    fn default() -> Self {
        Self {
            count: 0,
            head: GENESIS.to_string(),
        }
    }
}

/// The SHA-256 of `line` (its trailing newline, if any, excluded), in hex.
pub fn digest(line: &[u8]) -> String {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    hex::encode(Sha256::digest(line))
}

/// Whether `launch` may name a chain's directory: a launch id `ags` made (letters, digits, `-`,
/// `_`, `.`; not starting with `.`; at most 128 bytes).
pub fn valid_launch(launch: &str) -> bool {
    !launch.is_empty()
        && launch.len() <= 128
        && !launch.starts_with('.')
        && launch
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// The head file of `launch`'s chain in the log at `log`.
pub fn state_path(log: &Path, launch: &str) -> Option<PathBuf> {
    if !valid_launch(launch) {
        return None;
    }
    let dir = log.parent()?;
    Some(dir.join("chains").join(launch).join(log.file_name()?))
}

/// Where `launch`'s chain in `log` stands (nothing written: count 0).
pub fn head(log: &Path, launch: &str) -> io::Result<Head> {
    let Some(path) = state_path(log, launch) else {
        return Err(io::Error::other(format!("{launch:?} is not a launch id")));
    };
    match std::fs::File::open(&path) {
        Ok(file) => read_head(&file, &path).map(|f| f.head),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Head::default()),
        Err(e) => Err(e),
    }
}

/// Begin `launch`'s chains: from now on its records carry links (0700 directories).
pub fn open(state_dir: &Path, launch: &str) -> io::Result<()> {
    if !valid_launch(launch) {
        return Err(io::Error::other(format!("{launch:?} is not a launch id")));
    }
    let chains = state_dir.join("chains");
    for d in [state_dir.to_path_buf(), chains.clone(), chains.join(launch)] {
        crate::fsutil::ensure_private_dir(&d).map_err(|e| io::Error::other(e.to_string()))?;
    }
    Ok(())
}

/// Forget the chain heads of `launch` (its receipt holds them now). The directory is renamed
/// away in one step before it is removed: a record racing this finds either an ended head or no
/// directory, never an empty one where it would make a fresh head and start a second chain.
pub fn forget(state_dir: &Path, launch: &str) {
    if valid_launch(launch) {
        let chains = state_dir.join("chains");
        let dir = chains.join(launch);
        let gone = chains.join(format!("{GONE}{launch}"));
        open_heads().retain(|path, _| !path.starts_with(&dir));
        let _ = std::fs::remove_dir_all(&gone);
        if std::fs::rename(&dir, &gone).is_ok() {
            let _ = std::fs::remove_dir_all(gone);
        }
    }
}

/// The prefix of a forgotten chain's directory while it is removed (no launch id starts with
/// `.`); one left by a crash is dropped by the next recovery.
pub const GONE: &str = ".gone-";

/// the link, when it carries one as its last member; else the line itself.
pub fn split(line: &[u8]) -> (std::borrow::Cow<'_, [u8]>, Option<Link>) {
    const MARK: &[u8] = b",\"chain\":{\"seq\":";
    let found = line
        .strip_suffix(b"}")
        .and_then(|b| b.windows(MARK.len()).rposition(|w| w == MARK).map(|at| (b, at)));
    let Some((inner, at)) = found else {
        return (line.into(), None);
    };
    let Ok(link) = serde_json::from_slice::<Link>(&inner[at + 9..]) else {
        return (line.into(), None);
    };
    let mut record = inner[..at].to_vec();
    record.push(b'}');
    (record.into(), Some(link))
}

/// The bytes of a head file: its JSON padded with spaces, rewritten in place.
const HEAD_BYTES: usize = 128;

/// At most this many head files are held open by one process.
const MAX_OPEN_HEADS: usize = 16;

/// A head file: the head, and whether the receipt ended the chain (later records of the launch
/// carry no link).
#[derive(Default, Serialize, Deserialize)]
struct HeadFile {
    #[serde(flatten)]
    head: Head,
    #[serde(default)]
    ended: bool,
}

fn read_head(file: &File, path: &Path) -> io::Result<HeadFile> {
    let mut buf = [0u8; HEAD_BYTES];
    let n = file.read_at(&mut buf, 0)?;
    if n == 0 {
        return Ok(HeadFile::default());
    }
    serde_json::from_slice(&buf[..n])
        .map_err(|e| io::Error::other(format!("the chain head {} is damaged: {e}", path.display())))
}

fn write_head(file: &File, head: &HeadFile) -> io::Result<()> {
    let mut bytes = serde_json::to_vec(head).map_err(io::Error::other)?;
    bytes.resize(HEAD_BYTES, b' ');
    file.write_all_at(&bytes, 0)
}

/// What [`extend`] made: the line to write, and (when it was chained) the head before and after.
pub(super) struct Extended {
    pub line: Vec<u8>,
    pub was: Option<Head>,
    pub now: Option<Head>,
}

/// The head files this process has open, by path.
fn open_heads() -> MutexGuard<'static, HashMap<PathBuf, File>> {
    static OPEN: OnceLock<Mutex<HashMap<PathBuf, File>>> = OnceLock::new();
    OPEN.get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// `line` (one JSON object and its newline) with its link added as the last member, the
/// chain's head moved on past it (one `pwrite` of [`HEAD_BYTES`] at offset 0 of the head file
/// this process keeps open), and with `end` the chain ended there; the line as it is when
/// `launch` is not chained ([`open`], or ended). Called with the log's lock held.
pub(super) fn extend(log: &Path, launch: &str, line: &[u8], end: bool) -> io::Result<Extended> {
    let body = line.strip_suffix(b"\n").unwrap_or(line);
    let Some(open) = body
        .strip_suffix(b"}")
        .filter(|b| b.starts_with(b"{") && b.len() > 1)
    else {
        return Err(io::Error::other(
            "a chained record must be a non-empty JSON object",
        ));
    };
    let as_is = || Extended {
        line: line.to_vec(),
        was: None,
        now: None,
    };
    let Some(path) = state_path(log, launch) else {
        return Ok(as_is());
    };
    let mut heads = open_heads();
    if !heads.contains_key(&path) {
        let Some(file) = open_head(&path)? else {
            return Ok(as_is());
        };
        if heads.len() >= MAX_OPEN_HEADS {
            heads.clear();
        }
        heads.insert(path.clone(), file);
    }
    let file = &heads[&path];
    let was = read_head(file, &path)?;
    if was.ended {
        return Ok(as_is());
    }
    let link = Link {
        seq: was.head.count,
        prev: was.head.head.clone(),
    };
    let mut out = open.to_vec();
    out.extend_from_slice(b",\"chain\":");
    out.extend_from_slice(&serde_json::to_vec(&link).map_err(io::Error::other)?);
    out.push(b'}');
    let now = Head {
        count: link.seq + 1,
        head: digest(&out),
    };
    out.push(b'\n');
    // Written before the line: a crash in between leaves a head past the log (found as a
    // record missing at the end), never a log past its head. A failed write rewinds it.
    write_head(
        file,
        &HeadFile {
            head: now.clone(),
            ended: end,
        },
    )?;
    Ok(Extended {
        line: out,
        was: Some(was.head),
        now: Some(now),
    })
}

/// Put `launch`'s head in `log` back to `was` (its line could not be written).
pub(super) fn rewind(log: &Path, launch: &str, was: Head) -> io::Result<()> {
    let path = state_path(log, launch).ok_or_else(|| io::Error::other("not a launch id"))?;
    match open_heads().get(&path) {
        Some(file) => write_head(
            file,
            &HeadFile {
                head: was,
                ended: false,
            },
        ),
        None => Ok(()),
    }
}

/// Open (creating it 0600) the head file at `path`; `None` when its launch is not chained (its
/// directory, made by [`open`], is not there).
fn open_head(path: &Path) -> io::Result<Option<File>> {
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path);
    match opened {
        Ok(file) => Ok(Some(file)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}
