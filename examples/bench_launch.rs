//! Benchmark driver for `scripts/bench-launch` (which prepares its inputs and runs it once per
//! mode): launch latency of `ags` next to the bare libpod floor and `podman run`, interleaved.
//!
//! usage: bench_launch --mode NAME --url URL --ags PATH --floor PATH --workdir DIR --image REF
//!          --config0 PATH --config4 PATH --config64 PATH --hook PATH
//!          [--rounds N] [--warmup N] [--spawns N] [--rss-runs N] [--user UID:GID]
//!          [--env KEY=VALUE]... [--podman PATH] [--podman-env KEY=VALUE]... [--label KEY=VALUE]
//!
//! Every round runs each variant once, in an order rotated by one each round (so no variant is
//! always first after another's cleanup): `ags` with 0, 4 and 64 hooks, the floor (attach and
//! init flows), `podman run --rm` with and without network, `--spawns` direct executions of
//! one hook (its spawn-to-exit time), and 64 direct executions 4 at a time (the runner's work
//! without `ags`). Each launch is a fresh process with stdin from /dev/null;
//! its wall time runs from just before `spawn` to the return of `wait` (= full cleanup, since
//! `ags` and the floor delete the container before exiting, and so does `podman run --rm`).
//! The time to the exit code is the wall time less the tail the process itself reports between
//! its "exit code known" and "cleaned up" marks (`AGS_TRACE=1` / `FLOOR_TRACE=1`); `podman run`
//! reports no marks, so both of its figures are its wall time.
//!
//! Children run with a clean environment (`--env`, `--podman-env`), as `--user` when given
//! (std's `Command::uid`/`gid`, which drops supplementary groups), with a 120 s watchdog.
//! Peak RSS: `--rss-runs` extra launches per hook count under GNU time (`%M`, from `wait4`'s
//! rusage of `ags` and the hooks it reaped), after the timed rounds.
//! Prints markdown tables; exits 1 when any launch failed.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// A launch that takes longer than this is killed (and counted as failed).
const WATCHDOG: Duration = Duration::from_secs(120);
/// Where GNU time lives (package `time`).
const GNU_TIME: &str = "/usr/bin/time";

#[derive(Debug, Default)]
struct Opts {
    mode: String,
    url: String,
    ags: PathBuf,
    floor: PathBuf,
    workdir: PathBuf,
    image: String,
    configs: [PathBuf; 3],
    hook: PathBuf,
    rounds: usize,
    warmup: usize,
    spawns: usize,
    rss_runs: usize,
    user: Option<(u32, u32)>,
    env: Vec<(String, String)>,
    podman: Option<PathBuf>,
    podman_env: Vec<(String, String)>,
    label: String,
}

fn parse_args() -> anyhow::Result<Opts> {
    let mut o = Opts {
        rounds: 20,
        warmup: 1,
        spawns: 5,
        rss_runs: 3,
        label: "io.ags.test=bench".into(),
        ..Opts::default()
    };
    let mut args = std::env::args().skip(1);
    let kv = |s: String| -> anyhow::Result<(String, String)> {
        let (k, v) = s.split_once('=').context("expected KEY=VALUE")?;
        Ok((k.to_string(), v.to_string()))
    };
    while let Some(arg) = args.next() {
        let mut value = || args.next().with_context(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--mode" => o.mode = value()?,
            "--url" => o.url = value()?,
            "--ags" => o.ags = value()?.into(),
            "--floor" => o.floor = value()?.into(),
            "--workdir" => o.workdir = value()?.into(),
            "--image" => o.image = value()?,
            "--config0" => o.configs[0] = value()?.into(),
            "--config4" => o.configs[1] = value()?.into(),
            "--config64" => o.configs[2] = value()?.into(),
            "--hook" => o.hook = value()?.into(),
            "--rounds" => o.rounds = value()?.parse().context("--rounds")?,
            "--warmup" => o.warmup = value()?.parse().context("--warmup")?,
            "--spawns" => o.spawns = value()?.parse().context("--spawns")?,
            "--rss-runs" => o.rss_runs = value()?.parse().context("--rss-runs")?,
            "--user" => {
                let v = value()?;
                let (u, g) = v.split_once(':').context("--user UID:GID")?;
                o.user = Some((u.parse()?, g.parse()?));
            }
            "--env" => o.env.push(kv(value()?)?),
            "--podman" => o.podman = Some(value()?.into()),
            "--podman-env" => o.podman_env.push(kv(value()?)?),
            "--label" => o.label = value()?,
            other => bail!("unknown argument {other:?}"),
        }
    }
    if o.url.is_empty() || o.image.is_empty() || o.rounds == 0 {
        bail!("--url, --image and --rounds > 0 are required");
    }
    Ok(o)
}

