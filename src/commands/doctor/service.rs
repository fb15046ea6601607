//! Doctor checks that talk to the Podman service: socket, version, storage driver and image;
//! the checks that run a container are in `container.rs`.

use super::{Check, container, no_service_detail, versions};
use crate::config::Config;
use crate::image::{BOOTSTRAP_SCRIPT, DEFAULT_BASE};
use crate::podman::{self, Client, Info};

/// The service checks and what they learnt.
pub(super) struct Outcome {
    pub(super) checks: Vec<Check>,
    /// Whether the service is rootless (None: no service answered).
    pub(super) rootless: Option<bool>,
}

/// Connect, then check version, image, runtime and tmpfs volumes.
pub(super) async fn check(target: &podman::Target, config: Option<&Config>) -> Outcome {
    let (client, info) = match connect(target).await {
        Ok(found) => found,
        Err(fail) => {
            let skip = |name| Check::skip(name, "no Podman service (see the socket check)");
            let checks = vec![
                *fail,
                skip("podman"),
                skip("fixes"),
                skip("storage"),
                skip("limits"),
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
    let image = config.map_or_else(|| crate::config::DEFAULT_IMAGE.to_owned(), |c| c.image.clone());
    let mut checks = vec![
        socket_check(&client, target, rootless),
        version_check(&info, client.is_remote()),
        versions::fixes_check(&info),
        storage_check(&info),
        limits_check(&info),
    ];
    checks.extend(versions::network_check(&info));
    let (image_check, present) = image_check(&client, &image).await;
    checks.push(image_check);
    checks.extend(container::check(&client, &info, present.then_some(image.as_str())).await);
    Outcome {
        checks,
        rootless: Some(rootless),
    }
}

async fn connect(target: &podman::Target) -> Result<(Client, Info), Box<Check>> {
    let client = podman::connect(target).await.map_err(|e| {
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

fn socket_check(client: &Client, target: &podman::Target, rootless: bool) -> Check {
    let env = |k: &str| std::env::var(k).ok();
    let euid = nix::unistd::geteuid().as_raw();
    let list = match podman::choose(target, &env, euid) {
        Ok(Some(chosen)) => vec![chosen.candidate],
        _ => podman::candidates(None, None, env("XDG_RUNTIME_DIR").as_deref(), euid),
    };
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

/// The version (a warning when untested), and for a remote service whether it can take
/// hook-generated files (volume subpaths, Podman 5; docs/remote.md).
fn version_check(info: &Info, remote: bool) -> Check {
    let v = &info.version.version;
    let mut detail = format!(
        "Podman {v}, OCI runtime {}, cgroup {}, network {}",
        info.host.oci_runtime.name, info.host.cgroup_version, info.host.network_backend
    );
    let version = podman::ServerVersion::parse(v);
    if !version.is_some_and(podman::ServerVersion::is_tested) {
        let fix = "upgrade Podman: ags is tested with 4.3 (Debian 12) and 5.x";
        return Check::warn("podman", detail, fix);
    }
    if remote && !version.is_some_and(podman::ServerVersion::mounts_volume_subpaths) {
        detail.push_str(
            "; a remote service: launches with hook-generated files are refused (they need Podman 5)",
        );
        let fix = "upgrade Podman on that machine to 5.x for hook-generated files (docs/remote.md), or use a local service";
        return Check::warn("podman", detail, fix);
    }
    Check::ok("podman", detail)
}

/// Whether the service can apply a launch's memory, CPU and process limits: a rootless service
/// on cgroup v1 cannot (Podman drops them with a warning; the tmpfs sizes of `--lockdown` still
/// hold), and on cgroup v2 only the controllers delegated to the user apply.
fn limits_check(info: &Info) -> Check {
    let host = &info.host;
    let rootless = info.host.security.rootless;
    if rootless && host.cgroup_version == "v1" {
        return Check::warn(
            "limits",
            "a rootless service on cgroup v1: Podman cannot set the memory, CPU and process limits \
             of a launch and drops them (\"Resource limits are not supported and ignored on cgroups \
             V1 rootless systems\"); the agent can use all of the machine's memory and CPUs \
             (--lockdown's tmpfs sizes still hold)",
            "boot the host with cgroup v2 (`systemd.unified_cgroup_hierarchy=1` on the kernel command \
             line) and delegate the memory, cpu and pids controllers to users (systemd does by \
             default), or use the rootful service",
        );
    }
    let missing: Vec<&str> = ["memory", "cpu", "pids"]
        .into_iter()
        .filter(|c| !host.cgroup_controllers.iter().any(|have| have == c))
        .collect();
    // Podman 4.3 and later list the controllers; an empty list says nothing.
    if rootless && !host.cgroup_controllers.is_empty() && !missing.is_empty() {
        return Check::warn(
            "limits",
            format!(
                "cgroup v2, but the {} controller(s) are not delegated to this user: those limits are not applied",
                missing.join(", ")
            ),
            "delegate them: `systemctl edit user@.service` with `[Service] Delegate=memory cpu pids`, then log in again",
        );
    }
    Check::ok(
        "limits",
        format!(
            "cgroup {}{}: memory, CPU and process limits apply",
            host.cgroup_version,
            if rootless { " (rootless)" } else { "" }
        ),
    )
}

/// The storage driver: `vfs` copies the whole image for every container (a launch of the
/// agent image then takes tens of seconds).
fn storage_check(info: &Info) -> Check {
    let store = &info.store;
    let detail = format!("driver {} at {}", store.graph_driver_name, store.graph_root);
    if store.graph_driver_name != "vfs" {
        return Check::ok("storage", detail);
    }
    let conf = if info.host.security.rootless {
        "~/.config/containers/storage.conf"
    } else {
        "/etc/containers/storage.conf"
    };
    let (images, containers) = (store.image_store.number, store.container_store.number);
    let migrate = if images + containers == 0 {
        "the store is empty: stop the Podman service, run `podman system reset --force` (it loses nothing now), write the setting, start the service (`scripts/setup-podman` does this for the users it prepares)".to_string()
    } else {
        format!(
            "migrating: stop the Podman service, run `podman system reset` — it DELETES this store's {images} image(s), {containers} container(s) and every volume (including ags's agent state volumes: logins, settings) — then write the setting, start the service, and rebuild with `ags image build` (first `scripts/bootstrap-base-image` when the base is gone too)"
        )
    };
    Check::warn(
        "storage",
        format!(
            "{detail}: every container gets a full copy of its image (25-90 s per launch of the 1.9 GB agent image)"
        ),
        format!(
            "use overlay: `[storage] driver = \"overlay\"` in {conf} (native on kernel >= 5.13, else `[storage.options.overlay] mount_program = \"/usr/bin/fuse-overlayfs\"`); the driver can only change on an empty store; {migrate}"
        ),
    )
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

#[cfg(test)]
mod tests {
    use super::super::Status;
    use super::*;

    fn info(version: &str, driver: &str, rootless: bool) -> Info {
        let mut i = Info::default();
        i.version.version = version.into();
        i.store.graph_driver_name = driver.into();
        i.host.security.rootless = rootless;
        i
    }

    #[test]
    fn vfs_storage_is_a_warning_with_the_right_file() {
        assert_eq!(storage_check(&info("4.3.1", "overlay", true)).status, Status::Ok);
        let c = storage_check(&info("4.3.1", "vfs", true));
        assert_eq!(c.status, Status::Warn);
        assert!(c.fix.unwrap().contains("~/.config/containers/storage.conf"));
        let c = storage_check(&info("4.3.1", "vfs", false));
        assert!(c.fix.unwrap().contains("/etc/containers/storage.conf"));
    }

    #[test]
    fn limits_rootless_cgroup_v1_cannot_enforce() {
        let mut i = info("4.3.1", "overlay", true);
        i.host.cgroup_version = "v1".into();
        let c = limits_check(&i);
        assert_eq!(c.status, Status::Warn);
        assert!(
            c.detail.contains("cannot set the memory, CPU and process limits"),
            "{}",
            c.detail
        );
        assert!(c.fix.unwrap().contains("cgroup v2"));
        i.host.security.rootless = false;
        assert_eq!(limits_check(&i).status, Status::Ok);
        i.host.cgroup_version = "v2".into();
        i.host.security.rootless = true;
        i.host.cgroup_controllers = vec!["cpu".into(), "pids".into()];
        let c = limits_check(&i);
        assert_eq!(c.status, Status::Warn);
        assert!(c.detail.contains("memory controller"), "{}", c.detail);
        i.host.cgroup_controllers.push("memory".into());
        assert_eq!(limits_check(&i).status, Status::Ok);
    }

    #[test]
    fn old_podman_is_a_warning() {
        assert_eq!(version_check(&info("4.3.1", "", false), false).status, Status::Ok);
        assert_eq!(version_check(&info("5.4.2", "", false), false).status, Status::Ok);
        assert_eq!(
            version_check(&info("3.4.4", "", false), false).status,
            Status::Warn
        );
    }

    #[test]
    fn a_remote_podman_4_cannot_take_generated_files() {
        let c = version_check(&info("4.3.1", "", false), true);
        assert_eq!(c.status, Status::Warn);
        assert!(
            c.detail.contains("hook-generated files are refused"),
            "{}",
            c.detail
        );
        assert_eq!(version_check(&info("5.4.2", "", false), true).status, Status::Ok);
    }
}
