//! The Kubernetes export of a launch plan (`ags plan --format kube`, docs/kube.md): a Pod that
//! runs the launch's image, command, user and security settings, a Secret with the values the
//! launch would stage (the env file and the generated files), and, for `--network none`, a
//! NetworkPolicy that denies all traffic. Pure: a plan and the env file in, objects out.
//!
//! The Secret is mounted like the launch's staging: the env file read-only at
//! `/run/ags/env` (the container command loads it exactly as in a launch, so no value sits in
//! the Pod spec or the container's environment configuration) and each generated file
//! read-only at its destination (`subPath` of one key).

mod check;
pub mod model;

use std::collections::BTreeMap;
use std::path::Path;

use sha2::Digest;

pub use check::{GitSource, check_label, check_network, check_pod_name};
use model::*;

use super::types::*;
use crate::config::Network;

/// Label on every exported object: what made it.
pub const LABEL_EXPORT: &str = "io.ags.export";
/// Secret key of the env file.
pub const ENV_KEY: &str = "env";
/// Name of the agent container (Podman names it `<pod>-agent`).
pub const AGENT_CONTAINER: &str = "agent";
/// Name of the clone init container.
pub const CLONE_CONTAINER: &str = "clone-workspace";
/// Mode of the Secret's files: read-only for the agent, whatever uid the runtime gives them.
const SECRET_FILE_MODE: u32 = 0o444;

/// Errors of the Kubernetes export (all before any hook runs, except a bad name from a hook).
#[derive(Debug, thiserror::Error)]
pub enum KubeError {
    /// Allowlist mode cannot be exported.
    #[error(
        "--format kube: the network mode is allowlist (from {origin}), whose egress proxy runs inside the ags process and cannot go into a Pod; use --network none (exported as a deny-all NetworkPolicy) or --network open with your cluster's own egress policy"
    )]
    Allowlist { origin: String },
    /// `--network none` with a clone.
    #[error(
        "--workspace-from-git needs the network for its clone, but the network mode is none; use --network open (and a NetworkPolicy of your own), or drop --workspace-from-git"
    )]
    CloneWithoutNetwork,
    /// The container name is no valid Pod name.
    #[error(
        "--format kube: {name:?} is not a valid Pod name (at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit); choose another --name"
    )]
    PodName { name: String },
    /// A label Kubernetes refuses.
    #[error("--format kube: label {label}: {rule}; change or drop this --label")]
    Label { label: String, rule: &'static str },
    /// A bad `--workspace-from-git`.
    #[error("--workspace-from-git {arg:?}: {rule}")]
    GitSource { arg: String, rule: &'static str },
    /// `plan.user` is not `uid:gid`.
    #[error("--format kube: the plan's user {user:?} is not uid:gid")]
    User { user: String },
}

/// What the export needs besides the plan.
#[derive(Debug, Clone, Copy)]
pub struct KubeInput<'a> {
    /// The plan.
    pub plan: &'a LaunchPlan,
    /// The env file (`export KEY='value'` lines) when the plan stages values.
    pub env_file: Option<&'a [u8]>,
    /// `--workspace-from-git`.
    pub workspace_from_git: Option<&'a GitSource>,
    /// Print `<redacted>` instead of the Secret's values (output to a terminal).
    pub redact: bool,
    /// What each bind source is on this host (`File`, `Directory`, `Socket`), read by the
    /// caller: the `hostPath` type, so that a node lacking it refuses the Pod instead of
    /// creating a directory there.
    pub host_kinds: &'a BTreeMap<std::path::PathBuf, &'static str>,
}

/// The exported objects.
#[derive(Debug, Clone)]
pub struct KubeExport {
    /// The staged values, when there are any.
    pub secret: Option<Secret>,
    /// `--network none`: deny all traffic of the pod.
    pub network_policy: Option<NetworkPolicy>,
    /// The launch.
    pub pod: Pod,
}

impl KubeExport {
    /// A YAML stream of JSON documents (JSON is YAML): Secret, NetworkPolicy, Pod, separated by
    /// `---` lines — what `kubectl apply -f` and Podman's `play kube` read.
    pub fn render(&self) -> zeroize::Zeroizing<String> {
        let mut out = zeroize::Zeroizing::new(String::with_capacity(16 * 1024));
        let mut push = |doc: zeroize::Zeroizing<String>| {
            if !out.is_empty() {
                out.push_str("---\n");
            }
            out.push_str(&doc);
            out.push('\n');
        };
        if let Some(s) = &self.secret {
            push(pretty(s));
        }
        if let Some(n) = &self.network_policy {
            push(pretty(n));
        }
        push(pretty(&self.pod));
        out
    }
}

