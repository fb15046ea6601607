//! Doctor checks that run a container: the OCI runtime (`true` in the image, with a launch's
//! user, user namespace and security options) and tmpfs volumes (created like a launch's
//! staging volume and mounted into that same container, as a launch mounts it).
//!
//! One container in the usual case: with the `vfs` storage driver every create copies the
//! whole image. Only when it fails is it tried again without the volume, to tell a runtime
//! failure from a mount failure. Everything created is deleted before the checks return, and
//! carries owner labels so `ags gc` removes it if `ags doctor` is killed.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::Check;
use crate::launch::identity;
use crate::plan::{LABEL_LAUNCH_ID, LABEL_MANAGED, LABEL_OWNER_HOST, LABEL_OWNER_PID, LABEL_OWNER_START};
use crate::podman::{
    Client, Info, NamedVolume, Namespace, NsMode, PodmanError, RuntimeSetupFailure, SpecGenerator,
};

/// Label that marks what `ags doctor` creates.
const LABEL_DOCTOR: &str = "io.ags.doctor";
/// How long the trivial container may take to exit once started.
const RUN_TIMEOUT: Duration = Duration::from_secs(30);
/// Where the tmpfs volume is mounted in the trivial container.
const VOLUME_DEST: &str = "/run/ags-doctor";

/// The exit code of the trivial container, or None when it did not exit in time.
type RunResult = Result<Option<i32>, PodmanError>;

/// Whether the tmpfs volume could be mounted.
enum Mounted {
    Yes,
    Failed(String),
    /// Not known: the container failed without the volume too, or no image.
    Unknown(&'static str),
}

/// The `runtime` and `tmpfs volume` checks. `image`: the launch image when it is present.
pub(super) async fn check(client: &Client, info: &Info, image: Option<&str>) -> [Check; 2] {
    let labels = labels();
    let rootless = info.host.security.rootless;
    let volume = format!("ags-doctor-{}", identity::random_hex(4));
    let created = client
        .volume_create(
            &volume,
            labels.clone(),
            crate::launch::lifecycle::staging_volume_options(),
        )
        .await;
    let Some(image) = image else {
        let deleted = delete_volume(client, &volume, &created).await;
        let runtime = Check::skip("runtime", "the image is missing (see the image check)");
        let mounted = Mounted::Unknown("not mounted: the image is missing");
        return [runtime, tmpfs_report(&volume, created, mounted, deleted)];
    };
    let spec = |with_volume: bool| trivial_spec(image, rootless, &labels, with_volume.then_some(&*volume));
    let started = Instant::now();
    let first = run_trivial(client, &spec(created.is_ok())).await;
    let (result, elapsed, mounted) = match (&first, created.is_ok()) {
        (Err(e), true) => {
            let started = Instant::now();
            let second = run_trivial(client, &spec(false)).await;
            let mounted = match second {
                Ok(_) => Mounted::Failed(e.to_string()),
                Err(_) => Mounted::Unknown("not known: the container failed without it too"),
            };
            (second, started.elapsed(), mounted)
        }
        (_, true) => (first, started.elapsed(), Mounted::Yes),
        (_, false) => (first, started.elapsed(), Mounted::Unknown("")),
    };
    let runtime = runtime_report(result, elapsed, &info.host.oci_runtime.name, image);
    let deleted = delete_volume(client, &volume, &created).await;
    [runtime, tmpfs_report(&volume, created, mounted, deleted)]
}

/// A container like a launch's of `image` (owner labels, so `ags gc` removes it after a kill),
/// to be created and deleted without starting it: `ags image build` makes the rootless copy of
/// the image's layers for the user's id mapping this way.
pub(in crate::commands) fn probe_spec(image: &str, rootless: bool) -> SpecGenerator {
    trivial_spec(image, rootless, &labels(), None)
}

/// Labels of doctor resources: managed, doctor, and the owner labels `ags gc` reads.
fn labels() -> BTreeMap<String, String> {
    let id = identity::current();
    BTreeMap::from([
        (LABEL_MANAGED.to_owned(), "true".to_owned()),
        (LABEL_DOCTOR.to_owned(), "1".to_owned()),
        (LABEL_LAUNCH_ID.to_owned(), id.launch_id),
        (LABEL_OWNER_PID.to_owned(), id.pid.to_string()),
        (LABEL_OWNER_START.to_owned(), id.start_time.to_string()),
        (LABEL_OWNER_HOST.to_owned(), id.host),
    ])
}

/// A container like a launch's (same user, user namespace and security options), network
/// none, running `true`; with `volume` mounted read-only like the staging volume.
fn trivial_spec(
    image: &str,
    rootless: bool,
    labels: &BTreeMap<String, String>,
    volume: Option<&str>,
) -> SpecGenerator {
    let (uid, gid) = (nix::unistd::getuid().as_raw(), nix::unistd::getgid().as_raw());
    let options = ["ro", "nosuid", "nodev", "noexec"].map(String::from).to_vec();
    SpecGenerator {
        name: Some(format!("ags-doctor-{}", identity::random_hex(4))),
        image: image.to_owned(),
        command: vec!["true".to_owned()],
        labels: labels.clone(),
        netns: Some(Namespace::new(NsMode::None)),
        userns: rootless.then(|| Namespace::new(NsMode::KeepId)),
        user: Some(format!("{uid}:{gid}")),
        cap_drop: vec!["ALL".to_owned()],
        no_new_privileges: true,
        volumes: volume
            .map(|name| NamedVolume {
                name: name.to_owned(),
                dest: VOLUME_DEST.to_owned(),
                options,
                sub_path: None,
            })
            .into_iter()
            .collect(),
        ..SpecGenerator::default()
    }
}

/// create → start → poll until exited → delete (also after a failure).
async fn run_trivial(client: &Client, spec: &SpecGenerator) -> RunResult {
    // Rootless (keep-id), the first container of an image waits for its id-mapped copy.
    let id_mapped = spec.userns.is_some();
    let id = crate::launch::lifecycle::slow_note(client.create(spec), id_mapped, &spec.image).await?;
    let result = async {
        client.start(&id).await?;
        let exited = client.wait_exited(&id, Duration::from_millis(10));
        match tokio::time::timeout(RUN_TIMEOUT, exited).await {
            Ok(state) => Ok(Some(state?.exit_code)),
            Err(_) => Ok(None),
        }
    }
    .await;
    let _ = client.delete(&id, true, true).await;
    result
}

async fn delete_volume(
    client: &Client,
    volume: &str,
    created: &Result<crate::podman::Volume, PodmanError>,
) -> Result<(), PodmanError> {
    match created {
        Ok(_) => client.volume_delete(volume).await,
        Err(_) => Ok(()),
    }
}

fn runtime_report(result: RunResult, elapsed: Duration, runtime: &str, image: &str) -> Check {
    let ms = elapsed.as_millis();
    match result {
        Ok(Some(0)) => Check::ok(
            "runtime",
            format!("{runtime} ran `true` in {image} in {ms} ms (network none)"),
        ),
        Ok(None) => Check::fail(
            "runtime",
            format!(
                "`true` in {image} did not exit within {} s",
                RUN_TIMEOUT.as_secs()
            ),
            "check the Podman service's log and the OCI runtime (conmon, runc or crun)",
        ),
        Ok(Some(code)) => Check::fail(
            "runtime",
            format!("`true` in {image} exited with {code}"),
            format!("check that {image} has a working `true` on its PATH"),
        ),
        Err(e) => {
            let detail = format!("{runtime} could not run a container: {e}");
            Check::fail("runtime", detail, runtime_fix(e.runtime_setup_failure()))
        }
    }
}

/// A concrete fix for the OCI runtime failures seen on these machines.
fn runtime_fix(failure: Option<RuntimeSetupFailure>) -> &'static str {
    match failure {
        Some(RuntimeSetupFailure::HybridCgroups) => {
            "crun does not support this hybrid cgroup layout: set `[engine] runtime = \"runc\"` in containers.conf and restart the service"
        }
        Some(RuntimeSetupFailure::Rlimits) => {
            "lower the default rlimits: `[containers] default_ulimits = [\"nofile=20000:20000\", \"nproc=4096:4096\"]` in containers.conf, and restart the service"
        }
        Some(RuntimeSetupFailure::SubordinateIds) => {
            "give the user subordinate ids (see the userns check) and run `podman system migrate`"
        }
        None => "read the error above; `scripts/setup-podman` configures Podman on Debian",
    }
}

