//! Agent hooks inside the sandbox (issue #14, docs/agent-hook-handlers.md, docs/agent-hooks.md).
//!
//! Every agent `ags` launches has its own hook mechanism (command hooks in a settings file for
//! claude, codex and gemini; in-process plugins or extensions for opencode and pi). `ags` wires
//! all of them, read-only, to one program, the **dispatcher** (`ags-agent-hook`, the std-only
//! crate `crates/agent-hook`), mounted into the container under [`CONTAINER_DIR`]. The dispatcher turns the
//! agent's native hook input into one normalised [`Event`], runs the handlers the user declared
//! in `[[agent_hook]]` tables (and the built-in `[agent_guard]`) inside the container, answers in
//! the agent's own protocol, and sends one record per event and per handler run to the `ags`
//! process of the launch over a per-launch unix socket; `ags` stamps, scrubs and appends them to
//! a JSONL log on the host that the container cannot reach.
//!
//! The fixed interface between the host and the container (the paths and the normalised event
//! names) and the hook matrix belong to the dispatcher's crate, which both sides build; this
//! module re-exports them. The per-agent wiring files live in `wiring`.

pub use ags_agent_hook::interface::*;
pub use ags_agent_hook::matrix;

pub mod calls;
pub mod config;
pub mod dispatch;
pub mod install;
pub mod log;
#[cfg(test)]
#[path = "matrix_tests.rs"]
mod matrix_tests;
pub mod outside;
pub mod plan;
pub mod record;
pub mod wiring;

/// Serde for [`Event`] (its name, as in [`Event::as_str`]), for the fields that hold one: the
/// dispatcher's crate is std only.
pub mod event_serde {
    use serde::{Deserialize, Deserializer, Serializer, de};

    use super::Event;

    /// Write `event` as its name.
    pub fn serialize<S: Serializer>(event: &Event, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(event.as_str())
    }

    /// Read an event's name.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Event, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize)]
    struct Named(#[serde(with = "event_serde")] Event);

    #[test]
    fn names_round_trip_through_str_and_serde() {
        for e in Event::ALL {
            assert_eq!(e.as_str().parse::<Event>(), Ok(e));
            let json = serde_json::to_string(&Named(e)).unwrap();
            assert_eq!(json, format!("\"{e}\""));
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
