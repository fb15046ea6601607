//! The libpod `SpecGenerator` subset `ags` sends to `POST /libpod/containers/create`.
//!
//! Part of stage 4 (`podman`); no I/O. This file is the only code that knows the create body's
//! JSON shape. Podman silently ignores unknown or misspelled fields (another client once sent
//! `no_new_privilages`, and containers ran without the bit), so every field here was checked on
//! a real Podman 4.3.1 service by inspecting the created container and the process's view of
//! itself: see `spec_fields_take_effect` in `tests/live/podman_client.rs`.
//! Ref: <https://docs.podman.io/en/latest/_static/api.html#tag/containers/operation/ContainerCreateLibpod>

use std::collections::BTreeMap;

use serde::Serialize;

/// The body of `POST /libpod/containers/create`: the subset of libpod's `SpecGenerator` that
/// `ags` uses. Empty or `None` fields are omitted, so Podman applies its defaults.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SpecGenerator {
    /// Container name; Podman generates one when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Image reference (`localhost/ags-agent:latest`). Must exist locally: create never pulls.
    pub image: String,
    /// The command (argv), overriding the image's `CMD`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// The entrypoint, overriding the image's `ENTRYPOINT`; `Some(vec![])` clears it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entrypoint: Option<Vec<String>>,
    /// Environment variables added to the image's.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Working directory inside the container.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub work_dir: Option<String>,
    /// Allocate a pseudo-terminal (the attach stream is then raw, not multiplexed).
    #[serde(skip_serializing_if = "is_false")]
    pub terminal: bool,
    /// Keep stdin open (`podman run -i`). Without it, attached stdin is ignored and the
    /// container's stdin is `/dev/null`.
    #[serde(skip_serializing_if = "is_false")]
    pub stdin: bool,
    /// Container labels (used to find `ags` containers again).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// OCI annotations (visible to OCI hooks).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// Capabilities to drop (`["all"]` drops every capability).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cap_drop: Vec<String>,
    /// Capabilities to add back.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cap_add: Vec<String>,
    /// Set the `no_new_privs` bit (`--security-opt=no-new-privileges`). Spelled exactly so.
    #[serde(skip_serializing_if = "is_false")]
    pub no_new_privileges: bool,
    /// User namespace mode; `None` keeps Podman's default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub userns: Option<Namespace>,
    /// The user namespace's id mappings, for `userns` `private` (`--uidmap`/`--gidmap`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idmappings: Option<IdMappings>,
    /// A line appended to the container's /etc/passwd when its user's uid has no entry in the
    /// image (`--passwd-entry`; Podman replaces `$USERNAME`, `$UID`, `$GID`, `$NAME`, `$HOME`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub passwd_entry: Option<String>,
    /// A line appended to the container's /etc/group when its user's gid has no entry in the
    /// image (`--group-entry`, Podman 4.5 and later; older versions ignore the field).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group_entry: Option<String>,
    /// Network namespace mode; `None` keeps Podman's default network.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub netns: Option<Namespace>,
    /// Hostname inside the container.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// Extra `/etc/hosts` lines, `NAME:ADDRESS` (`--add-host`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hostadd: Vec<String>,
    /// Bind and tmpfs mounts.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mounts: Vec<Mount>,
    /// Named volumes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub volumes: Vec<NamedVolume>,
    /// Resource limits (OCI `LinuxResources` subset).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_limits: Option<ResourceLimits>,
    /// `user[:group]` to run as.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Remove the container when it exits (`--rm`).
    #[serde(skip_serializing_if = "is_false")]
    pub remove: bool,
    /// Seconds after its start when Podman (conmon) kills the container's process with SIGKILL
    /// (`--timeout`); `None`: never.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u32>,
    /// Path of a seccomp profile on the service host (`--security-opt seccomp=PATH`); `None`:
    /// Podman's default profile.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seccomp_profile_path: Option<String>,
    /// Where the container's output is logged; `None` keeps Podman's default (a `ctr.log`
    /// file in its storage, on disk).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_configuration: Option<LogConfig>,
    /// Run Podman's init (catatonit) as PID 1 (`--init`): it forwards signals to the command
    /// and reaps zombies. The service needs its `init_path` binary installed.
    #[serde(skip_serializing_if = "is_false")]
    pub init: bool,
    /// Ports published on the host (`--publish`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub portmappings: Vec<PortMapping>,
    /// SELinux options (`--security-opt label=…`); `["disable"]` turns labelling off.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub selinux_opts: Vec<String>,
}

