//! The boundary between the host and what the agent can write (issue 22, docs/security.md,
//! "The workspace is data").
//!
//! Everything a container can write — the workdir, `--add-dir`s, other read-write mounts, the
//! agent's state volumes, its output — may have been crafted by the agent to reach the host.
//! This module owns every read of such state that can decide what the host mounts or runs, and
//! hands the rest of `ags` only values it has proven: a git layout git itself would accept and
//! that lies outside the agent's reach, an inventory of git metadata compared before and after a
//! launch, a host program resolved outside every agent-writable directory, a user-named path
//! resolved without a symlink in any component. Code outside this module does not open
//! workspace files to make such decisions; a reviewer lists every such read from here.
//!
//! The rooms:
//! - `git_inventory`: the git dirs, `.git` files and the config and hooks git runs, recorded
//!   before a launch and compared after it, so that what the agent planted or moved into place
//!   is found by state, never by timestamps.

pub mod git_inventory;
