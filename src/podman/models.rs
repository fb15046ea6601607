//! Wire types of the libpod API other than the create spec: response models and small
//! request bodies.
//!
//! Part of stage 4 (`podman`); no I/O. Response models ignore unknown fields (Podman adds fields
//! between versions), default missing ones and read `null` lists and maps as empty. Podman's
//! capitalised names are mapped with `#[serde(rename_all)]`; only the fields `ags` reads are kept.
//! Ref: <https://docs.podman.io/en/latest/_static/api.html>

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The body of `POST /libpod/volumes/create`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct VolumeCreate {
    pub name: String,
    /// Driver (`local`).
    pub driver: String,
    /// `Labels` is the preferred field (4.3.1 also accepts the older `Label`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Driver options, e.g. `{"type": "tmpfs", "device": "tmpfs", "o": "mode=0700"}`.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub options: BTreeMap<String, String>,
}

/// Response of `POST /libpod/containers/create` (`{"Id", "Warnings"}`; `Warnings` may be null).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct CreateResponse {
    pub(crate) id: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub(crate) warnings: Vec<String>,
}

/// Response of `GET /libpod/containers/{id}/json` (the parts `ags` reads).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub struct ContainerInspect {
    /// Full container ID.
    pub id: String,
    pub name: String,
    pub state: ContainerState,
    pub config: ContainerConfig,
    /// Volume and bind mounts (tmpfs mounts are in `HostConfig`, not here).
    #[serde(deserialize_with = "null_as_default")]
    pub mounts: Vec<InspectMount>,
    /// Security and resource settings.
    pub host_config: HostConfig,
}

/// `State` of an inspected container.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub struct ContainerState {
    /// `created`, `initialized`, `running`, `exited`, `stopped`, ...
    pub status: String,
    /// True while the container's process runs.
    pub running: bool,
    /// Exit code; meaningful once the container has exited (137 = killed by SIGKILL).
    pub exit_code: i32,
    /// Killed by the OOM killer.
    #[serde(rename = "OOMKilled")]
    pub oom_killed: bool,
    /// RFC 3339 start time.
    pub started_at: String,
    /// RFC 3339 finish time.
    pub finished_at: String,
}

/// `Config` of an inspected container.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub struct ContainerConfig {
    #[serde(deserialize_with = "null_as_default")]
    pub labels: BTreeMap<String, String>,
    /// Annotations (includes Podman's own `io.podman.*`).
    #[serde(deserialize_with = "null_as_default")]
    pub annotations: BTreeMap<String, String>,
    /// Environment as `NAME=value`. May hold secrets: never print it.
    #[serde(deserialize_with = "null_as_default")]
    pub env: Vec<String>,
    pub user: String,
    pub working_dir: String,
}

/// One entry of an inspected container's `Mounts`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub struct InspectMount {
    /// `bind` or `volume`.
    #[serde(rename = "Type")]
    pub kind: String,
    /// Volume name (volumes only).
    pub name: String,
    /// Host path.
    pub source: String,
    /// Path inside the container.
    pub destination: String,
    /// Writable.
    #[serde(rename = "RW")]
    pub rw: bool,
    #[serde(deserialize_with = "null_as_default")]
    pub options: Vec<String>,
}

/// `HostConfig` of an inspected container (the parts `ags` checks).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub struct HostConfig {
    /// Dropped capabilities, expanded (`CAP_CHOWN`, ...).
    #[serde(deserialize_with = "null_as_default")]
    pub cap_drop: Vec<String>,
    /// Security options (`no-new-privileges`).
    #[serde(deserialize_with = "null_as_default")]
    pub security_opt: Vec<String>,
    /// Process-count limit.
    pub pids_limit: i64,
    /// Network mode (`none`, `bridge`, ...).
    pub network_mode: String,
    /// Tmpfs mounts: destination → options.
    #[serde(deserialize_with = "null_as_default")]
    pub tmpfs: BTreeMap<String, String>,
    /// Remove on exit.
    pub auto_remove: bool,
}

/// One entry of `GET /libpod/containers/json`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub struct ContainerSummary {
    /// Full container ID.
    pub id: String,
    /// Names (one for ordinary containers).
    #[serde(deserialize_with = "null_as_default")]
    pub names: Vec<String>,
    /// `created`, `running`, `exited`, ...
    pub state: String,
    #[serde(deserialize_with = "null_as_default")]
    pub labels: BTreeMap<String, String>,
    /// Exit code, when exited.
    pub exit_code: i32,
    /// When it started, in seconds since the Unix epoch (not positive: never started).
    pub started_at: i64,
    /// When it exited, in seconds since the Unix epoch.
    pub exited_at: i64,
}

