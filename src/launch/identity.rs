//! Who owns a launch: pid, process start time and host name, recorded in labels so that a later
//! `ags` can tell a live launch from leftovers of a killed one (pid reuse is caught by the start
//! time).

use std::time::{SystemTime, UNIX_EPOCH};

use crate::plan::LaunchIdentity;

/// The identity of a launch run by this process.
pub fn current() -> LaunchIdentity {
    let pid = std::process::id();
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    LaunchIdentity {
        launch_id: format!("ags-{pid}-{nanos}"),
        suffix: random_hex(4),
        pid,
        start_time: process_start_time(pid).unwrap_or(0),
        host: host_name(),
    }
}

/// `n` random bytes as lowercase hex.
pub fn random_hex(n: usize) -> String {
    let mut buf = vec![0u8; n];
    if getrandom::fill(&mut buf).is_err() {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        buf.iter_mut()
            .enumerate()
            .for_each(|(i, b)| *b = (nanos >> (i % 4 * 8)) as u8);
    }
    hex::encode(buf)
}

pub use crate::procfs::process_start_time;

/// Whether the process that owned a launch is still running (same pid and start time).
pub fn owner_alive(pid: u32, start_time: u64) -> bool {
    crate::procfs::alive(pid, start_time)
}

/// This machine's host name.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_process_is_alive_and_start_time_detects_reuse() {
        let id = current();
        assert!(id.launch_id.starts_with(&format!("ags-{}-", id.pid)));
        assert_eq!(id.suffix.len(), 8);
        assert!(id.start_time > 0);
        assert!(owner_alive(id.pid, id.start_time));
        assert!(!owner_alive(id.pid, id.start_time + 1));
        assert!(!owner_alive(u32::MAX - 1, 1));
    }
}
