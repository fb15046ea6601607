//! The per-`ags` watchdog: a tiny process that outlives a SIGKILLed `ags` just long enough to
//! kill the process groups of its hooks and `op` calls, so none of them survives `ags` by more
//! than a moment, however `ags` ends.
//!
//! How: the watchdog is `ags` itself, re-executed (`/proc/self/exe`) with the hidden argument
//! [`WATCHDOG_ARG`] through the one spawn primitive (`process::spawn_watchdog`), in its
//! own process group (terminal signals do not reach it), with `/` as cwd and an empty
//! environment. Its stdin is a pipe whose write end only `ags` holds (close-on-exec: no hook
//! inherits it). The spawn primitive writes `+PGID START` once it started a process group (START:
//! the leader's start time) and `-PGID` just before it reaps the leader. When the watchdog reads
//! EOF, `ags` is gone — exited, crashed or SIGKILLed — and it SIGKILLs every group still
//! recorded, except one whose leader pid now runs with another start time (the group ended and
//! the pid was reused: not ours), then exits. It reads the records in bursts ([`COALESCE`] apart),
//! not one wake-up per record: nothing depends on it applying them promptly, only in order.
//!
//! It starts with the first hook or `op` call of an invocation and only in the `ags` binary
//! ([`enable`] in `main`); a library user that does not enable it keeps the kill-on-reap and the
//! next start's sweep of recorded groups. What it cannot cover: a process started in its own
//! session or group on purpose (not in the recorded group), and the instant between `fork` and
//! the `+` record (the next `ags` start sweeps those groups; see `exec_copy::record_group`).
//!
//! Why no `PR_SET_PDEATHSIG` on hooks: it must be set between `fork` and `exec`, which takes the
//! `unsafe` `pre_exec` this crate forbids; and it fires when the *thread* that forked exits,
//! which for a spawn on Tokio's blocking pool happens after 10 s idle, killing long hooks early.

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ExitCode};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::procfs::process_start_time;

/// The hidden first argument that makes `ags` act as the watchdog.
pub const WATCHDOG_ARG: &str = "__ags-watchdog";

/// The program to re-execute, set once by [`enable`].
static PROGRAM: OnceLock<PathBuf> = OnceLock::new();

/// The running watchdog of this process (started on first use).
static LINK: Mutex<Option<Link>> = Mutex::new(None);

struct Link {
    /// Kept so the watchdog is not reaped by anyone else; never waited for (it exits after us).
    _child: Child,
    pipe: ChildStdin,
}

/// Make every process group started from now on watched, by re-executing `program` (the `ags`
/// binary: `/proc/self/exe`). Called once from `main`.
pub fn enable(program: PathBuf) {
    let _ = PROGRAM.set(program);
}

/// In `main`, before anything else: when started as the watchdog, run it and return its exit code.
pub fn run_if_requested() -> Option<ExitCode> {
    let mut args = std::env::args_os().skip(1);
    if args.next()? != WATCHDOG_ARG || args.next().is_some() {
        return None;
    }
    let stdin = io::stdin().lock();
    serve(stdin);
    Some(ExitCode::SUCCESS)
}

/// Record that group `pgid` (led by `pgid`, started at `start`) was started. Starts the watchdog
/// on first use. An error means the group cannot be guarded: the caller kills it and fails.
pub(crate) fn watch(pgid: u32, start: Option<u64>) -> io::Result<()> {
    let Some(program) = PROGRAM.get() else {
        return Ok(());
    };
    let start = start.unwrap_or(0);
    send(program, &format!("+{pgid} {start}\n"))
}

/// Record that group `pgid` was killed and its leader is about to be reaped.
pub(crate) fn forget(pgid: u32) {
    if let Some(program) = PROGRAM.get() {
        let _ = send(program, &format!("-{pgid}\n"));
    }
}

fn send(program: &Path, line: &str) -> io::Result<()> {
    let mut link = LINK.lock().unwrap_or_else(PoisonError::into_inner);
    if link.is_none() {
        let (child, pipe) = super::spawn_watchdog(program, WATCHDOG_ARG).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot start the watchdog ({} {WATCHDOG_ARG}) that stops hooks and op if ags dies: {e}",
                    program.display()
                ),
            )
        })?;
        *link = Some(Link { _child: child, pipe });
    }
    let pipe = &mut link.as_mut().expect("started above").pipe;
    pipe.write_all(line.as_bytes()).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!(
                "the watchdog that stops hooks and op if ags dies is gone ({e}); nothing more is started"
            ),
        )
    })
}

/// How long the watchdog lets records pile up before reading them: it is woken once per burst
/// of hook starts and ends instead of twice per hook (a third process competing for the CPUs
/// with the hooks and `ags`), at the price of noticing the EOF up to this much later.
const COALESCE: Duration = Duration::from_millis(20);

/// The watchdog itself: follow the records until EOF, then kill what is left.
fn serve(input: impl Read) {
    let mut input = BufReader::with_capacity(64 * 1024, input);
    let mut groups: HashMap<u32, u64> = HashMap::new();
    let mut line = String::new();
    loop {
        line.clear();
        match input.read_line(&mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => apply(&mut groups, line.trim_end_matches('\n')),
        }
        if input.buffer().is_empty() {
            // Everything written so far is applied; let the next records pile up in the pipe.
            std::thread::sleep(COALESCE);
        }
    }
    for _ in 0..3 {
        groups.retain(|&pgid, &mut start| kill_if_ours(pgid, start));
        if groups.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Apply one record (`+PGID START` or `-PGID`); anything else is ignored.
fn apply(groups: &mut HashMap<u32, u64>, line: &str) {
    if let Some(rest) = line.strip_prefix('+') {
        let mut parts = rest.split(' ');
        if let (Some(Ok(pgid)), Some(Ok(start))) = (
            parts.next().map(str::parse::<u32>),
            parts.next().map(str::parse::<u64>),
        ) && pgid > 1
        {
            groups.insert(pgid, start);
        }
    } else if let Some(Ok(pgid)) = line.strip_prefix('-').map(str::parse::<u32>) {
        groups.remove(&pgid);
    }
}

/// SIGKILL group `pgid` unless its leader pid now belongs to another process; whether the group
/// may still have members (to try again).
fn kill_if_ours(pgid: u32, start: u64) -> bool {
    if let Some(now) = process_start_time(pgid)
        && start != 0
        && now != start
    {
        return false;
    }
    killpg(Pid::from_raw(pgid as i32), Signal::SIGKILL).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_add_and_remove_groups() {
        let mut groups = HashMap::new();
        for line in ["+100 5", "+200 6", "-100", "+1 7", "+x 1", "junk", "+300"] {
            apply(&mut groups, line);
        }
        assert_eq!(groups, HashMap::from([(200, 6)]));
    }

    #[test]
    fn a_reused_leader_pid_is_spared() {
        let me = std::process::id();
        let start = process_start_time(me).unwrap();
        assert!(!kill_if_ours(me, start + 1), "another start time: not ours");
    }
}