/// What one variant launches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `ags` with the config of `configs[i]` (0, 4, 64 hooks).
    Ags(usize),
    /// The floor; `true` for the init flow.
    Floor(bool),
    /// `podman run --rm`; `true` with `--network none`.
    PodmanRun(bool),
    /// `--spawns` direct executions of the hook.
    HookSpawn,
    /// 64 direct executions of the hook, 4 at a time (what `ags`'s runner does, minus `ags`).
    HookBatch,
}

const HOOK_COUNTS: [usize; 3] = [0, 4, 64];

impl Kind {
    fn name(self) -> String {
        match self {
            Kind::Ags(i) => format!("ags, {} hooks", HOOK_COUNTS[i]),
            Kind::Floor(false) => "floor (create, attach, start, inspect)".into(),
            Kind::Floor(true) => "floor, init flow (no output)".into(),
            Kind::PodmanRun(true) => "podman run --rm --network none".into(),
            Kind::PodmanRun(false) => "podman run --rm (default network)".into(),
            Kind::HookSpawn => "one hook, spawn to exit".into(),
            Kind::HookBatch => "64 hooks, 4 at a time, direct (no ags)".into(),
        }
    }
}

/// One measured launch.
#[derive(Debug, Clone)]
struct Sample {
    /// The round it was measured in.
    round: usize,
    /// Spawn to reaped (ms).
    wall: f64,
    /// Trace marks (ms since the child's `main`), in order.
    marks: Vec<(String, f64)>,
}

impl Sample {
    fn mark(&self, step: &str) -> Option<f64> {
        self.marks.iter().find(|(s, _)| s == step).map(|(_, t)| *t)
    }

    /// Wall time less the self-reported tail after the exit code was known.
    fn to_exit_code(&self) -> f64 {
        match (self.mark("exit code known"), self.mark("cleaned up")) {
            (Some(exit), Some(clean)) => self.wall - (clean - exit).max(0.0),
            _ => self.wall,
        }
    }
}

#[derive(Debug, Default)]
struct Results {
    samples: BTreeMap<String, Vec<Sample>>,
    failures: BTreeMap<String, (usize, String)>,
}

struct Bench {
    o: Opts,
    stderr_file: File,
}

impl Bench {
    fn base(&self, program: &std::path::Path, env: &[(String, String)]) -> Command {
        let mut cmd = Command::new(program);
        cmd.current_dir(&self.o.workdir)
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        if let Some((uid, gid)) = self.o.user {
            cmd.gid(gid).uid(uid);
        }
        cmd
    }

    fn ags_args(&self, i: usize) -> Vec<String> {
        let c = &self.o.configs[i];
        [
            "--url",
            &self.o.url,
            "--config",
            &c.to_string_lossy(),
            "--agent",
            "shell",
            "--tty=false",
            "--label",
            &self.o.label,
            "--",
            "true",
        ]
        .map(String::from)
        .to_vec()
    }

