//! Profile of the prepare phase, step by step, through the library (no Podman involved): where
//! the milliseconds of `ags`'s hook phase go, and how the runner's concurrency affects it on this
//! machine. A diagnostic for docs/BENCHMARKS.md, not part of the launch benchmark.
//!
//! usage: bench_prepare --config PATH [--rounds N] [--widths 1,2,4,8] [--watchdog AGS]
//!
//! The config's hooks must be approved (examples/bench_approve) in the store the environment
//! points at (XDG_STATE_HOME). Each round repeats the steps of `hooks::prepare::prepare` in its
//! order — config load, store open, stale-copy sweep, entrypoint load + hash, approval check,
//! run + validate (the runner with `parse_response`), run log append, resolve — and times each;
//! then the run step alone at each `--widths` concurrency, paired with the same spawns made
//! directly (as `scripts/bench-launch` makes them: own process group, clean environment, the
//! context written to stdin, stdout and stderr read, reaped). Prints the median of each step.
//! `--watchdog AGS` starts the watchdog as the `ags` binary does (`AGS` is that binary).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ags::config::{self, LoadOptions};
use ags::hooks::approve::ensure_approved;
use ags::hooks::entrypoint::PreparedHook;
use ags::hooks::exec_copy::sweep_stale;
use ags::hooks::log::{Record, RunLog};
use ags::hooks::protocol::HookContext;
use ags::hooks::resolve::{HookOutput, LaunchOverrides, Origin, resolve};
use ags::hooks::runner::{RunSetup, run_hooks};
use ags::hooks::trust::TrustStore;
use ags::hooks::validate::parse_response;
use anyhow::{Context, bail};

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let (mut config_path, mut rounds, mut widths) = (None, 10usize, vec![1usize, 2, 4, 8]);
    while let Some(arg) = args.next() {
        let mut value = || args.next().with_context(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--config" => config_path = Some(PathBuf::from(value()?)),
            "--rounds" => rounds = value()?.parse()?,
            "--widths" => widths = value()?.split(',').map(str::parse).collect::<Result<_, _>>()?,
            "--watchdog" => ags::process::watchdog::enable(PathBuf::from(value()?)),
            other => bail!("unknown argument {other:?}"),
        }
    }
    let config_path = config_path.context("--config PATH is required")?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut steps: Vec<(&str, Vec<f64>)> = Vec::new();
    let mut record = |name: &'static str, t: &mut Instant| {
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        *t = Instant::now();
        match steps.iter_mut().find(|(n, _)| *n == name) {
            Some((_, v)) => v.push(ms),
            None => steps.push((name, vec![ms])),
        }
    };
    let mut hooks_n = 0;
    for _ in 0..rounds {
        let start = Instant::now();
        let mut t = Instant::now();
        let config = config::load(&LoadOptions {
            config: Some(config_path.clone()),
            no_repo_config: true,
            workdir: None,
            ask_overlay_trust: false,
        })?;
        record("config load", &mut t);
        let context = HookContext::new(
            "bench".into(),
            config.project.clone(),
            config.workdir.clone(),
            "shell".into(),
        );
        let store = TrustStore::open(&config.paths, Some(&config.project))?;
        record("store open", &mut t);
        sweep_stale(store.dir(), Duration::from_secs(600));
        record("stale-copy sweep", &mut t);
        let prepared = config
            .prepare_hooks
            .iter()
            .map(|d| PreparedHook::load(d.clone()))
            .collect::<Result<Vec<_>, _>>()?;
        hooks_n = prepared.len();
        record("entrypoints read + hashed", &mut t);
        ensure_approved(&store, &prepared, false, &config.workdir)?;
        record("approval check", &mut t);
        let decls: Vec<_> = prepared.iter().map(|p| p.decl.clone()).collect();
        let setup = RunSetup::new(
            store,
            config.workdir.clone(),
            Arc::from(serde_json::to_vec(&context)?),
        );
        let runs = rt.block_on(run_hooks(prepared, setup, |_, out| parse_response(out)))?;
        record("run + validate (width 4)", &mut t);
        let records: Vec<Record> = runs
            .iter()
            .zip(&decls)
            .map(|(r, d)| Record::new("bench", d, &r.report, vec![], vec![]))
            .collect();
        RunLog::append_all(&config.paths, &records)?;
        record("run log append", &mut t);
        let outputs = runs
            .into_iter()
            .zip(&decls)
            .enumerate()
            .map(|(i, (r, d))| HookOutput {
                origin: Origin::for_decl(d, i),
                contribution: r.value,
            })
            .collect();
        resolve(outputs, &LaunchOverrides::default())?;
        record("resolve", &mut t);
        let mut total = start;
        record("total", &mut total);
    }
    // The run step alone at other widths.
    let config = config::load(&LoadOptions {
        config: Some(config_path.clone()),
        no_repo_config: true,
        workdir: None,
        ask_overlay_trust: false,
    })?;
    let prepared = config
        .prepare_hooks
        .iter()
        .map(|d| PreparedHook::load(d.clone()))
        .collect::<Result<Vec<_>, _>>()?;
    let context = serde_json::to_vec(&HookContext::new(
        "bench".into(),
        config.project.clone(),
        config.workdir.clone(),
        "shell".into(),
    ))?;
    let mut by_width = Vec::new();
    let mut direct = Vec::new();
    // CPU time of this process's own threads (not the hooks'; a spawned child's time before its
    // exec is its own too), per hook: what the runner costs the machine besides the hooks, a
    // figure that does not move with the load as wall-clock ratios do.
    let (mut cpu_runner, mut cpu_direct) = (Vec::new(), Vec::new());
    let per_hook = |c0: f64| (own_cpu_ms() - c0) * 1000.0 / prepared.len() as f64;
    for _ in 0..rounds {
        for &w in &widths {
            let c0 = own_cpu_ms();
            direct.push((w, direct_batch(&prepared, &config.workdir, w, &context)?));
            cpu_direct.push((w, per_hook(c0)));
            let store = TrustStore::open(&config.paths, Some(&config.project))?;
            let mut setup = RunSetup::new(store, config.workdir.clone(), Arc::from(&context[..]));
            setup.limits.concurrency = w;
            let (t, c0) = (Instant::now(), own_cpu_ms());
            rt.block_on(run_hooks(prepared.clone(), setup, |_, out| parse_response(out)))?;
            by_width.push((w, t.elapsed().as_secs_f64() * 1000.0));
            cpu_runner.push((w, per_hook(c0)));
        }
    }
    println!(
        "prepare phase of {hooks_n} hooks, {rounds} rounds, load {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    for (name, v) in &steps {
        println!("  {name:<28} median {:>7.2} ms", median(v));
    }
    for &w in &widths {
        let v: Vec<f64> = by_width
            .iter()
            .filter(|(x, _)| *x == w)
            .map(|(_, t)| *t)
            .collect();
        let d: Vec<f64> = direct.iter().filter(|(x, _)| *x == w).map(|(_, t)| *t).collect();
        let paired: Vec<f64> = v.iter().zip(&d).map(|(a, b)| a / b).collect();
        println!(
            "  run + validate, width {w:<2}     median {:>7.2} ms; the same spawns without ags {:>7.2} ms; paired ratio {:.2}",
            median(&v),
            median(&d),
            median(&paired)
        );
        let of = |v: &[(usize, f64)]| {
            median(
                &v.iter()
                    .filter(|(x, _)| *x == w)
                    .map(|(_, c)| *c)
                    .collect::<Vec<_>>(),
            )
        };
        println!(
            "  own CPU per hook, width {w:<2}    runner {:>7.1} µs; the same spawns without ags {:>7.1} µs",
            of(&cpu_runner),
            of(&cpu_direct)
        );
    }
    Ok(())
}

