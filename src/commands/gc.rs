//! `ags gc`: remove leftovers of `ags` processes that are gone, and run the finished hooks those
//! launches still owe (crash recovery, docs/lifecycle.md); with `--state`, also the agents'
//! state volumes of projects that are gone (`launch::state_gc`).

use crate::cli::{GcArgs, GlobalArgs};
use crate::hooks::runner::stderr_to_terminal;
use crate::{Error, launch, podman};

/// Sweep orphaned containers and volumes, run owed finished hooks, and report what was done.
/// Hook failures are reported but do not change the exit status.
pub fn gc(global: &GlobalArgs, args: &GcArgs) -> Result<u8, Error> {
    let paths = crate::config::Paths::from_env()?;
    if args.state {
        refuse_remote_state(global)?;
    }
    let rt = super::runtime()?;
    let result = rt.block_on(async {
        let client = podman::connect(&super::target(global)).await?;
        if args.state && !client.is_unix() {
            return Err(remote_state_error());
        }
        let report = launch::gc::sweep(&client, args.launch.as_deref()).await?;
        let recovered = crate::session::recover::recover(&paths, &report.swept, stderr_to_terminal()).await;
        let state = match args.state {
            true => Some(launch::state_gc::sweep_state(&client).await?),
            false => None,
        };
        Ok::<_, Error>((report, recovered, state))
    });
    super::finish(rt);
    let (report, recovered, state) = result?;
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
    let state = state.unwrap_or_default();
    for (volume, agent, dir) in &state.removed {
        println!("removed state volume {volume} ({agent} in {dir}, which no longer exists)");
    }
    for volume in &state.in_use {
        println!("kept state volume {volume}: its project is gone, but a container still uses it");
    }
    let removed = host.len() + report.containers.len() + report.volumes.len() + state.removed.len();
    if removed == 0 && recovered.is_empty() && report.errors.is_empty() && state.errors.is_empty() {
        match args.state {
            true => println!(
                "nothing to clean up: no leftovers of ags processes that are gone, no state volume of a project that is gone"
            ),
            false => println!("nothing to clean up: no leftovers of ags processes that are gone"),
        }
    }
    for line in &recovered {
        eprintln!("ags: {line}");
    }
    for e in report.errors.iter().chain(&state.errors) {
        eprintln!("ags: gc: {e}");
    }
    Ok(if report.errors.is_empty() && state.errors.is_empty() {
        0
    } else {
        crate::error::EXIT_AGS_FAILURE
    })
}

/// `--state` against a service named as another machine's (`tcp://`, `ssh://`), before any
/// connection is tried.
fn refuse_remote_state(global: &GlobalArgs) -> Result<(), Error> {
    let url = super::chosen_url(global);
    match url.map(|u| podman::Endpoint::parse(&u).map(|e| e.is_remote())) {
        Some(Ok(true)) => Err(remote_state_error()),
        _ => Ok(()),
    }
}

fn remote_state_error() -> Error {
    Error::Usage(
        "ags gc --state: the Podman service is on another machine; its state volumes name that \
         machine's project directories, which cannot be checked from here. Run it there, or \
         remove a volume with `podman volume rm`"
            .into(),
    )
}
