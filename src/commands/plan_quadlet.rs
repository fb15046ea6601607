//! `ags plan --format quadlet`: the launch as Quadlet units (docs/quadlet.md), printed or
//! written into a unit directory; the seccomp profile they name is written where a launch
//! writes it.

use std::io::Write;
use std::path::Path;

use crate::Error;
use crate::error::CommandError;
use crate::launch::LaunchError;
use crate::plan::{LaunchPlan, PlanError, quadlet};

/// Print the units of `plan` (each after a `# ---- FILE` line), or write them into `dir`.
pub(super) fn print(plan: &LaunchPlan, dir: Option<&Path>) -> Result<(), Error> {
    let seccomp = crate::launch::seccomp::write_profile(&plan.seccomp_dir)
        .map_err(|e| Error::Launch(LaunchError::Seccomp(e)))?;
    let units = quadlet::export(plan, &seccomp).map_err(PlanError::from)?;
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