    fn command(&self, kind: Kind) -> Option<Command> {
        let o = &self.o;
        Some(match kind {
            Kind::Ags(i) => {
                let mut cmd = self.base(&o.ags, &o.env);
                cmd.env("AGS_TRACE", "1").args(self.ags_args(i));
                cmd
            }
            Kind::Floor(init) => {
                let mut cmd = self.base(&o.floor, &o.env);
                cmd.env("FLOOR_TRACE", "1")
                    .args(["--url", &o.url, "--config"])
                    .arg(&o.configs[0])
                    .args(["--flow", if init { "init" } else { "attach" }])
                    .args(["--label", &o.label, "--", "true"]);
                cmd
            }
            Kind::PodmanRun(none) => {
                let mut cmd = self.base(o.podman.as_ref()?, &o.podman_env);
                cmd.args(["run", "--rm", "--label", &o.label]);
                if none {
                    cmd.args(["--network", "none"]);
                }
                cmd.args([&o.image, "true"]);
                cmd
            }
            Kind::HookSpawn | Kind::HookBatch => return None,
        })
    }

    /// Run `cmd` to completion: wall time and its stderr (through a file, so a grandchild that
    /// keeps the descriptor cannot delay the measurement).
    fn launch(&mut self, mut cmd: Command) -> anyhow::Result<(f64, String, Option<String>)> {
        self.stderr_file.set_len(0)?;
        self.stderr_file.rewind()?;
        cmd.stderr(self.stderr_file.try_clone()?);
        let t0 = Instant::now();
        let mut child = cmd.spawn().with_context(|| format!("spawning {cmd:?}"))?;
        let status = with_watchdog(child.id(), || child.wait())?;
        let wall = t0.elapsed().as_secs_f64() * 1000.0;
        let mut err = String::new();
        self.stderr_file.rewind()?;
        self.stderr_file.read_to_string(&mut err)?;
        Ok((wall, err, (!status.success()).then(|| status.to_string())))
    }

    /// The hook run as `ags` runs it (own process group, clean environment, context on stdin,
    /// stdout and stderr read), timed from spawn to reaped.
    fn hook_spawn(&self) -> anyhow::Result<f64> {
        let context = br#"{"version":1,"event":"prepare","launch_id":"bench","project":"/tmp","workdir":"/tmp","agent":"shell"}"#;
        let mut cmd = self.base(&self.o.hook, &self.o.env);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let t0 = Instant::now();
        let mut child = cmd.spawn().context("spawning the hook")?;
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
        let status = with_watchdog(child.id(), || child.wait())?;
        let ms = t0.elapsed().as_secs_f64() * 1000.0;
        if !status.success() || !out.starts_with(b"{") {
            bail!("the hook failed: {status}");
        }
        Ok(ms)
    }

    /// `total` executions of the hook, `width` at a time (threads), start to last reaped.
    fn hook_batch(&self, total: usize, width: usize) -> anyhow::Result<f64> {
        let next = AtomicUsize::new(0);
        let t0 = Instant::now();
        std::thread::scope(|s| {
            let workers: Vec<_> = (0..width)
                .map(|_| {
                    s.spawn(|| {
                        while next.fetch_add(1, Ordering::Relaxed) < total {
                            self.hook_spawn()?;
                        }
                        anyhow::Ok(())
                    })
                })
                .collect();
            workers
                .into_iter()
                .try_for_each(|w| w.join().unwrap_or_else(|_| bail!("a spawning thread panicked")))
        })?;
        Ok(t0.elapsed().as_secs_f64() * 1000.0)
    }

