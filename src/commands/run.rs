//! `ags [run options] -- CMD…`: the launch.
//!
//! CLI → config → hooks → plan → podman → launch → cleanup. Nothing touches Podman before the
//! configuration is loaded and the hooks have succeeded.

use std::io::Write;
use std::path::PathBuf;

use bytes::Bytes;

use crate::cli::{GlobalArgs, RunArgs, TtyMode};
use crate::config::{self, Config, LoadOptions};
use crate::launch::cleanup::Cleanup;
use crate::launch::signals::SignalWatch;
use crate::launch::{self, gc, identity, lifecycle, stage};
use crate::plan::{self, HookLayer, LaunchIdentity, LaunchPlan, RunSettings};
use crate::{Error, podman, prompt};

/// Launch an agent and return its exit code.
pub fn run(global: &GlobalArgs, args: &RunArgs) -> Result<u8, Error> {
    let config = load_config(global, args.workdir.clone())?;
    let settings = settings(args, launch::terminal::both_are_terminals())?;
    let rt = super::runtime()?;
    let result = rt.block_on(launch_async(global, &config, &settings));
    super::finish(rt);
    result
}

/// Load the configuration and print its warnings.
pub(super) fn load_config(global: &GlobalArgs, workdir: Option<PathBuf>) -> Result<Config, Error> {
    let config = config::load(&LoadOptions {
        config: global.config.clone(),
        no_repo_config: global.no_repo_config,
        workdir,
        ask_overlay_trust: prompt::has_terminal(),
    })?;
    for w in &config.warnings {
        eprintln!("ags: warning: {w}");
    }
    Ok(config)
}

/// Resolve the launch options: terminal detection, canonical `--add-dir` paths.
pub(super) fn settings(args: &RunArgs, terminals: bool) -> Result<RunSettings, Error> {
    let add_dirs = args
        .add_dirs
        .iter()
        .map(|d| {
            let c = d
                .canonicalize()
                .map_err(|e| Error::Usage(format!("--add-dir {}: {e}", d.display())))?;
            if !c.is_dir() {
                return Err(Error::Usage(format!(
                    "--add-dir {}: not a directory",
                    d.display()
                )));
            }
            Ok(c)
        })
        .collect::<Result<_, _>>()?;
    let tty = match args.tty {
        TtyMode::Auto => terminals,
        TtyMode::True => true,
        TtyMode::False => false,
    };
    Ok(RunSettings {
        agent: args.agent.clone(),
        command: args.command.clone(),
        tty,
        term: std::env::var("TERM")
            .ok()
            .filter(|t| !t.is_empty())
            .or(Some("xterm".into())),
        image: args.image.clone(),
        env: args.env.clone(),
        add_dirs,
        labels: args.labels.clone(),
        op_secret_sets: args.op_secret_sets.clone(),
        lockdown: args.lockdown,
    })
}

/// The invoking user's uid and gid.
pub(super) fn user_ids() -> (u32, u32) {
    (nix::unistd::getuid().as_raw(), nix::unistd::getgid().as_raw())
}

/// Build the plan for this invocation.
pub(super) fn build_plan(
    config: &Config,
    settings: &RunSettings,
    identity: &LaunchIdentity,
    rootless: bool,
    hooks: &HookLayer,
) -> Result<LaunchPlan, Error> {
    Ok(plan::build(&plan::PlanInput {
        config,
        run: settings,
        identity,
        rootless,
        user: user_ids(),
        host_stage_dir: &config.paths.stage_root().join(gc::stage_dir_name(identity)),
        hooks,
    })?)
}

async fn launch_async(global: &GlobalArgs, config: &Config, settings: &RunSettings) -> Result<u8, Error> {
    let mut signals = SignalWatch::install().map_err(Error::Output)?;
    let hooks = HookLayer::default();
    let client = podman::connect(global.url.as_deref()).await?;
    let info = client.info().await?;
    let identity = identity::current();
    let plan = build_plan(config, settings, &identity, info.host.security.rootless, &hooks)?;
    let stage = staging_archive(&plan, &Default::default())?;
    gc::sweep_host(&config.paths.stage_root());
    let sweeper = tokio::spawn({
        let client = client.clone();
        async move { gc::sweep(&client, None).await }
    });
    let mut cleanup = Cleanup::default();
    let result = lifecycle::run(&client, &plan, stage, &mut signals, &mut cleanup).await;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    for e in cleanup.run(&client).await {
        eprintln!("ags: {e}");
    }
    sweeper.abort();
    Ok(result?)
}

fn staging_archive(plan: &LaunchPlan, secrets: &stage::ResolvedSecrets) -> Result<Option<Bytes>, Error> {
    if plan.staging.is_none() {
        return Ok(None);
    }
    let (uid, gid) = user_ids();
    let tar =
        stage::archive(&stage::env_file(plan, secrets), uid, gid).map_err(launch::LaunchError::Stage)?;
    Ok(Some(Bytes::from(tar)))
}
