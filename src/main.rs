//! The `ags` binary: parse arguments, run, map the outcome to an exit code.
//!
//! Everything else lives in the library (`src/lib.rs`), so integration tests and the OCI hook
//! program use the same types.

use std::process::ExitCode;

fn main() -> ExitCode {
    if let Some(code) = ags::process::watchdog::run_if_requested() {
        return code;
    }
    if let Err(e) = ags::hardening::protect_process() {
        eprintln!("ags: cannot protect its memory from core dumps: {e}");
        return ExitCode::from(125);
    }
    ags::process::watchdog::enable("/proc/self/exe".into());
    ags::trace::init();
    let cli = match ags::cli::parse(std::env::args_os()) {
        Ok(cli) => cli,
        // `--help` and `--version` print to stdout and succeed; a usage error exits 125 like
        // every other failure of ags itself (podman run's convention), not clap's 2.
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
