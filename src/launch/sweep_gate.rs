//! When a launch sweeps the service for leftovers of dead launches (`gc::sweep`).
//!
//! Listing every managed container and volume at every start made concurrent launches queue on
//! the service's locks (50 launches: 100 list calls over 50 containers each, plus their removals
//! racing each other). A launch now sweeps only when there may be something to sweep:
//!
//! - an **owner mark** of this user's names a dead process and this service: every launch writes
//!   `<state>/ags/owners/<pid>-<start>` (holding the service's URL) before it creates anything
//!   in Podman and removes it once its cleanup removed everything, so a mark left behind by a
//!   dead process is the evidence of a killed `ags` (or of leftovers its cleanup could not
//!   remove) on that service. Only a sweep of that service clears it: a launch on another
//!   service must not make the leftovers (a keeper holding staged values in RAM, a volume)
//!   wait for the periodic sweep. A mark without a URL (older versions) counts for every
//!   service;
//! - or this service was not swept by this user for [`FULL_SWEEP_EVERY`] (leftovers of other
//!   users, of older versions, of other state directories), or never.
//!
//! At most one launch of a user sweeps a service at a time: the sweep holds a non-blocking
//! `flock` on `<state>/ags/locks/sweep-<service>.lock`, and a launch that finds it held leaves
//! the sweep to its holder. `ags gc` always sweeps.

use std::fs::{self, File};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use nix::fcntl::{Flock, FlockArg};

use super::identity;
use crate::config::Paths;
use crate::plan::LaunchIdentity;

/// A full sweep of a service at least this often (per user), even without a dead owner mark.
pub const FULL_SWEEP_EVERY: Duration = Duration::from_secs(600);

/// This launch's owner mark; removed on drop unless [`OwnerMark::keep`] was called.
#[derive(Debug)]
pub struct OwnerMark {
    path: Option<PathBuf>,
}

impl OwnerMark {
    /// Write the owner mark of `id` for the service at `url` (best effort: without it, leftovers
    /// of this launch are found by the next full sweep or `ags gc`). A crash between the mark's
    /// create and its write leaves an empty mark, which counts for every service.
    pub fn write(paths: &Paths, id: &LaunchIdentity, url: &str) -> Self {
        let dir = owners_dir(paths);
        let path = dir.join(format!("{}-{}", id.pid, id.start_time));
        let made = crate::fsutil::ensure_private_dir(&paths.state_dir())
            .ok()
            .and_then(|()| crate::fsutil::ensure_private_dir(&dir).ok())
            .and_then(|()| crate::fsutil::open_private_append(&path).ok())
            .and_then(|mut f| f.write_all(url.as_bytes()).ok());
        OwnerMark {
            path: made.map(|()| path),
        }
    }

    /// Leave the mark behind (cleanup left something): the next launch after this process is
    /// gone sweeps.
    pub fn keep(mut self) {
        self.path = None;
    }
}

impl Drop for OwnerMark {
    fn drop(&mut self) {
        if let Some(p) = &self.path {
            let _ = fs::remove_file(p);
        }
    }
}

/// The right to sweep a service now, with what to clear once the sweep succeeded.
#[derive(Debug)]
pub struct Gate {
    _lock: Flock<File>,
    stamp: PathBuf,
    dead: Vec<PathBuf>,
}

impl Gate {
    /// Whether this launch should sweep the service at `url`: `Some` when a dead owner mark
    /// exists or the last full sweep is old, and no other launch of this user sweeps it now.
    pub fn open(paths: &Paths, url: &str) -> Option<Gate> {
        let locks = paths.state_dir().join("locks");
        crate::fsutil::ensure_private_dir(&paths.state_dir()).ok()?;
        crate::fsutil::ensure_private_dir(&locks).ok()?;
        let name = format!("sweep-{:016x}", super::service_lock::stable_hash(url));
        let stamp = locks.join(format!("{name}.stamp"));
        let dead = dead_marks(&owners_dir(paths), url);
        if dead.is_empty() && !stale(&stamp) {
            return None;
        }
        let file = crate::fsutil::open_private_append(&locks.join(format!("{name}.lock"))).ok()?;
        let lock = Flock::lock(file, FlockArg::LockExclusiveNonblock).ok()?;
        Some(Gate {
            _lock: lock,
            stamp,
            dead,
        })
    }

