//! Attacks on the prepare runner's supervision (`process::supervise_blocking` on worker threads,
//! one `poll(2)` loop per hook): hooks that close their streams early, stop themselves, fork
//! away, write exactly the caps, never read a context while flooding stderr; failures, rejected
//! responses, interrupts and a dropped phase while peers are blocked. Real hook programs (small
//! scripts written into the test's temp dir), no mocks.

use crate::hook_support;

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use ags::hooks::entrypoint::PreparedHook;
use ags::hooks::runner::{HookRun, Limits, Outcome, RunError, interrupt_channel, run_hooks};
use hook_support::{TestEnv, assert_gone, pids_in, wait_for_pids};

/// An approved hook running `body` under `/bin/sh` (the context is on its stdin).
fn script(env: &TestEnv, name: &str, body: &str, args: &[&str], timeout: u32) -> PreparedHook {
    let dir = env.tmp.path().join("scripts");
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join(name);
    std::fs::write(&exe, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut decl = env.decl(name, "ok", args, timeout);
    decl.executable = exe;
    env.approved(decl)
}

fn outcomes(err: &RunError) -> Vec<Outcome> {
    err.reports().iter().map(|r| r.outcome).collect()
}

/// Run `body` alone as hook `name` (its `$1` names a file for the pids it starts) with `limits`:
/// the phase's result and the pids written.
async fn run_recording_pids(
    env: &TestEnv,
    name: &str,
    body: &str,
    timeout: u32,
    limits: Limits,
) -> (Result<Vec<HookRun<String>>, RunError>, Vec<i32>) {
    let pids = env.file("pids");
    let hook = script(env, name, body, &[&pids], timeout);
    let (result, _) = env.run_with(vec![hook], limits).await;
    (result, pids_in(&pids))
}

/// A hook that closes stdout and stderr at once and then keeps running is stopped by its
/// timeout (not mistaken for an exit by the hang-ups), with its whole group.
#[tokio::test]
async fn closing_both_output_streams_is_not_an_exit() {
    let env = TestEnv::new();
    let body = "cat >/dev/null; exec >&- 2>&-; sleep 600 & echo \"$$ $!\" > \"$1\"; wait";
    let (result, pids) = run_recording_pids(&env, "mute", body, 3, Limits::default()).await;
    let err = result.unwrap_err();
    assert_eq!(outcomes(&err), [Outcome::Timeout], "{err}");
    assert!(pids.len() <= 2, "{pids:?}"); // a loaded machine may time it out sooner
    pids.into_iter().for_each(assert_gone);
}

/// A hook that stops itself (SIGSTOP) is neither taken for exited nor waited for forever: its
/// timeout kills the stopped group.
#[tokio::test]
async fn a_self_stopped_hook_times_out_and_dies() {
    let env = TestEnv::new();
    let body = "cat >/dev/null; echo $$ > \"$1\"; kill -STOP $$; echo '{\"version\":1}'";
    let (result, pids) = run_recording_pids(&env, "stopped", body, 2, Limits::default()).await;
    let err = result.unwrap_err();
    assert_eq!(outcomes(&err), [Outcome::Timeout], "{err}");
    assert_eq!(
        err.reports()[0].exit,
        Some(ags::hooks::runner::ExitInfo::Signal(9))
    );
    pids.into_iter().for_each(assert_gone);
}

/// Exactly the stdout cap is accepted; one byte more is an overflow.
#[tokio::test]
async fn stdout_exactly_at_the_cap_and_one_byte_over() {
    let env = TestEnv::new();
    let limits = Limits {
        stdout_cap: 100_000,
        ..Limits::default()
    };
    let at = script(&env, "at", "cat >/dev/null; head -c 100000 /dev/zero", &[], 30);
    let (result, _) = env.run_with(vec![at], limits.clone()).await;
    let runs = result.unwrap();
    assert_eq!(runs[0].value.len(), 100_000);
    assert_eq!(runs[0].report.stdout_bytes, 100_000);
    let over = script(&env, "over", "cat >/dev/null; head -c 100001 /dev/zero", &[], 30);
    let (result, _) = env.run_with(vec![over], limits).await;
    let err = result.unwrap_err();
    assert_eq!(outcomes(&err), [Outcome::OutputTooLarge], "{err}");
}

/// Stderr without a single newline, far beyond the cap: shown in bounded pieces up to the cap,
/// the rest counted as discarded, and the hook still succeeds.
#[tokio::test]
async fn stderr_without_newlines_beyond_the_cap() {
    let env = TestEnv::new();
    let hook = script(
        &env,
        "noline",
        "cat >/dev/null; head -c 300000 /dev/zero | tr '\\000' x >&2; echo '{\"version\":1}'",
        &[],
        30,
    );
    let (result, captured) = env.run(vec![hook]).await;
    let runs = result.unwrap();
    assert_eq!(runs[0].report.stderr_bytes, 300_000);
    let lines = captured.lines();
    let shown: usize = lines[..lines.len() - 1]
        .iter()
        .map(|l| l.len() - "[noline] ".len())
        .sum();
    assert_eq!(shown, 64 * 1024);
    // "Very long lines are split at 4 KiB" (docs/prepare-hooks.md), whatever the reads were.
    let longest = lines[..lines.len() - 1]
        .iter()
        .map(|l| l.len() - "[noline] ".len())
        .max();
    assert_eq!(longest, Some(4096));
    assert_eq!(
        lines.last().unwrap(),
        &format!(
            "[noline] [ags: {} more bytes of stderr discarded; the limit is 65536 bytes]",
            300_000 - 64 * 1024
        )
    );
}

/// A long line that arrives with its newline in one read is split at 4 KiB too.
#[tokio::test]
async fn a_long_terminated_line_is_split() {
    let env = TestEnv::new();
    let hook = script(
        &env,
        "long",
        "cat >/dev/null; printf '%s\\n' \"$(head -c 10000 /dev/zero | tr '\\000' y)\" >&2; echo '{\"version\":1}'",
        &[],
        30,
    );
    let (result, captured) = env.run(vec![hook]).await;
    result.unwrap();
    let sizes: Vec<usize> = captured
        .lines()
        .iter()
        .map(|l| l.len() - "[long] ".len())
        .collect();
    assert_eq!(sizes, [4096, 4096, 10000 - 2 * 4096]);
}

/// A hook that never reads its context (larger than any pipe buffer) while it writes more
/// stderr than a pipe holds: neither side may wait for the other.
#[tokio::test]
async fn unread_context_and_a_stderr_flood_do_not_deadlock() {
    let env = TestEnv::new();
    let (mut setup, _) = env.setup(Limits::default());
    let mut big = br#"{"version":1,"pad":""#.to_vec();
    big.extend(std::iter::repeat_n(b'x', 1024 * 1024));
    big.extend(b"\"}");
    setup.context = big.into();
    let hook = script(
        &env,
        "deaf",
        "head -c 1000000 /dev/zero >&2; echo '{\"version\":1}'; sleep 1; head -c 10 >/dev/null",
        &[],
        30,
    );
    let runs = run_hooks(vec![hook], setup, hook_support::text).await.unwrap();
    assert_eq!(runs[0].value, "{\"version\":1}\n");
    assert_eq!(runs[0].report.stderr_bytes, 1_000_000);
    assert!(env.exec_dirs().is_empty());
}

/// A double fork: the hook exits at once, its orphaned grandchild (same group, reparented to
/// init) is killed all the same.
#[tokio::test]
async fn a_double_forked_grandchild_is_killed_after_a_quick_exit() {
    let env = TestEnv::new();
    let body =
        "cat >/dev/null; ( sleep 600 </dev/null >/dev/null 2>&1 & echo $! > \"$1\" ); echo '{\"version\":1}'";
    let (result, pids) = run_recording_pids(&env, "double", body, 30, Limits::default()).await;
    assert_eq!(result.unwrap()[0].value, "{\"version\":1}\n");
    assert_eq!(pids.len(), 1);
    pids.into_iter().for_each(assert_gone);
}

/// A hook that exits while a grandchild in a new session keeps writing to stdout and stderr
/// forever: the drain grace bounds the phase.
#[tokio::test]
async fn a_new_session_writer_is_bounded_by_the_drain_grace() {
    let env = TestEnv::new();
    let body = "cat >/dev/null; echo '{\"version\":1}'; \
         setsid sh -c 'while :; do echo tick >&2; sleep 0.01; done' & echo $! > \"$1\"";
    let limits = Limits {
        drain_grace: Duration::from_millis(300),
        ..Limits::default()
    };
    let (result, pids) = run_recording_pids(&env, "leaker", body, 30, limits).await;
    for pid in pids {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
    }
    assert_eq!(result.unwrap()[0].value, "{\"version\":1}\n");
}

/// The first failure while four peers are blocked cancels all four (and their groups).
#[tokio::test]
async fn the_first_failure_cancels_four_blocked_peers() {
    let env = TestEnv::new();
    let files: Vec<String> = (0..4).map(|i| env.file(&format!("slow{i}"))).collect();
    let mut hooks: Vec<PreparedHook> = (0..4)
        .map(|i| env.approved(env.decl(&format!("slow{i}"), "slow", &[&files[i]], 300)))
        .collect();
    let wait = files
        .iter()
        .map(|f| format!("\"{f}\""))
        .collect::<Vec<_>>()
        .join(" ");
    hooks.push(script(
        &env,
        "bad",
        &format!(
            "cat >/dev/null; i=0; for f in {wait}; do while [ ! -s \"$f\" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; done; exit 7"
        ),
        &[],
        120,
    ));
    let limits = Limits {
        concurrency: 5,
        ..Limits::default()
    };
    let (result, _) = env.run_with(hooks, limits).await;
    let err = result.unwrap_err();
    assert!(
        matches!(err, RunError::Failed { ref name, .. } if name == "bad"),
        "{err}"
    );
    assert_eq!(
        outcomes(&err),
        [
            Outcome::Cancelled,
            Outcome::Cancelled,
            Outcome::Cancelled,
            Outcome::Cancelled,
            Outcome::Failed
        ]
    );
    files.iter().flat_map(|f| pids_in(f)).for_each(assert_gone);
}

/// A rejected response (the coordinator's parse) cancels the running peers and the queued ones.
#[tokio::test]
async fn a_rejected_response_cancels_running_and_queued_peers() {
    let env = TestEnv::new();
    let files: Vec<String> = (0..4).map(|i| env.file(&format!("slow{i}"))).collect();
    let mut hooks: Vec<PreparedHook> = (0..4)
        .map(|i| env.approved(env.decl(&format!("slow{i}"), "slow", &[&files[i]], 300)))
        .collect();
    hooks.insert(0, env.approved(env.decl("picky", "ok", &[], 30)));
    let (mut setup, _) = env.setup(Limits::default());
    setup.limits.concurrency = 4;
    let err = run_hooks(hooks, setup, |hook, _| match hook.decl.name.as_str() {
        "picky" => Err("unknown field `extra`"),
        _ => Ok(()),
    })
    .await
    .unwrap_err();
    assert!(env.exec_dirs().is_empty());
    assert_eq!(
        err.to_string().split("; ").next().unwrap(),
        "prepare hook picky failed: invalid response: unknown field `extra`"
    );
    let got = outcomes(&err);
    assert_eq!(got[0], Outcome::Rejected);
    assert!(
        got[1..]
            .iter()
            .all(|o| [Outcome::Cancelled, Outcome::NotStarted].contains(o)),
        "{got:?}"
    );
    files.iter().flat_map(|f| pids_in(f)).for_each(assert_gone);
}

/// Four hooks `<prefix>0`…`<prefix>3`, each touching its marker file `<marker>-<i>` when it runs.
fn marking_hooks(env: &TestEnv, prefix: &str, marker: &str) -> (Vec<PreparedHook>, Vec<String>) {
    let markers: Vec<String> = (0..4).map(|i| env.file(&format!("{marker}-{i}"))).collect();
    let body = "touch \"$1\"; echo '{\"version\":1}'";
    let hooks = (markers.iter().enumerate())
        .map(|(i, m)| script(env, &format!("{prefix}{i}"), body, &[m], 30))
        .collect();
    (hooks, markers)
}

fn assert_none_ran(markers: &[String], when: &str) {
    for m in markers {
        assert!(!std::path::Path::new(m).exists(), "{when}: hook of {m} ran");
    }
}

/// An interrupt that arrived before the workers started runs no hook at all, however the
/// threads are scheduled: every round here leaves every marker unwritten.
#[tokio::test]
async fn an_interrupt_before_the_workers_start_runs_no_hook() {
    let env = TestEnv::new();
    for round in 0..20 {
        let (hooks, markers) = marking_hooks(&env, "h", &format!("ran{round}"));
        let (mut setup, _) = env.setup(Limits::default());
        let (handle, interrupt) = interrupt_channel();
        handle.trigger(libc::SIGINT);
        setup.interrupt = interrupt;
        let err = run_hooks(hooks, setup, hook_support::text).await.unwrap_err();
        assert!(matches!(err, RunError::Interrupted { signal: 2, .. }), "{err}");
        assert_none_ran(&markers, &format!("round {round}: after the interrupt"));
        assert_eq!(outcomes(&err), [Outcome::NotStarted; 4], "round {round}");
        assert!(
            env.exec_dirs().is_empty(),
            "round {round}: execution copies left behind"
        );
    }
}

/// Dropping the phase future (a cancelled caller) kills the running hooks' groups and removes
/// the execution copies.
#[tokio::test]
async fn dropping_the_phase_kills_its_hooks() {
    let env = TestEnv::new();
    let files: Vec<String> = (0..2).map(|i| env.file(&format!("g{i}"))).collect();
    let hooks = files
        .iter()
        .enumerate()
        .map(|(i, f)| env.approved(env.decl(&format!("g{i}"), "slow-with-grandchild", &[f], 300)))
        .collect();
    let (setup, _) = env.setup(Limits::default());
    let ready: Vec<_> = files.iter().map(|f| wait_for_pids(f, 2)).collect();
    let mut phase = Box::pin(run_hooks(hooks, setup, hook_support::text));
    let start = Instant::now();
    loop {
        tokio::select! {
            _ = &mut phase => panic!("the phase ended by itself"),
            () = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
        if ready.iter().all(|r| r()) {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the hooks never started"
        );
    }
    drop(phase);
    files.iter().flat_map(|f| pids_in(f)).for_each(assert_gone);
    let start = Instant::now();
    while !env.exec_dirs().is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "execution copies left behind"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// An interrupt while the execution copies are being written (a 48 MiB entrypoint takes a
/// while) ends the phase at once, and the copies written meanwhile are gone when it returns.
#[tokio::test]
async fn an_interrupt_while_copying_leaves_no_copy_behind() {
    let env = TestEnv::new();
    let exe = env.tmp.path().join("big");
    let mut bytes = b"#!/bin/sh\necho '{\"version\":1}'\nexit 0\n#".to_vec();
    bytes.resize(48 * 1024 * 1024, b'x');
    std::fs::write(&exe, bytes).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut decl = env.decl("big", "ok", &[], 30);
    decl.executable = exe;
    let hook = env.approved(decl);
    for round in 0..2 {
        let (mut setup, _) = env.setup(Limits::default());
        let (handle, interrupt) = interrupt_channel();
        handle.trigger(libc::SIGINT);
        setup.interrupt = interrupt;
        let err = run_hooks(vec![hook.clone()], setup, hook_support::text)
            .await
            .unwrap_err();
        assert!(matches!(err, RunError::Interrupted { .. }), "{err}");
        // Nothing may still be writing copies once the phase has returned.
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(5) {
            assert_eq!(env.exec_dirs(), Vec::<std::path::PathBuf>::new(), "round {round}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// An expired phase deadline (here: zero) starts no hook: the workers are not even started.
#[tokio::test]
async fn a_deadline_expired_before_the_workers_start_runs_no_hook() {
    let env = TestEnv::new();
    for round in 0..10 {
        let (hooks, markers) = marking_hooks(&env, "d", &format!("late{round}"));
        let limits = Limits {
            phase_deadline: Duration::ZERO,
            ..Limits::default()
        };
        let (result, _) = env.run_with(hooks, limits).await;
        let err = result.unwrap_err();
        assert!(matches!(err, RunError::PhaseDeadline { .. }), "{err}");
        assert_none_ran(&markers, &format!("round {round}: after the deadline"));
        assert_eq!(outcomes(&err), [Outcome::NotStarted; 4], "round {round}");
    }
}

/// The supervisor without a pidfd (kernels before 5.3): `tests/support/no_pidfd.py` makes
/// `pidfd_open` fail with ENOSYS (a seccomp filter) and runs `no_pidfd_child` in this test binary,
/// where exits, timeouts of stopped hooks and cancellation must work all the same.
#[cfg(target_arch = "x86_64")]
#[test]
fn without_pidfd_exits_timeouts_and_cancellation_still_work() {
    let wrapper = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/no_pidfd.py");
    let out = std::process::Command::new("python3")
        .arg(wrapper)
        .arg(std::env::current_exe().unwrap())
        .args([
            "attacks_supervisor::no_pidfd_child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("AGS_NO_PIDFD_PROBE", "1")
        .output()
        .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("no-pidfd probe passed"), "{stdout}");
}

#[cfg(target_arch = "x86_64")]
#[tokio::test]
#[ignore = "run by without_pidfd_exits_timeouts_and_cancellation_still_work under no_pidfd.py"]
async fn no_pidfd_child() {
    if std::env::var_os("AGS_NO_PIDFD_PROBE").is_none() {
        return;
    }
    let denied = rustix::process::pidfd_open(rustix::process::getpid(), rustix::process::PidfdFlags::empty());
    assert_eq!(denied.err(), Some(rustix::io::Errno::NOSYS));
    let env = TestEnv::new();
    // Exit detection.
    let (result, _) = env.run(vec![env.approved(env.decl("ok", "ok", &[], 30))]).await;
    assert_eq!(result.unwrap()[0].value, "{\"version\":1}\n");
    // A stopped hook times out and dies.
    let pids = env.file("stopped");
    let hook = script(&env, "stopped", "echo $$ > \"$1\"; kill -STOP $$", &[&pids], 1);
    let (result, _) = env.run(vec![hook]).await;
    assert_eq!(outcomes(&result.unwrap_err()), [Outcome::Timeout]);
    pids_in(&pids).into_iter().for_each(assert_gone);
    // A failure cancels a blocked peer.
    let slow = env.file("slow");
    let hooks = vec![
        env.approved(env.decl("slow", "slow", &[&slow], 300)),
        // Fails once its peer runs (bounded wait), so the peer is cancelled, not left unstarted.
        script(
            &env,
            "bad",
            &format!(
                "i=0; while [ ! -s \"{slow}\" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; exit 7"
            ),
            &[],
            120,
        ),
    ];
    let (result, _) = env.run(hooks).await;
    assert_eq!(
        outcomes(&result.unwrap_err()),
        [Outcome::Cancelled, Outcome::Failed]
    );
    pids_in(&slow).into_iter().for_each(assert_gone);
    println!("no-pidfd probe passed");
}

/// A hook that leaves its own process group for another one of the session (here the test
/// process's) is still killed when it times out: the group kill alone misses it, and waiting for
/// its exit then hung the phase for good (no deadline could end it).
#[tokio::test]
async fn a_hook_that_leaves_its_group_is_still_killed_on_timeout() {
    let env = TestEnv::new();
    let pids = env.file("pids");
    let hook = script(
        &env,
        "regrouped",
        "cat >/dev/null; exec /usr/bin/perl -e 'setpgrp(0, getpgrp(getppid())) or die \"setpgid: $!\"; \
         open(my $f, \">\", $ARGV[0]) or die; print $f \"$$\\n\"; close $f; sleep 600' \"$1\"",
        &[&pids],
        3,
    );
    let limits = Limits {
        phase_deadline: Duration::from_secs(20),
        ..Limits::default()
    };
    let phase = env.run_with(vec![hook], limits);
    let outcome = tokio::time::timeout(Duration::from_secs(60), phase).await;
    let pids = pids_in(&pids);
    let Ok((result, captured)) = outcome else {
        for pid in &pids {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(*pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        panic!("the phase never ended (the re-grouped hook {pids:?} was not killed)");
    };
    assert!(captured.lines().is_empty(), "{:?}", captured.lines());
    let err = result.unwrap_err();
    assert_eq!(outcomes(&err), [Outcome::Timeout], "{err}");
    assert!(pids.len() <= 1, "{pids:?}"); // a loaded machine may time it out sooner
    pids.into_iter().for_each(assert_gone);
}
