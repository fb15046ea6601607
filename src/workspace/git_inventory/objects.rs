//! The files of every object store in the walked trees (session-12 attack F5): git writes a
//! loose object or a pack once, under a name that is its content's hash, and never changes it
//! (it only adds new ones and deletes old ones when packing), nor does it check that hash when
//! it checks a tree out. An object the agent rewrote in place (same name, other content: a tree
//! with a `.envrc`) reached the user's next `git checkout` of a branch no commit of the launch
//! touched. Each pack file of the inventory (its identity, mode and size; its content is not
//! read: packs run to gigabytes) that differs afterwards goes aside; git then reports the
//! object missing instead of using the forgery. Not caught: a pack rewritten to the same size
//! and mode. A loose object also records its change time, which any write sets: one that is
//! new or touched is listed in [`super::Scan::new_loose`] and verified by its own content
//! ([`loose_matches`]). Every new pack index is listed in [`super::Scan::new_packs`]: a new
//! pack can shadow an object that was there (its index alone names each entry), so it is
//! verified with git. A symbolic link in a store goes aside.

use std::path::{Path, PathBuf};

use super::Walk;
use super::state::{Seen, observe, unread};

impl Walk<'_> {
    /// `git_dir/objects` holds an object store: its fan-out directories and `pack/` are walked
    /// as such.
    pub(super) fn object_store(&mut self, git_dir: &Path) {
        let objects = git_dir.join("objects");
        if let Ok(meta) = std::fs::symlink_metadata(&objects)
            && meta.file_type().is_symlink()
            && self.changed(Seen::Piece, &objects, observe(&objects, &meta).0)
        {
            let what = "an object store that is a symbolic link: git reads the objects it leads to, which nobody checked";
            self.report(objects.clone(), what.into());
        }
        self.object_dirs.insert(objects);
    }

    /// Whether `dir` is a store (`objects`), a fan-out directory (`objects/ab`) or `objects/pack`.
    pub(super) fn in_object_store(&self, dir: &Path) -> bool {
        let name = dir.file_name().map(|n| n.as_encoded_bytes()).unwrap_or_default();
        let fan_out = name.len() == 2 && name.iter().all(u8::is_ascii_hexdigit);
        self.object_dirs.contains(dir)
            || (fan_out || name == b"pack") && dir.parent().is_some_and(|p| self.object_dirs.contains(p))
    }

    /// One entry of such a directory: recorded; afterwards, judged when it was there before
    /// and differs (new files are new objects; deleted ones were packed or pruned).
    pub(super) fn object_file(&mut self, path: PathBuf, meta: &rustix::fs::Stat) {
        if path
            .file_name()
            .is_some_and(|n| n.as_encoded_bytes().starts_with(b"multi-pack-index"))
        {
            return; // a cache, judged with the others (`judge`)
        }
        let loose = path
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|d| d.len() == 2 && d.as_encoded_bytes().iter().all(u8::is_ascii_hexdigit));
        let now = unread(meta, loose);
        let Some(before) = self.before else {
            self.states.insert((Seen::Object, path), now);
            return;
        };
        let was = before.get(&(Seen::Object, path.clone()));
        // Git follows a link in a store to objects no check saw (session-13 attack J5).
        let link = rustix::fs::FileType::from_raw_mode(meta.st_mode) == rustix::fs::FileType::Symlink;
        if link && was != Some(&now) {
            let what =
                "a symbolic link in an object store: git reads the objects it leads to, which nobody checked";
            self.report(path, what.into());
            return;
        }
        match was {
            // Touched: verified by its content (git freshens the time of an object it writes
            // again; a rewrite keeps nothing of the name).
            Some(was) if *was != now && loose => self.out.new_loose.push(path),
            Some(was) if *was != now => {
                let what = "an object file changed in place (git never rewrites one: a forged object that a checkout would write)";
                self.report(path, what.into());
            }
            // A new pack index: its entries may claim the names of objects that were there
            // before, with other content (git searches packs first, newest first, and does not
            // check a name when it reads a tree or blob: session-12 attack N1, N2). Verified
            // with git before anything reads the history (`git::quarantine`).
            None if path.extension().is_some_and(|e| e == "idx") && self.held(&path) => {
                self.out.new_packs.push(path);
            }
            // A new loose object may stand in for one that was packed before (the pack deleted,
            // its objects unpacked, one swapped: session-12 attack G1, G2): verified too.
            None if loose && self.held(&path) => self.out.new_loose.push(path),
            _ => {}
        }
    }

    /// Whether the git dir of the pack index `idx` (`GIT_DIR/objects/pack/NAME.idx`) was in the
    /// inventory: a repository the agent made has no objects of the user's to shadow.
    fn held(&self, idx: &Path) -> bool {
        let git_dir = idx.ancestors().nth(3).unwrap_or(idx);
        self.before
            .is_some_and(|b| b.contains_key(&(Seen::GitDir, git_dir.to_path_buf())))
    }
}

/// Whether the loose object file `path` (`objects/ab/cdef…`) holds what its name says: its
/// content, inflated, hashes to the name (SHA-1 or SHA-256 by its length). Git checks no name
/// when it reads a blob or tree, and `cat-file` would serve a packed copy of the same name
/// instead of the file (session-13 attack J2). A stream that does not inflate does not match;
/// `Err`: the file could not be opened, or inflates to more than 4 GiB (not judged).
pub fn loose_matches(path: &Path) -> Result<bool, String> {
    use sha2::Digest;
    use std::io::Read;
    let dir = path.parent().and_then(Path::file_name).and_then(|n| n.to_str());
    let name = format!(
        "{}{}",
        dir.unwrap_or(""),
        path.file_name().and_then(|n| n.to_str()).unwrap_or("")
    );
    let file = crate::fsutil::open_nonblocking(path, false).map_err(|e| e.to_string())?;
    if !file.metadata().map_err(|e| e.to_string())?.is_file() {
        return Ok(false);
    }
    let mut inflated = flate2::read::ZlibDecoder::new(std::io::BufReader::new(file));
    let (mut s1, mut s256, mut total) = (sha1::Sha1::new(), sha2::Sha256::new(), 0u64);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match inflated.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(_) => return Ok(false),
        };
        total += n as u64;
        if total > 4 << 30 {
            return Err("over 4 GiB inflated".into());
        }
        match name.len() {
            40 => s1.update(&buf[..n]),
            _ => s256.update(&buf[..n]),
        }
    }
    Ok(match name.len() {
        40 => hex::encode(s1.finalize()) == name,
        64 => hex::encode(s256.finalize()) == name,
        _ => false,
    })
}
