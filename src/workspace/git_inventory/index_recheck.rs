//! What git trusts in an index instead of the worktree and the entries (session-12 attack):
//! - the cache-tree (`TREE`): `git commit` takes a valid subtree from it as is, so a forged
//!   node put a workflow nobody staged into the user's next commit (F1), while `git status`
//!   and `git diff --cached` compare entry by entry and show nothing;
//! - an entry's stat data: when it matches the file, git does not read the file, so the old
//!   object name with the new file's stat hid a changed `Makefile` from `git status` (F4);
//! - the untracked cache (`UNTR`) and the fsmonitor token (`FSMN`) likewise decide what git
//!   looks at.
//!
//! After a launch that changed an index, [`recheck`] returns it without those caches (and the
//! offset tables that index them, `EOIE`, `IEOT`) and with the stat data of every entry the
//! launch touched (new, or different from every entry before it) cleared, as git itself leaves
//! an entry it has not checked yet (`update-index --cacheinfo`: size 0): git then reads those
//! files once and rebuilds the caches. The staging area — paths, object names, modes, flags —
//! stays as the launch left it. Pure: bytes in, bytes out; the trailing checksum is recomputed
//! (SHA-1 by [`sha1`], SHA-256 by `sha2`; an all-zero one, `index.skipHash`, stays zero).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::Walk;
use super::index::{Parsed, hidden, refused, staged_protected};

/// What the inventory holds of one index file.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct IndexState {
    /// SHA-256 of its bytes.
    digest: [u8; 32],
    /// Its entries hidden from `git status` ([`super::index::hidden`]).
    hidden: BTreeSet<String>,
    /// Its entries ([`keys`]).
    keys: BTreeSet<Key>,
    /// Its entries for protected paths ([`super::index::staged_protected`]).
    staged: BTreeSet<(String, String)>,
}

/// An index the launch changed, and what to write in its place.
#[derive(Debug)]
pub struct IndexRewrite {
    /// The index file.
    pub path: PathBuf,
    /// SHA-256 of the bytes checked (written back only while it still holds them).
    pub read: [u8; 32],
    /// The bytes to write.
    pub bytes: Vec<u8>,
}

impl Walk<'_> {
    /// The index file `path` of a git dir: recorded while taking the inventory; afterwards,
    /// when it differs, the entries that gained `skip-worktree` or `assume-unchanged` are named
    /// (the index is your staging area), the caches git trusts are dropped and the stat data of
    /// the entries the launch touched cleared ([`recheck`]); a split index, or one `ags` cannot
    /// read, goes aside.
    pub(super) fn index(&mut self, path: &Path) {
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            return;
        };
        let bytes = match meta.is_file() {
            true => std::fs::read(path).map_err(|e| e.to_string()),
            false => Err("not a regular file".into()),
        };
        let digest: [u8; 32] = Sha256::digest(bytes.as_deref().unwrap_or_default()).into();
        let Some(before) = self.indexes_before else {
            let bytes = bytes.unwrap_or_default();
            let index = Parsed::new(&bytes);
            let state = IndexState {
                digest,
                hidden: index
                    .as_ref()
                    .ok()
                    .and_then(|i| hidden(i).ok())
                    .unwrap_or_default(),
                keys: index.as_ref().map(keys).unwrap_or_default(),
                staged: index.as_ref().map(staged_protected).unwrap_or_default(),
            };
            self.indexes.insert(path.into(), state);
            return;
        };
        let was = before.get(path).filter(|_| !self.full);
        if was.is_some_and(|w| w.digest == digest && bytes.is_ok()) {
            return;
        }
        let unreadable = |e: &dyn std::fmt::Display| format!("a git index ags cannot read ({e})");
        let bytes = match bytes {
            Ok(b) => b,
            Err(e) => return self.report(path.into(), unreadable(&e)),
        };
        let index = match Parsed::new(&bytes) {
            Ok(index) => index,
            Err(e) => return self.report(path.into(), unreadable(&e)),
        };
        let bad = refused(&index);
        if !bad.is_empty() {
            let what = format!(
                "a git index with entries git would refuse to add ({}): `git restore .` or `git checkout .` would write them into the git dir or outside the worktree; `git reset` makes a new index from HEAD",
                bad.join(", ")
            );
            return self.report(path.into(), what);
        }
        if let Ok(now) = hidden(&index) {
            let new: Vec<String> = now
                .into_iter()
                .filter(|e| !was.is_some_and(|w| w.hidden.contains(e)))
                .collect();
            if !new.is_empty() {
                self.out.hidden.push((path.into(), new));
            }
        }
        let new: Vec<String> = staged_protected(&index)
            .into_iter()
            .filter(|e| !was.is_some_and(|w| w.staged.contains(e)))
            .map(|(name, _)| name)
            .collect();
        if !new.is_empty() {
            self.out.staged.push((path.into(), new));
        }
        let empty = BTreeSet::new();
        match recheck(&index, was.map_or(&empty, |w| &w.keys)) {
            Recheck::Keep => {}
            Recheck::Rewrite(new) => self.out.index_rewrites.push(IndexRewrite {
                path: path.into(),
                read: digest,
                bytes: new,
            }),
            Recheck::Split => self.report(
                path.into(),
                "a split index: its entries, in a sharedindex file, are not checked (`git reset` rebuilds the index from HEAD)".into(),
            ),
        }
    }
}