/// A volume, as returned by volume create and list.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub struct Volume {
    pub name: String,
    #[serde(deserialize_with = "null_as_default")]
    pub labels: BTreeMap<String, String>,
    /// Driver options.
    #[serde(deserialize_with = "null_as_default")]
    pub options: BTreeMap<String, String>,
}

/// Response of `GET /libpod/version` (the part `ags` reads).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub struct VersionInfo {
    /// Podman version (`4.3.1`).
    pub version: String,
}

/// Response of `GET /libpod/info` (the parts `ags` reads; the JSON is camelCase here).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Info {
    pub host: HostInfo,
    pub version: InfoVersion,
    /// Image storage.
    pub store: StoreInfo,
}

/// `store` of [`Info`].
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct StoreInfo {
    /// Storage driver (`overlay`, `vfs`, ...).
    pub graph_driver_name: String,
    /// Where images and containers are stored.
    pub graph_root: String,
    /// Where run-time state is kept.
    pub run_root: String,
    /// Where named volumes are kept.
    pub volume_path: String,
    /// How many images the store holds.
    pub image_store: StoreCount,
    /// How many containers the store holds.
    pub container_store: StoreCount,
}

/// `{"number": N}` in [`StoreInfo`].
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(default)]
pub struct StoreCount {
    pub number: u64,
}

/// `host` of [`Info`].
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct HostInfo {
    /// Security facts (rootless).
    pub security: SecurityInfo,
    /// The OCI runtime (`runc`, `crun`).
    pub oci_runtime: OciRuntimeInfo,
    /// `v1` or `v2`.
    pub cgroup_version: String,
    /// Network backend (`cni`, `netavark`).
    pub network_backend: String,
    /// Total memory of the machine, in bytes.
    pub mem_total: u64,
    /// The cgroup controllers the service can use (`memory`, `cpu`, `pids`…).
    pub cgroup_controllers: Vec<String>,
    /// The rootless network command containers get by default (`pasta`, `slirp4netns`;
    /// Podman 5 and later report it, 4.3 does not).
    pub rootless_network_cmd: Option<String>,
}

/// `host.security` of [`Info`].
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SecurityInfo {
    /// True when the service runs rootless.
    pub rootless: bool,
    /// SELinux is enabled.
    pub selinux_enabled: bool,
}

/// `host.ociRuntime` of [`Info`].
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct OciRuntimeInfo {
    pub name: String,
    /// Its `--version` output (`runc version 1.1.5+ds1\ncommit: …`).
    pub version: String,
    /// Its distribution package (`runc_1.1.5+ds1-1+deb12u1_amd64`), when Podman knows it.
    pub package: String,
}

/// `version` of [`Info`].
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
pub struct InfoVersion {
    pub version: String,
}

/// Response of `POST /libpod/images/import`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct ImportResponse {
    pub(crate) id: String,
}

/// Podman sends `null` for empty lists and maps; read it as empty.
pub(super) fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn inspect_tolerates_nulls_and_unknown_fields() {
        let body = json!({
            "Id": "abc", "Name": "n", "Future": {"x": 1},
            "State": {"Status": "exited", "Running": false, "ExitCode": 7, "Pid": 0, "Health": {}},
            "Config": {"Labels": null, "Env": ["A=1"], "Annotations": {"k": "v"}},
            "Mounts": null, "HostConfig": {"CapDrop": null, "PidsLimit": 10}
        });
        let c: ContainerInspect = serde_json::from_value(body).unwrap();
        assert_eq!(
            (c.id.as_str(), c.state.exit_code, c.state.running),
            ("abc", 7, false)
        );
        assert!(c.config.labels.is_empty() && c.mounts.is_empty() && c.host_config.cap_drop.is_empty());
        assert_eq!(c.host_config.pids_limit, 10);
    }

    #[test]
    fn info_reads_nested_camel_case() {
        let body = json!({"host": {"security": {"rootless": true}, "ociRuntime": {"name": "crun"},
            "cgroupVersion": "v2"}, "version": {"Version": "5.4.2", "APIVersion": "5.4.2"},
            "store": {"graphDriverName": "vfs", "graphRoot": "/home/u/.local/share/containers/storage"}});
        let i: Info = serde_json::from_value(body).unwrap();
        assert!(i.host.security.rootless);
        assert_eq!(
            (i.host.oci_runtime.name.as_str(), i.host.cgroup_version.as_str()),
            ("crun", "v2")
        );
        assert_eq!(i.version.version, "5.4.2");
        assert_eq!(i.store.graph_driver_name, "vfs");
    }
}