/// CPU time used so far by this process's threads, live and ended (not its children), in ms.
fn own_cpu_ms() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    t.tv_sec as f64 * 1000.0 + t.tv_nsec as f64 / 1e6
}

/// The hooks' entrypoints spawned directly, `width` at a time (threads; own process group,
/// clean environment, the context written to stdin, stdout and stderr read, reaped): the
/// runner's work without `ags`.
fn direct_batch(
    hooks: &[PreparedHook],
    workdir: &std::path::Path,
    width: usize,
    context: &[u8],
) -> anyhow::Result<f64> {
    use std::io::{Read, Write};
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    use std::sync::atomic::{AtomicUsize, Ordering};
    let next = AtomicUsize::new(0);
    let path = std::env::var_os("PATH").unwrap_or_default();
    let t = Instant::now();
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..width)
            .map(|_| {
                s.spawn(|| -> anyhow::Result<()> {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(hook) = hooks.get(i) else { return Ok(()) };
                        let mut child = Command::new(&hook.decl.executable)
                            .current_dir(workdir)
                            .env_clear()
                            .env("PATH", &path)
                            .stdin(Stdio::piped())
                            .stdout(Stdio::piped())
                            .stderr(Stdio::piped())
                            .process_group(0)
                            .spawn()?;
                        if let Some(mut stdin) = child.stdin.take() {
                            let _ = stdin.write_all(context); // a hook may exit without reading
                        }
                        let mut out = Vec::new();
                        if let Some(mut stdout) = child.stdout.take() {
                            stdout.read_to_end(&mut out)?;
                        }
                        if let Some(mut stderr) = child.stderr.take() {
                            stderr.read_to_end(&mut Vec::new())?;
                        }
                        child.wait()?;
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .try_for_each(|w| w.join().unwrap_or_else(|_| bail!("a spawning thread panicked")))
    })?;
    Ok(t.elapsed().as_secs_f64() * 1000.0)
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    if s.is_empty() {
        return f64::NAN;
    }
    s[s.len() / 2]
}