fn pretty<T: serde::Serialize>(doc: &T) -> zeroize::Zeroizing<String> {
    zeroize::Zeroizing::new(serde_json::to_string_pretty(doc).expect("a manifest always serializes"))
}

/// Turn the plan into Kubernetes objects.
pub fn export(input: &KubeInput<'_>) -> Result<KubeExport, KubeError> {
    let plan = input.plan;
    check_network(
        plan.network,
        &plan.egress.mode_origin.to_string(),
        input.workspace_from_git.is_some(),
    )?;
    check_pod_name(&plan.container_name)?;
    let (uid, gid) = ids(plan)?;
    let labels = labels(plan)?;
    let tag = tag(&plan.launch_id);
    let secret_name = format!("{}-secret", plan.container_name);
    let data = secret_data(input);
    let security = security_context(uid, gid);
    let (volumes, mounts) = volumes(input, &secret_name, &tag);
    let mut agent = Container {
        name: AGENT_CONTAINER.into(),
        image: plan.image.clone(),
        image_pull_policy: "IfNotPresent",
        command: plan.container_command.clone(),
        working_dir: plan.workdir.display().to_string(),
        env: plain_env(plan),
        ports: ports(plan),
        security_context: security.clone(),
        resources: resources(plan),
        volume_mounts: mounts,
        stdin: true,
        stdin_once: true,
        tty: plan.tty,
    };
    let init_containers = match input.workspace_from_git {
        Some(git) => vec![clone_container(plan, git, &agent, &tag)],
        None => Vec::new(),
    };
    agent
        .volume_mounts
        .sort_by(|a, b| a.mount_path.cmp(&b.mount_path));
    let metadata = |name: String| Metadata {
        name,
        labels: labels.clone(),
        annotations: BTreeMap::new(),
    };
    let pod = Pod {
        api_version: "v1",
        kind: "Pod",
        metadata: Metadata {
            annotations: pod_annotations(plan),
            ..metadata(plan.container_name.clone())
        },
        spec: PodSpec {
            restart_policy: "Never",
            automount_service_account_token: false,
            enable_service_links: false,
            active_deadline_seconds: plan.timeout_seconds.map(|t| t.ceil() as u64),
            security_context: PodSecurityContext {
                run_as_user: uid,
                run_as_group: gid,
                run_as_non_root: uid != 0,
                seccomp_profile: runtime_default(),
            },
            init_containers,
            containers: vec![agent],
            volumes,
        },
    };
    let network_policy = (plan.network == Network::None).then(|| deny_all(plan, metadata));
    let secret = (!data.is_empty()).then(|| Secret {
        api_version: "v1",
        kind: "Secret",
        metadata: metadata(secret_name),
        kind_of_secret: "Opaque",
        data,
    });
    Ok(KubeExport {
        secret,
        network_policy,
        pod,
    })
}

/// With no network: a policy that denies the Pod every ingress and egress.
fn deny_all(plan: &LaunchPlan, metadata: impl Fn(String) -> Metadata) -> NetworkPolicy {
    NetworkPolicy {
        api_version: "networking.k8s.io/v1",
        kind: "NetworkPolicy",
        metadata: metadata(format!("{}-deny-all", plan.container_name)),
        spec: NetworkPolicySpec {
            pod_selector: LabelSelector {
                match_labels: BTreeMap::from([(LABEL_LAUNCH_ID.to_string(), plan.launch_id.clone())]),
            },
            policy_types: vec!["Ingress", "Egress"],
        },
    }
}

/// The Secret's data: the staged environment and the generated files (redacted on request).
fn secret_data(input: &KubeInput<'_>) -> BTreeMap<String, SecretValue> {
    let mut data = BTreeMap::new();
    if let Some(env) = input.env_file {
        data.insert(ENV_KEY.to_string(), SecretValue::encode(env));
    }
    for (i, f) in input.plan.files.iter().enumerate() {
        data.insert(file_key(i), SecretValue::encode(f.content.expose().as_bytes()));
    }
    if input.redact {
        data = data.into_iter().map(|(k, v)| (k, v.redacted())).collect();
    }
    data
}

/// The plain variables of the plan (staged ones come from the Secret).
fn plain_env(plan: &LaunchPlan) -> Vec<EnvVar> {
    let plain = |e: &PlanEnv| match &e.source {
        EnvSource::Plain { value } => Some(EnvVar {
            name: e.key.clone(),
            value: value.clone(),
        }),
        _ => None,
    };
    plan.env.iter().filter_map(plain).collect()
}

