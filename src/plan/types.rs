//! The launch plan's types. Public and serialized by `ags plan --json`: field names are part of
//! the user-visible contract.

use crate::secret::Secret;
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde::Serialize;

use crate::config::Network;

/// Label on everything `ags` creates.
pub const LABEL_MANAGED: &str = "io.ags.managed";
/// Label: the launch id.
pub const LABEL_LAUNCH_ID: &str = "io.ags.launch-id";
/// Label: pid of the owning `ags` process.
pub const LABEL_OWNER_PID: &str = "io.ags.owner-pid";
/// Label: start time (clock ticks since boot) of the owning process, to detect pid reuse.
pub const LABEL_OWNER_START: &str = "io.ags.owner-start";
/// Label: host name of the owning process.
pub const LABEL_OWNER_HOST: &str = "io.ags.owner-host";
/// Label: the agent name.
pub const LABEL_AGENT: &str = "io.ags.agent";
/// Label: the canonical project path.
pub const LABEL_PROJECT: &str = "io.ags.project";
/// The labels of a local launch that an export leaves out (`ags gc` would take an exported
/// container for an orphan).
pub const LOCAL_LABELS: [&str; 4] = [
    LABEL_MANAGED,
    LABEL_OWNER_PID,
    LABEL_OWNER_START,
    LABEL_OWNER_HOST,
];
/// Label of an agent state volume: the agent it belongs to.
pub const LABEL_STATE_AGENT: &str = "io.ags.state-agent";
/// Label of an agent state volume: the canonical workdir it belongs to (`shared` when
/// `[sandbox] shared_state` is on).
pub const LABEL_STATE_WORKDIR: &str = "io.ags.state-workdir";
/// Annotation selecting `ags`'s OCI hooks; its value is the launch id.
pub const ANNOTATION_LAUNCH: &str = "io.ags.launch";
/// Annotation: the launching user's spool directory, where the OCI hook records events.
pub const ANNOTATION_SPOOL: &str = "io.ags.spool";
/// Annotation: the launch's private host staging directory, which the OCI hook removes.
pub const ANNOTATION_STAGE: &str = "io.ags.stage";
/// Where the staging volume is mounted inside the container.
pub const STAGING_MOUNT: &str = "/run/ags";
/// The environment file inside the staging volume.
pub const STAGING_ENV_FILE: &str = "/run/ags/env";

/// The host's ssh-agent, forwarded (see `git::plan`); both paths are checked host paths.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SshAgent {
    /// The agent's socket (a socket owned by the user, outside every read-write mount). Only
    /// the `ags` process connects to it: the container gets the filter's socket.
    pub socket: PathBuf,
    /// A known_hosts file, mounted read-only.
    pub known_hosts: Option<PathBuf>,
    /// `[git] ssh_keys`: the only keys listed and used (fingerprints); empty: all.
    pub keys: Vec<String>,
}

/// The forwarded ssh-agent of a launch: the host's agent and the filter the `ags` process
/// serves in front of it (`crate::ssh_agent`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SshAgentPlan {
    /// The host's agent.
    #[serde(flatten)]
    pub host: SshAgent,
    /// Private per-launch directory (0700) holding the filter's socket; removed after the
    /// launch (a sibling of the staging directory, swept like it).
    pub filter_dir: PathBuf,
}

impl SshAgentPlan {
    /// The filter's socket on the host, bound at `git::plan::SSH_AUTH_SOCK_PATH`.
    pub fn filter_socket(&self) -> PathBuf {
        self.filter_dir.join(SSH_FILTER_SOCKET_NAME)
    }
}

/// The file name of the ssh-agent filter's socket in [`SshAgentPlan::filter_dir`].
pub const SSH_FILTER_SOCKET_NAME: &str = "agent.sock";

/// Where a setting came from, as `ags plan` reports it. Hook contributions are ordered by
/// their own key, [`crate::hooks::resolve::Origin`] (see there why there are two);
/// `plan::from_hooks` maps it onto this one.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(tag = "source", content = "name", rename_all = "kebab-case")]
pub enum Origin {
    /// Built into `ags`.
    Default,
    /// The config file.
    Config,
    /// A prepare hook from the global config.
    GlobalHook(String),
    /// A prepare hook from the project overlay.
    ProjectHook(String),
    /// The command line.
    Cli,
    /// An `--env-file` (its path as given).
    EnvFile(String),
    /// `ags`'s agent hook wiring (docs/agent-hooks.md).
    AgentHooks,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Default => f.write_str("default"),
            Origin::Config => f.write_str("config"),
            Origin::GlobalHook(n) => write!(f, "global hook {n}"),
            Origin::ProjectHook(n) => write!(f, "project hook {n}"),
            Origin::Cli => f.write_str("cli"),
            Origin::EnvFile(p) => write!(f, "env-file {p}"),
            Origin::AgentHooks => f.write_str("agent hooks"),
        }
    }
}

