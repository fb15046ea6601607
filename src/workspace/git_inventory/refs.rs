//! The object names a git dir's refs hold (its "tips"), read before and after a launch: a tip
//! that is new afterwards means the launch made or moved a commit, and the commits it brought
//! in are read by `workspace::git_commits` (session-10 attack S10-1: a `.envrc` committed, then
//! removed from the index with `git rm --cached`, is in no file and no index entry, yet `git
//! push` sends it and a checkout writes it).
//!
//! Reads what git stores itself (`gitrepository-layout`): `HEAD` when it is detached, every file
//! under `refs/`, and `packed-refs` — of the git dir and of its common dir (a linked worktree's
//! or a submodule's). Symbolic refs name other refs, read anyway. Symbolic links are never
//! followed; the `reftable` format is not read (an error). Pure reading, bounded.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::Walk;

/// What a git dir's refs held: their object names, or why they could not be read.
pub(super) type Tips = Result<BTreeSet<String>, String>;

/// A git dir of the inventory whose refs hold object names they did not hold before the launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MovedRefs {
    /// The git dir (`git --git-dir`).
    pub git_dir: PathBuf,
    /// The object names new to its refs, or why the refs could not be compared.
    pub new: Result<Vec<String>, String>,
    /// Every object name its refs held before the launch (what the commits of the launch are
    /// measured against).
    pub old: Vec<String>,
}

impl Walk<'_> {
    /// The refs of the git dir `dir`: recorded while taking the inventory; afterwards, compared
    /// with what was recorded at the same path (a git dir new to the inventory is the agent's
    /// own repository: its config and hooks are judged in full, its history is not read).
    pub(super) fn refs(&mut self, dir: &Path) {
        let now = tips(dir);
        let Some(before) = self.tips_before else {
            self.tips.insert(dir.into(), now);
            return;
        };
        let Some(was) = before.get(dir) else {
            return;
        };
        let new = match (was, now) {
            (Err(e), _) => Err(format!("before the launch: {e}")),
            (Ok(_), Err(e)) => Err(e),
            (Ok(was), Ok(now)) => Ok(now.difference(was).cloned().collect::<Vec<_>>()),
        };
        if new.as_ref().is_ok_and(Vec::is_empty) {
            return;
        }
        let old = was
            .as_ref()
            .map_or_else(|_| Vec::new(), |w| w.iter().cloned().collect());
        self.out.moved_refs.push(MovedRefs {
            git_dir: dir.into(),
            new,
            old,
        });
    }
}

/// At most this many refs are read per git dir; more is an error (never a partial set).
const MAX_REFS: usize = 200_000;
/// A loose ref or `HEAD` is one line; anything longer is not a ref.
const MAX_LOOSE_BYTES: u64 = 4096;
/// Largest `packed-refs` read.
const MAX_PACKED_BYTES: u64 = 256 * 1024 * 1024;
/// Deepest directory level under `refs/`.
const MAX_DEPTH: usize = 64;

/// Every object name the refs of `git_dir` (and its common dir) hold, as lowercase hex.
pub(super) fn tips(git_dir: &Path) -> Result<BTreeSet<String>, String> {
    let mut out = BTreeSet::new();
    let mut dirs = vec![git_dir.to_path_buf()];
    if std::fs::symlink_metadata(git_dir.join("commondir")).is_ok() {
        let common = crate::git::model::guard::common_dir(git_dir).map_err(|e| e.to_string())?;
        dirs.push(common);
    }
    // What git reads besides refs, in this git dir: every file named as a root ref (capitals,
    // `_`, `-`), which git resolves by name — `HEAD`, an operation's `MERGE_HEAD` (`git commit`
    // finishes a merge with it, session-12 attack G6), `FETCH_HEAD` of `git pull`, and any
    // other such name a reflog message or a symbolic ref can point at (session-13 attack J3).
    let root_refs = std::fs::read_dir(git_dir).into_iter().flatten().flatten();
    for entry in root_refs {
        let name = entry.file_name();
        let root_ref = name
            .as_encoded_bytes()
            .iter()
            .all(|b| b.is_ascii_uppercase() || *b == b'_' || *b == b'-');
        if root_ref && entry.file_type().is_ok_and(|t| t.is_file()) {
            lines(
                &entry.path(),
                |l| l.split(['\t', ' ']).next().and_then(oid),
                &mut out,
            )?;
        }
    }
    for dir in dirs {
        // Reflogs: `git stash pop` takes `stash@{N}` from `logs/refs/stash` (G5), `@{1}` any.
        logs(&dir.join("logs"), 0, &mut out)?;
        // Each linked worktree's `HEAD`: `git submodule update` counts them as reachable (G3).
        if let Ok(entries) = std::fs::read_dir(dir.join("worktrees")) {
            for entry in entries.flatten() {
                lines(&entry.path().join("HEAD"), |l| oid(l.trim_end()), &mut out)?;
            }
        }
        if std::fs::symlink_metadata(dir.join("reftable")).is_ok() {
            return Err(format!(
                "{} keeps its refs in the reftable format, which ags does not read",
                dir.display()
            ));
        }
        walk(&dir.join("refs"), 0, &mut out)?;
        // `OID NAME` lines and `^OID` (a tag's commit) lines.
        let packed = |l: &str| l.trim_start_matches('^').split(' ').next().and_then(oid);
        lines(&dir.join("packed-refs"), packed, &mut out)?;
    }
    Ok(out)
}

