//! Stage 5: the container lifecycle — create → attach (initialises) → resize → stage → start →
//! session → exit code → cleanup — plus the reconciliation of leftovers (`gc`).
//!
//! I/O: the Podman API (through `podman::Client`), the host terminal and signals. Nothing here
//! spawns processes.

pub mod cleanup;
pub mod gc;
pub mod host_services;
pub mod identity;
mod io;
pub mod lifecycle;
pub mod login;
pub mod notices;
mod outside;
pub mod remote;
pub mod report;
pub mod seccomp;
pub mod service_lock;
pub mod signals;
pub mod stage;
pub mod state_gc;
pub mod sweep_gate;
pub mod terminal;
pub mod watch;

use crate::exit::{EXIT_AGS_FAILURE, EXIT_CANNOT_INVOKE, EXIT_NOT_FOUND};
use crate::podman::{ExecFailure, PodmanError};

/// Errors of the launch stage.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// A Podman API call failed.
    #[error(transparent)]
    Podman(#[from] PodmanError),
    /// The image is not in the Podman service's storage (no pull is attempted).
    #[error(
        "image {image} is not present in the Podman service at {service}; {}",
        crate::image::missing_image_advice(image)
    )]
    ImageMissing {
        image: String,
        /// The service's URL (`unix:///run/podman/podman.sock`): the image is per service.
        service: String,
        detail: String,
    },
    /// `--name` is taken by another container.
    #[error(
        "--name {name}: a container with this name already exists; choose another name, or remove that container if it is a leftover (`ags gc` removes ags's own)"
    )]
    NameInUse { name: String },
    /// The agent command could not be started.
    #[error("the agent command could not be started: {message}")]
    Start { code: u8, message: String },
    /// A termination signal arrived before the agent started.
    #[error("interrupted by {} before the agent started; nothing was left behind", crate::process::signal_name(*signal))]
    Interrupted { signal: i32 },
    /// The host terminal could not be configured.
    #[error("terminal: {0}")]
    Terminal(std::io::Error),
    /// The attach stream broke.
    #[error("attach stream: {0}")]
    Stream(std::io::Error),
    /// Writing the agent's output failed.
    #[error("writing output: {0}")]
    Output(std::io::Error),
    /// Generated files reach a remote service in its staging volume, mounted by subpath:
    /// Podman 5 and later.
    #[error(
        "hook-generated files reach a remote Podman service in the launch's tmpfs staging volume, each mounted read-only at its destination by a volume subpath, which needs Podman 5 or later; the service at {url} is Podman {version}; upgrade Podman on that machine, use a local Podman service, or remove the files from the hook response (docs/remote.md); nothing was created"
    )]
    RemoteFilesUnsupported { url: String, version: String },
    /// The workdir does not exist on the remote service's machine.
    #[error(
        "workdir {}: no such directory on the machine of the Podman service at {url}; a remote launch bind-mounts the workdir of that machine (the same path), not this one's; create it there (e.g. keep the same checkout at the same path), or run ags on that machine (docs/remote.md); nothing was created",
        workdir.display()
    )]
    RemoteWorkdirMissing {
        workdir: std::path::PathBuf,
        url: String,
    },
    /// A bind mount source (`--add-dir`, `[[mount]]`, a hook mount) does not exist on the remote
    /// service's machine.
    #[error(
        "mount source {path}: no such file or directory on the machine of the Podman service at {url}; a remote launch bind-mounts --add-dir, [[mount]] and hook mount sources of that machine (the same path), not this one's; create it there, or leave the mount out (docs/remote.md); nothing was left behind"
    )]
    RemoteMountMissing { path: String, url: String },
    /// The keeper of a remote launch's staging volume was gone when the agent's container was
    /// initialised: the staged files went with the volume's tmpfs.
    #[error(
        "the keeper of this launch's staging volume on the Podman service at {url} ended before the agent's container was initialised (Podman stops it {seconds} s after its start, or it was removed), and the staged env file and generated files went with it; run the launch again (docs/remote.md); nothing was left behind"
    )]
    RemoteKeeperGone { url: String, seconds: u32 },
    /// No RAM-backed directory to stage generated files in.
    #[error(
        "hook-generated files are staged only in a private RAM-backed directory (tmpfs or ramfs), and neither $XDG_RUNTIME_DIR/ags nor /dev/shm/ags-<uid> is one here ({tried}); set XDG_RUNTIME_DIR to a tmpfs directory only you can write (or mount a tmpfs at /dev/shm; a /dev/shm/ags-<uid> that another user created must be removed by root), or remove the files from the hook response; launches without hook-generated files work without it"
    )]
    DiskStage { tried: String },
    /// Writing generated files to the host staging directory failed.
    #[error("staging generated files: {0}")]
    HostFiles(crate::fsutil::PrivateDirError),
    /// The seccomp profile that blocks setuid bits could not be prepared.
    #[error(
        "preparing the seccomp profile that keeps setuid bits out of the workspace: {0}; install Podman's containers-common (it provides /usr/share/containers/seccomp.json)"
    )]
    Seccomp(seccomp::SeccompError),
    /// A missing piece of a guarded git repository could not be created.
    #[error(transparent)]
    GitGuard(#[from] crate::git::guard::CreateError),
    /// Building the staging archive failed.
    #[error("staging: {0}")]
    Stage(std::io::Error),
    /// `--report` was refused or could not be written.
    #[error(transparent)]
    Report(#[from] report::ReportError),
    /// `--expect-plan`: the launch's plan is not the one pinned.
    #[error(
        "--expect-plan {want}: this launch's plan has the digest {got}; something it depends on changed (the configuration, a hook, an option, the image name): compare `ags plan` with what you pinned, and pin the new digest only if you accept the change"
    )]
    PlanDrifted { want: String, got: String },
}

impl LaunchError {
    /// The exit code for this failure (podman run's convention).
    pub fn exit_code(&self) -> u8 {
        match self {
            LaunchError::Start { code, .. } => *code,
            LaunchError::Interrupted { signal } => signals::exit_code_for(*signal),
            _ => EXIT_AGS_FAILURE,
        }
    }

    /// Classify a create failure (a missing image and a taken name get their own advice).
    pub fn from_create(e: PodmanError, image: &str, name: &str, service: &str) -> Self {
        if e.is_image_missing() {
            return LaunchError::ImageMissing {
                image: image.into(),
                service: service.into(),
                detail: e.to_string(),
            };
        }
        if e.is_name_in_use() {
            return LaunchError::NameInUse { name: name.into() };
        }
        LaunchError::Podman(e)
    }

    /// Classify a start failure: 127 when the command is missing, 126 when it cannot be run.
    /// Only the OCI runtime's exec step counts (`exec: "CMD": …`); other start failures (a
    /// mount refused, a runtime error) are failures of `ags`'s launch (125).
    pub fn from_start(e: PodmanError) -> Self {
        let code = match e.exec_failure() {
            Some(ExecFailure::NotFound) => EXIT_NOT_FOUND,
            Some(ExecFailure::CannotInvoke) => EXIT_CANNOT_INVOKE,
            None => return LaunchError::Podman(e),
        };
        LaunchError::Start {
            code,
            message: e.to_string(),
        }
    }
}
