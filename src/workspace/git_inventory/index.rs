//! The entries of a git index (`.git/index`) that git hides from you: `skip-worktree` and
//! `assume-unchanged` ("assume valid") make `git status` and `git diff` say nothing about a
//! file, whatever its content on disk or in the commit (session-10 attack S10-6: a changed
//! `Makefile`; S10-1: a `.envrc` staged and committed without ever being on disk). The check
//! after a launch names the entries that gained such a bit (`Walk::hidden_entries`).
//!
//! Reads the index format git documents (`gitformat-index`): versions 2, 3 and 4 (paths
//! prefix-compressed), SHA-1 or SHA-256 object names. Pure: bytes in, entries out.

use std::collections::BTreeSet;

/// Index entries hidden from `git status`, as `"PATH (BIT)"`.
pub(super) fn hidden(index: &Parsed<'_>) -> Result<BTreeSet<String>, IndexError> {
    if index.extension(b"link").is_some() {
        // Its entries and their bits are in `sharedindex.*` (session-12 attack F3).
        return Err(IndexError::Split);
    }
    let mut out = BTreeSet::new();
    for e in &index.entries {
        let name = String::from_utf8_lossy(&e.path);
        if e.extended & 0x4000 != 0 && e.mode & 0o170000 == 0o040000 {
            // A sparse index's directory entry: every file below it is out of sight
            // (session-12 re-attack N3); `update-index` cannot show it.
            out.insert(format!(
                "{name} (a sparse directory: `git sparse-checkout disable` shows what is in it)"
            ));
        } else if e.extended & 0x4000 != 0 {
            out.insert(format!("{name} (skip-worktree)"));
        }
        if e.flags & 0x8000 != 0 {
            out.insert(format!("{name} (assume-unchanged)"));
        }
    }
    Ok(out)
}

/// Index entries git itself would refuse to add (its `verify_path`): a component that is
/// `.git` (any case, trailing dots or spaces, or `git~1`), `.` or `..`, an empty component, a
/// leading `/`, a backslash, or `.gitmodules` and its kin as a symbolic link. git does not
/// check the entries it reads back, so `git restore .` or `git checkout .` writes such a path
/// into the git dir (`.git/hooks/pre-commit`) or outside the worktree (`../../.bashrc`)
/// (session-15 attack R8-2, R8-3).
pub(super) fn refused(index: &Parsed<'_>) -> Vec<String> {
    let mut out = Vec::new();
    for e in &index.entries {
        let sparse_dir = e.mode & 0o170000 == 0o040000;
        let path = match sparse_dir {
            true => e.path.strip_suffix(b"/").unwrap_or(&e.path),
            false => &e.path,
        };
        let link = e.mode & 0o170000 == 0o120000;
        if git_refuses(path, link) {
            out.push(crate::text::escape_line(&String::from_utf8_lossy(&e.path)));
        }
    }
    out
}

fn git_refuses(path: &[u8], link: bool) -> bool {
    if path.is_empty() || path[0] == b'/' || path.contains(&b'\\') {
        return true;
    }
    let parts: Vec<&[u8]> = path.split(|&b| b == b'/').collect();
    parts.iter().enumerate().any(|(i, part)| {
        let lower = part.to_ascii_lowercase();
        let end = lower
            .iter()
            .rposition(|&b| b != b'.' && b != b' ')
            .map_or(0, |p| p + 1);
        let name = &lower[..end];
        let last = i + 1 == parts.len();
        let special = [&b".gitmodules"[..], b".gitattributes", b".gitignore", b".mailmap"];
        part.is_empty()
            || *part == b"."
            || *part == b".."
            || name == b".git"
            || name == b"git~1"
            || (link && last && special.contains(&name))
    })
}

/// Index entries for protected paths (`workspace::protected`, at any depth), as `"PATH"` with
/// their mode and object name: what `git checkout .`, `git restore .` and `git commit` take
/// from the index whether or not the file is on disk (session-13 attack J4).
pub(super) fn staged_protected(index: &Parsed<'_>) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for e in &index.entries {
        let name = String::from_utf8_lossy(&e.path);
        if crate::workspace::git_commits::who_runs(&name, &[]).is_some() {
            // Its mode and object name, not its stat data (a refresh rewrites that).
            let oid = &index.bytes[e.start + 40..e.start + 40 + index.hash];
            let mode = hex::encode(e.mode.to_be_bytes());
            out.insert((name.into_owned(), format!("{mode} {}", hex::encode(oid))));
        }
    }
    out
}

