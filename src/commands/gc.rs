//! `ags gc`: remove leftovers of `ags` processes that are gone, and run the finished hooks those
//! launches still owe (crash recovery, docs/lifecycle.md).

use crate::cli::{GcArgs, GlobalArgs};
use crate::hooks::runner::stderr_to_terminal;
use crate::{Error, launch, podman};

/// Sweep orphaned containers and volumes, run owed finished hooks, and report what was done.
/// Hook failures are reported but do not change the exit status.
pub fn gc(global: &GlobalArgs, args: &GcArgs) -> Result<u8, Error> {
    let paths = crate::config::Paths::from_env()?;
    let rt = super::runtime()?;
    let result = rt.block_on(async {
        let client = podman::connect(&super::target(global)).await?;
        let report = launch::gc::sweep(&client, args.launch.as_deref()).await?;
        let recovered = crate::session::recover::recover(&paths, &report.swept, stderr_to_terminal()).await;
        Ok::<_, Error>((report, recovered))
    });
    super::finish(rt);
    let (report, recovered) = result?;
    crate::hooks::prepare::sweep_exec_dirs(&paths);
    let host: Vec<_> = paths
        .stage_roots()
        .iter()
        .flat_map(|root| launch::gc::sweep_host(root))
        .collect();
    for dir in &host {
        println!("removed host staging directory {}", dir.display());
    }
    for c in &report.containers {
        println!("removed container {c}");
    }
    for v in &report.volumes {
        println!("removed volume {v}");
    }
    let removed = host.len() + report.containers.len() + report.volumes.len();
    if removed == 0 && recovered.is_empty() && report.errors.is_empty() {
        println!("nothing to clean up: no leftovers of ags processes that are gone");
    }
    for line in &recovered {
        eprintln!("ags: {line}");
    }
    for e in &report.errors {
        eprintln!("ags: gc: {e}");
    }
    Ok(if report.errors.is_empty() {
        0
    } else {
        crate::error::EXIT_AGS_FAILURE
    })
}
