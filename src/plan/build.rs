//! Building the plan: a pure function from resolved inputs to [`LaunchPlan`].

use std::collections::BTreeMap;
use std::path::Path;

use super::input::*;
use super::mounts::build_mounts;
use super::types::*;
use super::{PlanError, check, egress_entries};
use crate::agent_hooks::plan::{self as agent_hooks, record as agent_record};
use crate::agents;
use crate::credentials::plan as credentials;
use crate::egress::plan as network;

/// Build the launch plan.
pub fn build(input: &PlanInput<'_>) -> Result<LaunchPlan, PlanError> {
    let run = input.run;
    // Taken apart field by field (no `..`): a field added to the hook layer does not compile
    // until it is placed in the plan.
    let HookLayer {
        env: hook_env,
        files: hook_files,
        mounts: hook_mounts,
    } = input.hooks;
    let image = run.image.clone().unwrap_or_else(|| input.config.image.clone());
    check_settings(run, Some(&image))?;
    let profile = check::find_agent(&run.agent)?;
    let ports: Vec<_> = (run.publish.iter())
        .map(|p| check::parse_publish(p))
        .collect::<Result<_, _>>()?;
    let wiring = wiring(input)?;
    let command = agent_command(profile, run, wiring.as_ref());
    let base_env = build_env(input, hook_env)?;
    let (credentials, egress) = network_part(input, profile, &base_env);
    if !ports.is_empty() && egress.mode == crate::config::Network::None {
        return Err(PlanError::PublishWithoutNetwork);
    }
    let env = launch_env(input, base_env, wiring.as_ref(), &egress)?;
    let ca = !egress.inspected.is_empty();
    let (files, in_volume, staging) = staged_files(input, (hook_files, wiring.as_ref()), &env, ca);
    let record = agent_record::plan(input.config, run.agent_hooks, input.remote, input.host_stage_dir);
    let extra = capability_mounts(&egress, wiring.as_ref(), record.as_ref());
    let mounts = build_mounts(input, hook_mounts, &files, staging.as_ref(), extra)?;
    let state_volumes = state_volumes(input, &mounts);
    let host_stage_dir = (!files.is_empty() && !in_volume).then(|| input.host_stage_dir.to_path_buf());
    let container_command = egress.wrap(match staging.is_some() || !run.no_init {
        true => wrap_command(&command, staging.is_some()),
        false => command.clone(),
    });
    Ok(LaunchPlan {
        launch_id: input.identity.launch_id.clone(),
        container_name: (run.name.clone())
            .unwrap_or_else(|| container_name(&input.config.project, &input.identity.suffix)),
        image,
        agent: profile.name.into(),
        command,
        container_command,
        workdir: input.config.workdir.clone(),
        tty: run.tty,
        user_namespace: match input.rootless {
            true => UserNamespace::KeepId,
            false => UserNamespace::Default,
        },
        user: Some(format!("{}:{}", input.user.0, input.user.1)),
        security: security(input),
        network: egress.mode,
        credentials,
        egress,
        ports,
        init: !run.no_init,
        timeout_seconds: run.timeout.map(|t| t.as_secs_f64()),
        mounts,
        env,
        annotations: annotations(input, host_stage_dir.as_deref()),
        host_stage_dir,
        files,
        agent_hook_wiring: wiring.map(|w| w.wiring),
        agent_hook_record: record,
        op_secret_sets: run.op_secret_sets.clone(),
        labels: build_labels(input)?,
        state_volumes,
        seccomp_dir: input.config.paths.cache_dir(),
        git_guards: run.git_guards.clone(),
        protected: run.protected.clone(),
        git_identity: run.git_identity.clone(),
        ssh_agent: (run.ssh_agent.as_ref()).map(|s| crate::git::plan::ssh_plan(s, input.host_stage_dir)),
        staging,
        lockdown: run.lockdown,
        skip_permissions: run.skip_permissions,
    })
}

/// The credentials the proxy keeps on the host and the launch's network plan.
fn network_part(
    input: &PlanInput<'_>,
    profile: &agents::AgentProfile,
    base_env: &[PlanEnv],
) -> (
    Vec<crate::credentials::model::PlanCredential>,
    network::EgressPlan,
) {
    let run = input.run;
    let elsewhere = input.remote || input.exported;
    let credentials = credentials::plan(&input.config.user.credentials, base_env, elsewhere);
    let proxied = credentials::any_proxied(&credentials) || (!run.op_secret_sets.is_empty() && !elsewhere);
    let requested = network::Requested {
        network: run.network,
        allow: &run.allow,
    };
    let egress = network::plan(
        input.config,
        requested,
        profile,
        input.host_stage_dir,
        proxied,
        !elsewhere,
    );
    (credentials, egress)
}