/// One entry's place and what it says.
pub(super) struct Entry {
    /// Offset of its first byte (its stat data).
    pub start: usize,
    pub mode: u32,
    pub path: Vec<u8>,
    pub flags: u16,
    pub extended: u16,
}

/// Why an index is not read: `ags` then reports it instead of trusting what it would show.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum IndexError {
    #[error("not a git index")]
    NotAnIndex,
    #[error("index version {0}")]
    Version(u32),
    #[error("the index ends early")]
    EndsEarly,
    #[error("a path prefix longer than the previous path")]
    Prefix,
    #[error("a varint too large")]
    Varint,
    #[error("a path without its end")]
    UnendedPath,
    #[error("an entry whose name length (in its flags) is not its name's")]
    NameLength,
    #[error("the index does not end with its checksum")]
    Checksum,
    #[error("a split index (its entries are in a sharedindex file ags does not read)")]
    Split,
}

/// A whole index file, checked to its trailing checksum.
pub(super) struct Parsed<'a> {
    pub bytes: &'a [u8],
    /// The object name length (20: SHA-1, 32: SHA-256).
    pub hash: usize,
    pub entries: Vec<Entry>,
    /// Each extension: its signature and the range of its header and data.
    pub extensions: Vec<([u8; 4], std::ops::Range<usize>)>,
}

impl<'a> Parsed<'a> {
    /// The object name's length is not in the header: SHA-1 first, then SHA-256.
    pub fn new(bytes: &'a [u8]) -> Result<Self, IndexError> {
        Self::with_hash(bytes, 20).or_else(|e| Self::with_hash(bytes, 32).map_err(|_| e))
    }

    pub fn extension(&self, sig: &[u8; 4]) -> Option<&std::ops::Range<usize>> {
        self.extensions.iter().find(|(s, _)| s == sig).map(|(_, r)| r)
    }

