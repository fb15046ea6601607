//! Facts about processes from `/proc`: start times, used to tell a live owner from a reused pid
//! (launch labels, host staging directories, hook execution directories).

/// Start time of `pid` in clock ticks since boot (field 22 of /proc/PID/stat), if it exists.
pub fn process_start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is parenthesised and may contain spaces: split after it.
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Whether the process `pid` that started at `start_time` is still running.
pub fn alive(pid: u32, start_time: u64) -> bool {
    process_start_time(pid).is_some_and(|t| t == start_time)
}