    /// The sweep succeeded: record when, and drop the dead owners' marks it covered.
    pub fn done(self) {
        let _ = fs::remove_file(&self.stamp);
        let _ = crate::fsutil::open_private_append(&self.stamp);
        for mark in &self.dead {
            let _ = fs::remove_file(mark);
        }
    }
}

fn owners_dir(paths: &Paths) -> PathBuf {
    paths.state_dir().join("owners")
}

/// Whether the stamp is missing or older than [`FULL_SWEEP_EVERY`].
fn stale(stamp: &Path) -> bool {
    let modified = fs::metadata(stamp).and_then(|m| m.modified());
    match modified {
        Ok(t) => SystemTime::now()
            .duration_since(t)
            .is_ok_and(|age| age >= FULL_SWEEP_EVERY),
        Err(_) => true,
    }
}

/// Owner marks (`<pid>-<start>`) of the service at `url` (or of no recorded service) whose
/// process is gone.
fn dead_marks(dir: &Path, url: &str) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let mut parts = name.splitn(2, '-');
            let pid = parts.next().and_then(|p| p.parse::<u32>().ok());
            let start = parts.next().and_then(|s| s.parse::<u64>().ok());
            matches!((pid, start), (Some(pid), Some(start)) if !identity::owner_alive(pid, start))
        })
        .filter(|e| marked_service(&e.path()).is_none_or(|u| u == url))
        .map(|e| e.path())
        .collect()
}

/// The service URL in an owner mark; `None` for an empty (or unreadable) mark.
fn marked_service(mark: &Path) -> Option<String> {
    let file = fs::File::open(mark).ok()?;
    let mut text = String::new();
    // A URL is short; a mark is the user's own private file.
    file.take(8192).read_to_string(&mut text).ok()?;
    (!text.is_empty()).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(root: &Path) -> Paths {
        Paths {
            home: root.to_path_buf(),
            config_home: root.join("config"),
            state_home: root.join("state"),
            cache_home: root.join("cache"),
            runtime_dir: None,
        }
    }

    #[test]
    fn sweeps_when_never_swept_or_a_dead_owner_left_a_mark() {
        let root = tempfile::tempdir().unwrap();
        let p = paths(root.path());
        let url = "unix:///x.sock";
        let gate = Gate::open(&p, url).expect("never swept: sweep");
        assert!(Gate::open(&p, url).is_none(), "one sweeper at a time");
        gate.done();
        assert!(Gate::open(&p, url).is_none(), "just swept, no dead owner");
        assert!(Gate::open(&p, "unix:///other.sock").is_some(), "per service");

        let me = identity::current();
        let live = OwnerMark::write(&p, &me, url);
        assert!(Gate::open(&p, url).is_none(), "a live owner is no reason");
        let dead = owners_dir(&p).join(format!("{}-{}", me.pid, me.start_time + 1));
        fs::write(&dead, "").unwrap();
        Gate::open(&p, url).expect("a dead owner: sweep").done();
        assert!(!dead.exists(), "its mark is cleared by the sweep");
        assert!(Gate::open(&p, url).is_none());
        // A dead launch of another service: a sweep of this one neither counts nor clears it.
        let other = "tcp://build.example.org:8080";
        let elsewhere = owners_dir(&p).join(format!("{}-{}", me.pid, me.start_time + 2));
        fs::write(&elsewhere, other).unwrap();
        assert!(Gate::open(&p, url).is_none(), "another service's dead launch");
        fs::write(&dead, "").unwrap();
        Gate::open(&p, url)
            .expect("a mark without a service counts")
            .done();
        assert!(
            elsewhere.exists() && !dead.exists(),
            "only this service's marks are cleared"
        );
        Gate::open(&p, other).expect("its own service sweeps").done();
        assert!(!elsewhere.exists());
        drop(live);
        assert_eq!(
            fs::read_dir(owners_dir(&p)).unwrap().count(),
            0,
            "the live mark is removed"
        );
    }
}
