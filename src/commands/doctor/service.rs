//! Doctor checks that talk to the Podman service: socket, version, image, OCI runtime (a
//! trivial container) and tmpfs volumes. Each resource created here is removed before the
//! check returns, and carries owner labels so `ags gc` removes it if `ags doctor` is killed.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::{Check, image, no_service_detail};
use crate::config::Config;
use crate::image::{BOOTSTRAP_SCRIPT, DEFAULT_BASE};
use crate::launch::identity;
use crate::plan::{LABEL_LAUNCH_ID, LABEL_MANAGED, LABEL_OWNER_HOST, LABEL_OWNER_PID, LABEL_OWNER_START};
use crate::podman::{self, Client, Info, NamedVolume, Namespace, NsMode, PodmanError, SpecGenerator};

/// Label that marks what `ags doctor` creates.
const LABEL_DOCTOR: &str = "io.ags.doctor";
/// How long the trivial container may take to exit.
const RUN_TIMEOUT: Duration = Duration::from_secs(30);

/// The service checks and what they learnt.
pub(super) struct Outcome {
    pub(super) checks: Vec<Check>,
    /// Whether the service is rootless (None: no service answered).
    pub(super) rootless: Option<bool>,
}

/// Connect, then check version, image, runtime and tmpfs volumes.
pub(super) async fn check(url: Option<&str>, config: Option<&Config>) -> Outcome {
    let (client, info) = match connect(url).await {
        Ok(found) => found,
        Err(fail) => {
            let skip = |name| Check::skip(name, "no Podman service (see the socket check)");
            let checks = vec![
                *fail,
                skip("podman"),
                skip("image"),
                skip("runtime"),
                skip("tmpfs volume"),
            ];
            return Outcome {
                checks,
                rootless: None,
            };
        }
    };
    let rootless = info.host.security.rootless;
    let image = image(config);
    let mut checks = vec![socket_check(&client, url, rootless), version_check(&info)];
    let (image_check, present) = image_check(&client, &image).await;
    checks.push(image_check);
    let labels = labels();
    checks.push(if present {
        runtime_check(&client, &info, &image, &labels).await
    } else {
        Check::skip(
            "runtime",
            format!("image {image} is missing (see the image check)"),
        )
    });
    checks.push(tmpfs_check(&client, present.then_some(image.as_str()), rootless, &labels).await);
    Outcome {
        checks,
        rootless: Some(rootless),
    }
}

async fn connect(url: Option<&str>) -> Result<(Client, Info), Box<Check>> {
    let client = podman::connect(url).await.map_err(|e| {
        let (detail, fix) = no_service_detail(&e);
        Box::new(Check::fail("socket", detail, fix))
    })?;
    let info = client.info().await.map_err(|e| {
        let detail = format!("{} answers a ping but not GET /libpod/info: {e}", client.url());
        Box::new(Check::fail(
            "socket",
            detail,
            "restart the Podman service; check its log",
        ))
    })?;
    Ok((client, info))
}

fn socket_check(client: &Client, url: Option<&str>, rootless: bool) -> Check {
    let env = |k: &str| std::env::var(k).ok();
    let list = podman::candidates(
        url,
        env("CONTAINER_HOST").as_deref(),
        env("XDG_RUNTIME_DIR").as_deref(),
        nix::unistd::geteuid().as_raw(),
    );
    let source = list
        .iter()
        .find(|c| podman::Endpoint::parse(&c.url).is_ok_and(|e| e.to_string() == client.url()))
        .map_or("", |c| c.source.name());
    let kind = if rootless { "rootless" } else { "rootful" };
    Check::ok(
        "socket",
        format!("{} (from {source}) answers: a {kind} service", client.url()),
    )
}

fn version_check(info: &Info) -> Check {
    let v = &info.version.version;
    let detail = format!(
        "Podman {v}, OCI runtime {}, cgroup {}, network {}",
        info.host.oci_runtime.name, info.host.cgroup_version, info.host.network_backend
    );
    let major: u32 = v.split('.').next().and_then(|m| m.parse().ok()).unwrap_or(0);
    if major < 4 {
        let fix = "upgrade Podman: ags is tested with 4.3 (Debian 12) and 5.x";
        return Check::warn("podman", detail, fix);
    }
    Check::ok("podman", detail)
}

/// Whether the image a launch uses is present; the fix says how to make it (and its base).
async fn image_check(client: &Client, image: &str) -> (Check, bool) {
    match client.image_exists(image).await {
        Ok(true) => (Check::ok("image", format!("{image} is present")), true),
        Ok(false) => {
            let base = client.image_exists(DEFAULT_BASE).await.unwrap_or(false);
            let fix = if base {
                "run `ags image build`".to_owned()
            } else {
                format!(
                    "run `{BOOTSTRAP_SCRIPT}` (makes the base {DEFAULT_BASE} without a registry), then `ags image build`; or `ags image build --base docker.io/library/debian:trixie-slim` where a registry is reachable"
                )
            };
            let fix = if image == crate::config::DEFAULT_IMAGE {
                fix
            } else {
                format!("build or import {image}, or set [sandbox] image (the agent image: {fix})")
            };
            (
                Check::fail("image", format!("{image} is not present"), fix),
                false,
            )
        }
        Err(e) => (
            Check::fail("image", e.to_string(), "check the Podman service"),
            false,
        ),
    }
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
/// none, running `true`.
fn trivial_spec(image: &str, rootless: bool, labels: &BTreeMap<String, String>) -> SpecGenerator {
    let (uid, gid) = (nix::unistd::getuid().as_raw(), nix::unistd::getgid().as_raw());
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
        ..SpecGenerator::default()
    }
}

