//! `ags setup …` arguments.

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// `ags setup`.
#[derive(Debug, Args)]
pub struct SetupArgs {
    #[command(flatten)]
    pub unused_url: super::UnusedUrl,
    #[command(subcommand)]
    pub command: SetupCommand,
}

/// `ags setup` subcommands.
#[derive(Debug, Subcommand)]
pub enum SetupCommand {
    /// Install ags's OCI hooks (poststart/poststop records for crash recovery) into a hooks
    /// directory and that directory into the Podman service's hooks_dir. Shows the changes and
    /// asks first. Root: the rootful service; anyone else: their rootless service.
    OciHooks(OciHooksArgs),
}

/// `ags setup oci-hooks`.
#[derive(Debug, Args)]
pub struct OciHooksArgs {
    /// Hooks directory (default: /usr/share/containers/oci/hooks.d for root,
    /// $XDG_CONFIG_HOME/containers/oci/hooks.d otherwise).
    #[arg(long, value_name = "DIR")]
    pub hooks_dir: Option<PathBuf>,
    /// The ags-oci-hook program the definitions run (default: next to this ags).
    #[arg(long, value_name = "PATH")]
    pub hook_program: Option<PathBuf>,
    /// Apply without asking.
    #[arg(long, short = 'y')]
    pub yes: bool,
}
