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
//! - [`git_layout`]: the git data outside the read-write mounts that a checkout's `.git` may
//!   have mounted (a linked worktree's common dir, a submodule's git dir, the repository above
//!   a subdirectory), only when git would accept the pair and no agent can have written it
//!   (or, for a linked worktree's entry, a running launch holds it fixed).
//! - [`user_paths`]: paths the user names for `ags` to read or write (`--env-file`, `--report`),
//!   resolved with no planted symlink on the way and opened without following any.
//! - `protected`: the project files host tools run on their own (agent settings, editor tasks,
//!   CI): the table, and which are mounted read-only, watched or allowed in a launch;
//!   `protected_state` compares them before and after the launch and moves aside what changed.
//! - `host_programs`: the `ssh` and `op` that run on the host, found outside every
//!   agent-writable directory (or pinned), and the `PATH` hooks get without those directories.
//! - `written`: the read-write mounts of every launch, remembered after it ended, so that a
//!   program an agent left there is never run from `PATH` (`ags gc --forget DIR` after review).
//! - `quarantine`: the one way a planted piece is moved aside (`NAME.ags-quarantine`), for the
//!   git check and the protected files; what cannot be moved ends the launch with 125.
//! - `git_inventory`: the git dirs, `.git` files and the config and hooks git runs, recorded
//!   before a launch and compared after it, so that what the agent planted or moved into place
//!   is found by state, never by timestamps.
//! - `git_commits`: the commits a launch made (the refs that moved, from `git_inventory`), read
//!   with the host's git for protected files that never reached the disk or the index.

pub mod git_commits;
pub mod git_inventory;
pub mod git_layout;
pub mod host_programs;
pub(crate) mod pairs;
pub mod protected;
pub mod protected_state;
pub mod quarantine;
pub mod user_paths;
pub mod written;