/// The user namespace of the container.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum UserNamespace {
    /// Rootless: map the host user to the same uid inside (`keep-id`).
    KeepId,
    /// Rootful: Podman's default.
    Default,
}

/// Security settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Security {
    /// Capabilities dropped (always `ALL`).
    pub cap_drop: Vec<String>,
    /// `no_new_privileges`.
    pub no_new_privileges: bool,
    /// Maximum number of processes.
    pub pids_limit: i64,
    /// Memory limit in bytes (swap included: the container gets no swap beyond it); `None`:
    /// no limit (`--memory none`).
    pub memory_limit: Option<u64>,
    /// CPU limit (`None`: none).
    pub cpus: Option<crate::limits::Cpus>,
    /// SELinux labelling of the container (docs/security.md, "SELinux hosts").
    pub selinux_label: SelinuxLabel,
}

/// How the container is treated on an SELinux host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SelinuxLabel {
    /// The service reports SELinux disabled: nothing to decide.
    NotEnabled,
    /// SELinux is enabled: the container runs with `label=disable` (unconfined by SELinux), so
    /// that the workdir and other binds can be used without relabelling host files.
    Disabled,
}

/// Transport protocol of a published port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// TCP.
    Tcp,
    /// UDP.
    Udp,
}

/// A container port published on the host (`--publish`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PortMapping {
    /// Host address to listen on; all addresses when absent.
    pub host_ip: Option<std::net::IpAddr>,
    /// Host port.
    pub host_port: u16,
    /// Container port.
    pub container_port: u16,
    /// Protocol.
    pub protocol: Protocol,
}

/// What backs a mount.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum MountKind {
    /// A host path.
    Bind {
        /// Host path.
        source: PathBuf,
    },
    /// A fresh tmpfs of at most `size` bytes.
    Tmpfs {
        /// Size limit in bytes.
        size: u64,
    },
    /// A named Podman volume.
    Volume {
        /// Volume name.
        name: String,
    },
    /// One generated file of the staging volume, mounted by its path in the volume (a volume
    /// `subpath`): how generated files reach a remote service (docs/remote.md).
    #[serde(rename = "staged-file")]
    StagedFile {
        /// The staging volume.
        volume: String,
        /// The file's path in the volume ([`staged_file_path`]).
        path: String,
    },
}

/// The directory of the staging volume that holds generated files for a remote service.
pub const STAGED_FILES_DIR: &str = "files";

/// Where the `index`th generated file lies in the staging volume when the service is remote:
/// `files/<index>` (uploaded with the env file, mounted by [`MountKind::StagedFile`]).
pub fn staged_file_path(index: usize) -> String {
    format!("{STAGED_FILES_DIR}/{index}")
}

/// One mount of the container.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanMount {
    /// Path inside the container.
    pub destination: PathBuf,
    /// What is mounted.
    #[serde(flatten)]
    pub kind: MountKind,
    /// Mounted read-only.
    pub read_only: bool,
    /// Where the mount came from.
    pub origin: Origin,
}

impl PlanMount {
    /// A bind of the host's `source` at `destination`.
    pub fn bind(destination: impl Into<PathBuf>, source: PathBuf, read_only: bool, origin: Origin) -> Self {
        Self {
            destination: destination.into(),
            kind: MountKind::Bind { source },
            read_only,
            origin,
        }
    }
}

/// How an environment variable gets its value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum EnvSource {
    /// A literal, set directly in the container spec (only values `ags` itself chooses).
    Plain {
        /// The value (not secret).
        value: String,
    },
    /// A literal delivered through the staged env file.
    Staged {
        /// The value.
        value: Secret,
    },
    /// A 1Password reference resolved at launch and delivered through the env file.
    OpRef {
        /// The reference (`op://…`), shown: it names a secret, it is not one.
        reference: String,
    },
}

