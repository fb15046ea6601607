//! The sweep of execution directories a crashed or SIGKILLed `ags` left behind, and the record
//! that lets it kill their hooks: each phase appends one `PGID-START` line per started hook to
//! `<exec dir>/groups` (one file per phase, not one per hook), and [`sweep_stale`] SIGKILLs the
//! recorded groups of a dead creator before removing its directory.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::PoisonError;
use std::time::{Duration, SystemTime};

use nix::errno::Errno;
use nix::sys::signal::kill;
use nix::unistd::Pid;

use super::{EXEC_DIR_PREFIX, ExecDir};

/// Remove execution directories whose creating `ags` is gone, after killing the hook process
/// groups recorded in them (an `ags` killed by SIGKILL cannot kill its hooks itself).
///
/// Directories named `ags-hook-exec-<pid>-<start>-<random>` are judged by pid and start time
/// (pid reuse is detected); older `ags-hook-exec-<pid>-<random>` names only once they are older
/// than `min_age` and no process has that pid. Returns how many were removed; failures are
/// collected, not fatal (call this at startup).
pub fn sweep_stale(store_dir: &Path, min_age: Duration) -> (usize, Vec<io::Error>) {
    let mut removed = 0;
    let mut errors = Vec::new();
    let entries = match fs::read_dir(store_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return (0, errors),
        Err(e) => return (0, vec![e]),
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(creator) = entry.file_name().to_str().and_then(creator) else {
            continue;
        };
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        let old_enough = || {
            meta.modified()
                .ok()
                .and_then(|m| SystemTime::now().duration_since(m).ok())
                .is_some_and(|age| age >= min_age)
        };
        let gone = match creator {
            Creator::Exact { pid, start } => !crate::procfs::alive(pid, start),
            Creator::Pid(pid) => old_enough() && !process_exists(pid),
        };
        if !meta.is_dir() || !gone {
            continue;
        }
        kill_recorded_groups(&path);
        match fs::remove_dir_all(&path) {
            Ok(()) => removed += 1,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => errors.push(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
        }
    }
    (removed, errors)
}

/// Who created an execution directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Creator {
    /// `<pid>-<start>-<random>`.
    Exact { pid: u32, start: u64 },
    /// `<pid>-<random>` (older name).
    Pid(i32),
}

/// Parse `ags-hook-exec-<pid>-<start>-<random>` or `ags-hook-exec-<pid>-<random>`.
fn creator(name: &str) -> Option<Creator> {
    let rest = name.strip_prefix(EXEC_DIR_PREFIX)?;
    let parts: Vec<&str> = rest.split('-').collect();
    match parts.as_slice() {
        [pid, start, random] if !random.is_empty() => Some(Creator::Exact {
            pid: pid.parse().ok().filter(|p| *p > 0)?,
            start: start.parse().ok()?,
        }),
        [pid, random] if !random.is_empty() => Some(Creator::Pid(pid.parse().ok().filter(|p| *p > 0)?)),
        _ => None,
    }
}

/// File (inside an execution directory) recording the hooks' process groups, one `PGID-START`
/// line per hook. Older `ags` made it a directory of empty files named `PGID-START`.
pub(super) const GROUPS: &str = "groups";

