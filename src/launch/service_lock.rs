//! Host-side serialization of the steps one Podman service cannot take concurrently.
//!
//! Podman 4.3's rootless service reads the subordinate id ranges through libsubid for every
//! `keep-id` container create, and libsubid is not thread-safe: concurrent creates fail with a
//! spurious "keep-id requires additional UIDs or GIDs" error, and the service was seen to crash
//! (SIGSEGV in `subid_get_gid_ranges`) under 20 concurrent launches. A local service of the
//! caller gets the mapping spelled out instead (`podman::spell_out_keep_id`) and needs no turns;
//! `keep-id` launches that remain (a service of another user or machine, or settings that cannot
//! be spelled out exactly) take turns per user and service for the create call only, through an
//! `flock` on a file named after the service in the user's RAM-backed runtime directory.
//! Nothing is held across the agent's run, and a lock that cannot be had (no usable directory)
//! only costs the protection, never the launch.

use std::fs::File;
use std::hash::{Hash, Hasher};
use std::path::Path;

use nix::fcntl::{Flock, FlockArg};

/// A held turn; released on drop (and by the kernel when the process dies).
#[derive(Debug)]
pub struct Turn {
    _lock: Flock<File>,
}

/// Wait for this user's turn to create a container on the service at `url`, using a lock file
/// in `dir` (created owner-only when missing, like its parent). `None` when the lock file cannot
/// be used.
pub async fn create_turn(dir: &Path, url: &str) -> Option<Turn> {
    let path = dir.join(format!("create-{:016x}.lock", stable_hash(url)));
    let dir = dir.to_path_buf();
    tokio::task::spawn_blocking(move || {
        if let Some(parent) = dir.parent() {
            crate::fsutil::ensure_private_dir(parent).ok()?;
        }
        crate::fsutil::ensure_private_dir(&dir).ok()?;
        let file = crate::fsutil::open_private_append(&path).ok()?;
        Flock::lock(file, FlockArg::LockExclusive)
            .ok()
            .map(|lock| Turn { _lock: lock })
    })
    .await
    .ok()
    .flatten()
}

/// FNV-1a of `s`: stable across processes and builds (std's hasher is not guaranteed to be).
pub(crate) fn stable_hash(s: &str) -> u64 {
    struct Fnv(u64);
    impl Hasher for Fnv {
        fn finish(&self) -> u64 {
            self.0
        }
        fn write(&mut self, bytes: &[u8]) {
            for b in bytes {
                self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
            }
        }
    }
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    s.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn turns_are_exclusive_and_released_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("state/locks");
        let first = create_turn(&sub, "unix:///a.sock").await.expect("a turn");
        let path = std::fs::read_dir(&sub).unwrap().next().unwrap().unwrap().path();
        let other = File::open(&path).unwrap();
        let busy = Flock::lock(other, FlockArg::LockExclusiveNonblock);
        assert!(busy.is_err(), "held by the first turn");
        drop(first);
        let other = File::open(&path).unwrap();
        assert!(
            Flock::lock(other, FlockArg::LockExclusiveNonblock).is_ok(),
            "released"
        );
        assert_ne!(stable_hash("unix:///a.sock"), stable_hash("unix:///b.sock"));
    }
}
