//! The Kubernetes objects `ags plan --format kube` prints, as plain serializable data: only the
//! fields the export uses, named as in the Kubernetes API (camelCase), empty ones left out.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Serialize, Serializer};
use zeroize::Zeroizing;

/// `metadata` of an object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Metadata {
    /// Object name.
    pub name: String,
    /// Labels (valid Kubernetes label keys and values only).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Annotations (values that are no valid label values, such as paths).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// A base64-encoded secret value: serialized as is, debug-printed as `<redacted>`, cleared
/// from memory when dropped. [`SecretValue::redacted`] serializes as `<redacted>` instead.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretValue {
    encoded: Zeroizing<String>,
    redacted: bool,
}

impl SecretValue {
    /// The base64 encoding of `bytes`.
    pub fn encode(bytes: &[u8]) -> Self {
        Self {
            encoded: Zeroizing::new(base64(bytes)),
            redacted: false,
        }
    }

    /// The same value, shown as `<redacted>` when serialized.
    pub fn redacted(mut self) -> Self {
        self.redacted = true;
        self
    }
}

impl fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl Serialize for SecretValue {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.redacted {
            true => s.serialize_str("<redacted>"),
            false => s.serialize_str(&self.encoded),
        }
    }
}

/// Standard base64 with padding (RFC 4648 §4), as the `data` of a Secret wants it.
pub fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A `v1` Secret of type `Opaque`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Secret {
    /// `v1`.
    pub api_version: &'static str,
    /// `Secret`.
    pub kind: &'static str,
    /// Name and labels.
    pub metadata: Metadata,
    /// `Opaque`.
    #[serde(rename = "type")]
    pub kind_of_secret: &'static str,
    /// Key → base64 value.
    pub data: BTreeMap<String, SecretValue>,
}

/// A `networking.k8s.io/v1` NetworkPolicy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkPolicy {
    /// `networking.k8s.io/v1`.
    pub api_version: &'static str,
    /// `NetworkPolicy`.
    pub kind: &'static str,
    /// Name and labels.
    pub metadata: Metadata,
    /// Which pods, which directions (no rules: nothing allowed).
    pub spec: NetworkPolicySpec,
}

/// `spec` of a NetworkPolicy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkPolicySpec {
    /// The pods it applies to.
    pub pod_selector: LabelSelector,
    /// `Ingress`, `Egress`.
    pub policy_types: Vec<&'static str>,
}

/// A label selector by equality.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    /// Labels that must match.
    pub match_labels: BTreeMap<String, String>,
}

/// A `v1` Pod.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pod {
    /// `v1`.
    pub api_version: &'static str,
    /// `Pod`.
    pub kind: &'static str,
    /// Name, labels, annotations.
    pub metadata: Metadata,
    /// The pod.
    pub spec: PodSpec,
}

/// `spec` of a Pod.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSpec {
    /// `Never`: one launch runs once; its exit code is the container's.
    pub restart_policy: &'static str,
    /// No service account token in the pod: the agent gets no credentials for the cluster.
    pub automount_service_account_token: bool,
    /// No `*_SERVICE_HOST` variables describing the namespace's services.
    pub enable_service_links: bool,
    /// `--timeout`, whole seconds rounded up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active_deadline_seconds: Option<u64>,
    /// User, group and seccomp for every container.
    pub security_context: PodSecurityContext,
    /// The `git clone` of `--workspace-from-git`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub init_containers: Vec<Container>,
    /// The agent.
    pub containers: Vec<Container>,
    /// Volumes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub volumes: Vec<Volume>,
}

/// Pod-level `securityContext`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSecurityContext {
    /// uid.
    pub run_as_user: u32,
    /// gid.
    pub run_as_group: u32,
    /// Whether the uid is not 0.
    pub run_as_non_root: bool,
    /// The runtime's default profile.
    pub seccomp_profile: SeccompProfile,
}

/// A seccomp profile reference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SeccompProfile {
    /// `RuntimeDefault`.
    #[serde(rename = "type")]
    pub kind: &'static str,
}

