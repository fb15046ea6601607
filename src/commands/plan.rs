//! `ags plan`: the effective launch plan, creating nothing; with `--format kube`, the same
//! launch as Kubernetes manifests (docs/kube.md), whose Secret needs the prepare hooks' values;
//! with `--format quadlet`, as systemd units (`plan_quadlet.rs`, docs/quadlet.md).

use crate::error::CommandError;
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
    let (format, git) = check_plan_args(args)?;
    super::launch_input::check_args(global, &args.run)?;
    let config = super::run::load_config(global, args.run.workdir.clone())?;
    let named = super::host_paths::named_workdir(args.run.workdir.as_deref());
    let service_url = super::chosen_url(global);
    let mut rules = super::host_paths::check_early(&config, named.as_deref(), service_url.as_deref())?;
    let terminals = crate::launch::terminal::both_are_terminals();
    let mut settings = super::launch_input::settings(&args.run, &config, &mut rules, terminals)?;
    // A Pod or a systemd unit has no `ags` process beside it and no copy of the dispatcher:
    // no agent hooks.
    let exported = matches!(format, PlanFormat::Kube | PlanFormat::Quadlet);
    settings.agent_hooks &= !exported;
    if exported {
        // Nor a check after the agent: every guarded git dir's missing pieces are mounted.
        settings.git_guards =
            crate::git::model::guard::with_missing(std::mem::take(&mut settings.git_guards));
    }
    let image = settings.image.clone().unwrap_or_else(|| config.image.clone());
    crate::plan::check::check_image_ref(&image)?;
    if format == PlanFormat::Kube {
        kube_checks(&config, &settings, git.is_some())?;
        if !args.no_hooks {
            eprintln!(
                "ags: --format kube runs the prepare hooks and 1Password lookups like a launch: their values go into the Secret printed on standard output (nothing is written to disk)"
            );
        }
    }
    let rt = super::runtime()?;
    let offline_pod = format == PlanFormat::Kube
        && settings.network.unwrap_or(config.network) == crate::config::Network::None;
    let mut service = rt.block_on(service(
        super::target_for(global, Some(&config), Vec::new()),
        &image,
        (settings.name.as_deref(), offline_pod),
    ));
    // A Pod gets generated files through its Secret, wherever the service is.
    service.remote &= !exported;
    service.exported = exported;
    let kube_secrets = format == PlanFormat::Kube && !args.no_hooks;
    let built = rt.block_on(build(
        &config,
        &settings,
        rules,
        service,
        !args.no_hooks,
        kube_secrets,
    ));
    super::finish(rt);
    let (plan, secrets, digest) = built?;
    let output = Output {
        config: &config,
        settings: &settings,
        git: git.as_ref(),
        service_url: service_url.as_deref(),
    };
    print_plan(format, plan, (secrets, digest), args, &output)?;
    Ok(0)
}

/// What [`print_plan`] needs besides the plan.
struct Output<'a> {
    config: &'a Config,
    settings: &'a RunSettings,
    git: Option<&'a GitSource>,
    service_url: Option<&'a str>,
}

/// The plan in `format` on standard output (the Quadlet units into `--quadlet-dir`).
fn print_plan(
    format: PlanFormat,
    plan: LaunchPlan,
    (secrets, digest): (stage::Secrets, String),
    args: &PlanArgs,
    out: &Output<'_>,
) -> Result<(), Error> {
    match format {
        PlanFormat::Json => {
            let mut value = serde_json::to_value(&plan).expect("a plan always serializes");
            value["digest"] = serde_json::Value::String(digest);
            println!(
                "{}",
                serde_json::to_string_pretty(&value).expect("a plan always serializes")
            )
        }
        PlanFormat::Text => {
            print!("{}", crate::plan::text::render(&plan));
            println!("digest (--expect-plan): {digest}");
        }
        PlanFormat::Kube => {
            if out.git.is_none() {
                kube_check_notice(out.config, out.settings, &plan)?;
            }
            let cgroup_v1 = rootless_cgroup_v1(out.service_url);
            print_kube(plan, secrets, out.git, cgroup_v1, args.no_hooks)?;
        }
        PlanFormat::Quadlet => {
            prepare_git_guards(&plan, false)?;
            let dir = args.quadlet_dir.as_deref();
            super::plan_quadlet::print(out.config, out.settings, &plan, dir)?;
        }
    }
    Ok(())
}

