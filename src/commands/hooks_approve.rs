//! `ags hooks approve NAME --hash SHA256`: record an approval for a pinned hash without running
//! the hook, so that a CI image can be provisioned where no prompt can ever be answered. The hash
//! is computed from the declaration and the entrypoint bytes as a launch computes it; any other
//! hash (a changed entrypoint, arguments, timeout or config) is refused here and at launch.

use crate::error::CommandError;
use std::path::PathBuf;

use super::hooks_admin::select_one;
use super::run::load_config;
use crate::Error;
use crate::cli::GlobalArgs;
use crate::config::HookEvent;
use crate::hooks::HookError;
use crate::hooks::entrypoint::PreparedHook;
use crate::hooks::trust::{ApprovalRecord, TrustStore, is_hash};

/// Approve the active hook `name` (of `event`) when its approval hash is exactly `hash`.
pub fn approve(
    global: &GlobalArgs,
    name: &str,
    hash: &str,
    event: Option<HookEvent>,
    workdir: &Option<PathBuf>,
) -> Result<u8, Error> {
    if !is_hash(hash) {
        let rule =
            "a pinned approval needs the full hash (64 lowercase hex digits, as `ags hooks list` prints)";
        return Err(CommandError::NotApproved(Box::new(CommandError::invalid(
            format!("--hash {hash:?}"),
            rule,
        )))
        .into());
    }
    let config = load_config(global, workdir.clone())?;
    let decls = config.all_hooks();
    // Fails (naming the current hashes) when no active declaration of that name has this hash.
    let decl = select_one(&decls, name, event, Some(hash)).map_err(|e| match e {
        Error::Command(e) => CommandError::NotApproved(Box::new(e)).into(),
        e => e,
    })?;
    let hook = PreparedHook::load(decl).map_err(HookError::from)?;
    if hook.hash != hash {
        // The entrypoint changed between the two reads.
        let rule = format!("its approval hash is now {}, not the pinned {hash}", hook.hash);
        return Err(
            CommandError::NotApproved(Box::new(CommandError::invalid(format!("hook {name}"), rule))).into(),
        );
    }
    let store = TrustStore::open(&config.paths, None).map_err(HookError::from)?;
    let record = ApprovalRecord::new(&hook.decl).with_entrypoint(&hook.entrypoint);
    store.approve(&hook.hash, &record).map_err(HookError::from)?;
    println!(
        "approved {} hook {name} (hash {hash}) without running it; any other hash still needs approval",
        hook.decl.event
    );
    Ok(0)
}
