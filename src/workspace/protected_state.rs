//! The protected project files (`workspace::protected`) compared before and after a launch:
//! what appeared where nothing was, or changed, is moved aside and named on stderr; changes to
//! allowed paths are named only.
//!
//! The state of a listed path is judged by content, never by timestamps: whether it exists,
//! every file, directory and symbolic link at or below it with its permission bits and the
//! SHA-256 of each file's bytes. Every path is read from the root down one component at a time
//! (`openat` with `O_NOFOLLOW`, files with `O_NONBLOCK`): a directory the agent replaced by a
//! symbolic link is seen as that link and never entered, a FIFO is not read. The move aside is
//! `workspace::quarantine`'s (`NAME.ags-quarantine`, nothing outside the root touched); what it
//! cannot move ends the launch with 125 ([`Settled::unmoved`]).

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fd::OwnedFd;
use rustix::fs::{self as rfs, FileType, Mode, OFlags};
use sha2::{Digest, Sha256};

use super::protected::{Handling, ProtectedPath, Protection};

/// More entries or bytes than this below one listed path are not judged ("too large").
const MAX_ENTRIES: usize = 10_000;
const MAX_BYTES: u64 = 64 << 20;

/// One file-system object, by content.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
enum Node {
    Dir { mode: u32 },
    File { mode: u32, sha256: [u8; 32] },
    Link(Vec<u8>),
    Other(String),
}

/// The state of one listed path.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
enum State {
    /// Nothing there (or a directory on the way missing).
    Missing,
    /// A directory on the way is something else (`at`, relative to the root).
    Blocked { at: String, node: Node },
    /// The path with everything below it (`""` is the path itself).
    Tree(BTreeMap<String, Node>),
    /// Too much below it to judge.
    TooLarge,
}

/// The listed paths of a launch and their state.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Inventory {
    items: Vec<(ProtectedPath, State)>,
}

impl Inventory {
    /// When one of the `running` local ags containers can write a root, what it holds now is
    /// no proof of what you had (session-10 attack S10-2: two launches hand a planted file
    /// back and forth): every watched path counts as missing before, so whatever is there after
    /// the launch is moved aside.
    pub fn distrust_against(&mut self, running: &[crate::containment::WritableRoot]) {
        let overlaps = |root: &Path| {
            running
                .iter()
                .any(|r| root.starts_with(&r.path) || r.path.starts_with(root))
        };
        for (path, was) in &mut self.items {
            if path.handling == Handling::Watched && overlaps(&path.root) {
                *was = State::Missing;
            }
        }
    }
}

/// Take the state of every listed path of `protection`.
pub fn inventory(protection: &Protection) -> Inventory {
    let items = protection
        .paths
        .iter()
        .map(|p| (p.clone(), state(&p.root, p.rel)))
        .collect();
    Inventory { items }
}

/// One listed path that differs after the launch.
#[derive(Debug)]
pub struct Change {
    /// The listed path.
    pub path: ProtectedPath,
    /// The files that differ (added, changed, removed), relative to the root.
    pub files: Vec<String>,
    /// Where it went: `None` when left in place (allowed, or nothing to move).
    pub moved: Option<Result<(PathBuf, PathBuf), String>>,
}

/// What the check after the launch found and did.
#[derive(Debug, Default)]
pub struct Settled {
    /// Notes for the roots whose permissions the agent had taken and `ags` gave back.
    pub restored: Vec<String>,
    /// Every listed path that differs.
    pub changes: Vec<Change>,
}

/// Compare `before` with the workspace now, and move aside what appeared or changed at a
/// protected (not allowed) path.
pub fn settle(before: &Inventory) -> Settled {
    let mut roots: Vec<PathBuf> = before.items.iter().map(|(p, _)| p.root.clone()).collect();
    roots.dedup();
    let restored = super::quarantine::restore_access(&roots);
    let mut changes = Vec::new();
    // Directories on the way already moved aside (`.github` for both `.github/workflows` and
    // `.github/actions`).
    let mut blocked: Vec<(PathBuf, String)> = Vec::new();
    for (path, was) in &before.items {
        let now = state(&path.root, path.rel);
        if now == *was {
            continue;
        }
        if let State::Blocked {
            at,
            node: Node::Link(_),
        } = &now
        {
            let key = (path.root.clone(), at.clone());
            if blocked.contains(&key) {
                continue;
            }
            blocked.push(key);
        }
        let files = diff(path.rel, was, &now);
        let moved = match (path.handling, &now) {
            (Handling::Allowed, _) => None,
            (
                _,
                State::Blocked {
                    at,
                    node: Node::Link(_),
                },
            ) => Some(move_aside(&path.root, at)),
            (_, State::Tree(_) | State::TooLarge) => Some(move_aside(&path.root, path.rel)),
            // Removed, or blocked by a plain file: nothing runs it there.
            (_, State::Missing | State::Blocked { .. }) => None,
        };
        changes.push(Change {
            path: path.clone(),
            files,
            moved: moved.map(|m| m.map_err(|e| e.to_string())),
        });
    }
    Settled { restored, changes }
}

