//! The `ags` binary: parse arguments, run, map the outcome to an exit code.
//!
//! Everything else lives in the library (`src/lib.rs`), so integration tests and the OCI hook
//! program use the same types.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    if let Some(code) = ags::hooks::runner::watchdog::run_if_requested() {
        return code;
    }
    if let Err(e) = ags::hardening::protect_process() {
        eprintln!("ags: cannot protect its memory from core dumps: {e}");
        return ExitCode::from(125);
    }
    ags::hooks::runner::watchdog::enable("/proc/self/exe".into());
    ags::trace::init();
    let cli = ags::cli::Cli::parse();
    match ags::run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            eprintln!("ags: {}", ags::error::render(&err));
            ExitCode::from(err.exit_code())
        }
    }
}
