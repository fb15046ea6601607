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
    // Argument errors exit 125 like `podman run`'s own failures (clap's default is 2); help
    // and version exit 0.
    let cli = match ags::cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() {
                ags::error::EXIT_AGS_FAILURE
            } else {
                0
            });
        }
    };
    match ags::run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            eprintln!("ags: {}", ags::error::render(&err));
            ExitCode::from(err.exit_code())
        }
    }
}