/// The agent's hook wiring, unless the launch has none. A remote service cannot bind this
/// host's dispatcher (docs/agent-hook-handlers.md).
fn wiring(input: &PlanInput<'_>) -> Result<Option<agent_hooks::WiringPlan>, PlanError> {
    let run = input.run;
    if !run.agent_hooks || input.remote {
        return Ok(None);
    }
    let mut warnings = check_agent_hook_args(run)?;
    warnings.extend(agent_hooks::check_agent(input.config, &run.agent)?);
    // The launch's files are the invoking user's: uid 0 inside only when that user is root on
    // a rootful service.
    let not_root = input.rootless || input.user.0 != 0;
    let tag = &input.identity.suffix;
    Ok(agent_hooks::wiring(
        input.config,
        &run.agent,
        tag,
        not_root,
        warnings,
    ))
}

/// The container's environment: the host's and the hooks' (`env`), the wiring's, and when the
/// proxy runs its variables (and, substituting credentials, the CA's), which are ags's own and
/// replace any other value; sorted by name.
fn launch_env(
    input: &PlanInput<'_>,
    mut env: Vec<PlanEnv>,
    wiring: Option<&agent_hooks::WiringPlan>,
    egress: &network::EgressPlan,
) -> Result<Vec<PlanEnv>, PlanError> {
    if let Some(w) = wiring {
        agent_hooks::check_env(&input.run.agent, env.iter().map(|e| e.key.as_str()))?;
        env.extend(w.env.iter().cloned());
    }
    let mut proxy_env = egress_entries::env(egress);
    if egress.credentials || !egress.inspected.is_empty() {
        proxy_env.extend(credentials::ca_env());
    }
    env.retain(|e| !proxy_env.iter().any(|p| p.key == e.key));
    env.extend(proxy_env);
    env.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(env)
}

/// The generated files (the hooks' and the wiring's): placed in the host stage directory, or in
/// the staging volume on a remote service (`in_volume`); and the staging volume, needed for
/// staged values, files in it and files owned by root (`ca`: the launch CA's, made at launch).
fn staged_files(
    input: &PlanInput<'_>,
    (hook_files, wiring): (&[PlanFile], Option<&agent_hooks::WiringPlan>),
    env: &[PlanEnv],
    ca: bool,
) -> (Vec<PlanFile>, bool, Option<Staging>) {
    let staged = env.iter().any(|e| !matches!(e.source, EnvSource::Plain { .. }))
        || !input.run.op_secret_sets.is_empty()
        || ca;
    let generated: Vec<PlanFile> = hook_files
        .iter()
        .cloned()
        .chain(wiring.iter().flat_map(|w| w.files.iter().cloned()))
        .collect();
    let in_volume = input.remote && !generated.is_empty();
    let files = match in_volume {
        true => generated,
        false => place_files(&generated, input.host_stage_dir),
    };
    let root_files = wiring.map(|w| w.root_files.clone()).unwrap_or_default();
    let staging = (staged || in_volume || !root_files.is_empty()).then(|| Staging {
        volume: format!("ags-stage-{}", input.identity.suffix),
        mount_point: STAGING_MOUNT.into(),
        root_files,
    });
    (files, in_volume, staging)
}

/// The agent's command line, with the wiring's arguments after the agent's own command.
fn agent_command(
    profile: &agents::AgentProfile,
    run: &RunSettings,
    wiring: Option<&agent_hooks::WiringPlan>,
) -> Vec<String> {
    let mut command = profile.argv(run.skip_permissions, &run.agent_args, &run.command);
    if let Some(w) = wiring {
        let at = profile.command.len().min(command.len());
        command.splice(at..at, w.wiring.args.iter().cloned());
    }
    command
}

/// What the capabilities mount: the egress proxy's socket and forwarder, the wiring's files,
/// the agent hook record's socket directory.
fn capability_mounts(
    egress: &network::EgressPlan,
    wiring: Option<&agent_hooks::WiringPlan>,
    record: Option<&RecordPlan>,
) -> Vec<PlanMount> {
    egress_entries::mounts(egress)
        .into_iter()
        .chain(wiring.iter().flat_map(|w| w.mounts.iter().cloned()))
        .chain(record.map(agent_record::mount))
        .collect()
}