async fn runtime_check(
    client: &Client,
    info: &Info,
    image: &str,
    labels: &BTreeMap<String, String>,
) -> Check {
    let spec = trivial_spec(image, info.host.security.rootless, labels);
    let started = Instant::now();
    let result = run_trivial(client, &spec).await;
    let ms = started.elapsed().as_millis();
    let runtime = &info.host.oci_runtime.name;
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
            let message = e.to_string();
            let fix = runtime_fix(&message);
            Check::fail(
                "runtime",
                format!("{runtime} could not run a container: {message}"),
                fix,
            )
        }
    }
}

/// create → start → poll until exited → delete (also after a failure). The exit code, or
/// None when the container did not exit within [`RUN_TIMEOUT`].
async fn run_trivial(client: &Client, spec: &SpecGenerator) -> Result<Option<i32>, PodmanError> {
    let id = client.create(spec).await?;
    let result = async {
        client.start(&id).await?;
        match tokio::time::timeout(RUN_TIMEOUT, client.wait_exited(&id, Duration::from_millis(10))).await {
            Ok(state) => Ok(Some(state?.exit_code)),
            Err(_) => Ok(None),
        }
    }
    .await;
    let _ = client.delete(&id, true, true).await;
    result
}

/// A concrete fix for the OCI runtime failures seen on these machines.
fn runtime_fix(message: &str) -> String {
    if message.contains("cgroups in hybrid mode") {
        "crun does not support this hybrid cgroup layout: set `[engine] runtime = \"runc\"` in containers.conf and restart the service".into()
    } else if message.contains("setrlimit") {
        "lower the default rlimits: `[containers] default_ulimits = [\"nofile=20000:20000\", \"nproc=4096:4096\"]` in containers.conf, and restart the service".into()
    } else if message.contains("newuidmap") || message.contains("subuid") {
        "give the user subordinate ids (see the userns check) and run `podman system migrate`".into()
    } else {
        "read the error above; `scripts/setup-podman` configures Podman on Debian".into()
    }
}

/// Create a tmpfs volume as a launch does; when the image is present, mount it in a container
/// (`init` mounts it without starting); delete both.
async fn tmpfs_check(
    client: &Client,
    image: Option<&str>,
    rootless: bool,
    labels: &BTreeMap<String, String>,
) -> Check {
    let name = format!("ags-doctor-{}", identity::random_hex(4));
    let options = BTreeMap::from([
        ("type".to_owned(), "tmpfs".to_owned()),
        ("device".to_owned(), "tmpfs".to_owned()),
        ("o".to_owned(), "mode=0700,nosuid,nodev,noexec".to_owned()),
    ]);
    if let Err(e) = client.volume_create(&name, labels.clone(), options).await {
        let fix = "check that the service may mount tmpfs (rootless: the user namespace check)";
        return Check::fail(
            "tmpfs volume",
            format!("creating a tmpfs volume failed: {e}"),
            fix,
        );
    }
    let mounted = match image {
        Some(image) => mount_volume(client, image, &name, rootless, labels)
            .await
            .map(Some),
        None => Ok(None),
    };
    let deleted = client.volume_delete(&name, true).await;
    match (mounted, deleted) {
        (Err(e), _) => Check::fail(
            "tmpfs volume",
            format!("a tmpfs volume could not be mounted: {e}"),
            "check the Podman service's log; launches stage secrets in such a volume",
        ),
        (Ok(_), Err(e)) => Check::fail(
            "tmpfs volume",
            format!("deleting the tmpfs volume {name} failed: {e}"),
            format!("remove it with `ags gc` or by hand (label {LABEL_DOCTOR}=1)"),
        ),
        (Ok(Some(())), Ok(())) => Check::ok("tmpfs volume", "created, mounted and removed a tmpfs volume"),
        (Ok(None), Ok(())) => Check::ok(
            "tmpfs volume",
            "created and removed a tmpfs volume (not mounted: the image is missing)",
        ),
    }
}

async fn mount_volume(
    client: &Client,
    image: &str,
    volume: &str,
    rootless: bool,
    labels: &BTreeMap<String, String>,
) -> Result<(), PodmanError> {
    let mut spec = trivial_spec(image, rootless, labels);
    spec.volumes = vec![NamedVolume {
        name: volume.to_owned(),
        dest: "/run/ags-doctor".to_owned(),
        options: vec!["ro".into(), "nosuid".into(), "nodev".into(), "noexec".into()],
    }];
    let id = client.create(&spec).await?;
    let result = client.init(&id).await;
    let _ = client.delete(&id, true, true).await;
    result
}