/// The project directory (a path is no label value) and, for a rootless service, Podman's
/// `keep-id` user namespace (honoured by Podman's `play kube` since 4.9, ignored by
/// Kubernetes), so that a rootless Podman playing the export maps the user as a launch does.
fn pod_annotations(plan: &LaunchPlan) -> BTreeMap<String, String> {
    let project = plan.labels.get(LABEL_PROJECT).cloned().unwrap_or_default();
    let mut out = BTreeMap::from([(LABEL_PROJECT.to_string(), project)]);
    if plan.user_namespace == UserNamespace::KeepId {
        out.insert(ANNOTATION_PODMAN_USERNS.into(), "keep-id".into());
    }
    out
}

/// Podman's `play kube` annotation choosing the pod's user namespace.
pub const ANNOTATION_PODMAN_USERNS: &str = "io.podman.annotations.userns";

/// The Secret key of generated file `i`.
pub fn file_key(i: usize) -> String {
    format!("file-{i}")
}

/// A short, stable tag of the launch for volume names (Podman's `play kube` makes a named
/// volume of each `emptyDir` and keeps it: the names must not meet another launch's).
fn tag(launch_id: &str) -> String {
    hex::encode(&sha2::Sha256::digest(launch_id.as_bytes())[..5])
}

fn ids(plan: &LaunchPlan) -> Result<(u32, u32), KubeError> {
    let user = plan.user.clone().unwrap_or_default();
    user.split_once(':')
        .and_then(|(u, g)| Some((u.parse().ok()?, g.parse().ok()?)))
        .ok_or(KubeError::User { user })
}

/// The launch's labels that mean something in a cluster: the launch id, the agent and the
/// user's `--label`s — not the owner labels of a local launch (`ags gc` would take a played
/// pod for an orphan) nor `io.ags.managed`.
fn labels(plan: &LaunchPlan) -> Result<BTreeMap<String, String>, KubeError> {
    let mut out = BTreeMap::from([(LABEL_EXPORT.to_string(), "kube".to_string())]);
    for (k, v) in &plan.labels {
        if !LOCAL_LABELS.contains(&k.as_str()) && k != LABEL_PROJECT {
            check_label(k, v)?;
            out.insert(k.clone(), v.clone());
        }
    }
    Ok(out)
}

fn runtime_default() -> SeccompProfile {
    SeccompProfile {
        kind: "RuntimeDefault",
    }
}

fn security_context(uid: u32, gid: u32) -> SecurityContext {
    SecurityContext {
        run_as_user: uid,
        run_as_group: gid,
        run_as_non_root: uid != 0,
        privileged: false,
        allow_privilege_escalation: false,
        capabilities: Capabilities {
            drop: vec!["ALL".into()],
        },
        seccomp_profile: runtime_default(),
    }
}

fn ports(plan: &LaunchPlan) -> Vec<ContainerPort> {
    plan.ports
        .iter()
        .map(|p| ContainerPort {
            container_port: p.container_port,
            host_port: p.host_port,
            host_ip: p.host_ip.map(|ip| ip.to_string()),
            protocol: match p.protocol {
                Protocol::Tcp => "TCP",
                Protocol::Udp => "UDP",
            },
        })
        .collect()
}

/// The workspace volume's name.
fn workspace_volume(tag: &str) -> String {
    format!("workspace-{tag}")
}

