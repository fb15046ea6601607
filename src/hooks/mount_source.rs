//! Stage 2 (materialization): contextual checks of the hook mount sources on the host. Does I/O
//! (resolution only; nothing is created or modified).
//!
//! Input: the resolved mounts (statically valid [`HostSource`]s with their hooks) and the launch's
//! containment [`Rules`] (protected locations, the workdir and `--add-dir`s as writable roots).
//! Output: the physical host path of each source, or the first [`ContainmentError`].
//!
//! Every read-write hook mount is itself a writable root of the launch, so a source inside
//! another hook's read-write mount is refused like one inside the workdir. The rules are those
//! of [`crate::containment`]: no symlink planted where an agent writes, no symlink outside the
//! system's layout, no overlap with protected storage, nothing strictly inside a directory an
//! agent can write. `commands::run` repeats the check right before creating the container, with
//! what only Podman knows (its storage, other running launches).

use std::path::PathBuf;

use crate::containment::{self, ContainmentError, Role, Rules, WritableRoot};

use super::policy::HostSource;
use super::protocol::MountMode;
use super::resolve::Origin;
use super::validate::HookMount;

/// The hook name of a mount's origin (for messages and roles).
pub fn hook_name(origin: &Origin) -> String {
    match origin {
        Origin::GlobalHook { name, .. } | Origin::ProjectHook { name, .. } => name.clone(),
        Origin::Default | Origin::Cli => "?".into(),
    }
}

/// Add every read-write hook mount of `mounts` to `rules` as a writable root.
pub fn add_writable_roots(rules: &mut Rules, mounts: &[(HookMount, Origin)]) {
    for (m, origin) in mounts.iter().filter(|(m, _)| m.mode == MountMode::Rw) {
        let Ok(res) = crate::safepath::resolve(m.source.as_path(), crate::safepath::Missing::Append) else {
            continue;
        };
        rules.writable(WritableRoot {
            path: res.path,
            owner: format!("the read-write mount of hook `{}`", hook_name(origin)),
            running: false,
        });
    }
}

/// Check every source; the physical paths come back index for index.
pub fn check_mount_sources(
    mounts: &[(HookMount, Origin)],
    rules: &Rules,
) -> Result<Vec<PathBuf>, ContainmentError> {
    let mut rules = rules.clone();
    add_writable_roots(&mut rules, mounts);
    mounts
        .iter()
        .map(|(m, origin)| check_mount_source(&m.source, &hook_name(origin), &rules))
        .collect()
}

/// Check one source of hook `hook` and return its physical path.
pub fn check_mount_source(
    source: &HostSource,
    hook: &str,
    rules: &Rules,
) -> Result<PathBuf, ContainmentError> {
    let role = Role::HookMount { hook: hook.into() };
    containment::check(source.as_path(), &role, rules).map(|c| c.path)
}

#[cfg(test)]
#[path = "mount_source_tests.rs"]
mod tests;
