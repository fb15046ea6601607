//! Timing marks of a launch: each mark records when a step was reached (for `--report`'s phase
//! timings, see `launch::report`), and with `AGS_TRACE=1` also prints the milliseconds since the
//! process started to stderr (`ags-trace: 12.3 ms created`). Marks carry step names only, never
//! data.

use std::sync::{Mutex, OnceLock};
use std::time::Instant;

struct State {
    start: Instant,
    print: bool,
    marks: Mutex<Vec<(&'static str, Instant)>>,
}

fn state() -> &'static State {
    static STATE: OnceLock<State> = OnceLock::new();
    STATE.get_or_init(|| State {
        start: Instant::now(),
        print: std::env::var_os("AGS_TRACE").is_some_and(|v| v == "1"),
        marks: Mutex::new(Vec::new()),
    })
}

/// Start the clock (call first thing in `main`; later marks are relative to it).
pub fn init() {
    let _ = state();
}

/// Record that `step` was reached now (and print it when tracing is on).
pub fn mark(step: &'static str) {
    let s = state();
    let now = Instant::now();
    s.marks
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push((step, now));
    if s.print {
        eprintln!(
            "ags-trace: {:.1} ms {step}",
            now.duration_since(s.start).as_secs_f64() * 1000.0
        );
    }
}

/// When `step` was first reached, if it was.
pub fn reached(step: &str) -> Option<Instant> {
    state()
        .marks
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .find(|(s, _)| *s == step)
        .map(|(_, t)| *t)
}
