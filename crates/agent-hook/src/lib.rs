//! The agent hook dispatcher (`ags-agent-hook`, docs/agent-hook-handlers.md): the program every
//! agent's generated hook wiring runs inside the container. It normalises the agent's native
//! hook input ([`input`]), checks the built-in guard ([`guard`]), runs the `[[agent_hook]]`
//! handlers of the handlers file ([`handlers`]) each isolated ([`run`]), answers in the agent's
//! own protocol ([`answer`]) and sends records to the host ([`send`]); [`flow`] ties one
//! invocation together.
//!
//! The crate also owns what the host and the container must agree on: the fixed paths and the
//! normalised events ([`interface`]) and the hook matrix ([`matrix`]); `ags` reads them from
//! here. Std only, no dependencies: `ags`'s `build.rs` compiles this crate into a statically
//! linked program, so it runs in any image. Being a program of its own, the dispatcher spawns
//! its handlers and writes to its socket itself.

pub mod answer;
pub mod flow;
pub mod guard;
pub mod handlers;
pub mod input;
pub mod interface;
pub mod json;
pub mod matrix;
pub mod run;
pub mod send;
pub mod settings;

pub use interface::*;

#[cfg(any(test, feature = "testkit"))]
pub mod fixtures;
#[cfg(test)]
#[path = "matrix_tests.rs"]
mod matrix_tests;
#[cfg(test)]
mod tests;