impl Settled {
    /// How many changed pieces are still in place though they should have been moved.
    pub fn unmoved(&self) -> usize {
        self.changes
            .iter()
            .filter(|c| matches!(c.moved, Some(Err(_))))
            .count()
    }

    /// The stderr report (empty when nothing changed).
    pub fn message(&self) -> String {
        let esc = |p: &Path| crate::text::escape_line(&p.to_string_lossy());
        let mut out = self.restored.concat();
        for c in &self.changes {
            let listed = esc(&c.path.path());
            let tool = c.path.tool;
            // The files, when they say more than the listed path itself.
            let files = match c.files.as_slice() {
                [one] if one == c.path.rel => String::new(),
                files => format!(": {}", shown(files)),
            };
            let line = match &c.moved {
                None if c.path.handling == Handling::Allowed => format!(
                    "ags: note: the launch changed {listed} (run by {tool} on this host; allowed by [protect] allow){files}\n"
                ),
                None => format!("ags: note: the launch removed {listed} (protected: run by {tool}){files}\n"),
                Some(Ok((from, to))) => format!(
                    "ags: warning: the launch created or changed {listed}, which {tool} runs on this host without asking{files}\nags:   moved aside: {}\nags:   review it, and only if you trust it: mv {} {}\n",
                    esc(to),
                    crate::text::shell_word(&esc(to)),
                    crate::text::shell_word(&esc(from))
                ),
                Some(Err(e)) => format!(
                    "ags: warning: the launch created or changed {listed}, which {tool} runs on this host without asking{files}\nags:   NOT MOVED ({}): remove it before you use {tool} there\n",
                    crate::text::escape_line(e)
                ),
            };
            out.push_str(&line);
        }
        out
    }
}

/// At most 20 names, escaped, and how many more.
pub(crate) fn shown(files: &[String]) -> String {
    let mut out: Vec<String> = files
        .iter()
        .take(20)
        .map(|f| crate::text::escape_line(f))
        .collect();
    if files.len() > 20 {
        out.push(format!("and {} more", files.len() - 20));
    }
    out.join(", ")
}

/// The names (relative to the root) that differ between two states of `rel`.
fn diff(rel: &str, was: &State, now: &State) -> Vec<String> {
    let tree = |s: &State| match s {
        State::Tree(t) => t.clone(),
        _ => BTreeMap::new(),
    };
    let name = |k: &str| match k {
        "" => rel.to_string(),
        k => format!("{rel}/{k}"),
    };
    let special = |s: &State| match s {
        State::Blocked { at, .. } => Some(format!("{at} (not a directory)")),
        State::TooLarge => Some(format!("{rel} (too large to compare)")),
        _ => None,
    };
    let (a, b) = (tree(was), tree(now));
    let mut out: Vec<String> = a
        .keys()
        .chain(b.keys())
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| name(k))
        .collect();
    out.sort();
    out.dedup();
    out.extend(special(now).or_else(|| special(was)));
    out
}

/// The state of `root/rel`, read without following symbolic links.
fn state(root: &Path, rel: &str) -> State {
    let Ok(mut dir) = rfs::open(
        root,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) else {
        return State::Missing;
    };
    let parts: Vec<&str> = rel.split('/').collect();
    let (last, way) = parts.split_last().expect("a listed path has a name");
    for (i, part) in way.iter().enumerate() {
        match node_at(&dir, OsStr::new(part), &mut Budget::default()) {
            None => return State::Missing,
            Some(Ok(Node::Dir { .. })) => match open_dir(&dir, OsStr::new(part)) {
                Ok(d) => dir = d,
                Err(_) => return State::Missing,
            },
            Some(Ok(node)) => {
                let at = parts[..=i].join("/");
                return State::Blocked { at, node };
            }
            Some(Err(TooLarge)) => return State::TooLarge,
        }
    }
    let mut tree = BTreeMap::new();
    let mut budget = Budget::default();
    match walk(&dir, OsStr::new(last), String::new(), &mut tree, &mut budget) {
        Err(TooLarge) => State::TooLarge,
        Ok(()) if tree.is_empty() => State::Missing,
        Ok(()) => State::Tree(tree),
    }
}