/// The object names of the loose refs under `dir`.
fn walk(dir: &Path, depth: usize, out: &mut BTreeSet<String>) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!(
            "{}: refs nested deeper than {MAX_DEPTH} levels",
            dir.display()
        ));
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && depth == 0 => return Ok(()),
        Err(e) => return Err(format!("{}: {e}", dir.display())),
    };
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
        let kind = entry.file_type().map_err(|e| format!("{}: {e}", dir.display()))?;
        if kind.is_dir() {
            walk(&entry.path(), depth + 1, out)?;
        } else if (kind.is_file() || kind.is_symlink())
            && let Some(oid) = loose(&entry.path(), kind.is_symlink())?
        {
            out.insert(oid);
        }
        if out.len() > MAX_REFS {
            return Err(format!("more than {MAX_REFS} refs"));
        }
    }
    Ok(())
}

/// The object names `pick` finds in each line of the file `path` (none: no file).
fn lines<I: IntoIterator<Item = String>>(
    path: &Path,
    pick: impl Fn(&str) -> I,
    out: &mut BTreeSet<String>,
) -> Result<(), String> {
    let bytes = match crate::fsutil::read_bounded(path, MAX_PACKED_BYTES, false) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    for line in String::from_utf8_lossy(&bytes).lines() {
        out.extend(pick(line));
        if out.len() > MAX_REFS {
            return Err(format!("more than {MAX_REFS} refs"));
        }
    }
    Ok(())
}

/// The object names of the reflogs under `dir`.
fn logs(dir: &Path, depth: usize, out: &mut BTreeSet<String>) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!(
            "{}: reflogs nested deeper than {MAX_DEPTH} levels",
            dir.display()
        ));
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else { continue };
        if kind.is_dir() {
            logs(&entry.path(), depth + 1, out)?;
        } else if kind.is_file() {
            lines(&entry.path(), reflog, out)?;
        }
    }
    Ok(())
}

/// The object names of a reflog line `OLD NEW IDENT\tMESSAGE`: both columns, and what git takes
/// for `@{-N}` (`git checkout -`, `git switch -`, `git merge -`) from a message `checkout:
/// moving from A to B`, where A may be any revision (session-12 attack H2: an appended line
/// named a hidden commit): every run of 4 to 64 hex digits of A and B (one that names nothing
/// is ignored by the commit reader).
fn reflog(line: &str) -> Vec<String> {
    let mut columns = line.split(' ');
    let mut out: Vec<String> = columns.next().and_then(oid).into_iter().collect();
    out.extend(columns.next().and_then(oid));
    let message = line.split_once('\t').map(|(_, m)| m);
    let Some(names) = message.and_then(|m| m.strip_prefix("checkout: moving from ")) else {
        return out;
    };
    let runs = names.split(|c: char| !c.is_ascii_hexdigit());
    out.extend(
        runs.filter(|r| (4..=64).contains(&r.len()))
            .map(str::to_ascii_lowercase),
    );
    out
}

/// The object name in the loose ref `path`; `None` for a symbolic ref or no file. A symbolic
/// link is followed when `follow` (git reads a ref through one), to a regular file only.
fn loose(path: &Path, follow: bool) -> Result<Option<String>, String> {
    let bytes = match crate::fsutil::read_bounded(path, MAX_LOOSE_BYTES, follow) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if follow && e.kind() == std::io::ErrorKind::InvalidInput => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let line = String::from_utf8_lossy(&bytes);
    Ok(oid(line.trim_end()))
}