    fn run_variant(&mut self, kind: Kind, res: &mut Results, round: Option<usize>) {
        let name = kind.name();
        if kind == Kind::HookBatch {
            match self.hook_batch(64, 4) {
                Ok(wall) => {
                    if let Some(round) = round {
                        let marks = vec![];
                        res.samples
                            .entry(name)
                            .or_default()
                            .push(Sample { round, wall, marks });
                    }
                }
                Err(e) => fail(res, &name, &format!("{e:#}")),
            }
            return;
        }
        if kind == Kind::HookSpawn {
            for _ in 0..self.o.spawns {
                match self.hook_spawn() {
                    Ok(wall) => {
                        if let Some(round) = round {
                            let marks = vec![];
                            let sample = Sample { round, wall, marks };
                            res.samples.entry(name.clone()).or_default().push(sample);
                        }
                    }
                    Err(e) => fail(res, &name, &e.to_string()),
                }
            }
            return;
        }
        let Some(cmd) = self.command(kind) else { return };
        match self.launch(cmd) {
            Ok((wall, err, None)) => {
                if let Some(round) = round {
                    let marks = parse_marks(&err);
                    res.samples
                        .entry(name)
                        .or_default()
                        .push(Sample { round, wall, marks });
                }
            }
            Ok((_, err, Some(status))) => {
                let said: Vec<&str> = err.lines().filter(|l| !l.contains("-trace: ")).collect();
                fail(res, &name, &format!("{status}; stderr: {}", said.join(" | ")));
            }
            Err(e) => fail(res, &name, &format!("{e:#}")),
        }
    }

    /// Peak RSS (KiB) of `ags` with config `i`, over `rss_runs` launches under GNU time.
    fn peak_rss(&mut self, i: usize) -> anyhow::Result<Option<u64>> {
        let mut peak = None;
        for _ in 0..self.o.rss_runs {
            let mut cmd = self.base(std::path::Path::new(GNU_TIME), &self.o.env);
            cmd.args(["-f", "bench-peak-rss-kib: %M"])
                .arg(&self.o.ags)
                .args(self.ags_args(i));
            let (_, err, failed) = self.launch(cmd)?;
            if let Some(status) = failed {
                bail!("ags under {GNU_TIME} failed ({status}): {err}");
            }
            let kib = err
                .lines()
                .find_map(|l| l.strip_prefix("bench-peak-rss-kib: "))
                .and_then(|v| v.trim().parse::<u64>().ok())
                .context("GNU time printed no %M")?;
            peak = peak.max(Some(kib));
        }
        Ok(peak)
    }
}

fn fail(res: &mut Results, name: &str, err: &str) {
    let entry = res.failures.entry(name.to_string()).or_insert((0, String::new()));
    entry.0 += 1;
    if entry.1.is_empty() {
        entry.1 = err.chars().take(600).collect();
    }
}

/// Kill `pid` if `wait` has not returned within [`WATCHDOG`].
fn with_watchdog<T>(pid: u32, wait: impl FnOnce() -> std::io::Result<T>) -> anyhow::Result<T> {
    let (tx, rx) = mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        if rx.recv_timeout(WATCHDOG) == Err(mpsc::RecvTimeoutError::Timeout) {
            let pid = nix::unistd::Pid::from_raw(pid as i32);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
        }
    });
    let r = wait();
    let _ = tx.send(());
    let _ = watchdog.join();
    Ok(r?)
}

/// `<who>-trace: 12.3 ms step` lines.
fn parse_marks(stderr: &str) -> Vec<(String, f64)> {
    stderr
        .lines()
        .filter_map(|l| {
            let (_, rest) = l.split_once("-trace: ")?;
            let (ms, step) = rest.split_once(" ms ")?;
            Some((step.to_string(), ms.parse().ok()?))
        })
        .collect()
}

fn load_avg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn load1() -> f64 {
    load_avg()
        .split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN)
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

fn min_med_max(v: &[f64]) -> String {
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{min:.1} / {:.1} / {max:.1}", median(v))
}

/// The median over rounds of `f(a) / f(b)` for the samples of `a` and `b` from the same round.
fn paired_ratio(a: &[Sample], b: &[Sample], f: impl Fn(&Sample) -> f64) -> f64 {
    let ratios: Vec<f64> = a
        .iter()
        .filter_map(|x| b.iter().find(|y| y.round == x.round).map(|y| f(x) / f(y)))
        .collect();
    median(&ratios)
}

fn verdict(ok: bool) -> &'static str {
    if ok { "met" } else { "MISSED" }
}