#[derive(Debug)]
struct TooLarge;

#[derive(Debug, Default)]
struct Budget {
    entries: usize,
    bytes: u64,
}

/// Record `dir/name` (and everything below it) in `tree` under `key`.
fn walk(
    dir: &OwnedFd,
    name: &OsStr,
    key: String,
    tree: &mut BTreeMap<String, Node>,
    budget: &mut Budget,
) -> Result<(), TooLarge> {
    let Some(node) = node_at(dir, name, budget) else {
        return Ok(());
    };
    let node = node?;
    let is_dir = matches!(node, Node::Dir { .. });
    tree.insert(key.clone(), node);
    if !is_dir {
        return Ok(());
    }
    let Ok(sub) = open_dir(dir, name) else {
        return Ok(());
    };
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let Ok(listing) = rfs::openat(dir, name, flags, Mode::empty()).and_then(rfs::Dir::new) else {
        tree.insert(key, Node::Other("unreadable directory".into()));
        return Ok(());
    };
    let mut names: Vec<Vec<u8>> = Vec::new();
    for entry in listing.flatten() {
        let n = entry.file_name().to_bytes();
        if n != b"." && n != b".." {
            names.push(n.to_vec());
        }
    }
    names.sort();
    for n in names {
        let child = match key.as_str() {
            "" => String::from_utf8_lossy(&n).into_owned(),
            k => format!("{k}/{}", String::from_utf8_lossy(&n)),
        };
        walk(&sub, OsStr::from_bytes(&n), child, tree, budget)?;
    }
    Ok(())
}

/// What `dir/name` is, by content (`None`: it does not exist).
fn node_at(dir: &OwnedFd, name: &OsStr, budget: &mut Budget) -> Option<Result<Node, TooLarge>> {
    let fd = rfs::openat(
        dir,
        name,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .ok()?;
    budget.entries += 1;
    if budget.entries > MAX_ENTRIES {
        return Some(Err(TooLarge));
    }
    let st = rfs::fstat(&fd).ok()?;
    let mode = st.st_mode as u32 & 0o7777;
    let node = match FileType::from_raw_mode(st.st_mode as _) {
        FileType::Directory => Node::Dir { mode },
        FileType::Symlink => Node::Link(
            rfs::readlinkat(&fd, "", Vec::new())
                .map(|t| t.into_bytes())
                .unwrap_or_default(),
        ),
        FileType::RegularFile => {
            budget.bytes += st.st_size as u64;
            if budget.bytes > MAX_BYTES {
                return Some(Err(TooLarge));
            }
            match hash(dir, name) {
                Ok(sha256) => Node::File { mode, sha256 },
                Err(_) => Node::Other("unreadable file".into()),
            }
        }
        FileType::Fifo => Node::Other("FIFO".into()),
        FileType::Socket => Node::Other("socket".into()),
        _ => Node::Other("device or special file".into()),
    };
    Some(Ok(node))
}

fn hash(dir: &OwnedFd, name: &OsStr) -> std::io::Result<[u8; 32]> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = rfs::openat(dir, name, flags, Mode::empty())?;
    if FileType::from_raw_mode(rfs::fstat(&fd)?.st_mode as _) != FileType::RegularFile {
        return Err(std::io::Error::other("not a regular file"));
    }
    let mut file = std::fs::File::from(fd).take(MAX_BYTES + 1);
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match file.read(&mut buf)? {
            0 => break,
            n => h.update(&buf[..n]),
        }
    }
    Ok(h.finalize().into())
}

fn open_dir(dir: &OwnedFd, name: &OsStr) -> rustix::io::Result<OwnedFd> {
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    rfs::openat(dir, name, flags, Mode::empty())
}

/// Move `root/rel` aside (`workspace::quarantine`): `(from, to)`.
fn move_aside(root: &Path, rel: &str) -> Result<(PathBuf, PathBuf), super::quarantine::NotMoved> {
    let to = super::quarantine::move_aside(root, Path::new(rel))?;
    Ok((root.join(rel), to))
}

#[cfg(test)]
#[path = "protected_state_tests.rs"]
mod tests;
