//! Orchestration: one function per subcommand. This is the only module that calls several
//! stages; each function reads as the sequence of stage calls it performs.

mod completions;
mod doctor;
mod events;
mod gc;
mod guard_neighbours;
mod hooks;
mod hooks_admin;
mod hooks_approve;
mod hooks_lifecycle;
mod host_paths;
mod image;
mod launch_input;
mod log;
mod plan;
mod recover;
mod run;
mod setup;

use crate::Error;
use crate::cli::{Cli, Command};

/// Run the subcommand selected on the command line.
pub fn dispatch(cli: Cli) -> Result<u8, Error> {
    match cli.command {
        None => run::run(&cli.global, &cli.run),
        Some(Command::Plan(args)) => plan::plan(&cli.global, &args),
        Some(Command::Gc(args)) => gc::gc(&cli.global, &args),
        Some(Command::Hooks(args)) => hooks::hooks(&cli.global, &args),
        Some(Command::Image(args)) => image::image(&cli.global, &args),
        Some(Command::Doctor(args)) => doctor::doctor(&cli.global, &args),
        Some(Command::Setup(args)) => setup::setup(&args),
        Some(Command::Log(args)) => log::log(&cli.global, &args),
        Some(Command::Completions(args)) => completions::completions(args.shell),
        Some(Command::Man) => completions::man(),
    }
}

/// A single-threaded tokio runtime: `ags` is I/O-bound and small. Dropped without waiting
/// for the blocking stdin reader (see [`finish`]).
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(Error::Output)
}

/// Shut the runtime down without waiting for a blocked stdin read.
pub(crate) fn finish(rt: tokio::runtime::Runtime) {
    rt.shutdown_background();
}