/// `{"driver": "none"}`: the container's log driver (checked on a real service by
/// `tests/live/output_logs.rs`: inspect shows `LogConfig.Type` `none`, attach still streams).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LogConfig {
    /// `none` keeps nothing (attach still streams the output); `k8s-file` and `journald`
    /// keep it on disk; `passthrough` needs the caller's own stdio (the CLI only).
    pub driver: String,
}

impl LogConfig {
    /// The driver that stores nothing.
    pub fn none() -> Self {
        LogConfig {
            driver: "none".into(),
        }
    }
}

/// One published port (libpod's `PortMapping`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PortMapping {
    /// Host address; empty means every address.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub host_ip: String,
    /// Port inside the container.
    pub container_port: u16,
    /// Port on the host.
    pub host_port: u16,
    /// `tcp` or `udp`.
    pub protocol: String,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// A namespace setting (`{"nsmode": "keep-id"}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Namespace {
    pub nsmode: NsMode,
    /// Mode options, e.g. `uid=1000,gid=1000` for `keep-id` on Podman 5.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

impl Namespace {
    /// A namespace with `mode` and no options.
    pub fn new(nsmode: NsMode) -> Self {
        Namespace { nsmode, value: None }
    }
}

/// The namespace modes `ags` uses (libpod accepts more).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NsMode {
    /// Share the host's namespace.
    Host,
    /// A new private namespace.
    Private,
    /// Network: no network at all (loopback only).
    None,
    /// User namespace: map the calling user to the same uid inside (rootless only).
    #[serde(rename = "keep-id")]
    KeepId,
}

/// `idmappings` of the create body (containers/storage `IDMappingOptions`, whose Go field
/// names are the JSON names).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct IdMappings {
    /// Container uid ranges and where they lie in the service's user namespace.
    #[serde(rename = "UIDMap")]
    pub uid_map: Vec<IdMap>,
    /// Container gid ranges, likewise.
    #[serde(rename = "GIDMap")]
    pub gid_map: Vec<IdMap>,
}

/// One range of [`IdMappings`]: `size` ids from `container_id` inside map to `host_id` in the
/// service's own user namespace (for a rootless service: 0 is its user, 1… its subordinate ids).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct IdMap {
    /// First id inside the container.
    pub container_id: u32,
    /// First id in the service's namespace.
    pub host_id: u32,
    /// Number of ids.
    pub size: u32,
}

/// A bind or tmpfs mount (`{"destination", "source", "type", "options"}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mount {
    /// Absolute path inside the container.
    pub destination: String,
    /// Host path for binds (must exist at create time); `tmpfs` for tmpfs.
    pub source: String,
    /// Mount type.
    #[serde(rename = "type")]
    pub kind: MountType,
    /// Mount options: `ro`/`rw`, `rbind`, `nosuid`, `nodev`, `noexec`, `size=…`, ...
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
}

/// Kind of [`Mount`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MountType {
    /// A bind mount of a host path.
    Bind,
    /// A fresh tmpfs.
    Tmpfs,
}

impl Mount {
    /// A bind mount of `source` at `destination`.
    pub fn bind(source: impl Into<String>, destination: impl Into<String>, options: &[&str]) -> Self {
        Mount {
            destination: destination.into(),
            source: source.into(),
            kind: MountType::Bind,
            options: options.iter().map(|o| (*o).to_owned()).collect(),
        }
    }

    /// A tmpfs at `destination`.
    pub fn tmpfs(destination: impl Into<String>, options: &[&str]) -> Self {
        Mount {
            destination: destination.into(),
            source: "tmpfs".to_owned(),
            kind: MountType::Tmpfs,
            options: options.iter().map(|o| (*o).to_owned()).collect(),
        }
    }
}

/// A named volume mounted into the container (libpod's `NamedVolume`, capitalised JSON names).
/// Podman creates the volume if it does not exist.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NamedVolume {
    #[serde(rename = "Name")]
    pub name: String,
    /// Absolute path inside the container.
    #[serde(rename = "Dest")]
    pub dest: String,
    /// Mount options (`ro`, `nosuid`, ...).
    #[serde(rename = "Options", skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
    /// Mount only this path of the volume (a directory or a single file), relative to its
    /// root. Podman 5 ([`super::ServerVersion::mounts_volume_subpaths`]).
    #[serde(rename = "SubPath", skip_serializing_if = "Option::is_none")]
    pub sub_path: Option<String>,
}

/// Resource limits (`resource_limits`, an OCI `LinuxResources` subset).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ResourceLimits {
    /// Process-count limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pids: Option<PidsLimit>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryLimit>,
    /// CPU bandwidth limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuLimit>,
}

/// `{"limit": BYTES, "swap": BYTES}`: memory, and memory plus swap (equal: no swap beyond the
/// limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MemoryLimit {
    /// Memory in bytes.
    pub limit: i64,
    /// Memory plus swap in bytes.
    pub swap: i64,
}

