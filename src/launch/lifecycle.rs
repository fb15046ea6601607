//! The lifecycle of one container: create → attach (initialises) → resize → stage → start →
//! session → exit code. Every created resource is recorded in [`Cleanup`] before the next step,
//! and a termination signal between steps aborts the launch (the caller then cleans up).

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;

use super::cleanup::{Cleanup, Resource};
use super::signals::SignalWatch;
use super::terminal::{self, RawModeGuard};
use super::{LaunchError, io, stage};
use crate::plan::{LaunchPlan, STAGING_MOUNT};
use crate::podman::{AttachOptions, Client, PodmanError, spec_from_plan};

/// Run the container of `plan` to completion and return the agent's exit code.
/// `stage` is the tar archive for the staging volume (required when the plan stages anything).
/// `started` fires with the container id once the agent runs, so work that must not delay the
/// launch (started hooks, the leftover sweep) can begin then. `locks` is the directory of the
/// host-side service locks ([`super::service_lock`]). `record`: the launch's agent-hook record,
/// which gets the programs the agent's configuration starts outside tool calls.
#[allow(clippy::too_many_arguments)]
pub async fn run(
    client: &Client,
    plan: &LaunchPlan,
    locks: &std::path::Path,
    stage: Option<Bytes>,
    signals: &mut SignalWatch,
    cleanup: &mut Cleanup,
    started: tokio::sync::oneshot::Sender<String>,
    record: Option<&crate::agent_hooks::log::RecordServer>,
) -> Result<u8, LaunchError> {
    let in_volume = plan.files_in_volume();
    before_create(client, plan, cleanup, in_volume).await?;
    check(signals)?;
    // A remote service: the env file and the generated files go into the staging volume before
    // the agent's container exists (its subpath mounts need them), held by a keeper.
    let mut stage = stage;
    let keeper = match (in_volume, stage.take()) {
        (true, Some(tar)) => Some(super::remote::fill_staging(client, plan, tar, cleanup).await?),
        (_, tar) => {
            stage = tar;
            None
        }
    };
    // Started while the agent's container is created: from then on Podman times it out.
    let mut keeper_started = keeper.clone().map(|k| {
        let client = client.clone();
        tokio::spawn(async move { super::remote::start_keeper(&client, &k).await })
    });
    check(signals)?;
    let (id, attached) = create_attached(client, plan, locks, cleanup, signals).await?;
    // Attaching initialises the container (runc create), so a missing command fails here.
    let (output, input) = match attached {
        Ok(attached) => attached,
        Err(e) => match &keeper {
            Some(k) => return Err(super::remote::explain_init_failure(client, k, e).await),
            None => return Err(LaunchError::from_start(e)),
        },
    };
    // The window size goes to conmon now, not just before start: conmon applies it when its loop
    // next reads the control FIFO, and an agent that reads its size at once must find it set.
    size_window(client, &id, plan.tty).await?;
    if let Some(dir) = &plan.host_stage_dir {
        // Initialised: the read-only binds now hold the files; drop the host copies.
        let _ = std::fs::remove_dir_all(dir);
    }
    if let Some(tar) = stage {
        client.put_archive(&id, STAGING_MOUNT, tar).await?;
        crate::trace::mark("staged");
    }
    // The agent's configuration at rest, before anything it runs could change it.
    super::outside::record(client, &id, plan, record).await;
    let _raw = enter_terminal(plan.tty)?;
    check(signals)?;
    crate::trace::mark("attached");
    // The keeper goes while the agent starts and runs (its removal takes a while and the agent's
    // container holds the volume now); if that fails, the launch's cleanup removes it.
    let release = keeper.map(|k| release_keeper(client, k, keeper_started.take()));
    client.start(&id).await.map_err(LaunchError::from_start)?;
    crate::trace::mark("started");
    let _ = started.send(id.clone());
    let deadline = plan
        .timeout_seconds
        .map(|s| tokio::time::Instant::now() + Duration::from_secs_f64(s));
    let timed_out = io::pump(client, &id, output, input, plan.tty, signals, deadline).await?;
    crate::trace::mark("output ended");
    let code = exit_code(client, &id).await?;
    if timed_out {
        crate::trace::mark(super::report::TIMEOUT_MARK);
    }
    if let Some(handle) = release
        && let Ok(Some(k)) = handle.await
    {
        cleanup.forget(&Resource::Container(k));
    }
    Ok(if timed_out { EXIT_TIMED_OUT } else { code })
}