/// Extensions that are caches of what git would otherwise compute from the entries and the
/// worktree: dropped.
const CACHES: [&[u8; 4]; 5] = [b"TREE", b"UNTR", b"FSMN", b"EOIE", b"IEOT"];

/// One entry's identity: its stat data, object name, flags and path.
pub(super) type Key = [u8; 32];

/// The keys of every entry of the index (before the launch).
pub(super) fn keys(index: &Parsed<'_>) -> BTreeSet<Key> {
    index.entries.iter().map(|e| key(index, e)).collect()
}

fn key(index: &Parsed<'_>, e: &super::index::Entry) -> Key {
    let fixed = &index.bytes[e.start..e.start + 40 + index.hash + 2];
    let mut h = Sha256::new();
    h.update(fixed);
    h.update(&e.path);
    h.finalize().into()
}

/// What to do with an index the launch changed.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Recheck {
    /// Nothing git would trust without looking: keep it.
    Keep,
    /// Write these bytes in its place.
    Rewrite(Vec<u8>),
    /// A split index: its entries are elsewhere (`sharedindex.*`, F3); it cannot be rechecked.
    Split,
}

/// The index without its caches and with the stat data of the entries not in `before`
/// cleared.
pub(super) fn recheck(index: &Parsed<'_>, before: &BTreeSet<Key>) -> Recheck {
    let bytes = index.bytes;
    if index.extension(b"link").is_some() {
        return Recheck::Split;
    }
    let touched: Vec<&super::index::Entry> = index
        .entries
        .iter()
        .filter(|e| !before.contains(&key(index, e)))
        .collect();
    let dropped = index.extensions.iter().any(|(s, _)| CACHES.contains(&s));
    if touched.is_empty() && !dropped {
        return Recheck::Keep;
    }
    let ext_start = index
        .extensions
        .first()
        .map_or(bytes.len() - index.hash, |(_, r)| r.start);
    let mut out = bytes[..ext_start].to_vec();
    for e in touched {
        // ctime, mtime, dev, ino (16 + 8 bytes); the mode (4) stays; uid, gid, size (12).
        out[e.start..e.start + 24].fill(0);
        out[e.start + 28..e.start + 40].fill(0);
    }
    for (sig, range) in &index.extensions {
        if !CACHES.contains(&sig) {
            out.extend_from_slice(&bytes[range.clone()]);
        }
    }
    let trailer = &bytes[bytes.len() - index.hash..];
    if trailer.iter().all(|b| *b == 0) {
        out.extend_from_slice(trailer);
    } else if index.hash == 20 {
        let sum = sha1(&out);
        out.extend_from_slice(&sum);
    } else {
        let sum: [u8; 32] = Sha256::digest(&out).into();
        out.extend_from_slice(&sum);
    }
    Recheck::Rewrite(out)
}

/// SHA-1, for the trailing checksum of a SHA-1 repository's index and to check that a loose
/// object's content hashes to its name, as git names it.
pub fn sha1(data: &[u8]) -> [u8; 20] {
    use sha1::Digest;
    sha1::Sha1::digest(data).into()
}

#[cfg(test)]
#[path = "index_recheck_tests.rs"]
mod tests;