/// One environment variable of the agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanEnv {
    /// Variable name.
    pub key: String,
    /// Its value or how it is obtained.
    #[serde(flatten)]
    pub source: EnvSource,
    /// Where it came from.
    pub origin: Origin,
}

/// A generated read-only file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanFile {
    /// Path inside the container.
    pub destination: PathBuf,
    /// Content (redacted in output; the size is shown).
    pub content: Secret,
    /// Size in bytes.
    pub bytes: usize,
    /// Where it came from.
    pub origin: Origin,
    /// The private host file it is staged in (0600, inside the launch's host staging
    /// directory) and bind-mounted read-only from; set by the plan. Empty when the service is
    /// remote: the file then travels in the staging volume ([`MountKind::StagedFile`]).
    pub host_path: PathBuf,
}

/// The agent's hook wiring (docs/agent-hooks.md): generated files, each also in
/// [`LaunchPlan::files`] (read-only binds), and the arguments added to the agent's command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentHookWiring {
    /// The generated files' paths inside the container.
    pub files: Vec<PathBuf>,
    /// Arguments placed right after the agent's command (pi's `-e FILE`).
    pub args: Vec<String>,
    /// What the agent's arguments switch off (`claude --bare`), printed at launch.
    pub warnings: Vec<String>,
    /// The installed dispatcher on the host, bound read-only at
    /// `agent_hooks::DISPATCHER_PATH`.
    pub dispatcher: PathBuf,
    /// The handlers file inside the container (a generated file).
    pub handlers_file: PathBuf,
    /// The `[[agent_hook]]` handlers the dispatcher runs.
    pub handlers: Vec<crate::agent_hooks::config::AgentHook>,
    /// The `[agent_guard]`.
    pub guard: crate::agent_hooks::config::AgentGuard,
}

/// The host side of the agent hook record (docs/agent-hooks.md "The record"): the `ags` process
/// of the launch serves a unix socket in a private directory, bind-mounted read-only at
/// [`crate::agent_hooks::SOCKET_DIR`], and appends what arrives to the log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecordPlan {
    /// Private per-launch directory (0700) holding the socket; removed after the launch.
    pub socket_dir: PathBuf,
    /// The JSONL log of agent hook records (`$XDG_STATE_HOME/ags/agent-hooks.jsonl`).
    pub log: PathBuf,
}

impl RecordPlan {
    /// The socket path on the host.
    pub fn socket(&self) -> PathBuf {
        self.socket_dir.join(RECORD_SOCKET_NAME)
    }
}

/// The record socket's file name (in [`RecordPlan::socket_dir`] on the host, in
/// [`crate::agent_hooks::SOCKET_DIR`] in the container).
pub const RECORD_SOCKET_NAME: &str = "record.sock";

/// The per-launch staging volume.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Staging {
    /// Volume name.
    pub volume: String,
    /// Mount point inside the container.
    pub mount_point: PathBuf,
    /// Files staged owned by uid 0 inside the container, in [`STAGED_ROOT_DIR`]: what an
    /// agent trusts only when root owns it, when the launch's own files are not root's there.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub root_files: Vec<RootFile>,
}

/// The directory of the staging volume that holds [`RootFile`]s (owned by uid 0, 0755).
pub const STAGED_ROOT_DIR: &str = "root";

/// A file of `ags`'s own making (no secret in it) staged owned by uid 0, mode 0444.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RootFile {
    /// Its path inside the container (in [`STAGED_ROOT_DIR`] of the staging mount).
    pub destination: PathBuf,
    /// Its content.
    #[serde(skip)]
    pub content: String,
    /// Size in bytes.
    pub bytes: usize,
    /// Where it came from.
    pub origin: Origin,
}

/// An agent state volume, created with its labels before the container when it does not exist
/// yet (it is kept across launches; `ags gc` never removes it: it carries no owner labels).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StateVolume {
    /// Volume name.
    pub name: String,
    /// Its labels ([`LABEL_STATE_AGENT`], [`LABEL_STATE_WORKDIR`]).
    pub labels: BTreeMap<String, String>,
}