    fn with_hash(bytes: &'a [u8], hash: usize) -> Result<Self, IndexError> {
        let mut r = Reader { bytes, at: 0 };
        if r.take(4)? != b"DIRC" {
            return Err(IndexError::NotAnIndex);
        }
        let version = r.u32()?;
        if !(2..=4).contains(&version) {
            return Err(IndexError::Version(version));
        }
        let count = r.u32()?;
        let mut entries = Vec::new();
        let mut previous: Vec<u8> = Vec::new();
        for _ in 0..count {
            let start = r.at;
            r.take(24)?; // ctime, mtime, dev, ino
            let mode = r.u32()?;
            r.take(12 + hash)?; // uid, gid, size, object name
            let flags = r.u16()?;
            let extended = if flags & 0x4000 != 0 { r.u16()? } else { 0 };
            let path = if version == 4 {
                let strip = r.varint()?;
                let keep = previous.len().checked_sub(strip).ok_or(IndexError::Prefix)?;
                let mut path = previous[..keep].to_vec();
                path.extend_from_slice(r.until_nul()?);
                path
            } else {
                let path = r.until_nul()?.to_vec();
                // Padded with 1 to 8 NULs to a multiple of 8 bytes (the first NUL already read).
                let len = r.at - start;
                r.take((8 - len % 8) % 8)?;
                path
            };
            // git takes a name's length from the flags (below 0xFFF) and reads that many
            // bytes, whatever follows; a name that ends elsewhere reads as another path to git
            // than to this parser (session-15 attack S15-G1).
            let named = usize::from(flags & 0x0FFF);
            if named < 0x0FFF && named != path.len() {
                return Err(IndexError::NameLength);
            }
            previous.clone_from(&path);
            entries.push(Entry {
                start,
                mode,
                path,
                flags,
                extended,
            });
        }
        let mut extensions = Vec::new();
        while bytes.len().saturating_sub(r.at) > hash {
            let start = r.at;
            let sig = r.take(4)?;
            let size = r.u32()? as usize;
            r.take(size)?;
            extensions.push(([sig[0], sig[1], sig[2], sig[3]], start..r.at));
        }
        if bytes.len() - r.at != hash {
            return Err(IndexError::Checksum);
        }
        Ok(Parsed {
            bytes,
            hash,
            entries,
            extensions,
        })
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], IndexError> {
        let end = self.at.checked_add(n).filter(|e| *e <= self.bytes.len());
        let end = end.ok_or(IndexError::EndsEarly)?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn u32(&mut self) -> Result<u32, IndexError> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u16(&mut self) -> Result<u16, IndexError> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    /// Git's offset varint (`decode_varint`).
    fn varint(&mut self) -> Result<usize, IndexError> {
        let mut c = self.take(1)?[0];
        let mut value = usize::from(c & 0x7f);
        while c & 0x80 != 0 {
            c = self.take(1)?[0];
            value = value
                .checked_add(1)
                .and_then(|v| v.checked_mul(128))
                .and_then(|v| v.checked_add(usize::from(c & 0x7f)))
                .ok_or(IndexError::Varint)?;
        }
        Ok(value)
    }

    fn until_nul(&mut self) -> Result<&'a [u8], IndexError> {
        let rest = &self.bytes[self.at..];
        let n = rest.iter().position(|b| *b == 0).ok_or(IndexError::UnendedPath)?;
        self.at += n + 1;
        Ok(&rest[..n])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An index written by the real git: entries `a`, `hide/me` (skip-worktree) and `zz`
    /// (assume-unchanged), in each version.
    fn real_index(version: &str) -> Vec<u8> {
        let t = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| super::super::test_git::git(t.path(), args);
        git(&["init", "-q"]);
        std::fs::create_dir(t.path().join("hide")).unwrap();
        for f in ["a", "hide/me", "zz"] {
            std::fs::write(t.path().join(f), f).unwrap();
        }
        git(&["add", "."]);
        git(&["update-index", "--index-version", version]);
        git(&["update-index", "--skip-worktree", "hide/me"]);
        git(&["update-index", "--assume-unchanged", "zz"]);
        std::fs::read(t.path().join(".git/index")).unwrap()
    }

    #[test]
    fn hidden_entries_are_found_in_every_version() {
        for version in ["2", "3", "4"] {
            let got = hidden(&Parsed::new(&real_index(version)).unwrap()).unwrap();
            let want: BTreeSet<String> = ["hide/me (skip-worktree)", "zz (assume-unchanged)"]
                .iter()
                .map(|s| s.to_string())
                .collect();
            assert_eq!(got, want, "version {version}");
        }
    }

    /// A sparse index hides a whole directory behind one entry: named as such, with the
    /// command that shows it (session-12 re-attack N3).
    #[test]
    fn a_sparse_directory_is_named_with_what_shows_it() {
        let t = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| super::super::test_git::git(t.path(), args);
        git(&["init", "-q"]);
        for dir in ["sub", "kept"] {
            std::fs::create_dir(t.path().join(dir)).unwrap();
            std::fs::write(t.path().join(dir).join("Makefile"), "all:\n").unwrap();
        }
        git(&["add", "."]);
        git(&["commit", "-qm", "one"]);
        git(&["sparse-checkout", "init", "--cone", "--sparse-index"]);
        git(&["sparse-checkout", "set", "kept"]);
        let bytes = std::fs::read(t.path().join(".git/index")).unwrap();
        let got = hidden(&Parsed::new(&bytes).unwrap()).unwrap();
        assert!(
            got.iter().any(|e| e.starts_with("sub/ (a sparse directory")),
            "{got:?}"
        );
    }

    #[test]
    fn paths_git_refuses_are_found() {
        for bad in [
            ".git/hooks/pre-commit",
            "../../home/.bashrc",
            "a/.GIT./config",
            "a//b",
            "/etc/x",
            "a\\b",
            "sub/git~1/config",
            ".",
        ] {
            assert!(git_refuses(bad.as_bytes(), false), "{bad}");
        }
        assert!(git_refuses(b".gitmodules", true));
        for good in [
            "src/main.rs",
            ".github/workflows/ci.yml",
            ".gitmodules",
            "a/.gitx",
            "..a/b",
        ] {
            assert!(!git_refuses(good.as_bytes(), false), "{good}");
        }
    }

    #[test]
    fn damaged_indexes_are_errors() {
        let good = real_index("4");
        assert!(Parsed::new(b"DIRX").is_err());
        assert!(Parsed::new(&good[..30]).is_err());
    }
}
