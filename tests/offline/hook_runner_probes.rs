//! Runner tests that need a process of their own (a test binary re-run as a child process with a
//! different environment, or receiving a real signal) and the by-hand timing measurement.

use crate::hook_support;

use std::time::{Duration, Instant};

use ags::hooks::runner::{Limits, Outcome, PASSED_ENV, RunError, run_hooks};
use hook_support::{TestEnv, assert_gone, pids_in, wait_for_pids};

/// Runs `env_probe_child` in a child test process whose environment holds a canary, so the test
/// process's own environment is never mutated.
#[test]
fn environment_is_scrubbed() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "hook_runner_probes::env_probe_child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("AGS_TEST_CANARY", "x")
        .env("AGS_ENV_PROBE", "1")
        .env("HOME", "/probe/home")
        .env("USER", "probe")
        .env("LOGNAME", "probe")
        .env("XDG_RUNTIME_DIR", "/probe/run")
        .env("DBUS_SESSION_BUS_ADDRESS", "unix:path=/probe/bus")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("env probe passed"), "{stdout}");
}

#[tokio::test]
#[ignore = "run by environment_is_scrubbed in a child process"]
async fn env_probe_child() {
    if std::env::var_os("AGS_ENV_PROBE").is_none() {
        return;
    }
    assert_eq!(std::env::var("AGS_TEST_CANARY").unwrap(), "x");
    let env = TestEnv::new();
    let (result, _) = env
        .run(vec![env.approved(env.decl("env", "env-dump", &[], 30))])
        .await;
    let dump = result.unwrap().remove(0).value;
    let vars: Vec<(&str, &str)> = dump.lines().filter_map(|l| l.split_once('=')).collect();
    let shell_own = ["PWD", "OLDPWD", "SHLVL", "_"];
    for (k, _) in &vars {
        assert!(
            PASSED_ENV.contains(k) || shell_own.contains(k),
            "{k} leaked into the hook: {dump}"
        );
    }
    for k in PASSED_ENV {
        let want = std::env::var(k).unwrap();
        assert!(vars.contains(&(k, want.as_str())), "{k} not passed: {dump}");
    }
    println!("env probe passed");
}

/// A real SIGTERM to a child test process running `signal_probe_child` (which listens with
/// `Interrupt::on_signals`) kills its hooks and ends the phase with `Interrupted`.
#[test]
fn real_sigterm_interrupts_the_phase() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("slow");
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "hook_runner_probes::signal_probe_child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("AGS_SIGNAL_PROBE_PIDFILE", &pidfile)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let ready = wait_for_pids(pidfile.to_str().unwrap(), 1);
    let start = Instant::now();
    while !ready() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the probe's hook never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let probe = nix::unistd::Pid::from_raw(child.id() as i32);
    nix::sys::signal::kill(probe, nix::sys::signal::Signal::SIGTERM).unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("signal probe passed"), "{stdout}");
    pids_in(pidfile.to_str().unwrap())
        .into_iter()
        .for_each(assert_gone);
}

#[tokio::test]
#[ignore = "run by real_sigterm_interrupts_the_phase in a child process"]
async fn signal_probe_child() {
    let Some(pidfile) = std::env::var_os("AGS_SIGNAL_PROBE_PIDFILE") else {
        return;
    };
    let env = TestEnv::new();
    let hook = env.approved(env.decl("slow", "slow", &[pidfile.to_str().unwrap()], 300));
    let (mut setup, _) = env.setup(Limits::default());
    setup.interrupt = ags::hooks::runner::Interrupt::on_signals().unwrap();
    let err = run_hooks(vec![hook], setup, hook_support::text)
        .await
        .unwrap_err();
    assert!(matches!(err, RunError::Interrupted { signal: 15, .. }), "{err}");
    assert_eq!(err.reports()[0].outcome, Outcome::Cancelled);
    assert!(env.exec_dirs().is_empty());
    println!("signal probe passed");
}

/// Timing by hand (not an assertion): `cargo test --release --test offline -- hook_runner_probes:: --ignored
/// measure_spawn_overhead --nocapture`. Reports minimum and median of 15 rounds and the CPU time spent by
/// this process (the runner) and by its children (the hooks).
#[tokio::test]
#[ignore = "measurement, run by hand in release mode"]
async fn measure_spawn_overhead() {
    const ROUNDS: usize = 15;
    let env = TestEnv::new();
    for fixture in ["ok", "ignores-stdin"] {
        let hook = env.approved(env.decl("trivial", fixture, &[], 30));
        let run = |n: usize, concurrency: usize| {
            let (mut setup, _) = env.setup(Limits::default());
            setup.limits.concurrency = concurrency;
            run_hooks(vec![hook.clone(); n], setup, hook_support::text)
        };
        run(4, 4).await.unwrap(); // warm-up
        let (mut one, mut sixteen, mut sixty_four) = (vec![], vec![], vec![]);
        let (mut cpu16, mut cpu64) = ((0, 0), (0, 0));
        for _ in 0..ROUNDS {
            let (cpu, start) = (cpu_ticks(), Instant::now());
            for _ in 0..16 {
                let t = Instant::now();
                run(1, 1).await.unwrap();
                one.push(t.elapsed());
            }
            sixteen.push(start.elapsed());
            cpu16 = add(cpu16, since(cpu));
            let (cpu, start) = (cpu_ticks(), Instant::now());
            run(64, 4).await.unwrap();
            sixty_four.push(start.elapsed());
            cpu64 = add(cpu64, since(cpu));
        }
        let stats = |v: &mut Vec<Duration>| {
            v.sort();
            (v[0], v[v.len() / 2])
        };
        let (one, sixteen, sixty_four) = (stats(&mut one), stats(&mut sixteen), stats(&mut sixty_four));
        println!(
            "{fixture} (min/median of {ROUNDS} rounds): 1 hook {one:?}; 16 sequential {sixteen:?}; \
             64 at concurrency 4 {sixty_four:?}; median ratio {:.2}; CPU ticks (runner, hooks): \
             16 seq {cpu16:?}, 64 conc {cpu64:?}",
            sixty_four.1.as_secs_f64() / sixteen.1.as_secs_f64()
        );
    }
}

/// (this process, its reaped children) CPU time in clock ticks, from /proc/self/stat.
fn cpu_ticks() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let f: Vec<u64> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .skip(11)
        .take(4)
        .map(|x| x.parse().unwrap())
        .collect();
    (f[0] + f[1], f[2] + f[3])
}

fn since(before: (u64, u64)) -> (u64, u64) {
    let now = cpu_ticks();
    (now.0 - before.0, now.1 - before.1)
}

fn add(a: (u64, u64), b: (u64, u64)) -> (u64, u64) {
    (a.0 + b.0, a.1 + b.1)
}
