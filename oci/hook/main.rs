//! `ags-oci-hook`: the OCI hook program of `ags` (poststart and poststop, installed by
//! `ags setup oci-hooks`). Reads the OCI state on stdin, records the event in the launching
//! user's spool, removes that launch's staging leftovers. Everything lives in
//! `ags::events::oci::record`; this file only wires stdin, argv and stderr.
//!
//! It always exits 0: runc kills a container whose poststart hook fails, and recording must never
//! cost the agent its run. Problems go to stderr, which the runtime or conmon logs.

use std::io::Read;
use std::process::ExitCode;
use std::time::SystemTime;

use ags::events::oci::record::{self, MAX_STATE_BYTES};

fn main() -> ExitCode {
    let stage = std::env::args().nth(1).unwrap_or_default();
    let mut state = Vec::new();
    let read = std::io::stdin()
        .take(MAX_STATE_BYTES as u64 + 1)
        .read_to_end(&mut state);
    let result = match read {
        Ok(_) => record::run(&stage, &state, SystemTime::now()),
        Err(e) => Err(record::OciHookError::State(e.to_string())),
    };
    match result {
        Err(e) if !e.is_not_ours() => eprintln!("ags-oci-hook: {e}"),
        _ => {}
    }
    ExitCode::SUCCESS
}
