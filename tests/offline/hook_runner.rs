//! The hook runner against real executables (`tests/fixtures/hooks/*`): process groups,
//! timeouts, caps, escaping, environment, cancellation and result order. No mocks.

use crate::hook_support;

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use ags::hooks::entrypoint::PreparedHook;
use ags::hooks::runner::{HookFailure, Limits, Outcome, RunError, run_hooks};
use hook_support::{TestEnv, assert_gone, pids_in, wait_for_pids};

fn failure(err: &RunError) -> (&str, &HookFailure) {
    match err {
        RunError::Failed { name, cause, .. } => (name, cause),
        other => panic!("expected a hook failure, got {other}"),
    }
}

#[tokio::test]
async fn runs_in_workdir_from_private_copy_keeping_basename() {
    let env = TestEnv::new();
    let hook = env.approved(env.decl("where", "cwd", &[], 30));
    let (result, _) = env.run(vec![hook]).await;
    let runs = result.unwrap();
    let out = &runs[0].value;
    let (cwd, argv0) = out.trim_end().split_once('\n').unwrap();
    assert_eq!(cwd, env.workdir.to_str().unwrap());
    let argv0 = std::path::Path::new(argv0);
    assert_eq!(argv0.file_name().unwrap(), "cwd");
    let dir = argv0.parent().unwrap();
    // In the RAM-backed runtime directory (`$XDG_RUNTIME_DIR/ags`, in `/dev/shm`), not the
    // approval store; unless `/dev/shm` is mounted noexec (as in a container), then the store.
    let shm_exec = nix::sys::statvfs::statvfs("/dev/shm")
        .is_ok_and(|st| !st.flags().contains(nix::sys::statvfs::FsFlags::ST_NOEXEC));
    let expected = if shm_exec {
        env.paths.stage_root()
    } else {
        env.store.dir().to_path_buf()
    };
    assert_eq!(
        dir.parent().unwrap(),
        expected,
        "/dev/shm allows exec: {shm_exec}"
    );
    assert!(
        dir.file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("ags-hook-exec-")
    );
    let report = &runs[0].report;
    assert_eq!(report.outcome, Outcome::Ok);
    assert_eq!(report.stdout_bytes, out.len() as u64);
}

#[tokio::test]
async fn refuses_unapproved_hook_without_running_it() {
    let env = TestEnv::new();
    let marker = env.file("ran");
    let hook = PreparedHook::load(env.decl("fresh", "forks-child", &[&marker], 30)).unwrap();
    let hash = hook.hash.clone();
    let (result, _) = env.run(vec![hook]).await;
    let err = result.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "prepare hook fresh failed: its approval (hash {hash}) is gone; nothing was run. Rerun to approve it again"
        )
    );
    assert_eq!(err.reports()[0].outcome, Outcome::NotApproved);
    assert!(!std::path::Path::new(&marker).exists(), "the hook ran");
}

#[tokio::test]
async fn kills_the_group_after_a_successful_exit() {
    let env = TestEnv::new();
    let pidfile = env.file("grandchild");
    let hook = env.approved(env.decl("forker", "forks-child", &[&pidfile], 30));
    let (result, _) = env.run(vec![hook]).await;
    assert_eq!(result.unwrap()[0].value, "{\"version\":1}\n");
    let pids = pids_in(&pidfile);
    assert_eq!(pids.len(), 1);
    assert_gone(pids[0]);
}

#[tokio::test]
async fn timeout_kills_hook_and_grandchild() {
    let env = TestEnv::new();
    let pidfile = env.file("pids");
    // 3 s leave a loaded machine time to start the grandchild before the timeout.
    let hook = env.approved(env.decl("sleepy", "daemon-grandchild", &[&pidfile], 3));
    let start = Instant::now();
    let (result, _) = env.run(vec![hook]).await;
    assert!(start.elapsed() < Duration::from_secs(30));
    let err = result.unwrap_err();
    assert_eq!(
        err.to_string(),
        "prepare hook sleepy failed: timed out after 3 s (its timeout_seconds); its process group was killed"
    );
    assert_eq!(err.reports()[0].outcome, Outcome::Timeout);
    assert_eq!(
        err.reports()[0].exit,
        Some(ags::hooks::runner::ExitInfo::Signal(9))
    );
    let pids = pids_in(&pidfile);
    assert_eq!(pids.len(), 2, "hook and grandchild pids");
    pids.into_iter().for_each(assert_gone);
}

