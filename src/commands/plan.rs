//! `ags plan`: the effective launch plan, creating nothing; with `--format kube`, the same
//! launch as Kubernetes manifests (docs/kube.md), whose Secret needs the prepare hooks' values.

use std::io::{IsTerminal, Write};

use super::run::Service;
use crate::cli::{GlobalArgs, PlanArgs, PlanFormat};
use crate::config::Config;
use crate::launch::signals::SignalWatch;
use crate::launch::{identity, stage};
use crate::plan::kube::{self, GitSource, KubeInput};
use crate::plan::{LaunchPlan, PlanError, RunSettings};
use crate::{Error, podman};

/// Print the plan as text, JSON or Kubernetes manifests.
pub fn plan(global: &GlobalArgs, args: &PlanArgs) -> Result<u8, Error> {
    if args.run.report.is_some() {
        return Err(Error::Usage(
            "--report describes a launch; `ags plan` launches nothing (its --json output is the plan)".into(),
        ));
    }
    let format = match (args.json, args.format) {
        (true, _) => PlanFormat::Json,
        (false, format) => format.unwrap_or(PlanFormat::Text),
    };
    if args.workspace_from_git.is_some() && format != PlanFormat::Kube {
        return Err(Error::Usage(
            "--workspace-from-git describes the workspace of a Kubernetes Pod; use it with --format kube"
                .into(),
        ));
    }
    let git = match &args.workspace_from_git {
        Some(arg) => Some(GitSource::parse(arg).map_err(PlanError::from)?),
        None => None,
    };
    super::run::check_args(global, &args.run)?;
    let config = super::run::load_config(global, args.run.workdir.clone())?;
    let named = super::host_paths::named_workdir(args.run.workdir.as_deref());
    let service_url = super::chosen_url(global);
    let mut rules = super::host_paths::check_early(&config, named.as_deref(), service_url.as_deref())?;
    let terminals = crate::launch::terminal::both_are_terminals();
    let mut settings = super::run::settings(&args.run, &config, &mut rules, terminals)?;
    // A Pod has no `ags` process beside it and no copy of the dispatcher: no agent hooks.
    settings.agent_hooks &= format != PlanFormat::Kube;
    let image = settings.image.clone().unwrap_or_else(|| config.image.clone());
    crate::plan::check::check_image_ref(&image)?;
    let redact = std::io::stdout().is_terminal();
    if format == PlanFormat::Kube {
        kube_checks(&config, &settings, git.is_some())?;
        if !args.no_hooks {
            eprintln!(
                "ags: --format kube runs the prepare hooks and 1Password lookups like a launch: their values go into the Secret printed on standard output (nothing is written to disk)"
            );
        }
    }
    let identity = identity::current();
    let rt = super::runtime()?;
    let mut service = rt.block_on(service(
        super::target_for(global, Some(&config), Vec::new()),
        &image,
        settings.name.as_deref(),
    ));
    // A Pod gets generated files through its Secret, wherever the service is.
    service.remote &= format != PlanFormat::Kube;
    let built = rt.block_on(async {
        let signals = SignalWatch::install().map_err(Error::Signals)?;
        let prepared = match args.no_hooks {
            true => None,
            false => Some(super::run::prepare_hooks(&config, &settings, &identity, &signals, rules).await?),
        };
        let hooks = prepared
            .as_ref()
            .map(crate::plan::from_hooks::hook_layer)
            .unwrap_or_default();
        let plan = super::run::build_plan(&config, &settings, &identity, service, &hooks)?;
        let secrets = match (format, &prepared) {
            (PlanFormat::Kube, Some(_)) => {
                let running = podman::local_running_roots(None).await;
                super::run::lookup_secrets(&config, &plan, &signals, &running).await?
            }
            _ => stage::Secrets::default(),
        };
        Ok::<_, Error>((plan, secrets))
    });
    super::finish(rt);
    let (plan, secrets) = built?;
    match format {
        PlanFormat::Json => println!(
            "{}",
            serde_json::to_string_pretty(&plan).expect("a plan always serializes")
        ),
        PlanFormat::Text => print!("{}", render(&plan)),
        PlanFormat::Kube => {
            let env_file = plan.staging.is_some().then(|| stage::env_file(&plan, &secrets));
            drop(secrets);
            let plan = without_unenforceable_limits(plan, rootless_cgroup_v1(service_url.as_deref()));
            let export = kube::export(&KubeInput {
                plan: &plan,
                env_file: env_file.as_deref().map(Vec::as_slice),
                workspace_from_git: git.as_ref(),
                redact,
            })
            .map_err(PlanError::from)?;
            if export.secret.is_some() {
                secret_notice(args.no_hooks, redact);
            }
            let text = export.render();
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes()).map_err(Error::Output)?;
            out.flush().map_err(Error::Output)?;
        }
    }
    Ok(0)
}

