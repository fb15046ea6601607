//! Agent hooks inside the sandbox (issue #14, docs/agent-hook-handlers.md, docs/agent-hooks.md).
//!
//! Every agent `ags` launches has its own hook mechanism (command hooks in a settings file for
//! claude, codex and gemini; in-process plugins or extensions for opencode and pi). `ags` wires
//! all of them, read-only, to one program, the **dispatcher** (`ags-agent-hook`, a second binary
//! of this crate), mounted into the container under [`CONTAINER_DIR`]. The dispatcher turns the
//! agent's native hook input into one normalised [`Event`], runs the handlers the user declared
//! in `[[agent_hook]]` tables (and the built-in `[agent_guard]`) inside the container, answers in
//! the agent's own protocol, and sends one record per event and per handler run to the `ags`
//! process of the launch over a per-launch unix socket; `ags` stamps, scrubs and appends them to
//! a JSONL log on the host that the container cannot reach.
//!
//! This module owns the fixed interface between the host and the container (the paths below and
//! the normalised event names). The hook matrix and the per-agent wiring files live in `matrix`
//! and `wiring`.

use serde::{Deserialize, Serialize};

pub mod config;
pub mod dispatch;
pub mod install;
pub mod log;
pub mod matrix;
#[cfg(test)]
#[path = "matrix_tests.rs"]
mod matrix_tests;
pub mod outside;
pub mod plan;
pub mod record;
pub mod wiring;

mod interface;
pub use interface::*;

// Serde for [`Event`] lives here: `interface.rs` is std only, because the dispatcher (built by
// `build.rs` without crate dependencies) compiles it too.
impl Serialize for Event {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_str_and_serde() {
        for e in Event::ALL {
            assert_eq!(e.as_str().parse::<Event>(), Ok(e));
            assert_eq!(serde_json::to_string(&e).unwrap(), format!("\"{e}\""));
        }
        assert!("PreToolUse".parse::<Event>().is_err());
    }

    #[test]
    fn paths_live_under_the_container_dir() {
        for p in [DISPATCHER_PATH, HANDLERS_PATH, SOCKET_DIR, SOCKET_PATH] {
            assert!(p.starts_with(CONTAINER_DIR), "{p}");
        }
        assert!(DISPATCHER_PATH.ends_with(DISPATCHER_PROGRAM));
    }
}
