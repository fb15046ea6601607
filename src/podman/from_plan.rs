//! `LaunchPlan` → libpod [`SpecGenerator`]: how a plan is expressed in Podman's create body.
//! Pure; no I/O. (`spec.rs` owns the body's JSON shape; this file owns the mapping.)

use std::path::Path;

use super::spec::{
    CpuLimit, LogConfig, MemoryLimit, Mount, NamedVolume, Namespace, NsMode, PidsLimit, PortMapping,
    ResourceLimits, SpecGenerator,
};
use crate::config::Network;
use crate::plan::{EnvSource, LaunchPlan, MountKind, Origin, Protocol, SelinuxLabel, UserNamespace};

/// Build the create body for `plan`. Only `Plain` env values (chosen by `ags`, never secrets)
/// go into the spec; everything else is staged.
///
/// The plan is taken apart field by field and every field of the body is written out (no `..`
/// on either side): a field added to [`LaunchPlan`] or [`SpecGenerator`] does not compile
/// until this mapping says what becomes of it.
pub fn spec_from_plan(plan: &LaunchPlan) -> SpecGenerator {
    every_field_is_placed(plan);
    let crate::plan::Security {
        cap_drop,
        no_new_privileges,
        // In [`resource_limits`].
        pids_limit: _,
        memory_limit: _,
        cpus: _,
        selinux_label,
    } = &plan.security;
    SpecGenerator {
        name: Some(plan.container_name.clone()),
        image: plan.image.clone(),
        command: plan.container_command.clone(),
        entrypoint: None,
        env: plan
            .env
            .iter()
            .filter_map(|e| match &e.source {
                EnvSource::Plain { value } => Some((e.key.clone(), value.clone())),
                _ => None,
            })
            .collect(),
        work_dir: Some(path_str(&plan.workdir)),
        terminal: plan.tty,
        stdin: true,
        labels: plan.labels.clone(),
        annotations: plan.annotations.clone(),
        cap_drop: cap_drop.clone(),
        cap_add: Vec::new(),
        no_new_privileges: *no_new_privileges,
        userns: userns(plan.user_namespace),
        netns: match plan.network {
            Network::Open => None,
            Network::None | Network::Allowlist => Some(Namespace::new(NsMode::None)),
        },
        hostname: None,
        // The name of the host's loopback ports the forwarder listens on (docs/network.md).
        hostadd: match plan.egress.host_ports.is_empty() {
            true => Vec::new(),
            false => vec![format!("{}:127.0.0.1", crate::egress::model::HOST_NAME)],
        },
        mounts: mounts(plan),
        volumes: volumes(plan),
        resource_limits: Some(resource_limits(&plan.security)),
        user: plan.user.clone(),
        // `ags` removes the container itself, after reading its exit code.
        remove: false,
        // `--timeout` is enforced by the launch (it stops the agent, then reports 124).
        timeout: None,
        // Set by the launch once the profile is written (a local service reads the file).
        seccomp_profile_path: None,
        // The agent's output (with a terminal, echoed keystrokes too) may hold secrets: keep
        // no log file of it. Attach streams it all the same.
        log_configuration: Some(LogConfig::none()),
        init: plan.init,
        portmappings: plan.ports.iter().map(port_mapping).collect(),
        selinux_opts: selinux_opts(*selinux_label),
        // Set by the launch when it spells `keep-id` out for a local rootless service
        // (`podman::spell_out_keep_id`); otherwise Podman derives them from `userns`.
        idmappings: None,
        passwd_entry: None,
        group_entry: None,
    }
}

/// One published port in libpod's form.
fn port_mapping(p: &crate::plan::PortMapping) -> PortMapping {
    PortMapping {
        host_ip: p.host_ip.map(|ip| ip.to_string()).unwrap_or_default(),
        container_port: p.container_port,
        host_port: p.host_port,
        protocol: match p.protocol {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
        }
        .into(),
    }
}

