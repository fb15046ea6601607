//! The files of every object store in the walked trees (session-12 attack F5): git writes a
//! loose object or a pack once, under a name that is its content's hash, and never changes it
//! (it only adds new ones and deletes old ones when packing), nor does it check that hash when
//! it checks a tree out. An object the agent rewrote in place (same name, other content: a tree
//! with a `.envrc`) reached the user's next `git checkout` of a branch no commit of the launch
//! touched. Each object file of the inventory (its identity, mode and size; its content is not
//! read: stores run to gigabytes) that differs afterwards goes aside; git then reports the
//! object missing instead of using the forgery. Not caught: a rewrite to the same size and mode.
//! Every new pack index is listed in [`super::Scan::new_packs`]: a new pack can shadow an
//! object that was there (its index alone names each entry), so it is verified with git.

use std::path::{Path, PathBuf};

use super::Walk;
use super::state::{Seen, unread};

impl Walk<'_> {
    /// `git_dir/objects` holds an object store: its fan-out directories and `pack/` are walked
    /// as such.
    pub(super) fn object_store(&mut self, git_dir: &Path) {
        self.object_dirs.insert(git_dir.join("objects"));
    }

    /// Whether `dir` is a fan-out directory (`objects/ab`) or `objects/pack` of a store.
    pub(super) fn in_object_store(&self, dir: &Path) -> bool {
        let name = dir.file_name().map(|n| n.as_encoded_bytes()).unwrap_or_default();
        let fan_out = name.len() == 2 && name.iter().all(u8::is_ascii_hexdigit);
        (fan_out || name == b"pack") && dir.parent().is_some_and(|p| self.object_dirs.contains(p))
    }

    /// One entry of such a directory: recorded; afterwards, judged when it was there before
    /// and differs (new files are new objects; deleted ones were packed or pruned).
    pub(super) fn object_file(&mut self, path: PathBuf, meta: &std::fs::Metadata) {
        if path
            .file_name()
            .is_some_and(|n| n.as_encoded_bytes().starts_with(b"multi-pack-index"))
        {
            return; // a cache, judged with the others (`judge`)
        }
        let now = unread(meta);
        let Some(before) = self.before else {
            self.states.insert((Seen::Object, path), now);
            return;
        };
        match before.get(&(Seen::Object, path.clone())) {
            Some(was) if *was != now => {
                let what = "an object file changed in place (git never rewrites one: a forged object that a checkout would write)";
                self.report(path, what.into());
            }
            // A new pack index: its entries may claim the names of objects that were there
            // before, with other content (git searches packs first, newest first, and does not
            // check a name when it reads a tree or blob: session-12 attack N1, N2). Verified
            // with git before anything reads the history (`launch::git_quarantine`).
            None if path.extension().is_some_and(|e| e == "idx") && self.held(&path) => {
                self.out.new_packs.push(path);
            }
            // A new loose object may stand in for one that was packed before (the pack deleted,
            // its objects unpacked, one swapped: session-12 attack G1, G2): verified too.
            None if !path.parent().is_some_and(|d| d.ends_with("pack")) && self.held(&path) => {
                self.out.new_loose.push(path);
            }
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