/// The container's hardening and limits.
fn security(input: &PlanInput<'_>) -> Security {
    Security {
        cap_drop: vec!["ALL".into()],
        no_new_privileges: true,
        pids_limit: input.config.pids_limit,
        memory_limit: input.run.limits.memory.resolve(input.host_memory),
        cpus: input.run.limits.cpus,
        selinux_label: match input.selinux {
            true => SelinuxLabel::Disabled,
            false => SelinuxLabel::NotEnabled,
        },
    }
}

/// The state volumes among `mounts`, with the labels that say whose they are.
fn state_volumes(input: &PlanInput<'_>, mounts: &[PlanMount]) -> Vec<StateVolume> {
    let workdir = match input.config.user.shared_state {
        true => "shared".to_string(),
        false => input.config.workdir.display().to_string(),
    };
    mounts
        .iter()
        .filter_map(|m| match &m.kind {
            MountKind::Volume { name } if name.starts_with("ags-state-") => Some(StateVolume {
                name: name.clone(),
                labels: BTreeMap::from([
                    (LABEL_STATE_AGENT.to_string(), input.run.agent.clone()),
                    (LABEL_STATE_WORKDIR.to_string(), workdir.clone()),
                ]),
            }),
            _ => None,
        })
        .collect()
}

/// The agent's arguments (`[agent.NAME] args` and those after `--`) against its hook wiring:
/// an error for a switch that drops every hook (opencode `--pure`), warnings for one that drops
/// some (claude `--bare`). Nothing when the launch wires no agent hooks.
pub fn check_agent_hook_args(run: &RunSettings) -> Result<Vec<String>, PlanError> {
    match run.agent_hooks {
        true => Ok(agent_hooks::check_args(
            &run.agent,
            run.agent_args.iter().chain(&run.command),
        )?),
        false => Ok(Vec::new()),
    }
}

/// The annotations that select `ags`'s OCI hooks and tell them where to record
/// (docs/lifecycle.md): the launch id, the spool, and the host staging directory if any.
fn annotations(input: &PlanInput<'_>, host_stage_dir: Option<&Path>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::from([
        (ANNOTATION_LAUNCH.to_string(), input.identity.launch_id.clone()),
        (
            ANNOTATION_SPOOL.to_string(),
            input.config.paths.spool_dir().display().to_string(),
        ),
    ]);
    if let Some(dir) = host_stage_dir {
        out.insert(ANNOTATION_STAGE.into(), dir.display().to_string());
    }
    out
}

/// The command wrapper: loads the staged env file (when there is one), checks that the command
/// can be executed, then execs it. Under Podman's init the command is started by the init
/// (which only says "failed to exec" and exits 1), so the check gives the agent command
/// `podman run`'s exit codes: 127 when it is not found, 126 when it cannot be executed. The
/// env file holds `export KEY='value'` lines; values are single-line and single-quote escaped.
fn wrap_command(command: &[String], staged: bool) -> Vec<String> {
    let load = if staged {
        format!(". {STAGING_ENV_FILE} || exit 125; ")
    } else {
        String::new()
    };
    let script = format!("{load}{CHECK_COMMAND}");
    ["/bin/sh".to_string(), "-c".into(), script, "ags-env".into()]
        .into_iter()
        .chain(command.iter().cloned())
        .collect()
}

/// Shell code: fail like `podman run` (126/127, with a message) when `$1` cannot be executed,
/// else exec `"$@"`. Works in dash, bash and busybox sh.
const CHECK_COMMAND: &str = "f() { echo \"ags: the agent command could not be started: $1: $2\" >&2; exit $3; }; \
case $1 in */*) [ -e \"$1\" ] || f \"$1\" 'no such file or directory' 127; \
if [ -d \"$1\" ] || [ ! -x \"$1\" ]; then f \"$1\" 'permission denied' 126; fi;; \
*) command -v -- \"$1\" >/dev/null 2>&1 || f \"$1\" 'executable file not found in $PATH' 127;; esac; \
exec \"$@\"";

