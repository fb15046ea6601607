//! The dispatcher (`ags-agent-hook`, the crate `crates/agent-hook`, docs/agent-hook-handlers.md)
//! as `ags` carries it: the statically linked program `build.rs` makes, and the modules of the
//! crate the host side reads (the handlers file format, the settings checks).

pub use ags_agent_hook::{handlers, settings};

/// The statically linked dispatcher built by `build.rs`.
pub const PROGRAM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/ags-agent-hook"));

/// File name of the installed dispatcher under `<cache>/agent-hooks/`, named by its content.
pub const INSTALLED_NAME: &str = concat!("ags-agent-hook-", env!("AGS_AGENT_HOOK_ID"));

#[cfg(test)]
mod tests;
