//! `ags gc`: remove leftovers of `ags` processes that are gone, and run the finished hooks those
//! launches still owe (crash recovery, docs/lifecycle.md); with `--state`, also the agents'
//! state volumes of projects that are gone, once listed and confirmed (`launch::state_gc`).

use crate::error::CommandError;
use std::path::PathBuf;

use crate::cli::{GcArgs, GlobalArgs};
use crate::hooks::runner::stderr_to_terminal;
use crate::launch::state_gc::{self, Candidate, StateReport};
use crate::{Error, launch, podman, prompt};

/// Sweep orphaned containers and volumes, run owed finished hooks, and report what was done;
/// then, with `--state`, the state volumes of vanished projects. Hook failures are reported but
/// do not change the exit status.
pub fn gc(global: &GlobalArgs, args: &GcArgs) -> Result<u8, Error> {
    let paths = crate::config::Paths::from_env()?;
    if !args.forget.is_empty() {
        return forget(&paths, &args.forget);
    }
    if args.state {
        refuse_remote_state(global)?;
    }
    let under = args.under.as_deref().map(absolute);
    let rt = super::runtime()?;
    let result = rt.block_on(async {
        let client = podman::connect(&super::target(global)).await?;
        if args.state && !client.is_unix() {
            return Err(remote_state_error());
        }
        let report = launch::gc::sweep(&client, args.launch.as_deref()).await?;
        let mut recovered =
            crate::events::session::recover::recover(&paths, &report.swept, stderr_to_terminal()).await;
        recovered.extend(crate::receipt::recover(&paths));
        let candidates = match args.state {
            true => state_gc::candidates(&client, under.as_deref())
                .await
                .map_err(|e| e.to_string()),
            false => Ok(Vec::new()),
        };
        Ok::<_, Error>((client, report, recovered, candidates))
    });
    let (client, report, recovered, candidates) = match result {
        Ok(r) => r,
        Err(e) => {
            super::finish(rt);
            return Err(e);
        }
    };
    say_swept(&paths, &report, &recovered);
    let mut errors = report.errors;
    let state = match (args.state, candidates) {
        (false, _) => Ok(StateReport::default()),
        (true, Ok(found)) => state_step(&rt, &client, found, args.yes),
        (true, Err(e)) => {
            errors.push(format!("listing state volumes: {e}"));
            Ok(StateReport::default())
        }
    };
    super::finish(rt);
    let state = state?;
    if state.interrupted {
        return Ok(launch::signals::exit_code_for(libc::SIGINT));
    }
    errors.extend(state.errors);
    for e in &errors {
        eprintln!("{}", crate::text::escape_controls(&format!("ags: gc: {e}")));
    }
    Ok(if errors.is_empty() {
        0
    } else {
        crate::error::EXIT_AGS_FAILURE
    })
}

/// The host's own leftovers swept (prepare-hook exec directories, staging directories, egress
/// grants that no longer hold), and what was removed and recovered said.
fn say_swept(paths: &crate::config::Paths, report: &launch::gc::GcReport, recovered: &[String]) {
    crate::hooks::prepare::sweep_exec_dirs(paths);
    let grants = crate::egress::grants::sweep(&paths.egress_grants());
    if grants > 0 {
        println!("removed {grants} egress grant(s) that no longer hold (expired, or their launch ended)");
    }
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
    let removed = grants + host.len() + report.containers.len() + report.volumes.len();
    if removed == 0 && recovered.is_empty() && report.errors.is_empty() {
        println!("nothing to clean up: no leftovers of ags processes that are gone");
    }
    for line in recovered {
        eprintln!("{}", crate::text::escape_controls(&format!("ags: {line}")));
    }
}

/// List the state volumes of vanished projects, ask (unless `yes`), remove, and say what was
/// done. No terminal and no `yes`: an error naming `--yes`, nothing removed.
fn state_step(
    rt: &tokio::runtime::Runtime,
    client: &podman::Client,
    found: Vec<Candidate>,
    yes: bool,
) -> Result<StateReport, Error> {
    if found.is_empty() {
        println!("no state volume of a project that is gone");
        return Ok(StateReport::default());
    }
    println!("state volumes of projects that no longer exist (with any login kept in them):");
    for c in &found {
        println!("  {} ({} in {})", c.name, c.agent, c.workdir);
    }
    if !yes {
        if !prompt::has_terminal() {
            return Err(CommandError::NoTerminal {
                command: "ags gc --state",
                consent: "remove these state volumes",
            }
            .into());
        }
        let question = format!("Remove these {} state volumes?", found.len());
        let text = "\nA project on a disk that is not mounted now looks gone too: answer no if so.\n";
        match prompt::confirm(text, &question) {
            Ok(true) => {}
            Ok(false) => {
                println!("nothing was removed");
                return Ok(StateReport::default());
            }
            Err(prompt::PromptError::Interrupted { .. }) => {
                eprintln!("ags: gc --state: interrupted: nothing was removed");
                return Ok(StateReport {
                    interrupted: true,
                    ..StateReport::default()
                });
            }
            Err(e) => return Err(CommandError::CannotAsk(e).into()),
        }
    }
    let report = rt.block_on(state_gc::remove(client, found));
    for c in &report.removed {
        println!("removed state volume {} ({} in {})", c.name, c.agent, c.workdir);
    }
    for name in &report.in_use {
        println!("kept state volume {name}: a container still uses it");
    }
    Ok(report)
}

/// `dir` made absolute (canonical when it exists), to compare with the canonical workdirs in
/// the labels.
fn absolute(dir: &std::path::Path) -> PathBuf {
    dir.canonicalize().unwrap_or_else(|_| {
        std::env::current_dir()
            .map(|cwd| cwd.join(dir))
            .unwrap_or_else(|_| dir.to_path_buf())
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
    let rule = "the Podman service is on another machine; its state volumes name that machine's project \
                directories, which cannot be checked from here. Run it there, or remove a volume with \
                `podman volume rm`";
    CommandError::invalid("ags gc --state", rule).into()
}

/// `ags gc --forget DIR…` (`workspace::written`).
fn forget(paths: &crate::config::Paths, dirs: &[PathBuf]) -> Result<u8, Error> {
    use crate::workspace::written;
    for dir in dirs {
        let dir = absolute(dir);
        let shown = crate::text::escape_line(&dir.display().to_string());
        let file = written::file(paths);
        match written::forget(paths, &dir) {
            Ok(true) => println!("forgot {shown}: programs in it may run from PATH again"),
            Ok(false) => println!("{shown} was not in {}", file.display()),
            Err(source) => return Err(written::RecordError { file, source }.into()),
        }
    }
    Ok(0)
}
