//! Benchmark floor for `scripts/bench-launch`: the bare libpod flow that `ags` is held against.
//!
//! usage: bench_floor --url URL --config PATH [--flow attach|init] [--label KEY=VALUE]... -- CMD...
//!
//! It sends the same create body `ags` would send for `--agent shell --tty=false -- CMD` with this
//! config (built by `ags`'s pure plan code: same name scheme, labels, user, user namespace,
//! network, workdir bind, limits), over the same transport (`ags::podman::Client`), and does only
//! what a launch cannot skip:
//!
//! - `attach` flow (default): create → attach (initialises) → start → read the output to its end
//!   → inspect every 1 ms until exited;
//! - `init` flow: create → init → start → inspect every 1 ms until exited (no output: the lower
//!   bound of any flow);
//!
//! then delete (force, volumes), timed separately. No config overlay, no hooks, no ping, no
//! signal handling, no staging, no sweep of leftovers.
//!
//! With `FLOOR_TRACE=1` it prints marks in `AGS_TRACE`'s format on stderr
//! (`floor-trace: 12.3 ms exit code known`), measured from the start of `main`, as `ags` does.
//! Exits with the container's exit code.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use ags::config::{self, LoadOptions};
use ags::launch::identity;
use ags::plan::{self, HookLayer, PlanInput, RunSettings};
use ags::podman::{AttachOptions, Client, Endpoint, StreamKind, spec_from_plan};
use anyhow::{Context, bail};

struct Args {
    url: String,
    config: PathBuf,
    init_flow: bool,
    labels: Vec<String>,
    command: Vec<String>,
}

struct Trace(Option<Instant>);

impl Trace {
    fn mark(&self, step: &str) {
        if let Some(t0) = self.0 {
            eprintln!(
                "floor-trace: {:.1} ms {step}",
                t0.elapsed().as_secs_f64() * 1000.0
            );
        }
    }
}

fn main() -> ExitCode {
    let trace = Trace((std::env::var_os("FLOOR_TRACE").is_some_and(|v| v == "1")).then(Instant::now));
    match run(&trace) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("bench_floor: {e:#}");
            ExitCode::from(125)
        }
    }
}

fn parse_args() -> anyhow::Result<Args> {
    let mut args = std::env::args().skip(1);
    let (mut url, mut config, mut init_flow, mut labels) = (None, None, false, Vec::new());
    while let Some(arg) = args.next() {
        let mut value = || args.next().with_context(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--url" => url = Some(value()?),
            "--config" => config = Some(PathBuf::from(value()?)),
            "--flow" => {
                init_flow = match value()?.as_str() {
                    "attach" => false,
                    "init" => true,
                    other => bail!("--flow {other:?}: use attach or init"),
                }
            }
            "--label" => labels.push(value()?),
            "--" => break,
            other => bail!("unknown argument {other:?}"),
        }
    }
    let command: Vec<String> = args.collect();
    if command.is_empty() {
        bail!("usage: bench_floor --url URL --config PATH [--flow attach|init] [--label K=V]... -- CMD...");
    }
    Ok(Args {
        url: url.context("--url is required")?,
        config: config.context("--config is required")?,
        init_flow,
        labels,
        command,
    })
}

fn run(trace: &Trace) -> anyhow::Result<u8> {
    let args = parse_args()?;
    let client = Client::new(Endpoint::parse(&args.url)?);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        // The create body `ags` would send (pure code: the config file read, the plan built).
        let config = config::load(&LoadOptions {
            config: Some(args.config.clone()),
            no_repo_config: true,
            workdir: None,
            ask_overlay_trust: false,
        })?;
        let settings = RunSettings {
            agent: "shell".into(),
            command: args.command.clone(),
            labels: args.labels.clone(),
            ..RunSettings::default()
        };
        let identity = identity::current();
        let plan = plan::build(&PlanInput {
            host_memory: None,
            config: &config,
            run: &settings,
            identity: &identity,
            rootless: client.rootless().await?,
            selinux: client.selinux_enabled().await?,
            remote: client.is_remote(),
            exported: false,
            user: (nix::unistd::getuid().as_raw(), nix::unistd::getgid().as_raw()),
            host_stage_dir: Path::new("/nonexistent"),
            hooks: &HookLayer::default(),
        })?;
        let spec = spec_from_plan(&plan);
        trace.mark("spec ready");

        let id = client.create(&spec).await?;
        trace.mark("created");
        let result = launch(&client, &id, args.init_flow, trace).await;
        trace.mark("exit code known");
        let deleted = client.delete(&id, true, true).await;
        trace.mark("cleaned up");
        let code = result?;
        deleted?;
        Ok(code)
    })
}

async fn launch(client: &Client, id: &str, init_flow: bool, trace: &Trace) -> anyhow::Result<u8> {
    if init_flow {
        client.init(id).await?;
        trace.mark("initialised");
        client.start(id).await?;
        trace.mark("started");
    } else {
        let opts = AttachOptions {
            stdin: true,
            stdout: true,
            stderr: true,
            tty: false,
        };
        let (mut output, mut input) = client.attach(id, opts).await?;
        trace.mark("attached");
        tokio::io::AsyncWriteExt::shutdown(&mut input).await?; // stdin EOF, as `ags` gives it for a closed stdin
        client.start(id).await?;
        trace.mark("started");
        while let Some((kind, data)) = output.read_frame().await? {
            match kind {
                StreamKind::Stderr => std::io::stderr().write_all(&data)?,
                _ => std::io::stdout().write_all(&data)?,
            }
        }
        trace.mark("output ended");
    }
    let state = client.wait_exited(id, Duration::from_millis(1)).await?;
    Ok(state.exit_code.clamp(0, 255) as u8)
}