/// `plan` without its memory and CPU limits when `drop` (with a note): a rootless Podman on
/// cgroup v1 ignores them for a created container but refuses to start a played Pod that
/// carries them ("cannot set memory limit: container could not join or create cgroup").
fn without_unenforceable_limits(mut plan: LaunchPlan, drop: bool) -> LaunchPlan {
    let limited = plan.security.memory_limit.is_some() || plan.security.cpus.is_some();
    if drop && limited {
        plan.security.memory_limit = None;
        plan.security.cpus = None;
        eprintln!(
            "ags: note: the export carries no memory or CPU limit: a rootless Podman on cgroup v1 cannot apply them and would not start the Pod (`ags doctor`, limits)"
        );
    }
    plan
}

/// Whether the service is this machine's rootless Podman on cgroup v1: a unix socket (local),
/// `ags` not running as root, and `/sys/fs/cgroup` not a cgroup v2 file system.
fn rootless_cgroup_v1(url: Option<&str>) -> bool {
    let local = url.is_none_or(|u| u.starts_with("unix://"));
    let rootless = !nix::unistd::geteuid().is_root();
    let v1 = nix::sys::statfs::statfs("/sys/fs/cgroup")
        .is_ok_and(|s| s.filesystem_type() != nix::sys::statfs::CGROUP2_SUPER_MAGIC);
    local && rootless && v1
}

/// What a Pod cannot carry, refused before any hook or `op` runs: the network mode, the
/// container name as a Pod name, the labels.
fn kube_checks(config: &Config, settings: &RunSettings, git: bool) -> Result<(), Error> {
    let profile = crate::plan::check::find_agent(&settings.agent)?;
    let egress = crate::plan::network::plan(config, settings.network, profile, std::path::Path::new("/"));
    let checked = kube::check_network(egress.mode, &egress.mode_origin.to_string(), git)
        .and_then(|()| settings.name.as_deref().map_or(Ok(()), kube::check_pod_name))
        .and_then(|()| {
            settings.labels.iter().try_for_each(|l| {
                let (k, v) = l.split_once('=').unwrap_or((l, ""));
                kube::check_label(k, v)
            })
        });
    Ok(checked.map_err(PlanError::from)?)
}

/// Say on stderr what the export's Secret holds and how it is shown (only when there is one).
fn secret_notice(no_hooks: bool, redact: bool) {
    if no_hooks {
        eprintln!(
            "ags: --no-hooks: the Secret holds only --env/--env-file/config values; no hook or 1Password value"
        );
    }
    if redact {
        eprintln!(
            "ags: standard output is a terminal: the Secret's values are shown as <redacted>; pipe the output (ags plan --format kube | kubectl apply -f -) to get them"
        );
    }
}

/// Ask the service what the plan depends on, and warn about what a launch would refuse (a
/// missing image, a taken name); without a service, assume rootless unless root, no SELinux.
async fn service(target: podman::Target, image: &str, name: Option<&str>) -> Service {
    match podman::connect(&target).await {
        Ok(client) => {
            if let Err(e) = crate::launch::lifecycle::preflight(&client, image, name).await {
                eprintln!(
                    "{}",
                    crate::text::escape_controls(&format!("ags: warning: a launch would fail: {e}"))
                );
            }
            match super::run::service_facts(&client).await {
                Ok(facts) => return facts,
                Err(e) => eprintln!("{}", crate::text::escape_controls(&format!("ags: warning: {e}"))),
            }
        }
        Err(e) => eprintln!(
            "ags: warning: no Podman service answered; planning as if it were rootless unless root: {e}"
        ),
    }
    Service {
        rootless: !nix::unistd::geteuid().is_root(),
        selinux: false,
        remote: false,
        memory: crate::podman::local_memory_total(),
    }
}

/// A plan enum as the bare word it serializes to (`default`, `keep-id`), not as a JSON string.
fn word<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