/// Where each field of the plan goes: taken apart field by field (no `..`), so a field added
/// to the plan does not compile until it is placed. A field without a comment is placed by
/// [`spec_from_plan`]; the comment says where the others are carried.
fn every_field_is_placed(plan: &LaunchPlan) {
    let LaunchPlan {
        // Carried by the labels (`labels`, built with the plan).
        launch_id: _,
        container_name: _,
        image: _,
        // Named for the user; what runs is `container_command`.
        agent: _,
        command: _,
        container_command: _,
        workdir: _,
        tty: _,
        user_namespace: _,
        user: _,
        security: _,
        network: _,
        // Their placeholders are in the staged env file, the CA in the staging volume.
        credentials: _,
        // The proxy is already in `mounts`, `env` and `container_command`; its host name
        // is read above.
        egress: _,
        ports: _,
        init: _,
        // Enforced by the launch (stop after the timeout), not by Podman.
        timeout_seconds: _,
        mounts: _,
        env: _,
        // Each generated file is a read-only bind in `mounts`, written by the launch.
        files: _,
        // Its files are in `files`, its arguments in `container_command`.
        agent_hook_wiring: _,
        // Served by the launch; its directory is a read-only bind in `mounts`.
        agent_hook_record: _,
        // Loaded by the launch into the staged environment.
        op_secret_sets: _,
        // The staging volume is one of `mounts` (see [`volumes`]).
        staging: _,
        // The launch writes the profile there and sets `seccomp_profile_path` (local services).
        seccomp_dir: _,
        // Volumes in `mounts`; listed separately for `ags plan` and cleanup.
        state_volumes: _,
        // Binds in `mounts`; the launch creates the missing ones.
        git_guards: _,
        // Binds in `mounts`.
        protected: _,
        // In `env` (`GIT_CONFIG_*`).
        git_identity: _,
        // Its socket is a bind in `mounts` and `SSH_AUTH_SOCK` is in `env`.
        ssh_agent: _,
        // Written by the launch; the files' binds are in `mounts`.
        host_stage_dir: _,
        // Already applied to `mounts` and `env` by the plan.
        lockdown: _,
        // Already in `container_command`.
        skip_permissions: _,
        labels: _,
        annotations: _,
    } = plan;
}

/// The process, memory and CPU limits. A rootless service on cgroup v1 cannot apply them:
/// Podman drops them with a warning (shown once per service) and the launch goes on
/// (docs/security.md, "Resource limits").
fn resource_limits(security: &crate::plan::Security) -> ResourceLimits {
    let bytes = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    ResourceLimits {
        pids: Some(PidsLimit {
            limit: security.pids_limit,
        }),
        // The same for memory plus swap: no swap beyond the limit.
        memory: security.memory_limit.map(|n| MemoryLimit {
            limit: bytes(n),
            swap: bytes(n),
        }),
        cpu: security.cpus.map(|c| CpuLimit {
            quota: bytes(c.quota_us()),
            period: crate::limits::CPU_PERIOD_US,
        }),
    }
}

fn mounts(plan: &LaunchPlan) -> Vec<Mount> {
    plan.mounts
        .iter()
        .filter_map(|m| {
            let dest = path_str(&m.destination);
            let mode = if m.read_only { "ro" } else { "rw" };
            match &m.kind {
                // nosuid: a setuid file in a mount is not honoured inside; nodev: no device
                // nodes either (docs/security.md says what this does not cover on the host).
                MountKind::Bind { source } => Some(Mount::bind(
                    path_str(source),
                    dest,
                    &["rbind", mode, "nosuid", "nodev"],
                )),
                // An agent hooks tmpfs shadows a plugin directory: empty, not a copy of what
                // lies under it (Podman copies it up by default).
                MountKind::Tmpfs { size } if m.origin == Origin::AgentHooks => {
                    let size = format!("size={size}");
                    Some(Mount::tmpfs(
                        dest,
                        &[mode, "nosuid", "nodev", "notmpcopyup", &size],
                    ))
                }
                MountKind::Tmpfs { size } => {
                    let size = format!("size={size}");
                    Some(Mount::tmpfs(dest, &[mode, "nosuid", "nodev", &size]))
                }
                MountKind::Volume { .. } | MountKind::StagedFile { .. } => None,
            }
        })
        .collect()
}

fn volumes(plan: &LaunchPlan) -> Vec<NamedVolume> {
    plan.mounts
        .iter()
        .filter_map(|m| {
            let (name, sub_path) = match &m.kind {
                MountKind::Volume { name } => (name, None),
                MountKind::StagedFile { volume, path } => (volume, Some(path.clone())),
                _ => return None,
            };
            let staging = plan.staging.as_ref().is_some_and(|s| &s.volume == name);
            let mut options: Vec<String> = vec![
                if m.read_only { "ro" } else { "rw" }.into(),
                "nosuid".into(),
                "nodev".into(),
            ];
            // The staging volume repeats the flags its tmpfs is created with: in a user
            // namespace a bind remount cannot clear a locked flag such as noexec (EPERM).
            // Agent state volumes stay exec-able (agents keep tools there).
            if staging {
                options.push("noexec".into());
            }
            Some(NamedVolume {
                name: name.clone(),
                dest: path_str(&m.destination),
                options,
                sub_path,
            })
        })
        .collect()
}

/// How long a keeper may run: Podman kills it after this many seconds and removes it, and the
/// volume's tmpfs (the staged values with it) is unmounted unless the agent's container holds it.
/// A launch removes its keeper as soon as the agent's container is initialised; this bounds how
/// long the values stay in the remote machine's RAM when `ags` is killed before that. Generous:
/// the agent's create may wait for other launches' (`service_lock`).
pub const KEEPER_SECONDS: u32 = 600;