/// `{"quota": US, "period": US}`: at most `quota` microseconds of CPU time per `period`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CpuLimit {
    /// CPU time per period, in microseconds.
    pub quota: i64,
    /// The period, in microseconds.
    pub period: u64,
}

/// `{"limit": N}`: the maximum number of processes in the container.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PidsLimit {
    pub limit: i64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn minimal_spec_omits_defaults() {
        let spec = SpecGenerator {
            image: "img".into(),
            ..Default::default()
        };
        assert_eq!(serde_json::to_value(&spec).unwrap(), json!({"image": "img"}));
    }

    #[test]
    fn full_spec_uses_libpod_names() {
        let spec = SpecGenerator {
            name: Some("n".into()),
            image: "img".into(),
            command: vec!["sh".into()],
            entrypoint: Some(vec![]),
            env: BTreeMap::from([("A".into(), "1".into())]),
            work_dir: Some("/w".into()),
            terminal: true,
            stdin: true,
            labels: BTreeMap::from([("l".into(), "1".into())]),
            annotations: BTreeMap::from([("a".into(), "2".into())]),
            cap_drop: vec!["all".into()],
            cap_add: vec![],
            no_new_privileges: true,
            userns: Some(Namespace {
                nsmode: NsMode::KeepId,
                value: Some("uid=1".into()),
            }),
            idmappings: Some(IdMappings {
                uid_map: vec![IdMap {
                    container_id: 0,
                    host_id: 1,
                    size: 2,
                }],
                gid_map: vec![],
            }),
            passwd_entry: Some("u:*:1:1::/w:/bin/sh".into()),
            group_entry: Some("g:x:1:u".into()),
            netns: Some(Namespace::new(NsMode::None)),
            hostname: Some("h".into()),
            hostadd: vec!["host.ags.internal:127.0.0.1".into()],
            mounts: vec![Mount::bind("/s", "/d", &["ro", "rbind"]), Mount::tmpfs("/t", &[])],
            volumes: vec![NamedVolume {
                name: "v".into(),
                dest: "/v".into(),
                options: vec!["ro".into()],
                sub_path: Some("files/0".into()),
            }],
            resource_limits: Some(ResourceLimits {
                pids: Some(PidsLimit { limit: 4096 }),
                memory: Some(MemoryLimit {
                    limit: 1 << 30,
                    swap: 1 << 30,
                }),
                cpu: Some(CpuLimit {
                    quota: 150_000,
                    period: 100_000,
                }),
            }),
            user: Some("1000:1000".into()),
            remove: true,
            timeout: Some(600),
            seccomp_profile_path: Some("/p.json".into()),
            log_configuration: Some(LogConfig::none()),
            init: true,
            portmappings: vec![PortMapping {
                host_ip: "127.0.0.1".into(),
                container_port: 80,
                host_port: 8080,
                protocol: "tcp".into(),
            }],
            selinux_opts: vec!["disable".into()],
        };
        let expected = json!({
            "name": "n", "image": "img", "command": ["sh"], "entrypoint": [], "env": {"A": "1"},
            "work_dir": "/w", "terminal": true, "stdin": true, "labels": {"l": "1"},
            "annotations": {"a": "2"}, "cap_drop": ["all"], "no_new_privileges": true,
            "userns": {"nsmode": "keep-id", "value": "uid=1"},
            "idmappings": {"UIDMap": [{"container_id": 0, "host_id": 1, "size": 2}], "GIDMap": []},
            "passwd_entry": "u:*:1:1::/w:/bin/sh", "group_entry": "g:x:1:u", "netns": {"nsmode": "none"}, "hostadd": ["host.ags.internal:127.0.0.1"],
            "hostname": "h",
            "mounts": [
                {"destination": "/d", "source": "/s", "type": "bind", "options": ["ro", "rbind"]},
                {"destination": "/t", "source": "tmpfs", "type": "tmpfs"}
            ],
            "volumes": [{"Name": "v", "Dest": "/v", "Options": ["ro"], "SubPath": "files/0"}],
            "resource_limits": {"pids": {"limit": 4096},
                "memory": {"limit": 1073741824, "swap": 1073741824}, "cpu": {"quota": 150000, "period": 100000}}, "user": "1000:1000", "remove": true, "timeout": 600, "seccomp_profile_path": "/p.json",
            "log_configuration": {"driver": "none"},
            "init": true,
            "portmappings": [{"host_ip": "127.0.0.1", "container_port": 80, "host_port": 8080, "protocol": "tcp"}],
            "selinux_opts": ["disable"]
        });
        assert_eq!(serde_json::to_value(&spec).unwrap(), expected);
    }
}
