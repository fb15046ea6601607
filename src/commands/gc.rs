//! `ags gc`: remove leftovers of `ags` processes that are gone.

use crate::cli::{GcArgs, GlobalArgs};
use crate::{Error, launch, podman};

/// Sweep orphaned containers and volumes and report what was removed.
pub fn gc(global: &GlobalArgs, args: &GcArgs) -> Result<u8, Error> {
    let rt = super::runtime()?;
    let result = rt.block_on(async {
        let client = podman::connect(global.url.as_deref()).await?;
        Ok::<_, Error>(launch::gc::sweep(&client, args.launch.as_deref()).await?)
    });
    super::finish(rt);
    let report = result?;
    let paths = crate::config::Paths::from_env()?;
    crate::hooks::prepare::sweep_exec_dirs(&paths);
    for dir in launch::gc::sweep_host(&paths.stage_root()) {
        println!("removed host staging directory {}", dir.display());
    }
    for c in &report.containers {
        println!("removed container {c}");
    }
    for v in &report.volumes {
        println!("removed volume {v}");
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