/// Everything needed to launch one container.
#[derive(Debug, Clone, Serialize)]
pub struct LaunchPlan {
    /// Identifies this launch (labels, logs, hook context).
    pub launch_id: String,
    /// Container name (`ags-<project-slug>-<hex>`).
    pub container_name: String,
    /// Image reference.
    pub image: String,
    /// Agent name.
    pub agent: String,
    /// The agent's argv as the user asked for it.
    pub command: Vec<String>,
    /// The argv actually given to the container (wrapped to load the env file when needed).
    pub container_command: Vec<String>,
    /// Working directory inside the container (the same path as on the host).
    pub workdir: PathBuf,
    /// Whether a terminal is allocated.
    pub tty: bool,
    /// User namespace.
    pub user_namespace: UserNamespace,
    /// `uid:gid` the agent runs as: the invoking user's ids (with `keep-id` they are the same
    /// numbers inside and outside), so files in the workdir keep their owner.
    pub user: Option<String>,
    /// Security options.
    pub security: Security,
    /// Network mode.
    pub network: Network,
    /// The declared credentials the launch sets, and how each reaches the agent
    /// (docs/credentials.md).
    pub credentials: Vec<crate::credentials::model::PlanCredential>,
    /// The network policy: mode origin, allowlist, egress proxy (docs/network.md).
    pub egress: crate::egress::plan::EgressPlan,
    /// Ports published on the host (`--publish`).
    pub ports: Vec<PortMapping>,
    /// Whether Podman's init process runs as PID 1 (forwarding signals, reaping zombies).
    pub init: bool,
    /// `--timeout`, in seconds: the agent is stopped (SIGTERM, then SIGKILL) after this long.
    pub timeout_seconds: Option<f64>,
    /// Mounts, in the order they are applied.
    pub mounts: Vec<PlanMount>,
    /// Environment variables.
    pub env: Vec<PlanEnv>,
    /// Generated files.
    pub files: Vec<PlanFile>,
    /// The agent's hook wiring, when the launch wires agent hooks and the agent has them.
    pub agent_hook_wiring: Option<AgentHookWiring>,
    /// The record socket of the agent hooks, when the launch has agent hooks.
    pub agent_hook_record: Option<RecordPlan>,
    /// 1Password Secure Notes loaded as environment (`--op-secret-set`).
    pub op_secret_sets: Vec<String>,
    /// Container labels.
    pub labels: BTreeMap<String, String>,
    /// Container annotations.
    pub annotations: BTreeMap<String, String>,
    /// The staging volume, when environment values are staged or generated files go to a
    /// remote service.
    pub staging: Option<Staging>,
    /// Where the launch writes the seccomp profile that blocks setuid and setgid bits (`ags`'s
    /// cache directory; a local service reads it from there).
    pub seccomp_dir: PathBuf,
    /// The agent state volumes this launch mounts.
    pub state_volumes: Vec<StateVolume>,
    /// The guarded parts of the workspace's git repositories (mounted onto themselves; the
    /// missing ones are created right before the container).
    pub git_guards: Vec<crate::git::model::guard::GitGuard>,
    /// The project files host tools run on their own: each listed path and what the launch
    /// does with it, and their mounts (in `mounts` too).
    pub protected: crate::workspace::protected::Protection,
    /// The host's git identity given to the agent (`[git] identity`; carried in the
    /// environment as `GIT_CONFIG_*`).
    pub git_identity: Option<crate::git::model::identity::GitIdentity>,
    /// The forwarded ssh-agent (`--ssh-agent`, `[git] ssh_agent`), through the filter.
    pub ssh_agent: Option<SshAgentPlan>,
    /// The private host directory holding generated files, when there are any.
    pub host_stage_dir: Option<PathBuf>,
    /// Whether `--lockdown` is in effect.
    pub lockdown: bool,
    /// Whether the agent runs without its own permission prompts (`--yolo`).
    pub skip_permissions: bool,
}

impl LaunchPlan {
    /// Whether anything must be staged into the container before start.
    pub fn needs_staging(&self) -> bool {
        self.staging.is_some()
    }

    /// Whether the generated files travel in the staging volume (a remote service), mounted by
    /// [`MountKind::StagedFile`], rather than as host files.
    pub fn files_in_volume(&self) -> bool {
        self.mounts
            .iter()
            .any(|m| matches!(m.kind, MountKind::StagedFile { .. }))
    }

    /// The host sources of the read-write bind mounts: directories the agent can write.
    pub fn read_write_sources(&self) -> impl Iterator<Item = &PathBuf> {
        let binds = self.mounts.iter().filter(|m| !m.read_only);
        binds.filter_map(|m| match &m.kind {
            MountKind::Bind { source } => Some(source),
            _ => None,
        })
    }
}