/// What must exist before the container is created: the staging volume, the state volumes, the
/// git guards' missing pieces and the generated files on the host (each recorded for cleanup).
async fn before_create(
    client: &Client,
    plan: &LaunchPlan,
    cleanup: &mut Cleanup,
    in_volume: bool,
) -> Result<(), LaunchError> {
    if in_volume {
        super::remote::check_files_supported(client).await?;
    }
    if let Some(staging) = &plan.staging {
        client
            .volume_create(&staging.volume, plan.labels.clone(), staging_volume_options())
            .await?;
        cleanup.push(Resource::Volume(staging.volume.clone()));
    }
    ensure_state_volumes(client, plan).await?;
    crate::git::guard::create_missing(&plan.git_guards)?;
    if let Some(dir) = &plan.host_stage_dir {
        cleanup.push(Resource::HostDir(dir.clone()));
        stage::write_host_files(plan).map_err(LaunchError::HostFiles)?;
    }
    Ok(())
}

/// With a terminal: the container's window at the terminal's size. Podman only writes it to
/// conmon's control FIFO (as `podman run` does), so the earlier this is sent before start, the
/// likelier the agent's first look finds it; SIGWINCH tells the agent when it comes later.
async fn size_window(client: &Client, id: &str, tty: bool) -> Result<(), LaunchError> {
    match terminal::window_size() {
        Some((rows, cols)) if tty => Ok(client.resize(id, rows, cols).await?),
        _ => Ok(()),
    }
}

/// With a terminal: raw mode for the launch (restored when the guard drops).
fn enter_terminal(tty: bool) -> Result<Option<RawModeGuard>, LaunchError> {
    tty.then(RawModeGuard::enter)
        .transpose()
        .map_err(LaunchError::Terminal)
}

/// Remove the staging keeper once it has started; its name when it is gone (the launch's
/// cleanup then forgets it), `None` when the cleanup must still remove it.
fn release_keeper(
    client: &Client,
    keeper: String,
    started: Option<tokio::task::JoinHandle<()>>,
) -> tokio::task::JoinHandle<Option<String>> {
    let client = client.clone();
    tokio::spawn(async move {
        if let Some(start) = started {
            let _ = start.await;
        }
        super::remote::remove_keeper(&client, &keeper)
            .await
            .then_some(keeper)
    })
}

/// Exit code when `--timeout` stopped the agent (timeout(1)'s).
pub const EXIT_TIMED_OUT: u8 = 124;

/// Checks against the service before any hook or `op` runs: the image is present (create
/// never pulls) and a requested container name is free.
pub async fn preflight(client: &Client, image: &str, name: Option<&str>) -> Result<(), LaunchError> {
    if !client.image_exists(image).await? {
        return Err(LaunchError::ImageMissing {
            image: image.into(),
            service: client.url().to_string(),
            detail: "the service has no such image".into(),
        });
    }
    if let Some(name) = name
        && client.container_exists(name).await?
    {
        return Err(LaunchError::NameInUse { name: name.into() });
    }
    Ok(())
}

/// Create the plan's agent state volumes that do not exist yet, with the labels naming their
/// agent and project (Podman would create them at container create, unlabelled). They are
/// kept after the launch, so they are not recorded for cleanup.
async fn ensure_state_volumes(client: &Client, plan: &LaunchPlan) -> Result<(), LaunchError> {
    for v in &plan.state_volumes {
        client.volume_ensure(&v.name, v.labels.clone()).await?;
    }
    Ok(())
}

/// Driver options of a staging volume: RAM-backed (tmpfs), owner-only, no devices, setuid or
/// executables. The container mounts it with the same flags (see `podman::from_plan`).
pub fn staging_volume_options() -> BTreeMap<String, String> {
    BTreeMap::from([
        ("type".to_string(), "tmpfs".to_string()),
        ("device".into(), "tmpfs".into()),
        ("o".into(), "mode=0700,nosuid,nodev,noexec".into()),
    ])
}

/// Create the container. A rootless `keep-id` makes the service read /etc/subuid through
/// libsubid, which is not thread-safe (concurrent creates fail, or crash the service): for a
/// local service of this user the mapping is spelled out instead
/// ([`crate::podman::spell_out_keep_id`]) and creates overlap freely. Otherwise a `keep-id`
/// create waits for this user's turn on the service ([`super::service_lock`]), and the spurious
/// subordinate-id error (from creates of other users or tools;
/// [`crate::podman::PodmanError::is_keep_id_subuid_failure`]) is retried a few times on the
/// versions that make that check.
/// How often a container whose init was lost while attaching
/// ([`crate::podman::PodmanError::is_conmon_lost`])
/// is made again.
const LOST_INIT_RETRIES: u32 = 2;

