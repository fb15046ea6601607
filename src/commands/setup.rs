//! `ags setup oci-hooks`: show what installing the OCI hooks changes, ask, write, and say that
//! the Podman service must be restarted to read its new hooks_dir.

use crate::error::CommandError;
use std::path::PathBuf;

use crate::cli::{OciHooksArgs, SetupArgs, SetupCommand};
use crate::config::Paths;
use crate::events::oci::definitions::HOOK_PROGRAM;
use crate::events::oci::install::{self, InstallOptions, SetupError};
use crate::events::oci::{ConfEnv, ServiceKind};
use crate::{Error, prompt};

/// Run an `ags setup` subcommand.
pub fn setup(args: &SetupArgs) -> Result<u8, Error> {
    match &args.command {
        SetupCommand::OciHooks(a) => oci_hooks(a),
    }
}

fn oci_hooks(args: &OciHooksArgs) -> Result<u8, Error> {
    let paths = Paths::from_env()?;
    let kind = ServiceKind::current();
    let program = match &args.hook_program {
        Some(p) => std::path::absolute(p).map_err(CommandError::io("--hook-program"))?,
        None => default_program()?,
    };
    let plan = install::plan(&InstallOptions {
        kind,
        env: ConfEnv::from_env(&paths.config_home),
        hooks_dir: args.hooks_dir.clone(),
        program,
    })?;
    if plan.changes.is_empty() {
        println!(
            "ags's OCI hooks are installed in {} (running {}) and the service's hooks_dir includes it; nothing to change",
            plan.hooks_dir.display(),
            plan.program.display()
        );
        return Ok(0);
    }
    for change in &plan.changes {
        print!("{}", install::diff(change));
    }
    for note in &plan.notes {
        println!("note: {note}");
    }
    if !args.yes {
        if !prompt::has_terminal() {
            return Err(CommandError::NoTerminal {
                command: "ags setup oci-hooks",
                consent: "apply these changes",
            }
            .into());
        }
        let question = "Apply these changes?";
        let text = "\nThe hook program runs for every ags container, as the Podman service's user.\n";
        if !prompt::confirm(text, question).map_err(CommandError::CannotAsk)? {
            println!("nothing was changed");
            return Ok(1);
        }
    }
    install::apply(&plan)?;
    println!("installed; now restart the Podman service so that it reads the new hooks_dir:");
    println!("  {}", restart_hint(kind));
    println!("`ags doctor` reports whether the hooks are active.");
    Ok(0)
}

fn default_program() -> Result<PathBuf, Error> {
    let exe = std::env::current_exe().map_err(CommandError::io("locating ags itself"))?;
    let program = exe.with_file_name(HOOK_PROGRAM);
    if !program.is_file() {
        return Err(SetupError::Program {
            path: program,
            reason:
                "not found next to ags; build it (`cargo build --release` builds both) or pass --hook-program"
                    .into(),
        }
        .into());
    }
    Ok(program)
}

fn restart_hint(kind: ServiceKind) -> &'static str {
    match kind {
        ServiceKind::Rootful => {
            "systemctl restart podman.service podman.socket (or restart your `podman system service` process)"
        }
        ServiceKind::Rootless => {
            "systemctl --user restart podman.service podman.socket (or restart your `podman system service` process)"
        }
    }
}
