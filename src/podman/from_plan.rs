//! `LaunchPlan` → libpod [`SpecGenerator`]: how a plan is expressed in Podman's create body.
//! Pure; no I/O. (`spec.rs` owns the body's JSON shape; this file owns the mapping.)

use std::path::Path;

use super::spec::{
    LogConfig, Mount, NamedVolume, Namespace, NsMode, PidsLimit, ResourceLimits, SpecGenerator,
};
use crate::config::Network;
use crate::plan::{EnvSource, LaunchPlan, MountKind, UserNamespace};

/// Build the create body for `plan`. Only `Plain` env values (chosen by `ags`, never secrets)
/// go into the spec; everything else is staged.
pub fn spec_from_plan(plan: &LaunchPlan) -> SpecGenerator {
    SpecGenerator {
        name: Some(plan.container_name.clone()),
        image: plan.image.clone(),
        command: plan.container_command.clone(),
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
        cap_drop: plan.security.cap_drop.clone(),
        no_new_privileges: plan.security.no_new_privileges,
        userns: match plan.user_namespace {
            UserNamespace::KeepId => Some(Namespace::new(NsMode::KeepId)),
            UserNamespace::Default => None,
        },
        netns: match plan.network {
            Network::Open => None,
            Network::None | Network::Allowlist => Some(Namespace::new(NsMode::None)),
        },
        mounts: mounts(plan),
        volumes: volumes(plan),
        resource_limits: Some(ResourceLimits {
            pids: Some(PidsLimit {
                limit: plan.security.pids_limit,
            }),
        }),
        user: plan.user.clone(),
        // The agent's output (with a terminal, echoed keystrokes too) may hold secrets: keep
        // no log file of it. Attach streams it all the same.
        log_configuration: Some(LogConfig::none()),
        ..SpecGenerator::default()
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
                MountKind::Tmpfs => Some(Mount::tmpfs(dest, &[mode, "nosuid", "nodev"])),
                MountKind::Volume { .. } => None,
            }
        })
        .collect()
}

fn volumes(plan: &LaunchPlan) -> Vec<NamedVolume> {
    plan.mounts
        .iter()
        .filter_map(|m| match &m.kind {
            MountKind::Volume { name } => {
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
                })
            }
            _ => None,
        })
        .collect()
}

fn path_str(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}