/// One container.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Container {
    /// Container name.
    pub name: String,
    /// Image reference.
    pub image: String,
    /// `IfNotPresent`.
    pub image_pull_policy: &'static str,
    /// The argv (the image's entrypoint is replaced).
    pub command: Vec<String>,
    /// Working directory.
    pub working_dir: String,
    /// Literal variables (values `ags` chooses, never secrets).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,
    /// Published ports.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<ContainerPort>,
    /// Capabilities, privilege escalation, user.
    pub security_context: SecurityContext,
    /// The memory and CPU limits of the plan.
    #[serde(skip_serializing_if = "Resources::is_empty")]
    pub resources: Resources,
    /// Mounts.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub volume_mounts: Vec<VolumeMount>,
    /// Keep stdin open (for `kubectl attach`).
    pub stdin: bool,
    /// Close stdin after the first attach ends.
    pub stdin_once: bool,
    /// Allocate a terminal.
    pub tty: bool,
}

/// `resources` of a container: only limits (`memory` in bytes, `cpu` in millicores).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Resources {
    /// `memory`, `cpu`.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub limits: std::collections::BTreeMap<&'static str, String>,
}

impl Resources {
    /// No limits.
    pub fn is_empty(&self) -> bool {
        self.limits.is_empty()
    }
}

/// A literal environment variable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EnvVar {
    /// Name.
    pub name: String,
    /// Value.
    pub value: String,
}

/// A published port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerPort {
    /// Port in the container.
    pub container_port: u16,
    /// Port on the node.
    pub host_port: u16,
    /// Node address.
    #[serde(rename = "hostIP", skip_serializing_if = "Option::is_none")]
    pub host_ip: Option<String>,
    /// `TCP` or `UDP`.
    pub protocol: &'static str,
}

/// Container-level `securityContext`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SecurityContext {
    /// uid.
    pub run_as_user: u32,
    /// gid.
    pub run_as_group: u32,
    /// Whether the uid is not 0.
    pub run_as_non_root: bool,
    /// Never privileged.
    pub privileged: bool,
    /// `no_new_privileges`.
    pub allow_privilege_escalation: bool,
    /// `drop: [ALL]`.
    pub capabilities: Capabilities,
    /// The runtime's default profile.
    pub seccomp_profile: SeccompProfile,
}

/// Capabilities dropped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Capabilities {
    /// `ALL`.
    pub drop: Vec<String>,
}

/// A mount of a volume.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VolumeMount {
    /// The volume's name.
    pub name: String,
    /// Path in the container.
    pub mount_path: String,
    /// One key of a Secret volume, mounted as a single file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sub_path: Option<String>,
    /// Read-only.
    pub read_only: bool,
}

/// A volume of the pod.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Volume {
    /// Name (unique per launch: Podman's `play kube` turns it into a named volume).
    pub name: String,
    /// What backs it.
    #[serde(flatten)]
    pub source: VolumeSource,
}

/// What backs a volume.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum VolumeSource {
    /// A path of the node.
    HostPath {
        /// The path.
        path: String,
        /// `Directory` for the workdir (must exist); what the source is on this host for the
        /// other binds (`File`, `Directory`, `Socket`).
        #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
        kind: Option<&'static str>,
    },
    /// A fresh directory (in memory with `medium: Memory`).
    #[serde(rename_all = "camelCase")]
    EmptyDir {
        /// `Memory` for the tmpfs mounts of `--lockdown`.
        #[serde(skip_serializing_if = "Option::is_none")]
        medium: Option<&'static str>,
        /// The tmpfs size of `--lockdown`'s mounts, in bytes.
        #[serde(skip_serializing_if = "Option::is_none")]
        size_limit: Option<String>,
    },
    /// Keys of a Secret as files.
    #[serde(rename_all = "camelCase")]
    Secret {
        /// The Secret.
        secret_name: String,
        /// The keys projected, and their file names.
        items: Vec<KeyToPath>,
        /// File mode (decimal in JSON).
        default_mode: u32,
        /// `false`, spelled out (Podman 4.3 crashes when it is absent).
        optional: bool,
    },
}

/// One key of a Secret as a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeyToPath {
    /// The key.
    pub key: String,
    /// The file name in the volume.
    pub path: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc_4648_vectors() {
        for (raw, enc) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(raw.as_bytes()), enc, "{raw:?}");
        }
        assert_eq!(base64(&[0xff, 0xfe, 0x00]), "//4A");
    }

    #[test]
    fn secret_values_never_debug_print() {
        let v = SecretValue::encode(b"hunter2");
        assert_eq!(format!("{v:?}"), "<redacted>");
        assert_eq!(serde_json::to_string(&v).unwrap(), "\"aHVudGVyMg==\"");
        assert_eq!(serde_json::to_string(&v.redacted()).unwrap(), "\"<redacted>\"");
    }
}
