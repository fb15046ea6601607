//! Orchestration: one function per subcommand. This is the only module that calls several
//! stages; each function reads as the sequence of stage calls it performs.

mod allow;
mod completions;
mod doctor;
mod explain;
mod gc;
mod git_host;
mod guard_neighbours;
mod hooks;
mod hooks_admin;
mod hooks_approve;
mod hooks_lifecycle;
mod host_paths;
mod image;
mod launch_input;
mod log;
mod login;
mod plan;
mod plan_quadlet;
mod run;
mod setup;
mod unit_check;
mod verify;

use crate::Error;
use crate::cli::{Cli, Command};

/// Run the subcommand selected on the command line.
pub fn dispatch(cli: Cli) -> Result<u8, Error> {
    match cli.command {
        None => run::run(&cli.global, &cli.run),
        Some(Command::Plan(args)) => plan::plan(&cli.global, &args),
        Some(Command::Explain(args)) => explain::explain(&cli.global, &args),
        Some(Command::Allow(args)) => allow::allow(&args),
        Some(Command::Gc(args)) => gc::gc(&cli.global, &args),
        Some(Command::Hooks(args)) => hooks::hooks(&cli.global, &args),
        Some(Command::Image(args)) => image::image(&cli.global, &args),
        Some(Command::Doctor(args)) => doctor::doctor(&cli.global, &args),
        Some(Command::Setup(args)) => setup::setup(&args),
        Some(Command::Log(args)) => log::log(&cli.global, &args),
        Some(Command::Login(args)) => login::login(&cli.global, &args),
        Some(Command::Completions(args)) => completions::completions(args.shell),
        Some(Command::Man) => completions::man(),
        Some(Command::UnitCheck(args)) => unit_check::unit_check(&args),
        Some(Command::Verify(args)) => verify::verify(&args),
    }
}

/// The Podman service the command line asks for (`--url`, `--connection`, `--identity`); an
/// `ssh` it starts is not taken from the current directory ([`target_for`] without a config).
pub(crate) fn target(global: &crate::cli::GlobalArgs) -> crate::podman::Target {
    target_for(global, None, Vec::new())
}

/// [`target`] for a command that loaded `config`: `[ssh] path` applies, and neither the
/// project directory nor `writable` (this launch's read-write mounts) may provide `ssh`.
pub(crate) fn target_for(
    global: &crate::cli::GlobalArgs,
    config: Option<&crate::config::Config>,
    writable: Vec<crate::containment::WritableRoot>,
) -> crate::podman::Target {
    // Earlier launches in the repository could write all of it, not only this workdir.
    let project = match config {
        Some(c) => vec![
            (c.workdir.clone(), "the workdir"),
            (c.project.clone(), "the project directory"),
        ],
        None => std::env::current_dir()
            .ok()
            .map(|d| (d, "the current directory"))
            .into_iter()
            .collect(),
    };
    let mut agent_writable: Vec<_> = project
        .into_iter()
        .map(|(path, owner)| crate::containment::WritableRoot::new(path, owner))
        .collect();
    agent_writable.extend(writable);
    crate::podman::Target {
        url: global.url.clone(),
        connection: global.connection.clone(),
        identity: global.identity.clone(),
        ssh: crate::podman::SshProgram {
            pinned: config.and_then(|c| c.user.ssh_path.clone()),
            agent_writable,
        },
    }
}

/// The URL of the service named by the command line or the environment (a connection looked
/// up), for the protected-path rules; `None` when the default sockets apply or the lookup
/// fails (connecting reports that).
pub(crate) fn chosen_url(global: &crate::cli::GlobalArgs) -> Option<String> {
    let env = |k: &str| std::env::var(k).ok();
    let euid = nix::unistd::geteuid().as_raw();
    match crate::podman::choose(&target(global), &env, euid) {
        Ok(Some(c)) => Some(c.candidate.url),
        _ => global.url.clone(),
    }
}

/// A single-threaded tokio runtime: `ags` is I/O-bound and small. Dropped without waiting
/// for the blocking stdin reader (see [`finish`]).
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(Error::Runtime)
}

/// Shut the runtime down without waiting for a blocked stdin read.
pub(crate) fn finish(rt: tokio::runtime::Runtime) {
    rt.shutdown_background();
}