/// A played Pod has no `ags` beside it: with a `hostPath` workspace that has git metadata or
/// watched project files, write the record of the check a launch makes around its agent and
/// say how to run it around the Pod (`ags unit-check`, docs/kube.md).
fn kube_check_notice(config: &Config, settings: &RunSettings, plan: &LaunchPlan) -> Result<(), Error> {
    let watched = plan
        .protected
        .paths
        .iter()
        .any(|p| p.handling == crate::workspace::protected::Handling::Watched);
    if plan.git_guards.is_empty() && !watched {
        return Ok(());
    }
    let record = super::unit_check::record(config, settings, plan)?;
    let ags = std::env::current_exe().unwrap_or_else(|_| "ags".into());
    eprintln!(
        "ags: a played Pod has no check after the agent: run `{ags} unit-check before {record}` before you play it and `{ags} unit-check after {record}` once it is gone, on the machine whose directories it mounts; git metadata and project files the agent planted are then moved aside as after a launch (docs/kube.md)",
        ags = ags.display(),
        record = record.display()
    );
    Ok(())
}

/// The output format, and `--workspace-from-git` parsed; `--report` refused.
fn check_plan_args(args: &PlanArgs) -> Result<(PlanFormat, Option<GitSource>), Error> {
    if args.run.report.is_some() {
        let rule = "it describes a launch; `ags plan` launches nothing (its --json output is the plan)";
        return Err(CommandError::invalid("--report", rule).into());
    }
    if args.run.expect_plan.is_some() {
        let rule = "it pins a launch's plan; `ags plan` prints the digest to pin";
        return Err(CommandError::invalid("--expect-plan", rule).into());
    }
    let format = match (args.json, args.format) {
        (true, _) => PlanFormat::Json,
        (false, format) => format.unwrap_or(PlanFormat::Text),
    };
    if args.quadlet_dir.is_some() && format != PlanFormat::Quadlet {
        let rule = "it is where the Quadlet units go; use it with --format quadlet";
        return Err(CommandError::invalid("--quadlet-dir", rule).into());
    }
    if args.workspace_from_git.is_some() && format != PlanFormat::Kube {
        let rule = "it describes the workspace of a Kubernetes Pod; use it with --format kube";
        return Err(CommandError::invalid("--workspace-from-git", rule).into());
    }
    let git = match &args.workspace_from_git {
        Some(arg) => Some(GitSource::parse(arg).map_err(PlanError::from)?),
        None => None,
    };
    Ok((format, git))
}

/// The plan, after the prepare hooks (`hooks`), and the 1Password values a Kubernetes Secret
/// carries (`secrets`; otherwise none are looked up).
async fn build(
    config: &Config,
    settings: &RunSettings,
    rules: crate::containment::Rules,
    service: Service,
    hooks: bool,
    secrets: bool,
) -> Result<(LaunchPlan, stage::Secrets, String), Error> {
    let identity = identity::current();
    let signals = SignalWatch::install().map_err(Error::Signals)?;
    let prepared = match hooks {
        true => Some(super::run::prepare_hooks(config, settings, &identity, &signals, rules).await?),
        false => None,
    };
    let layer = prepared
        .as_ref()
        .map(crate::plan::from_hooks::hook_layer)
        .unwrap_or_default();
    let plan = super::run::build_plan(config, settings, &identity, service, &layer)?;
    let digest = crate::plan::digest::digest(&plan, &identity);
    let secrets = match secrets {
        true => {
            let running = podman::local_running_roots(None).await;
            super::run::lookup_secrets(config, &plan, &signals, &running).await?
        }
        false => stage::Secrets::default(),
    };
    Ok((plan, secrets, digest))
}

