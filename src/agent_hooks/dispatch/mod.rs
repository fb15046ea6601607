//! The dispatcher (`ags-agent-hook`, docs/agent-hook-handlers.md): the program every agent's
//! generated hook wiring runs inside the container. It normalises the agent's native hook
//! input ([`input`]), checks the built-in guard ([`guard`]), runs the `[[agent_hook]]`
//! handlers of the handlers file ([`handlers`]) each isolated ([`run`]), answers in the agent's
//! own protocol ([`answer`]) and sends records to the host ([`send`]); [`flow`] ties one
//! invocation together.
//!
//! These modules are std only: `build.rs` compiles them, through `main.rs`, into a statically
//! linked program without crate dependencies (like the egress forwarder), so it runs in any
//! image. The crate compiles them too, for the plan (the handlers file format) and the tests.
//! Being a program of its own, the dispatcher spawns its handlers and writes to its socket
//! itself (the crate's `process` and `podman` modules are not available to it).

pub mod answer;
pub mod flow;
pub mod guard;
pub mod handlers;
pub mod input;
pub mod json;
pub mod run;
pub mod send;
pub mod settings;

// What the modules above reach as `super::…`, here and in `main.rs`.
use super::{Event, matrix};

/// The statically linked dispatcher built by `build.rs`.
pub const PROGRAM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/ags-agent-hook"));

/// File name of the installed dispatcher under `<cache>/agent-hooks/`, named by its content.
pub const INSTALLED_NAME: &str = concat!("ags-agent-hook-", env!("AGS_AGENT_HOOK_ID"));

#[cfg(test)]
mod tests;
