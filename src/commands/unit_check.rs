//! `ags unit-check before|after RECORD`: the workspace check a Quadlet unit runs around its
//! container (docs/quadlet.md). `before` takes the inventory of the git metadata and the
//! protected project files, as a launch does before its agent; `after` compares the workspace
//! with it, moves aside what the agent planted and reports it (the unit's journal). The record
//! and the inventory are ags's own files in its state directory: private, never the agent's.

use std::path::{Path, PathBuf};

use crate::Error;
use crate::cli::{UnitCheckArgs, UnitPhase};
use crate::config::Config;
use crate::containment::WritableRoot;
use crate::error::CommandError;
use crate::launch::watch::{Settled, UnitWatch};
use crate::plan::{LaunchPlan, RunSettings};

/// The largest record or inventory read back (a big repository's inventory is tens of MB).
const MAX_BYTES: u64 = 512 << 20;

/// Run one phase of the unit's check.
pub fn unit_check(args: &UnitCheckArgs) -> Result<u8, Error> {
    let watch: UnitWatch = read(&args.record, "the unit's record")?;
    let inventory = inventory_path(&args.record);
    let rt = super::runtime()?;
    match args.phase {
        UnitPhase::Before => {
            // An earlier `after` that did not finish (killed, crashed) left its inventory: what
            // the agent planted then would become the new baseline (unit-check attack, F2).
            if inventory.exists() {
                let rule = format!(
                    "the check after an earlier run of this unit did not finish; run `ags unit-check after {}` first and read what it reports",
                    args.record.display()
                );
                return Err(CommandError::invalid(inventory.display().to_string(), rule).into());
            }
            let settled = rt.block_on(watch.before());
            let bytes = serde_json::to_vec(&settled).map_err(|e| {
                CommandError::invalid(
                    inventory.display().to_string(),
                    format!("the inventory cannot be written ({e}); the unit does not start"),
                )
            })?;
            crate::fsutil::atomic_write(&inventory, &bytes, 0o600)
                .map_err(CommandError::io(format!("writing {}", inventory.display())))?;
            eprintln!("ags: unit-check: the workspace's inventory is taken");
            Ok(0)
        }
        UnitPhase::After => {
            let settled: Settled = read(&inventory, "the inventory taken before the container")?;
            let mut report = String::new();
            let unmoved = rt.block_on(watch.after(settled, &mut report));
            crate::launch::notices::say(&report);
            std::fs::remove_file(&inventory)
                .map_err(CommandError::io(format!("removing {}", inventory.display())))?;
            if unmoved > 0 {
                return Err(crate::workspace::quarantine::LeftInPlace { count: unmoved }.into());
            }
            if report.is_empty() {
                eprintln!("ags: unit-check: nothing planted in the workspace");
            }
            Ok(0)
        }
    }
}

/// Where `before` keeps the inventory for `after`: next to the record (`NAME.json.inventory`:
/// no record's name ends so).
fn inventory_path(record: &Path) -> PathBuf {
    let mut path = record.as_os_str().to_owned();
    path.push(".inventory");
    PathBuf::from(path)
}

/// A private file of ags's (yours, no group or other bits, not a link), parsed.
fn read<T: serde::de::DeserializeOwned>(path: &Path, what: &str) -> Result<T, Error> {
    let name = path.display().to_string();
    crate::fsutil::check_private_file(path)
        .map_err(|e| CommandError::invalid(&name, format!("{what} must be a private file of yours ({e})")))?;
    let file = std::fs::File::open(path).map_err(CommandError::io(format!("reading {name}")))?;
    let mut bytes = Vec::new();
    use std::io::Read;
    file.take(MAX_BYTES)
        .read_to_end(&mut bytes)
        .map_err(CommandError::io(format!("reading {name}")))?;
    serde_json::from_slice(&bytes).map_err(|e| {
        let rule =
            format!("{what} does not parse ({e}); write the unit again with `ags plan --format quadlet`");
        CommandError::invalid(&name, rule).into()
    })
}

/// Write the record of the check around the exported container of `plan` (ags's state
/// directory, `units/NAME.json`); its path.
pub(super) fn record(config: &Config, settings: &RunSettings, plan: &LaunchPlan) -> Result<PathBuf, Error> {
    let path = record_path(config, plan);
    write_record(config, settings, plan, &path)?;
    Ok(path)
}

/// Where the record of the check around the exported container of `plan` goes.
pub(super) fn record_path(config: &Config, plan: &LaunchPlan) -> PathBuf {
    let name = &plan.container_name;
    config
        .paths
        .state_dir()
        .join("units")
        .join(format!("{name}.json"))
}

/// Write the record of the check around the exported container of `plan` at `path`
/// ([`record_path`]).
pub(super) fn write_record(
    config: &Config,
    settings: &RunSettings,
    plan: &LaunchPlan,
    path: &Path,
) -> Result<(), Error> {
    let watch = unit_watch(config, settings, plan);
    if let Some(dir) = path.parent() {
        crate::fsutil::ensure_private_dir(dir)
            .map_err(|e| CommandError::invalid(dir.display().to_string(), e.to_string()))?;
    }
    let bytes = serde_json::to_vec(&watch).map_err(|e| {
        let rule = format!("the unit's record cannot be written ({e}): a path that is not UTF-8?");
        CommandError::invalid(path.display().to_string(), rule)
    })?;
    crate::fsutil::atomic_write(path, &bytes, 0o600)
        .map_err(CommandError::io(format!("writing {}", path.display())))?;
    Ok(())
}

/// What a unit's (or a played Pod's) check compares, as a launch's: the git roots, guards and
/// protected files of the plan, its read-write mounts, `[git]`.
fn unit_watch(config: &Config, settings: &RunSettings, plan: &LaunchPlan) -> UnitWatch {
    let roots = super::git_host::git_roots(config, &settings.mounts);
    let writable = plan
        .read_write_sources()
        .map(|source| WritableRoot::new(source.clone(), "the unit's read-write mount"))
        .collect();
    UnitWatch {
        git_roots: (config.user.protect_git).then(|| super::git_host::scan_roots(&roots, &plan.git_guards)),
        guards: plan.git_guards.clone(),
        protection: plan.protected.clone(),
        writable,
        git: config.user.git.clone(),
    }
}