/// The Kubernetes manifests of `plan` on standard output (values redacted on a terminal).
fn print_kube(
    plan: LaunchPlan,
    secrets: stage::Secrets,
    git: Option<&GitSource>,
    cgroup_v1: bool,
    no_hooks: bool,
) -> Result<(), Error> {
    let redact = std::io::stdout().is_terminal();
    let env_file = plan.staging.is_some().then(|| stage::env_file(&plan, &secrets));
    drop(secrets);
    let plan = without_unenforceable_limits(plan, cgroup_v1);
    prepare_git_guards(&plan, git.is_some())?;
    let host_kinds = host_kinds(&plan);
    let export = kube::export(&KubeInput {
        plan: &plan,
        env_file: env_file.as_deref().map(Vec::as_slice),
        workspace_from_git: git,
        redact,
        host_kinds: &host_kinds,
    })
    .map_err(PlanError::from)?;
    if export.secret.is_some() {
        secret_notice(no_hooks, redact);
    }
    let text = export.render();
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes()).map_err(Error::Output)?;
    out.flush().map_err(Error::Output)
}

/// Create the missing pieces the git guards mount (an empty `hooks/`, `config.worktree`, a
/// `commondir` naming the git dir itself), as a launch does right before its container: the
/// Pod mounts them read-only from the same paths. With `--workspace-from-git` the workdir's
/// guards are not exported (the clone is not this repository).
fn prepare_git_guards(plan: &LaunchPlan, from_git: bool) -> Result<(), Error> {
    let guards: Vec<_> = plan
        .git_guards
        .iter()
        .filter(|g| !(from_git && g.path.starts_with(&plan.workdir)))
        .cloned()
        .collect();
    crate::git::guard::create_missing(&guards).map_err(|e| Error::Launch(e.into()))
}

/// What each bind source of `plan` is on this host, for the `hostPath` types.
fn host_kinds(plan: &LaunchPlan) -> std::collections::BTreeMap<std::path::PathBuf, &'static str> {
    use std::os::unix::fs::FileTypeExt;
    let sources = plan.mounts.iter().filter_map(|m| match &m.kind {
        crate::plan::MountKind::Bind { source } => Some(source),
        _ => None,
    });
    sources
        .filter_map(|s| {
            let t = std::fs::metadata(s).ok()?.file_type();
            let kind = match () {
                _ if t.is_dir() => "Directory",
                _ if t.is_file() => "File",
                _ if t.is_socket() => "Socket",
                _ => return None,
            };
            Some((s.clone(), kind))
        })
        .collect()
}

/// A rootless Podman 5 service gives a played Pod a network interface although it was asked
/// for none (`tests/live/kube_verify.rs`): say so when `--network none` is exported for one.
async fn warn_rootless_network(client: &podman::Client) {
    let rootless = client.rootless().await.unwrap_or(false);
    let major = client.server_version().await.ok().flatten().map(|v| v.major);
    if rootless && major.is_some_and(|m| m >= 5) {
        eprintln!(
            "ags: warning: this rootless Podman {}'s `podman kube play --network none` still gives the Pod a network interface: the exported Pod is not offline there (docs/kube.md)",
            major.unwrap_or_default()
        );
    }
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
    local && !nix::unistd::geteuid().is_root() && super::doctor::host_is_cgroup_v1()
}

/// What a Pod cannot carry, refused before any hook or `op` runs: the network mode, the
/// container name as a Pod name, the labels.
fn kube_checks(config: &Config, settings: &RunSettings, git: bool) -> Result<(), Error> {
    let profile = crate::plan::check::find_agent(&settings.agent)?;
    let egress = crate::egress::plan::plan(
        config,
        crate::egress::plan::Requested {
            network: settings.network,
            allow: &settings.allow,
        },
        profile,
        std::path::Path::new("/"),
        false,
        false,
    );
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
async fn service(target: podman::Target, image: &str, (name, offline_pod): (Option<&str>, bool)) -> Service {
    match podman::connect(&target).await {
        Ok(client) => {
            if offline_pod {
                warn_rootless_network(&client).await;
            }
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
        exported: false,
        memory: crate::podman::local_memory_total(),
    }
}