/// The pod's volumes and the agent's mounts, from the plan's mounts: the workdir as a
/// `hostPath` (or the clone's `emptyDir`), other binds as `hostPath`s, state volumes as
/// `emptyDir`s, `--lockdown` tmpfs mounts as in-memory `emptyDir`s, the staging volume and the
/// generated files from the Secret.
fn volumes(input: &KubeInput<'_>, secret: &str, tag: &str) -> (Vec<Volume>, Vec<VolumeMount>) {
    let plan = input.plan;
    let mut volumes = Vec::new();
    let mut mounts = Vec::new();
    let mut mount = |name: &str, path: &Path, sub_path: Option<String>, read_only| {
        mounts.push(VolumeMount {
            name: name.to_string(),
            mount_path: path.display().to_string(),
            sub_path,
            read_only,
        })
    };
    let git = input.workspace_from_git.is_some();
    let file_sources: Vec<&Path> = plan.files.iter().map(|f| f.host_path.as_path()).collect();
    for (i, m) in plan.mounts.iter().enumerate() {
        let (name, source) = match &m.kind {
            MountKind::Bind { source } if source == &plan.workdir && m.destination == plan.workdir => {
                let source = match git {
                    true => empty_dir(),
                    false => VolumeSource::HostPath {
                        path: source.display().to_string(),
                        kind: Some("Directory"),
                    },
                };
                (workspace_volume(tag), source)
            }
            MountKind::Bind { source } if file_sources.contains(&source.as_path()) => continue,
            // Generated files go through the Secret, whichever way the service would get them.
            MountKind::StagedFile { .. } => continue,
            // The agent hook record socket is served by a local `ags` process: not in a Pod.
            MountKind::Bind { .. } if m.destination == Path::new(crate::agent_hooks::SOCKET_DIR) => continue,
            // The guards of the workspace's git repositories: a clone is not the host's.
            MountKind::Bind { source } if git && source.starts_with(&plan.workdir) => continue,
            MountKind::Bind { source } => (
                format!("host-{i}-{tag}"),
                VolumeSource::HostPath {
                    path: source.display().to_string(),
                    kind: input.host_kinds.get(source).copied(),
                },
            ),
            MountKind::Volume { name } if plan.staging.as_ref().is_some_and(|s| &s.volume == name) => {
                if input.env_file.is_none() {
                    continue;
                }
                (
                    format!("stage-{tag}"),
                    secret_volume(secret, [ENV_KEY.to_string()]),
                )
            }
            MountKind::Volume { .. } => (format!("state-{i}-{tag}"), empty_dir()),
            MountKind::Tmpfs { size } => (
                format!("tmpfs-{i}-{tag}"),
                VolumeSource::EmptyDir {
                    medium: Some("Memory"),
                    size_limit: Some(size.to_string()),
                },
            ),
        };
        mount(&name, &m.destination, None, m.read_only);
        volumes.push(Volume { name, source });
    }
    if !plan.files.is_empty() {
        let name = format!("files-{tag}");
        for (i, f) in plan.files.iter().enumerate() {
            mount(&name, &f.destination, Some(file_key(i)), true);
        }
        let keys = (0..plan.files.len()).map(file_key);
        volumes.push(Volume {
            name,
            source: secret_volume(secret, keys),
        });
    }
    (volumes, mounts)
}

/// A Pod-local empty directory on disk.
fn empty_dir() -> VolumeSource {
    VolumeSource::EmptyDir {
        medium: None,
        size_limit: None,
    }
}

/// The plan's memory and CPU limits as `resources.limits`.
fn resources(plan: &LaunchPlan) -> Resources {
    let mut limits = std::collections::BTreeMap::new();
    if let Some(bytes) = plan.security.memory_limit {
        limits.insert("memory", bytes.to_string());
    }
    if let Some(cpus) = plan.security.cpus {
        limits.insert("cpu", format!("{}m", cpus.millis()));
    }
    Resources { limits }
}

fn secret_volume(secret: &str, keys: impl IntoIterator<Item = String>) -> VolumeSource {
    VolumeSource::Secret {
        secret_name: secret.to_string(),
        items: keys
            .into_iter()
            .map(|key| KeyToPath {
                path: key.clone(),
                key,
            })
            .collect(),
        default_mode: SECRET_FILE_MODE,
        optional: false,
    }
}

/// The init container that clones the workspace into its `emptyDir` (as the agent's user,
/// with the agent's security context, from the agent's image, which must have `git`). The URL
/// and REF are arguments of the script, never part of it.
fn clone_container(plan: &LaunchPlan, git: &GitSource, agent: &Container, tag: &str) -> Container {
    const SCRIPT: &str = "git clone --quiet -- \"$1\" \"$2\" || exit; \
        [ -z \"$3\" ] || git -C \"$2\" checkout --quiet --detach \"$3\" --";
    let workdir = plan.workdir.display().to_string();
    Container {
        name: CLONE_CONTAINER.into(),
        command: [
            "/bin/sh",
            "-c",
            SCRIPT,
            "ags-clone",
            &git.url,
            &workdir,
            git.reference.as_deref().unwrap_or(""),
        ]
        .map(String::from)
        .to_vec(),
        env: vec![EnvVar {
            name: "HOME".into(),
            value: "/tmp".into(),
        }],
        ports: Vec::new(),
        volume_mounts: vec![VolumeMount {
            name: workspace_volume(tag),
            mount_path: workdir.clone(),
            sub_path: None,
            read_only: false,
        }],
        stdin: false,
        stdin_once: false,
        tty: false,
        ..agent.clone()
    }
}

#[cfg(test)]
mod tests;
