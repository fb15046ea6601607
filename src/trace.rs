//! Opt-in timing marks for profiling a launch: with `AGS_TRACE=1`, each mark prints the
//! milliseconds since the process started to stderr (`ags-trace: 12.3 ms created`). Marks carry
//! step names only, never data.

use std::sync::OnceLock;
use std::time::Instant;

fn state() -> &'static Option<Instant> {
    static STATE: OnceLock<Option<Instant>> = OnceLock::new();
    STATE.get_or_init(|| {
        std::env::var_os("AGS_TRACE")
            .filter(|v| v == "1")
            .map(|_| Instant::now())
    })
}

/// Start the clock (call first thing in `main`; later marks are relative to it).
pub fn init() {
    let _ = state();
}

/// Print a mark when tracing is on.
pub fn mark(step: &str) {
    if let Some(start) = state() {
        eprintln!(
            "ags-trace: {:.1} ms {step}",
            start.elapsed().as_secs_f64() * 1000.0
        );
    }
}