/// Create the container and attach to it (which initialises it). When the init is lost on the
/// way (a monitor or runc's init that died: nothing ran), the container is removed and made
/// again: what Podman leaves of a failed init varies by version and timing (an attach refused
/// as "container state improper" on 5.4, an attach that then carried no output on 5.8), and a
/// new container has none of it. The attach's own error is returned for the caller to explain.
async fn create_attached(
    client: &Client,
    plan: &LaunchPlan,
    locks: &std::path::Path,
    cleanup: &mut Cleanup,
    signals: &SignalWatch,
) -> Result<(String, crate::podman::Result<crate::podman::AttachStream>), LaunchError> {
    let mut attempt = 0;
    loop {
        let (id, warnings) = create(client, plan, locks).await?;
        // Podman ignores some settings on some hosts (e.g. the pids limit on rootless cgroup
        // v1); say so (once per service) rather than pretend they apply.
        super::notices::print_create_warnings(client.url(), &warnings);
        cleanup.push(Resource::Container(id.clone()));
        crate::trace::mark("created");
        check(signals)?;
        match client.attach(&id, AttachOptions::all(plan.tty)).await {
            Err(e) if attempt < LOST_INIT_RETRIES && e.is_conmon_lost() => {
                attempt += 1;
                if client.delete(&id, true, true).await.is_ok() {
                    cleanup.forget(&Resource::Container(id.clone()));
                }
                tokio::time::sleep(Duration::from_millis(100 * u64::from(attempt))).await;
                check(signals)?;
            }
            attached => return Ok((id, attached)),
        }
    }
}

async fn create(
    client: &Client,
    plan: &LaunchPlan,
    locks: &std::path::Path,
) -> Result<(String, Vec<String>), LaunchError> {
    let mut spec = spec_from_plan(plan);
    if client.is_unix() {
        // The profile is read by the service from this host's file system.
        let path = super::seccomp::write_profile(&plan.seccomp_dir).map_err(LaunchError::Seccomp)?;
        spec.seccomp_profile_path = Some(path.to_string_lossy().into_owned());
    }
    // Spelled out or not, a `keep-id` namespace needs the image's layers in the user's id mapping.
    let id_mapped = plan.user_namespace == crate::plan::UserNamespace::KeepId;
    let keep_id = id_mapped && !crate::podman::spell_out_keep_id(client, &mut spec);
    let _turn = match keep_id {
        true => super::service_lock::create_turn(locks, client.url()).await,
        false => None,
    };
    let retries = match client.known_version() {
        Some(v) if !v.has_keep_id_subuid_check() => 0,
        _ if !keep_id => 0,
        _ => 3,
    };
    let create = || slow_note(client.create_with_warnings(&spec), id_mapped, &plan.image);
    let created = crate::podman::retry(retries, 50, PodmanError::is_keep_id_subuid_failure, create).await;
    created.map_err(|e| match e.missing_bind_source() {
        Some(path) if client.is_remote() => LaunchError::RemoteMountMissing {
            path: path.into(),
            url: client.url().to_string(),
        },
        _ => LaunchError::from_create(e, &plan.image, &plan.container_name, client.url()),
    })
}

/// How long a create may take before the user is told what it waits for.
const SLOW_CREATE: Duration = Duration::from_secs(1);

/// `create`, saying on stderr after [`SLOW_CREATE`] what a slow one waits for: rootless with
/// `keep-id` (spelled out or not: `id_mapped`), the first container of an image makes a copy
/// of its layers owned by the user's id mapping (a minute for the agent image on a slow disk);
/// later ones reuse it. Launches and `ags doctor`'s container.
pub(crate) async fn slow_note<T>(
    create: impl std::future::Future<Output = T>,
    id_mapped: bool,
    image: &str,
) -> T {
    tokio::pin!(create);
    tokio::select! {
        done = &mut create => return done,
        () = tokio::time::sleep(SLOW_CREATE) => {}
    }
    let why = match id_mapped {
        true => {
            "the first launch of an image copies its layers for your user's id mapping, which takes a while for a large image; later launches reuse the copy (`ags image build` and `ags image import` make it ahead)"
        }
        false => "the service is busy (other containers starting, or a slow disk)",
    };
    super::notices::say_line(&format!(
        "ags: waiting for Podman to create the container of {}: {why}",
        crate::text::escape_line(image)
    ));
    create.await
}

fn check(signals: &SignalWatch) -> Result<(), LaunchError> {
    match signals.received() {
        Some(signal) => Err(LaunchError::Interrupted { signal }),
        None => Ok(()),
    }
}

/// Poll inspect until the container is no longer running (the attach stream can end a few ms
/// before Podman records the exit), backing off from 1 ms to 100 ms.
async fn exit_code(client: &Client, id: &str) -> Result<u8, LaunchError> {
    let mut delay = Duration::from_millis(1);
    loop {
        let state = client.inspect(id).await?.state;
        if !state.running && state.status != "running" && state.status != "stopping" {
            if state.oom_killed {
                crate::trace::mark(super::report::OOM_MARK);
            }
            return Ok(state.exit_code.clamp(0, 255) as u8);
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_millis(100));
    }
}
