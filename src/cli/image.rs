//! `ags image …` and `ags doctor` arguments.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::agents::DEFAULT_IMAGE;

/// `ags image`.
#[derive(Debug, Args)]
pub struct ImageArgs {
    #[command(subcommand)]
    pub command: ImageCommand,
}

/// `ags image` subcommands.
#[derive(Debug, Subcommand)]
pub enum ImageCommand {
    /// Build the agent image (Containerfile embedded in ags) through the Podman API.
    Build(ImageBuildArgs),
    /// Import a root-filesystem tar as an image through the Podman API.
    Import(ImageImportArgs),
}

/// `ags image build`.
#[derive(Debug, Args)]
pub struct ImageBuildArgs {
    /// Ignore the layer cache and run every step again.
    #[arg(long)]
    pub no_cache: bool,
    /// Name of the result.
    #[arg(long, short = 't', default_value = DEFAULT_IMAGE, value_name = "TAG")]
    pub tag: String,
    /// Base image (the Containerfile's ARG BASE; default localhost/ags-base:trixie, made by
    /// scripts/bootstrap-base-image). E.g. docker.io/library/debian:trixie-slim.
    #[arg(long, value_name = "IMAGE")]
    pub base: Option<String>,
    /// Build this directory (with a Containerfile or Dockerfile) instead of the agent image
    /// embedded in ags.
    #[arg(long, value_name = "DIR")]
    pub context: Option<PathBuf>,
    /// Trust this CA certificate (PEM) in the image, e.g. a TLS-intercepting proxy's
    /// (added to the context's extra-ca/; repeatable).
    #[arg(long = "ca-cert", value_name = "FILE")]
    pub ca_certs: Vec<PathBuf>,
    /// A build argument (KEY=VALUE), e.g. CLAUDE_VERSION=2.1.332.
    #[arg(long = "build-arg", value_name = "KEY=VALUE")]
    pub build_args: Vec<String>,
}

/// `ags image import`.
#[derive(Debug, Args)]
pub struct ImageImportArgs {
    /// Name of the imported image (e.g. localhost/ags-base:trixie).
    #[arg(long, value_name = "REF")]
    pub reference: String,
    /// A Containerfile instruction to apply (repeatable; default:
    /// `ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin` and `CMD ["/bin/sh"]`).
    #[arg(long = "change", value_name = "INSTRUCTION")]
    pub changes: Vec<String>,
    /// The root filesystem tar (optionally compressed), or '-' for standard input.
    #[arg(value_name = "TAR")]
    pub tar: PathBuf,
}

/// `ags doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print JSON instead of one line per check.
    #[arg(long)]
    pub json: bool,
}
