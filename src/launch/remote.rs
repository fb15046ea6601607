//! What a launch on a remote Podman service (`tcp://`, `ssh://`) adds to the lifecycle
//! (docs/remote.md):
//!
//! - [`check_workdir`]: the workdir is a path on the service's machine. Before any hook runs
//!   and before anything of the launch is created, a probe container that bind-mounts only the
//!   workdir is created and deleted at once; Podman refuses the create when the path does not
//!   exist there, and a refused create leaves nothing.
//! - [`fill_staging`]: hook-generated files cannot be bind-mounted from this machine. They go
//!   into the launch's tmpfs staging volume with the env file, through the archive API, and
//!   the agent's container mounts each one read-only at its destination by a volume subpath
//!   (Podman 5). A tmpfs volume is mounted only while a container that uses it is initialised
//!   (docs/decisions/0002), so a keeper container is initialised before the upload and started
//!   after it to hold it mounted, and removed once the agent's container has mounted the volume too
//!   ([`remove_keeper`]). The content exists only in RAM on that machine. Podman kills and
//!   removes a keeper after `podman::KEEPER_SECONDS` (its tmpfs is then unmounted), so one left
//!   by a killed `ags` does not hold the values until the next sweep.
//!
//! I/O: the Podman API only. Which Podman versions can mount a volume's subpath is
//! `podman::ServerVersion`'s knowledge.

use std::collections::BTreeMap;
use std::path::Path;

use bytes::Bytes;

use super::LaunchError;
use super::cleanup::{Cleanup, Resource};
use crate::plan::{
    LABEL_MANAGED, LABEL_OWNER_HOST, LABEL_OWNER_PID, LABEL_OWNER_START, LaunchIdentity, LaunchPlan,
    STAGING_MOUNT,
};
use crate::podman::{Client, KEEPER_SECONDS, PodmanError, keeper_spec, workdir_probe_spec};

/// Refuse a workdir that does not exist on the machine of the remote service `client` talks
/// to. The probe carries the launch's owner labels (and the user's `--label`s), so that a
/// crash between its create and its delete leaves a container the next sweep removes.
pub async fn check_workdir(
    client: &Client,
    image: &str,
    workdir: &Path,
    identity: &LaunchIdentity,
    user_labels: &[String],
) -> Result<(), LaunchError> {
    let mut labels: BTreeMap<String, String> = user_labels
        .iter()
        .filter_map(|l| crate::plan::check::parse_label(l).ok())
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    labels.extend([
        (LABEL_MANAGED.to_string(), "true".to_string()),
        (LABEL_OWNER_PID.into(), identity.pid.to_string()),
        (LABEL_OWNER_START.into(), identity.start_time.to_string()),
        (LABEL_OWNER_HOST.into(), identity.host.clone()),
    ]);
    let name = format!("ags-probe-{}", identity.suffix);
    let spec = workdir_probe_spec(image, workdir, &name, labels);
    let result = match client.create(&spec).await {
        Ok(id) => Ok(client.delete(&id, true, false).await?),
        Err(e) if e.missing_bind_source() == Some(&*workdir.to_string_lossy()) => {
            Err(LaunchError::RemoteWorkdirMissing {
                workdir: workdir.to_path_buf(),
                url: client.url().to_string(),
            })
        }
        Err(e) => Err(LaunchError::from_create(e, image, &name, client.url())),
    };
    crate::trace::mark("remote workdir checked");
    result
}

/// Refuse generated files for a remote service whose Podman cannot mount a volume's subpath
/// (Podman 4), before anything is created.
pub async fn check_files_supported(client: &Client) -> Result<(), LaunchError> {
    match client.server_version().await? {
        Some(v) if v.mounts_volume_subpaths() => Ok(()),
        version => Err(LaunchError::RemoteFilesUnsupported {
            url: client.url().to_string(),
            version: version.map_or_else(|| "of an unknown version".into(), |v| v.to_string()),
        }),
    }
}

/// Create and initialise the keeper of the plan's staging volume and upload `tar` (the env file
/// and the generated files) into the volume through it. Returns the keeper's id, recorded in
/// `cleanup`; start it with [`start_keeper`], and remove it with [`remove_keeper`] once the
/// agent's container is initialised.
pub async fn fill_staging(
    client: &Client,
    plan: &LaunchPlan,
    tar: Bytes,
    cleanup: &mut Cleanup,
) -> Result<String, LaunchError> {
    let name = match &plan.staging {
        Some(staging) => format!("{}-keeper", staging.volume),
        None => String::new(),
    };
    let Some(spec) = keeper_spec(plan, &name) else {
        let why = "generated files for a remote service, but the plan has no staging volume";
        return Err(LaunchError::Stage(std::io::Error::other(why)));
    };
    let id = client
        .create(&spec)
        .await
        .map_err(|e| LaunchError::from_create(e, &plan.image, &name, client.url()))?;
    cleanup.push(Resource::Container(id.clone()));
    client.init(&id).await.map_err(LaunchError::from_start)?;
    // Into the initialised keeper: Podman writes to the volume's directory (a started one would
    // be written through its own read-only mount).
    client.put_archive(&id, STAGING_MOUNT, tar).await?;
    crate::trace::mark("staged through the keeper");
    Ok(id)
}

/// Start the filled keeper, so that Podman kills and removes it after its timeout
/// (`podman::KEEPER_SECONDS`) should `ags` be killed before removing it. Runs while the agent's
/// container is created (off the path to the agent's start); initialised or running, the keeper
/// holds the volume mounted all the same. A failure is left to [`remove_keeper`] and the
/// launch's cleanup.
pub async fn start_keeper(client: &Client, id: &str) {
    let _ = client.start(id).await;
    crate::trace::mark("keeper started");
}

/// The agent's container failed to initialise (`e`): when the keeper is gone by then (its
/// timeout, or removed by someone), its subpath mounts had nothing to mount; say so.
pub async fn explain_init_failure(client: &Client, keeper: &str, e: PodmanError) -> LaunchError {
    match client.container_exists(keeper).await {
        Ok(false) => LaunchError::RemoteKeeperGone {
            url: client.url().to_string(),
            seconds: KEEPER_SECONDS,
        },
        _ => LaunchError::from_start(e),
    }
}

/// Remove the keeper once the agent's container is initialised (it then holds the staging volume
/// mounted). True when it is gone; otherwise it stays recorded for the launch's cleanup.
pub async fn remove_keeper(client: &Client, id: &str) -> bool {
    let gone = match client.delete(id, true, false).await {
        Ok(()) => true,
        Err(e) => e.is_not_found(),
    };
    crate::trace::mark("keeper removed");
    gone
}