fn main() -> anyhow::Result<()> {
    let o = parse_args()?;
    let stderr_file = tempfile::tempfile()?;
    let mut bench = Bench { o, stderr_file };
    let mut variants = vec![
        Kind::Ags(0),
        Kind::Ags(1),
        Kind::Ags(2),
        Kind::Floor(false),
        Kind::Floor(true),
        Kind::HookSpawn,
        Kind::HookBatch,
    ];
    if bench.o.podman.is_some() {
        variants.extend([Kind::PodmanRun(true), Kind::PodmanRun(false)]);
    }
    let (rounds, warmup) = (bench.o.rounds, bench.o.warmup);
    let load_start = load_avg();
    let mut loads = Vec::new();
    let mut res = Results::default();
    let t0 = Instant::now();
    for round in 0..warmup + rounds {
        let record = (round >= warmup).then_some(round);
        let n = variants.len();
        for k in 0..n {
            let kind = variants[(round + k) % n];
            bench.run_variant(kind, &mut res, record);
        }
        if record.is_some() {
            loads.push(load1());
        }
        eprint!("\r{}: round {}/{}", bench.o.mode, round + 1, warmup + rounds);
    }
    eprintln!();
    let elapsed = t0.elapsed().as_secs_f64();
    let rss: Vec<Option<u64>> = (0..3)
        .map(|i| {
            bench.peak_rss(i).unwrap_or_else(|e| {
                fail(&mut res, "peak RSS", &format!("{e:#}"));
                None
            })
        })
        .collect();

    report(&bench.o, &variants, &res, &rss, &load_start, &loads, elapsed);
    if !res.failures.is_empty() {
        std::process::exit(1);
    }
    Ok(())
}