impl ExecDir {
    /// Record that a hook's process group `pgid` (led by the hook, started at `start`, see
    /// `process::Running::start_time`) belongs to this phase, so a sweep can kill it if `ags` dies
    /// without doing so. One line appended to one file per phase: no file is created per hook.
    /// The file is created here, never opened if it already exists (it is never a copy, whose
    /// names skip it), so nothing is ever appended to a file `ags` did not create for this.
    pub fn record_group(&self, pgid: u32, start: Option<u64>) {
        let Some(start) = start else {
            return;
        };
        let mut groups = self.groups.lock().unwrap_or_else(PoisonError::into_inner);
        if groups.is_none() {
            *groups = OpenOptions::new()
                .append(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(self.dir.join(GROUPS))
                .ok();
        }
        if let Some(file) = groups.as_mut() {
            // One write per line: a killed `ags` leaves whole lines (a partial one is ignored).
            let _ = file.write_all(format!("{pgid}-{start}\n").as_bytes());
        }
    }
}

/// The `(pgid, start)` pairs recorded in an execution directory (either layout).
fn recorded_groups(exec_dir: &Path) -> Vec<(u32, u64)> {
    let path = exec_dir.join(GROUPS);
    let Ok(meta) = fs::symlink_metadata(&path) else {
        return Vec::new();
    };
    let names: Vec<String> = if meta.is_dir() {
        let Ok(entries) = fs::read_dir(&path) else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .collect()
    } else if meta.is_file() {
        let Ok(text) = fs::read_to_string(&path) else {
            return Vec::new();
        };
        complete_lines(&text).map(str::to_owned).collect()
    } else {
        return Vec::new();
    };
    names.iter().filter_map(|n| parse_group(n)).collect()
}

/// The lines of `text` that end in a newline.
fn complete_lines(text: &str) -> impl Iterator<Item = &str> {
    let whole = text.rfind('\n').map_or("", |end| &text[..end]);
    whole.split('\n').filter(|l| !l.is_empty())
}

fn parse_group(name: &str) -> Option<(u32, u64)> {
    let (pgid, start) = name.split_once('-')?;
    Some((pgid.parse().ok()?, start.parse().ok()?))
}

/// SIGKILL the recorded groups of a dead phase. A group whose leader still runs with the
/// recorded start time is ours; a group whose leader is gone may still have members, and its
/// id cannot have been reused while they live; a leader pid now running with another start
/// time means the group is long gone and the pid belongs to someone else.
fn kill_recorded_groups(exec_dir: &Path) {
    for (pgid, start) in recorded_groups(exec_dir) {
        let ours = match crate::procfs::process_start_time(pgid) {
            Some(now) => now == start,
            None => true,
        };
        if ours && pgid > 1 {
            let _ = nix::sys::signal::killpg(Pid::from_raw(pgid as i32), nix::sys::signal::Signal::SIGKILL);
        }
    }
}

fn process_exists(pid: i32) -> bool {
    pid == std::process::id() as i32 || !matches!(kill(Pid::from_raw(pid), None), Err(Errno::ESRCH))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::exec_copy::tests::hook;

    #[test]
    fn groups_are_recorded_in_one_file_and_read_in_both_layouts() {
        let store = tempfile::tempdir().unwrap();
        let dir = ExecDir::new(store.path());
        dir.write(&hook("/x/prep", b"one")).unwrap();
        dir.record_group(i32::MAX as u32 - 1, Some(7));
        dir.record_group(i32::MAX as u32 - 2, None);
        dir.record_group(i32::MAX as u32 - 3, Some(9));
        let entries: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(entries.len(), 2, "the copy and one groups file: {entries:?}");
        assert_eq!(
            recorded_groups(dir.path()),
            [(i32::MAX as u32 - 1, 7), (i32::MAX as u32 - 3, 9)]
        );
        // A line cut short by a killed `ags` is not read; the older layout still is.
        let cut = store.path().join("cut");
        fs::create_dir(&cut).unwrap();
        fs::write(cut.join(GROUPS), b"100-5\n200-6\n30").unwrap();
        assert_eq!(recorded_groups(&cut), [(100, 5), (200, 6)]);
        let old = store.path().join("old");
        fs::create_dir_all(old.join(GROUPS)).unwrap();
        fs::write(old.join(GROUPS).join("300-8"), b"").unwrap();
        assert_eq!(recorded_groups(&old), [(300, 8)]);
    }

    #[test]
    fn creator_parses_only_our_names() {
        assert_eq!(creator("ags-hook-exec-123-abcd"), Some(Creator::Pid(123)));
        assert_eq!(
            creator("ags-hook-exec-123-456-abcd"),
            Some(Creator::Exact { pid: 123, start: 456 })
        );
        assert_eq!(creator("ags-hook-exec-123-"), None);
        assert_eq!(creator("ags-hook-exec-x-ab"), None);
        assert_eq!(creator("ags-hook-exec-0-ab"), None);
        assert_eq!(creator(&"a".repeat(64)), None);
    }

    #[test]
    fn sweep_removes_dead_creators_only() {
        let store = tempfile::tempdir().unwrap();
        let dead = store.path().join(format!("{EXEC_DIR_PREFIX}{}-00", i32::MAX));
        let ours = store
            .path()
            .join(format!("{EXEC_DIR_PREFIX}{}-00", std::process::id()));
        let other = store.path().join("not-a-copy");
        for d in [&dead, &ours, &other] {
            fs::create_dir(d).unwrap();
            fs::write(d.join("f"), b"x").unwrap();
        }
        let (removed, errors) = sweep_stale(store.path(), Duration::ZERO);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(removed, 1);
        assert!(!dead.exists() && ours.exists() && other.exists());
        fs::create_dir(&dead).unwrap();
        let (removed, _) = sweep_stale(store.path(), Duration::from_secs(3600));
        assert_eq!(removed, 0, "too young to sweep");
    }
}