/// The keeper of a remote launch's staging volume: a container that is initialised before the
/// env file and the generated files are uploaded into the volume, so that its tmpfs is mounted,
/// then started, and keeps it mounted until the agent's container has mounted it too
/// (docs/remote.md). Its process is the image's shell waiting on its (open, never written)
/// standard input. Podman kills it after [`KEEPER_SECONDS`] and removes it (`--rm`), so a keeper
/// of a killed `ags` does not hold the values in RAM until the next sweep.
pub fn keeper_spec(plan: &LaunchPlan, name: &str) -> Option<SpecGenerator> {
    let staging = plan.staging.as_ref()?;
    let volume = NamedVolume {
        name: staging.volume.clone(),
        dest: path_str(&staging.mount_point),
        options: ["ro", "nosuid", "nodev", "noexec"].map(String::from).to_vec(),
        sub_path: None,
    };
    Some(SpecGenerator {
        stdin: true,
        remove: true,
        timeout: Some(KEEPER_SECONDS),
        // The image has /bin/sh when anything is staged (the agent's command is wrapped in it).
        ..volume_holder(plan, name, "read _", volume)
    })
}

/// The writer of an agent's state volume for `ags login import`: like the keeper above, created
/// and initialised (never started) with only `volume` mounted at `dest`, so that a file can be
/// uploaded into the volume.
pub fn volume_writer_spec(plan: &LaunchPlan, volume: &str, dest: &Path, name: &str) -> SpecGenerator {
    let volume = NamedVolume {
        name: volume.to_owned(),
        dest: path_str(dest),
        options: ["nosuid", "nodev", "noexec"].map(String::from).to_vec(),
        sub_path: None,
    };
    volume_holder(plan, name, "exit 0", volume)
}

/// A container of the plan's image that holds only `volume` and runs `sh -c script`: the agent's
/// user and user namespace (the archive's owners map as they do for the agent), no network, no
/// capabilities and no log; the launch's owner labels (so a sweep removes it after a crash) but
/// not its launch id (it is not the agent's container).
fn volume_holder(plan: &LaunchPlan, name: &str, script: &str, volume: NamedVolume) -> SpecGenerator {
    let mut labels = plan.labels.clone();
    labels.remove(crate::plan::LABEL_LAUNCH_ID);
    SpecGenerator {
        name: Some(name.to_owned()),
        image: plan.image.clone(),
        command: vec!["/bin/sh".into(), "-c".into(), script.into()],
        labels,
        cap_drop: vec!["ALL".into()],
        no_new_privileges: true,
        userns: userns(plan.user_namespace),
        netns: Some(Namespace::new(NsMode::None)),
        volumes: vec![volume],
        user: plan.user.clone(),
        log_configuration: Some(LogConfig::none()),
        selinux_opts: selinux_opts(plan.security.selinux_label),
        ..SpecGenerator::default()
    }
}

/// `keep-id` as the plan asks; `None` keeps Podman's default.
fn userns(user_namespace: UserNamespace) -> Option<Namespace> {
    match user_namespace {
        UserNamespace::KeepId => Some(Namespace::new(NsMode::KeepId)),
        UserNamespace::Default => None,
    }
}

/// On an SELinux host the binds are not relabelled (a `:z` relabel would rewrite the labels of
/// the user's files on the host); the container runs unlabelled instead.
fn selinux_opts(label: SelinuxLabel) -> Vec<String> {
    match label {
        SelinuxLabel::Disabled => vec!["disable".into()],
        SelinuxLabel::NotEnabled => vec![],
    }
}

/// A container that is only created, then deleted: its create fails with "statfs PATH: no such
/// file or directory" ([`super::PodmanError::missing_bind_source`]) when `workdir` does not
/// exist on the service's machine. Nothing else is mounted, so that failure names the workdir;
/// a failed create leaves nothing behind.
pub fn workdir_probe_spec(
    image: &str,
    workdir: &Path,
    name: &str,
    labels: std::collections::BTreeMap<String, String>,
) -> SpecGenerator {
    SpecGenerator {
        name: Some(name.to_owned()),
        image: image.to_owned(),
        command: vec!["/bin/sh".into(), "-c".into(), "exit 0".into()],
        labels,
        cap_drop: vec!["ALL".into()],
        no_new_privileges: true,
        netns: Some(Namespace::new(NsMode::None)),
        mounts: vec![Mount::bind(
            path_str(workdir),
            path_str(workdir),
            &["rbind", "ro", "nosuid", "nodev"],
        )],
        log_configuration: Some(LogConfig::none()),
        ..SpecGenerator::default()
    }
}

fn path_str(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

#[cfg(test)]
#[path = "from_plan_tests.rs"]
mod tests;