/// `text` when it is a SHA-1 or SHA-256 object name (lowercased).
fn oid(text: &str) -> Option<String> {
    // The null name (a reflog's "no old value") names nothing.
    let hex = (text.len() == 40 || text.len() == 64)
        && text.bytes().all(|b| b.is_ascii_hexdigit())
        && text.bytes().any(|b| b != b'0');
    hex.then(|| text.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tips_of_head_loose_and_packed_refs_of_a_worktree_and_its_repository() {
        let t = tempfile::tempdir().unwrap();
        let git = t.path().join(".git");
        let (a, b, c, d) = ("a".repeat(40), "B".repeat(40), "c".repeat(64), "d".repeat(40));
        std::fs::create_dir_all(git.join("refs/heads/topic")).unwrap();
        std::fs::create_dir_all(git.join("worktrees/w")).unwrap();
        std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(git.join("refs/heads/main"), format!("{a}\n")).unwrap();
        std::fs::write(git.join("refs/heads/topic/x"), format!("{b}\n")).unwrap();
        let packed = format!("# pack-refs with: peeled\n{c} refs/tags/v1\n^{d}\n");
        std::fs::write(git.join("packed-refs"), packed).unwrap();
        let want: BTreeSet<String> = [&a, &"b".repeat(40), &c, &d].into_iter().cloned().collect();
        assert_eq!(tips(&git).unwrap(), want);
        let wt = git.join("worktrees/w");
        std::fs::write(wt.join("commondir"), "../..\n").unwrap();
        std::fs::write(wt.join("HEAD"), format!("{}\n", "e".repeat(40))).unwrap();
        let mut want = want;
        want.insert("e".repeat(40));
        assert_eq!(tips(&wt).unwrap(), want);
        // The repository's own tips hold each linked worktree's HEAD (git counts them
        // reachable), its reflogs and MERGE_HEAD (session-12 attack G3, G5, G6).
        assert_eq!(tips(&git).unwrap(), want);
        std::fs::create_dir_all(git.join("logs/refs")).unwrap();
        let (s, m) = ("5".repeat(40), "6".repeat(40));
        std::fs::write(
            git.join("logs/refs/stash"),
            format!("{} {s} a <a@x> 1 +0000\tWIP\n", "0".repeat(40)),
        )
        .unwrap();
        std::fs::write(git.join("MERGE_HEAD"), format!("{m}\n")).unwrap();
        let got = tips(&git).unwrap();
        assert!(got.contains(&s) && got.contains(&m), "{got:?}");
        // What `git checkout -` takes from a message: hex runs of 4 or more (session-12 H2).
        let line = format!("{a} {a} a <a@x> 1 +0000\tcheckout: moving from D70461c^0 to feature/cafe\n");
        std::fs::write(
            git.join("logs/HEAD"),
            format!("{line}{a} {a} a <a@x> 1 +0000\tcommit: 9999\n"),
        )
        .unwrap();
        let got = tips(&git).unwrap();
        assert!(
            got.contains("d70461c") && got.contains("cafe") && !got.contains("9999"),
            "{got:?}"
        );
        // Any root ref git resolves by name, a symbolic ref or a message can name (J3).
        let l = "7".repeat(40);
        std::fs::write(git.join("LINT_HEAD"), format!("{l}\n")).unwrap();
        std::fs::write(git.join("lower_head"), format!("{}\n", "8".repeat(40))).unwrap();
        let got = tips(&git).unwrap();
        assert!(got.contains(&l) && !got.contains(&"8".repeat(40)), "{got:?}");
        // A ref that is a symbolic link is read through it (git does), to a regular file only.
        let outside = t.path().join("outside");
        std::fs::write(&outside, format!("{}\n", "f".repeat(40))).unwrap();
        std::os::unix::fs::symlink(&outside, git.join("refs/heads/l")).unwrap();
        std::os::unix::fs::symlink("/dev/null", git.join("refs/heads/n")).unwrap();
        assert!(tips(&git).unwrap().contains(&"f".repeat(40)));
        std::fs::create_dir(git.join("reftable")).unwrap();
        assert!(tips(&git).unwrap_err().contains("reftable"));
    }
}