fn build_env(
    input: &PlanInput<'_>,
    hook_env: &[(String, EnvSource, Origin)],
) -> Result<Vec<PlanEnv>, PlanError> {
    let mut map: BTreeMap<String, PlanEnv> = BTreeMap::new();
    // Later layers win: defaults, git and ssh, TERM, config, hooks, the command line.
    let mut put = |key: &str, source: EnvSource, origin: &Origin| {
        let e = PlanEnv {
            key: key.into(),
            source,
            origin: origin.clone(),
        };
        map.insert(key.into(), e);
    };
    let profile = agents::find(&input.run.agent);
    let skip_env = match profile {
        Some(p) if input.run.skip_permissions => p.skip_permissions.env,
        _ => &[],
    };
    let defaults = [("HOME", agents::CONTAINER_HOME)]
        .into_iter()
        .chain(profile.map(|p| p.env).unwrap_or_default().iter().copied())
        .chain(skip_env.iter().copied())
        .map(|(k, v)| (k.to_string(), v.to_string()));
    let git_env = input
        .run
        .git_identity
        .iter()
        .flat_map(crate::git::plan::identity_env);
    let ssh_env = input.run.ssh_agent.iter().map(|_| {
        (
            "SSH_AUTH_SOCK".to_string(),
            crate::git::plan::SSH_AUTH_SOCK_PATH.to_string(),
        )
    });
    let term = input
        .run
        .term
        .iter()
        .filter(|_| input.run.tty)
        .map(|t| ("TERM".to_string(), t.clone()));
    for (key, value) in defaults.chain(git_env).chain(ssh_env).chain(term) {
        put(&key, EnvSource::Plain { value }, &Origin::Default);
    }
    for (key, value) in &input.run.config_env {
        put(key, EnvSource::Staged { value: value.clone() }, &Origin::Config);
    }
    for (key, source, origin) in hook_env {
        put(key, source.clone(), origin);
    }
    for (key, value, origin) in &input.run.env {
        put(key, EnvSource::Staged { value: value.clone() }, origin);
    }
    Ok(map.into_values().collect())
}

/// Give every generated file its private host path (`<stage dir>/files/<n>`).
fn place_files(files: &[PlanFile], dir: &Path) -> Vec<PlanFile> {
    files
        .iter()
        .enumerate()
        .map(|(i, file)| PlanFile {
            host_path: dir.join(staged_file_path(i)),
            ..file.clone()
        })
        .collect()
}

fn build_labels(input: &PlanInput<'_>) -> Result<BTreeMap<String, String>, PlanError> {
    let id = input.identity;
    let mut labels = BTreeMap::new();
    for arg in &input.run.labels {
        let (k, v) = check::parse_label(arg)?;
        labels.insert(k.to_string(), v.to_string());
    }
    labels.extend([
        (LABEL_MANAGED.to_string(), "true".to_string()),
        (LABEL_LAUNCH_ID.into(), id.launch_id.clone()),
        (LABEL_OWNER_PID.into(), id.pid.to_string()),
        (LABEL_OWNER_START.into(), id.start_time.to_string()),
        (LABEL_OWNER_HOST.into(), id.host.clone()),
        (LABEL_AGENT.into(), input.run.agent.clone()),
        (LABEL_PROJECT.into(), input.config.project.display().to_string()),
    ]);
    Ok(labels)
}

/// `ags-<project-slug>-<suffix>`.
pub fn container_name(project: &Path, suffix: &str) -> String {
    format!("ags-{}-{suffix}", slug(project))
}

/// A short lowercase `[a-z0-9-]` slug of the project directory name.
pub fn slug(project: &Path) -> String {
    let base = project
        .file_name()
        .map(|s| s.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let mut out = String::new();
    for c in base.chars() {
        let c = if c.is_ascii_alphanumeric() { c } else { '-' };
        if !(c == '-' && (out.is_empty() || out.ends_with('-'))) {
            out.push(c);
        }
        if out.len() >= 24 {
            break;
        }
    }
    let out = out.trim_end_matches('-').to_string();
    if out.is_empty() { "project".into() } else { out }
}

/// Check every value of `run` (and the image reference, when known); the first problem is
/// returned.
fn check_settings(run: &RunSettings, image: Option<&str>) -> Result<(), PlanError> {
    check::find_agent(&run.agent)?;
    for arg in &run.labels {
        check::parse_label(arg)?;
    }
    if let Some(name) = &run.name {
        check::check_name(name)?;
    }
    for p in &run.publish {
        check::parse_publish(p)?;
    }
    image.map_or(Ok(()), check::check_image_ref)
}

#[cfg(test)]
#[path = "build_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "build_wiring_tests.rs"]
mod wiring_tests;