#[tokio::test]
async fn phase_deadline_bounds_running_and_queued_hooks() {
    let env = TestEnv::new();
    let files: Vec<String> = (0..5).map(|i| env.file(&format!("slow{i}"))).collect();
    let hooks = (0..5)
        .map(|i| env.approved(env.decl(&format!("slow{i}"), "slow", &[&files[i]], 300)))
        .collect();
    let limits = Limits {
        concurrency: 4,
        phase_deadline: Duration::from_millis(1500),
        ..Limits::default()
    };
    let start = Instant::now();
    let (result, _) = env.run_with(hooks, limits).await;
    assert!(start.elapsed() < Duration::from_secs(30));
    let err = result.unwrap_err();
    assert!(matches!(err, RunError::PhaseDeadline { .. }), "{err}");
    let outcomes: Vec<Outcome> = err.reports().iter().map(|r| r.outcome).collect();
    assert_eq!(outcomes[..4], [Outcome::Timeout; 4]);
    assert_eq!(outcomes[4], Outcome::NotStarted);
    assert!(err.to_string().starts_with(
        "prepare hooks did not finish within the 1.5s phase deadline; stopped without result: slow0, slow1, slow2, slow3, slow4"
    ));
    files.iter().flat_map(|f| pids_in(f)).for_each(assert_gone);
}

#[tokio::test]
async fn first_failure_cancels_peers_and_is_reported_first() {
    let env = TestEnv::new();
    let (a, b) = (env.file("a"), env.file("b"));
    let hooks = vec![
        env.approved(env.decl("slow-a", "slow", &[&a], 300)),
        env.approved(env.decl("slow-b", "slow", &[&b], 300)),
        env.approved(env.decl("bad", "nonzero-with-error", &[], 30)),
    ];
    let start = Instant::now();
    let (result, _) = env.run(hooks).await;
    assert!(start.elapsed() < Duration::from_secs(30));
    let err = result.unwrap_err();
    assert_eq!(
        err.to_string(),
        "prepare hook bad failed: exited with code 3: database \\u{1b}[31mdown\\u{1b}[0m; \
         stopped without result: slow-a, slow-b"
    );
    let outcomes: Vec<Outcome> = err.reports().iter().map(|r| r.outcome).collect();
    assert_eq!(
        outcomes,
        [Outcome::Cancelled, Outcome::Cancelled, Outcome::Failed]
    );
    [a, b].iter().flat_map(|f| pids_in(f)).for_each(assert_gone);
}

#[tokio::test]
async fn reports_signal_death_and_garbage_error_bodies_distinctly() {
    let env = TestEnv::new();
    let (result, _) = env
        .run(vec![env.approved(env.decl("sig", "killed-by-signal", &[], 30))])
        .await;
    assert_eq!(
        result.unwrap_err().to_string(),
        "prepare hook sig failed: killed by signal 15 (SIGTERM)"
    );
    let (result, _) = env
        .run(vec![env.approved(env.decl("junk", "nonzero-garbage", &[], 30))])
        .await;
    let err = result.unwrap_err();
    let (name, cause) = failure(&err);
    assert_eq!(name, "junk");
    assert!(matches!(cause, HookFailure::NonZeroExit { code: 4, .. }));
    assert!(
        err.to_string().starts_with(
            "prepare hook junk failed: exited with code 4 (stdout is not valid JSON (invalid JSON: "
        ),
        "{err}"
    );
}

#[tokio::test]
async fn stdout_over_the_cap_kills_the_hook() {
    let env = TestEnv::new();
    let (result, _) = env
        .run(vec![env.approved(env.decl("big", "huge-stdout", &[], 30))])
        .await;
    let err = result.unwrap_err();
    assert_eq!(
        err.to_string(),
        "prepare hook big failed: wrote more than 1048576 bytes to stdout (the limit); it was killed"
    );
    assert_eq!(err.reports()[0].outcome, Outcome::OutputTooLarge);
    assert!(err.reports()[0].stdout_bytes > 1024 * 1024);
}