fn report(
    o: &Opts,
    variants: &[Kind],
    res: &Results,
    rss: &[Option<u64>],
    load_start: &str,
    loads: &[f64],
    elapsed: f64,
) {
    let mean_load = loads.iter().sum::<f64>() / loads.len().max(1) as f64;
    println!("\n## {} ({})\n", o.mode, o.url);
    println!(
        "{} rounds (+{} warm-up) in {elapsed:.0} s, variant order rotated each round; load average \
         at start {load_start}, at end {}; 1-minute load over the rounds: mean {mean_load:.2}, max {:.2}.\n",
        o.rounds,
        o.warmup,
        load_avg(),
        loads.iter().copied().fold(0.0, f64::max)
    );
    let get = |k: Kind| res.samples.get(&k.name()).map(Vec::as_slice).unwrap_or(&[]);
    let exit = |k: Kind| get(k).iter().map(Sample::to_exit_code).collect::<Vec<_>>();
    let wall = |k: Kind| get(k).iter().map(|s| s.wall).collect::<Vec<_>>();

    println!(
        "| variant | n | to exit code, ms (min / median / max) | to full cleanup, ms (min / median / max) |"
    );
    println!("|---|---:|---|---|");
    for &k in variants {
        let n = get(k).len();
        if n == 0 {
            println!("| {} | 0 | — | — |", k.name());
            continue;
        }
        let cleanup = match k {
            Kind::HookSpawn | Kind::HookBatch => "—".to_string(),
            _ => min_med_max(&wall(k)),
        };
        println!("| {} | {n} | {} | {cleanup} |", k.name(), min_med_max(&exit(k)));
    }

    // Ratios of medians.
    let m = |v: Vec<f64>| median(&v);
    let ags0_exit = m(exit(Kind::Ags(0)));
    let ags0_wall = m(wall(Kind::Ags(0)));
    let floor_exit = m(exit(Kind::Floor(false)));
    let floor_wall = m(wall(Kind::Floor(false)));
    let spawn = m(exit(Kind::HookSpawn));
    let hooks_overhead = m(exit(Kind::Ags(2))) - ags0_exit;
    let hooks_phase = |i| {
        m(get(Kind::Ags(i))
            .iter()
            .filter_map(|s| s.mark("hooks done"))
            .collect())
    };
    println!("\n| ratio (medians) | value | target |");
    println!("|---|---:|---|");
    let r1 = ags0_exit / floor_exit;
    println!(
        "| ags(0) / floor, to exit code | {r1:.2} | ≤ 1.10 {} |",
        verdict(r1 <= 1.10)
    );
    let paired = paired_ratio(get(Kind::Ags(0)), get(Kind::Floor(false)), Sample::to_exit_code);
    println!(
        "| same, median of the per-round ratios (paired) | {paired:.2} | ≤ 1.10 {} |",
        verdict(paired <= 1.10)
    );
    println!(
        "| ags(0) / floor, to full cleanup | {:.2} | |",
        ags0_wall / floor_wall
    );
    println!(
        "| same, median of the per-round ratios (paired) | {:.2} | |",
        paired_ratio(get(Kind::Ags(0)), get(Kind::Floor(false)), |s| s.wall)
    );
    for none in [true, false] {
        let run = m(wall(Kind::PodmanRun(none)));
        if run.is_nan() {
            continue;
        }
        let net = if none { "--network none" } else { "default network" };
        let r = ags0_wall / run;
        println!(
            "| ags(0) / podman run --rm ({net}), process exit to process exit | {r:.2} | ≤ 0.35 {} |",
            verdict(r <= 0.35)
        );
        let floor = floor_wall / run;
        println!("| floor / podman run --rm ({net}), for reference | {floor:.2} | |");
    }
    let r3 = hooks_overhead / (16.0 * spawn);
    println!(
        "| (ags(64) − ags(0)) / (16 × one hook's spawn-to-exit), to exit code | {r3:.2} | ≤ 1.25 {} |",
        verdict(r3 <= 1.25)
    );
    println!(
        "| same, prepare phase only (\"hooks done\" marks) | {:.2} | |",
        (hooks_phase(2) - hooks_phase(0)) / (16.0 * spawn)
    );
    let batch = m(exit(Kind::HookBatch));
    println!(
        "| ags's 64-hook prepare phase / the same 64 spawns, 4 at a time, without ags | {:.2} | |",
        (hooks_phase(2) - hooks_phase(0)) / batch
    );
    println!(
        "\nOne hook spawn-to-exit: median {spawn:.2} ms; 64-hook overhead: {hooks_overhead:.1} ms \
         (16 × spawn = {:.1} ms); prepare phase (\"hooks done\" mark): 0 hooks {:.1} ms, 4 hooks {:.1} ms, \
         64 hooks {:.1} ms; 64 direct spawns 4 at a time: {batch:.1} ms.",
        16.0 * spawn,
        hooks_phase(0),
        hooks_phase(1),
        hooks_phase(2)
    );

    // Where the time goes: median of each mark.
    println!("\nMedian trace marks (ms since the process's `main`):\n");
    for &k in variants {
        let samples = get(k);
        let Some(first) = samples.first() else { continue };
        if first.marks.is_empty() {
            continue;
        }
        let cells: Vec<String> = first
            .marks
            .iter()
            .map(|(step, _)| {
                let t = median(&samples.iter().filter_map(|s| s.mark(step)).collect::<Vec<_>>());
                format!("{step} {t:.1}")
            })
            .collect();
        println!("- {}: {}", k.name(), cells.join(" → "));
    }

    println!(
        "\nPeak RSS of `ags` (GNU time %M, max of {} launches each):\n",
        o.rss_runs
    );
    for (i, kib) in rss.iter().enumerate() {
        match kib {
            Some(kib) => println!(
                "- {} hooks: {:.1} MiB ({kib} KiB) — target ≤ 20 MiB {}",
                HOOK_COUNTS[i],
                *kib as f64 / 1024.0,
                verdict(*kib <= 20 * 1024)
            ),
            None => println!("- {} hooks: not measured", HOOK_COUNTS[i]),
        }
    }
    if !res.failures.is_empty() {
        println!("\nFailures:\n");
        for (name, (n, err)) in &res.failures {
            println!("- {name}: {n} failed; last lines of the first: {err}");
        }
    }
}