fn render(plan: &LaunchPlan) -> String {
    let mut out = String::new();
    let mut line = |k: &str, v: String| out.push_str(&format!("{k:<16}{v}\n"));
    line("launch id", plan.launch_id.clone());
    line("container", plan.container_name.clone());
    line("image", plan.image.clone());
    line("agent", plan.agent.clone());
    line("command", format!("{:?}", plan.command));
    line("workdir", plan.workdir.display().to_string());
    line("tty", plan.tty.to_string());
    line("user namespace", word(&plan.user_namespace));
    line("user", plan.user.clone().unwrap_or_default());
    line(
        "network",
        format!("{} from {}", word(&plan.network), plan.egress.mode_origin),
    );
    for a in &plan.egress.allow {
        let ports = a
            .entry
            .ports
            .iter()
            .map(u16::to_string)
            .collect::<Vec<_>>()
            .join(",");
        line(
            "allow",
            format!("{} ports {ports} from {}", a.entry.entry, a.origin),
        );
    }
    line(
        "security",
        format!(
            "cap-drop={} no-new-privileges={} pids-limit={}",
            plan.security.cap_drop.join(","),
            plan.security.no_new_privileges,
            plan.security.pids_limit
        ),
    );
    line(
        "limits",
        format!(
            "memory={} cpus={}",
            plan.security
                .memory_limit
                .map_or("none".into(), crate::limits::show_size),
            plan.security.cpus.map_or("none".into(), |c| c.to_string())
        ),
    );
    line("lockdown", plan.lockdown.to_string());
    line("skip prompts", plan.skip_permissions.to_string());
    line("init", plan.init.to_string());
    if let Some(t) = plan.timeout_seconds {
        line("timeout", format!("{t} s"));
    }
    for p in &plan.ports {
        let ip = p.host_ip.map(|ip| format!("{ip}:")).unwrap_or_default();
        line(
            "publish",
            format!("{ip}{}:{}/{:?}", p.host_port, p.container_port, p.protocol).to_lowercase(),
        );
    }
    for m in &plan.mounts {
        let what = match &m.kind {
            crate::plan::MountKind::Bind { source } => format!("bind {}", source.display()),
            crate::plan::MountKind::Tmpfs { size } => {
                format!("tmpfs size={}", crate::limits::show_size(*size))
            }
            crate::plan::MountKind::Volume { name } => format!("volume {name}"),
            crate::plan::MountKind::StagedFile { volume, path } => format!("volume {volume}, {path}"),
        };
        let mode = if m.read_only { "ro" } else { "rw" };
        line(
            "mount",
            format!("{} <- {what} ({mode}) [{}]", m.destination.display(), m.origin),
        );
    }
    let protected = &plan.protected.paths;
    let count = |h| protected.iter().filter(|p| p.handling == h).count();
    use crate::workspace::protected::Handling;
    if !protected.is_empty() {
        let (ro, watched) = (count(Handling::ReadOnly), count(Handling::Watched));
        line(
            "protected",
            format!("{ro} read-only, {watched} watched (docs/security.md)"),
        );
    }
    for p in protected.iter().filter(|p| p.handling == Handling::Allowed) {
        line("protected", format!("{} allowed to change", p.path().display()));
    }
    for e in &plan.env {
        let how = match &e.source {
            crate::plan::EnvSource::Plain { value } => format!("= {value}"),
            crate::plan::EnvSource::Staged { .. } => "= <redacted> (staged)".into(),
            crate::plan::EnvSource::OpRef { reference } => format!("<- {reference} (1Password)"),
        };
        line("env", format!("{} {how} [{}]", e.key, e.origin));
    }
    for f in &plan.files {
        line(
            "file",
            format!(
                "{} ({} bytes, read-only) [{}]",
                f.destination.display(),
                f.bytes,
                f.origin
            ),
        );
    }
    if let Some(w) = &plan.agent_hook_wiring {
        for h in &w.handlers {
            let tool = h.tool.as_ref().map(|t| format!(" tool {t}")).unwrap_or_default();
            line(
                "agent hook",
                format!(
                    "{} on {}{tool}: {:?} (timeout {} s, on_failure {}) [{}]",
                    h.name,
                    h.event,
                    h.command,
                    h.timeout_seconds,
                    word(&h.on_failure),
                    h.scope
                ),
            );
        }
        for d in &w.guard.deny {
            line("agent guard", format!("deny {d:?}"));
        }
        for p in &w.guard.protect {
            line("agent guard", format!("protect {p:?}"));
        }
    }
    for w in plan.agent_hook_wiring.iter().flat_map(|w| &w.warnings) {
        line("warning", w.clone());
    }
    for s in &plan.op_secret_sets {
        line("op secret set", s.clone());
    }
    out
}