fn tmpfs_report(
    volume: &str,
    created: Result<crate::podman::Volume, PodmanError>,
    mounted: Mounted,
    deleted: Result<(), PodmanError>,
) -> Check {
    const NAME: &str = "tmpfs volume";
    if let Err(e) = created {
        let fix = "check that the service may mount tmpfs (rootless: the userns check)";
        return Check::fail(NAME, format!("creating a tmpfs volume failed: {e}"), fix);
    }
    if let Err(e) = deleted {
        let detail = format!("deleting the tmpfs volume {volume} failed: {e}");
        return Check::fail(NAME, detail, "remove it with `ags gc`");
    }
    match mounted {
        Mounted::Yes => Check::ok(NAME, "created, mounted (ro, noexec) and removed a tmpfs volume"),
        Mounted::Failed(e) => Check::fail(
            NAME,
            format!("a container with a tmpfs volume failed where one without it ran: {e}"),
            "check the Podman service's log: launches stage their environment in such a volume",
        ),
        Mounted::Unknown(why) => Check::ok(NAME, format!("created and removed a tmpfs volume ({why})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_failures_get_concrete_fixes() {
        assert!(runtime_fix(Some(RuntimeSetupFailure::HybridCgroups)).contains("runtime = \"runc\""));
        assert!(runtime_fix(Some(RuntimeSetupFailure::Rlimits)).contains("default_ulimits"));
        assert!(runtime_fix(Some(RuntimeSetupFailure::SubordinateIds)).contains("subordinate ids"));
    }

    #[test]
    fn doctor_resources_carry_owner_labels_and_mirror_a_launch() {
        let l = labels();
        assert_eq!(l[LABEL_MANAGED], "true");
        assert_eq!(l[LABEL_DOCTOR], "1");
        assert_eq!(l[LABEL_OWNER_PID], std::process::id().to_string());
        let spec = trivial_spec("img", true, &l, Some("vol"));
        assert_eq!(spec.command, ["true"]);
        assert_eq!(spec.userns.map(|n| n.nsmode), Some(NsMode::KeepId));
        assert_eq!(spec.netns.map(|n| n.nsmode), Some(NsMode::None));
        assert_eq!(spec.volumes[0].options, ["ro", "nosuid", "nodev", "noexec"]);
        assert!(trivial_spec("img", false, &l, None).volumes.is_empty());
    }

    #[test]
    fn tmpfs_report_attributes_failures() {
        let ok = || Ok(crate::podman::Volume::default());
        let c = tmpfs_report("v", ok(), Mounted::Failed("EPERM".into()), Ok(()));
        assert_eq!(c.status, super::super::Status::Fail);
        assert!(c.detail.contains("EPERM"));
        let c = tmpfs_report("v", ok(), Mounted::Yes, Ok(()));
        assert_eq!(c.status, super::super::Status::Ok);
    }
}
