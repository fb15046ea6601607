//! `ags plan --format quadlet`: the launch as Quadlet units (docs/quadlet.md), printed or
//! written into a unit directory; the seccomp profile they name is written where a launch
//! writes it, and the record of the unit's workspace check (`ags unit-check`) into ags's state
//! directory.

use std::io::Write;
use std::path::Path;

use crate::Error;
use crate::config::Config;
use crate::error::CommandError;
use crate::launch::LaunchError;
use crate::plan::{LaunchPlan, PlanError, RunSettings, quadlet};

/// Print the units of `plan` (each after a `# ---- FILE` line), or write them into `dir`. The
/// record of the unit's workspace check (`ags unit-check`) is written with them.
pub(super) fn print(
    config: &Config,
    settings: &RunSettings,
    plan: &LaunchPlan,
    dir: Option<&Path>,
) -> Result<(), Error> {
    let seccomp = crate::launch::seccomp::write_profile(&plan.seccomp_dir)
        .map_err(|e| Error::Launch(LaunchError::Seccomp(e)))?;
    let ags = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .map_err(CommandError::io("finding this ags program (the unit runs it)"))?;
    // Written once the export is known good: a refused export leaves no record behind.
    let record = super::unit_check::record_path(config, plan);
    let check = quadlet::Check {
        ags: &ags,
        record: &record,
    };
    let units = quadlet::export(plan, &seccomp, &check).map_err(PlanError::from)?;
    super::unit_check::write_record(config, settings, plan, &record)?;
    match dir {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(CommandError::io(format!("creating {}", dir.display())))?;
            for unit in &units {
                let path = dir.join(&unit.file_name);
                crate::fsutil::atomic_write(&path, unit.text.as_bytes(), 0o644)
                    .map_err(CommandError::io(format!("writing {}", path.display())))?;
                eprintln!("ags: wrote {}", path.display());
            }
            eprintln!(
                "ags: `systemctl{} daemon-reload`, then `systemctl{} start {}` runs it (docs/quadlet.md)",
                user_flag(),
                user_flag(),
                units[0].file_name.trim_end_matches(".container")
            );
        }
        None => {
            let mut out = std::io::stdout().lock();
            for unit in &units {
                writeln!(out, "# ---- {}\n{}", unit.file_name, unit.text).map_err(Error::Output)?;
            }
            out.flush().map_err(Error::Output)?;
        }
    }
    Ok(())
}

fn user_flag() -> &'static str {
    if nix::unistd::geteuid().is_root() {
        ""
    } else {
        " --user"
    }
}
