//! One hook execution: recheck approval, check the private copy, start it through the spawn
//! primitive ([`crate::process`]: own process group, scrubbed environment, context on stdin,
//! capped output, timeout, group kill), and classify how it ended.
//!
//! All of it is blocking and runs on one of the runner's worker threads (Tokio's blocking pool),
//! so slow filesystem metadata operations never stall the other hooks.

use std::ffi::OsString;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::{Duration, Instant, SystemTime};

use super::{AbortReason, ExitInfo, HookFailure, HookReport, Outcome, PASSED_ENV, TaskEnv, error_detail};
use crate::hooks::entrypoint::PreparedHook;
use crate::process::{self, Abort, Ending, Finished, Running};

pub(super) use process::joined_blocking;

/// What a hook task hands back to the coordinator.
pub(super) struct TaskResult {
    pub index: usize,
    pub report: HookReport,
    pub stdout: Vec<u8>,
    pub failure: Option<HookFailure>,
}

type Done = Finished<AbortReason>;

/// Run hook number `index` to completion (or until aborted), never leaving its group alive.
/// Blocking: the whole life of the hook on the calling (worker) thread.
pub(super) fn run_one(
    index: usize,
    hook: &PreparedHook,
    env: &TaskEnv,
    abort: &Abort<AbortReason>,
) -> TaskResult {
    let mut report = HookReport::not_started(hook);
    let (stdout, failure) = match abort.fired() {
        Some(_) => (Vec::new(), None),
        None => execute(hook, env, abort, &mut report),
    };
    TaskResult {
        index,
        report,
        stdout,
        failure,
    }
}

/// Start the hook and wait for it to end, filling in `report`: its stdout and its failure.
fn execute(
    hook: &PreparedHook,
    env: &TaskEnv,
    abort: &Abort<AbortReason>,
    report: &mut HookReport,
) -> (Vec<u8>, Option<HookFailure>) {
    report.started_at = Some(SystemTime::now());
    let t0 = Instant::now();
    let io = process::Io {
        stdin: env.context.clone(),
        stdout_cap: env.limits.stdout_cap,
        stderr_name: hook.decl.name.clone(),
        stderr_cap: env.limits.stderr_cap,
        stderr_sink: env.sink.clone(),
        timeout: Duration::from_secs(hook.decl.timeout_seconds.into()),
        drain_grace: env.limits.drain_grace,
    };
    let done = match spawn(hook, env) {
        Ok(running) => process::supervise_blocking(running, &io, abort),
        Err(failure) => {
            report.outcome = failure.outcome();
            report.duration = t0.elapsed();
            return (Vec::new(), Some(failure));
        }
    };
    report.duration = t0.elapsed();
    report.stdout_bytes = done.stdout.total;
    report.stderr_bytes = done.stderr.total;
    report.exit = done.status.as_ref().ok().map(exit_info);
    let (outcome, failure) = classify(hook, env, &done);
    report.outcome = outcome;
    (done.stdout.bytes, failure)
}

/// Recheck approval, make and verify the copy, and start it. Blocking.
fn spawn(hook: &PreparedHook, env: &TaskEnv) -> Result<Running, HookFailure> {
    if !env.store.is_approved(&hook.hash)? {
        return Err(HookFailure::NotApproved {
            hash: hook.hash.clone(),
        });
    }
    let program = env.exec_dir.copy(hook)?;
    let spec = process::Spawn {
        program,
        args: hook.decl.args.iter().map(OsString::from).collect(),
        cwd: Some(env.workdir.clone()),
        env: PASSED_ENV
            .iter()
            .filter_map(|k| match *k {
                "PATH" => env.path.clone().map(|v| (OsString::from(k), v)),
                _ => std::env::var_os(k).map(|v| (OsString::from(k), v)),
            })
            .collect(),
    };
    let running = process::spawn(&spec).map_err(|source| spawn_failure(spec.program, env, source))?;
    env.exec_dir.record_group(running.pgid(), running.start_time());
    Ok(running)
}

fn spawn_failure(program: PathBuf, env: &TaskEnv, source: io::Error) -> HookFailure {
    let hint = match source.raw_os_error() {
        Some(libc::EACCES | libc::EPERM) => format!(
            "execution was denied: check that the filesystem of {} (where ags writes the execution \
             copies: the approval store, unless a RAM-backed runtime directory allows execution) is \
             not mounted noexec and that the interpreter on the entrypoint's #! line is executable \
             (ags never falls back to the original file)",
            env.exec_dir.path().parent().unwrap_or(env.store.dir()).display()
        ),
        Some(libc::ENOENT) => format!(
            "check that the interpreter on the entrypoint's #! line exists and that the workdir {} exists",
            env.workdir.display()
        ),
        Some(libc::ENOEXEC) => "the entrypoint is not a recognized executable; scripts need a #! line".into(),
        _ => "check the entrypoint and its interpreter".into(),
    };
    HookFailure::Spawn {
        program,
        source,
        hint,
    }
}

fn exit_info(status: &ExitStatus) -> ExitInfo {
    match (status.code(), status.signal()) {
        (Some(code), _) => ExitInfo::Code(code),
        (None, Some(sig)) => ExitInfo::Signal(sig),
        (None, None) => ExitInfo::Code(-1),
    }
}

fn classify(hook: &PreparedHook, env: &TaskEnv, done: &Done) -> (Outcome, Option<HookFailure>) {
    let failure = match done.ending {
        Ending::Aborted(AbortReason::Cancel) => return (Outcome::Cancelled, None),
        Ending::Aborted(AbortReason::PhaseDeadline) => return (Outcome::Timeout, None),
        Ending::Overflow => HookFailure::OutputTooLarge {
            cap: env.limits.stdout_cap,
        },
        Ending::Timeout => HookFailure::Timeout {
            seconds: hook.decl.timeout_seconds,
        },
        Ending::Exited => match exited_failure(done, env) {
            Some(f) => f,
            None => return (Outcome::Ok, None),
        },
    };
    (failure.outcome(), Some(failure))
}

fn exited_failure(done: &Done, env: &TaskEnv) -> Option<HookFailure> {
    if done.stdout.overflow {
        return Some(HookFailure::OutputTooLarge {
            cap: env.limits.stdout_cap,
        });
    }
    let status = match &done.status {
        Ok(status) => status,
        Err(e) => return Some(io_failure("waiting for the hook", e)),
    };
    if let Some(signal) = status.signal() {
        return Some(HookFailure::Signaled {
            signal,
            signal_name: process::signal_name(signal),
        });
    }
    match status.code() {
        Some(0) => {}
        code => {
            return Some(HookFailure::NonZeroExit {
                code: code.unwrap_or(-1),
                detail: error_detail(&done.stdout.bytes),
            });
        }
    }
    if let Some(e) = &done.stdout.error {
        return Some(io_failure("reading its stdout", e));
    }
    done.write_error
        .as_ref()
        .map(|e| io_failure("writing the context to its stdin", e))
}

fn io_failure(what: &'static str, e: &io::Error) -> HookFailure {
    HookFailure::Io {
        what,
        source: io::Error::new(e.kind(), e.to_string()),
    }
}