#[tokio::test]
async fn stderr_is_capped_escaped_and_attributed() {
    let env = TestEnv::new();
    let (result, captured) = env
        .run(vec![env.approved(env.decl("chatty", "chatty-stderr", &[], 30))])
        .await;
    let runs = result.unwrap();
    assert!(runs[0].report.stderr_bytes > 64 * 1024);
    let lines = captured.lines();
    assert_eq!(lines[0], "[chatty] colour \\u{1b}[31mred\\u{1b}[0m");
    assert_eq!(lines[1], "[chatty] over\\rwrite");
    assert!(
        lines
            .iter()
            .all(|l| l.starts_with("[chatty] ") && !l.contains(['\x1b', '\r']))
    );
    let shown: usize = lines.iter().map(|l| l.len() - "[chatty] ".len() + 1).sum();
    assert!(shown < 64 * 1024 + 200, "{shown} bytes shown");
    let discarded = runs[0].report.stderr_bytes - 64 * 1024;
    assert_eq!(
        lines.last().unwrap(),
        &format!("[chatty] [ags: {discarded} more bytes of stderr discarded; the limit is 65536 bytes]")
    );
}

#[tokio::test]
async fn context_arrives_on_stdin_then_eof() {
    let env = TestEnv::new();
    let (result, captured) = env
        .run(vec![env.approved(env.decl("echo", "echo-context", &[], 30))])
        .await;
    result.unwrap();
    assert_eq!(captured.lines(), ["[echo] {\"version\":1,\"event\":\"prepare\"}"]);
}

#[tokio::test]
async fn hook_that_ignores_a_large_context_still_succeeds() {
    let env = TestEnv::new();
    let (mut setup, _) = env.setup(Limits::default());
    let mut big = br#"{"version":1,"pad":""#.to_vec();
    big.extend(std::iter::repeat_n(b'x', 4 * 1024 * 1024));
    big.extend(b"\"}");
    setup.context = big.into();
    let hook = env.approved(env.decl("deaf", "ignores-stdin", &[], 30));
    let runs = run_hooks(vec![hook], setup, hook_support::text).await.unwrap();
    assert_eq!(runs[0].value, "{\"version\":1}\n");
    assert_eq!(env.exec_dirs().len(), 0);
}

#[tokio::test]
async fn results_follow_declaration_order_not_completion_order() {
    let env = TestEnv::new();
    let hooks = vec![
        env.approved(env.decl("late", "delayed", &["1", "first"], 30)),
        env.approved(env.decl("early", "delayed", &["0", "second"], 30)),
    ];
    let (result, _) = env.run(hooks).await;
    let runs = result.unwrap();
    let values: Vec<&str> = runs.iter().map(|r| r.value.as_str()).collect();
    assert_eq!(values, ["first\n", "second\n"]);
    assert!(
        runs[0].report.duration > runs[1].report.duration,
        "completion order differed"
    );
}

#[tokio::test]
async fn parse_rejection_fails_the_hook() {
    let env = TestEnv::new();
    let (setup, _) = env.setup(Limits::default());
    let hook = env.approved(env.decl("picky", "ok", &[], 30));
    let err = run_hooks(vec![hook], setup, |_, _| Err::<(), _>("unknown field `extra`"))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "prepare hook picky failed: invalid response: unknown field `extra`"
    );
    assert_eq!(err.reports()[0].outcome, Outcome::Rejected);
}

