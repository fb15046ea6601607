//! Stage 2 (lifecycle events): `started` and `finished` hooks — the same declarations, trust and
//! runner as prepare hooks, with their own context, an inert `{"version":1}` response, and
//! failures that are reported but never change the launch's outcome.
//!
//! - [`protocol`]: the wire types (pure; their schemas and describe texts are in
//!   [`super::schema`]);
//! - [`run`]: running one event's hooks, each independently (spawns through the runner).
//!
//! When the events happen, and what survives a crash of `ags`, is decided by the launch
//! (`events::session`, `events::session::recover`); see docs/lifecycle.md.

pub mod protocol;
pub mod run;

pub use protocol::{Ending, FinishedContext, LaunchFacts, StartedContext, parse_lifecycle_response};
pub use run::{EventInput, EventReport, run_event};

use super::HookError;
use super::approve;
use super::entrypoint::PreparedHook;
use super::trust::TrustStore;
use crate::config::HookDecl;

/// Read the entrypoints of `decls` (executing nothing) and make sure every one is approved,
/// asking on the terminal when `interactive` (`workdir`: the directory the agent can write).
pub fn load_approved(
    store: &TrustStore,
    decls: &[HookDecl],
    interactive: bool,
    workdir: &std::path::Path,
) -> Result<Vec<PreparedHook>, HookError> {
    let hooks = decls
        .iter()
        .map(|d| PreparedHook::load(d.clone()))
        .collect::<Result<Vec<_>, _>>()?;
    approve::ensure_approved(store, &hooks, interactive, workdir)?;
    Ok(hooks)
}
