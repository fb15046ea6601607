//! Git, one capability in one folder (docs/decisions/0009-capability-folders.md): the rules and
//! the host's setup as data (`model`: which configuration keys run programs, which parts of a
//! repository are mounted read-only, the host's identity), what the plan gives the agent
//! (`plan`), and the execution around a launch (`guard`: the missing pieces created before the
//! container; `quarantine`: the check after it). Every read of the workspace's git metadata
//! goes through `crate::workspace` (issue 22: one place reads what the agent can write).

pub mod guard;
pub mod model;
pub mod plan;
pub mod quarantine;
