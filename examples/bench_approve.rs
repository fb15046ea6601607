//! Benchmark helper for `scripts/bench-launch`: approve every prepare hook declared by a config
//! file, through the library (the same hash and store `ags` checks at launch).
//!
//! usage: bench_approve --config PATH [--workdir DIR]
//!
//! Uses the process environment for the store location (XDG_STATE_HOME / HOME), so run it with
//! the environment, and as the user, that the benchmarked `ags` will have.

use std::path::PathBuf;

use ags::config::{self, LoadOptions};
use ags::hooks::entrypoint::PreparedHook;
use ags::hooks::trust::{ApprovalRecord, TrustStore};
use anyhow::{Context, bail};

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let (mut config_path, mut workdir) = (None, None);
    while let Some(arg) = args.next() {
        let mut value = || args.next().with_context(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--config" => config_path = Some(PathBuf::from(value()?)),
            "--workdir" => workdir = Some(PathBuf::from(value()?)),
            other => bail!("unknown argument {other:?}; usage: bench_approve --config PATH [--workdir DIR]"),
        }
    }
    let config = config::load(&LoadOptions {
        config: Some(config_path.context("--config PATH is required")?),
        no_repo_config: true,
        workdir,
        ask_overlay_trust: false,
    })?;
    let store = TrustStore::open(&config.paths, Some(&config.project))?;
    for decl in &config.prepare_hooks {
        let hook = PreparedHook::load(decl.clone())?;
        store.approve(&hook.hash, &ApprovalRecord::new(decl))?;
    }
    println!("approved {} prepare hooks", config.prepare_hooks.len());
    Ok(())
}