#[tokio::test]
async fn missing_interpreter_is_a_spawn_error_without_fallback() {
    let env = TestEnv::new();
    let script = env.tmp.path().join("broken");
    std::fs::write(&script, "#!/nonexistent/interpreter\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut decl = env.decl("broken", "ok", &[], 30);
    decl.executable = script;
    let (result, _) = env.run(vec![env.approved(decl)]).await;
    let err = result.unwrap_err();
    assert!(matches!(failure(&err).1, HookFailure::Spawn { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("interpreter on the entrypoint's #! line exists"),
        "{err}"
    );
    assert_eq!(err.reports()[0].outcome, Outcome::SpawnError);
}

#[tokio::test]
async fn interrupt_kills_running_hooks_and_returns_interrupted() {
    let env = TestEnv::new();
    let (a, b) = (env.file("a"), env.file("b"));
    let hooks = vec![
        env.approved(env.decl("slow-a", "slow", &[&a], 300)),
        env.approved(env.decl("slow-b", "slow", &[&b], 300)),
    ];
    let (fa, fb) = (wait_for_pids(&a, 1), wait_for_pids(&b, 1));
    let start = Instant::now();
    let err = env
        .run_interrupted(hooks, libc::SIGINT, move || fa() && fb())
        .await
        .unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(30));
    assert_eq!(
        err.to_string(),
        "prepare hooks interrupted by signal 2 (SIGINT); stopped without result: slow-a, slow-b"
    );
    assert!(matches!(err, RunError::Interrupted { signal: 2, .. }));
    [a, b].iter().flat_map(|f| pids_in(f)).for_each(assert_gone);
}

#[tokio::test]
async fn regrouped_daemon_holding_pipes_does_not_hang_the_phase() {
    let env = TestEnv::new();
    let pidfile = env.file("daemon");
    let hook = env.approved(env.decl("escaper", "escapes-group", &[&pidfile], 30));
    let limits = Limits {
        drain_grace: Duration::from_millis(300),
        ..Limits::default()
    };
    let start = Instant::now();
    let (result, _) = env.run_with(vec![hook], limits).await;
    let elapsed = start.elapsed();
    for pid in pids_in(&pidfile) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
    }
    assert!(elapsed < Duration::from_secs(30));
    assert_eq!(result.unwrap()[0].value, "{\"version\":1}\n");
}

#[tokio::test]
async fn no_hooks_is_an_empty_success_without_an_execution_directory() {
    let env = TestEnv::new();
    let (result, _) = env.run(vec![]).await;
    assert!(result.unwrap().is_empty());
}

#[tokio::test]
async fn interrupt_before_start_runs_nothing() {
    let env = TestEnv::new();
    let marker = env.file("ran");
    let hook = env.approved(env.decl("never", "forks-child", &[&marker], 30));
    let (mut setup, _) = env.setup(Limits::default());
    let (handle, interrupt) = ags::hooks::runner::interrupt_channel();
    handle.trigger(libc::SIGTERM);
    setup.interrupt = interrupt;
    let err = run_hooks(vec![hook], setup, hook_support::text)
        .await
        .unwrap_err();
    assert!(matches!(err, RunError::Interrupted { signal: 15, .. }), "{err}");
    assert_eq!(err.reports()[0].outcome, Outcome::NotStarted);
    assert!(!std::path::Path::new(&marker).exists(), "the hook ran");
}

/// The attack on the phase's sweep record: a hook whose file is named `groups`, like the record
/// next to the copies. `ags` appended each started hook's `PGID-START` line to that hook's copy,
/// and the running shell then executed it (`12345-67890: not found`, exit 127): bytes that were
/// never approved. The hook waits (bounded) until its own group is recorded, then answers.
#[tokio::test]
async fn a_hook_named_groups_runs_only_its_approved_bytes() {
    let env = TestEnv::new();
    let bin = env.file("bin");
    std::fs::create_dir(&bin).unwrap();
    let exe = std::path::Path::new(&bin).join("groups");
    std::fs::write(
        &exe,
        "#!/bin/sh\nd=$(dirname \"$0\"); i=0\n\
         while [ $i -lt 300 ] && ! grep -q \"^$$-\" \"$d/groups\" \"$d/../groups\" 2>/dev/null; do sleep 0.1; i=$((i+1)); done\n\
         echo '{\"version\":1}'\n",
    )
    .unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut decl = env.decl("groups", "ok", &[], 60);
    decl.executable = exe;
    let hook = env.approved(decl);
    let (result, stderr) = env.run(vec![hook]).await;
    let runs = result.unwrap_or_else(|e| panic!("{e}; stderr: {:?}", stderr.lines()));
    assert_eq!(runs[0].value, "{\"version\":1}\n");
    assert!(stderr.lines().is_empty(), "{:?}", stderr.lines());
}
