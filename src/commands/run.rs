//! `ags [run options] -- CMD…`: the launch.
//!
//! CLI values checked → config → Podman service, image and name checked → hooks (every event
//! approved, prepare run) → plan → podman → launch (started hooks alongside the agent) →
//! cleanup → finished hooks. No hook and no `op` runs for a launch that is bound to fail on its
//! command line, its service or its image; nothing is created before the prepare hooks succeed.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use super::{git_host, host_paths, launch_input};
use crate::cli::{GlobalArgs, RunArgs};
use crate::config::{self, Config, LoadOptions};
use crate::containment::{Rules, WritableRoot};
use crate::events::session;
use crate::hooks::prepare::{self, PrepareInput, Prepared};
use crate::hooks::protocol::HookContext;
use crate::hooks::resolve::LaunchOverrides;
use crate::hooks::runner::Interrupt;
use crate::launch::cleanup::{Cleanup, CleanupError, Resource};
use crate::launch::host_services::HostServices;
use crate::launch::report::{Destination, Facts, Report};
use crate::launch::signals::SignalWatch;
use crate::launch::sweep_gate::OwnerMark;
use crate::launch::watch::{Settled, Watch};
use crate::launch::{self, gc, identity, lifecycle, stage};
use crate::op::{OpCli, OpEnv, OpPolicy};
use crate::plan::{self, HookLayer, LaunchIdentity, LaunchPlan, RunSettings, STAGING_MOUNT};
use crate::{Error, podman, prompt};

/// Launch an agent and return its exit code; with `--report`, write the launch report after it
/// (whatever the outcome).
pub fn run(global: &GlobalArgs, args: &RunArgs) -> Result<u8, Error> {
    let Some(dest) = &args.report else {
        let mut facts = Facts::default();
        let result = launch(global, args, &mut facts);
        facts.abandon_chains();
        return result;
    };
    let dest = Destination::parse(dest).map_err(launch::LaunchError::from)?;
    let mut facts = Facts {
        began: Some(std::time::Instant::now()),
        agent: Some(args.agent.clone()),
        ..Facts::default()
    };
    let result = launch(global, args, &mut facts);
    facts.abandon_chains();
    let (code, error) = match &result {
        Ok(code) => ((*code, launch::report::Outcome::of_exit(*code)), None),
        Err(e) => ((e.exit_code(), e.outcome()), Some(crate::error::render(e))),
    };
    let writable = match facts.writable.is_empty() {
        true => host_paths::fallback_writable(args.workdir.as_deref()),
        false => std::mem::take(&mut facts.writable),
    };
    let written = Report::new(facts, code, error).write(&dest, &writable);
    match (result, written) {
        (Ok(_), Err(e)) => Err(launch::LaunchError::from(e).into()),
        (result, _) => result,
    }
}

fn launch(global: &GlobalArgs, args: &RunArgs, facts: &mut Facts) -> Result<u8, Error> {
    launch_input::check_args(global, args)?;
    let config = load_config(global, args.workdir.clone())?;
    facts.paths = Some(config.paths.clone());
    let named = host_paths::named_workdir(args.workdir.as_deref());
    let service_url = super::chosen_url(global);
    let mut rules = host_paths::check_early(&config, named.as_deref(), service_url.as_deref())?;
    let settings = launch_input::settings(args, &config, &mut rules, launch::terminal::both_are_terminals())?;
    facts.writable = rules.writable_roots().to_vec();
    if let Some(report) = args.report.as_deref().filter(|r| *r != std::path::Path::new("-")) {
        // Refused before anything runs (and a previous report removed); checked again when
        // it is written.
        launch::report::clear_path(report, &facts.writable).map_err(launch::LaunchError::from)?;
    }
    let image = settings.image.as_deref().unwrap_or(&config.image);
    plan::check::check_image_ref(image)?;
    let rt = super::runtime()?;
    let result = rt.block_on(launch_async(global, &config, &settings, rules, facts));
    super::finish(rt);
    result
}

/// Load the configuration and print its warnings.
pub(super) fn load_config(global: &GlobalArgs, workdir: Option<PathBuf>) -> Result<Config, Error> {
    let config = config::load(&LoadOptions {
        config: global.config.clone(),
        no_repo_config: global.no_repo_config,
        workdir,
        ask_overlay_trust: prompt::has_terminal(),
    })?;
    for w in &config.warnings {
        eprintln!("{}", crate::text::escape_controls(&format!("ags: warning: {w}")));
    }
    Ok(config)
}

/// The invoking user's uid and gid.
pub(super) fn user_ids() -> (u32, u32) {
    (nix::unistd::getuid().as_raw(), nix::unistd::getgid().as_raw())
}

/// Build the plan for this invocation.
pub(super) fn build_plan(
    config: &Config,
    settings: &RunSettings,
    identity: &LaunchIdentity,
    service: Service,
    hooks: &HookLayer,
) -> Result<LaunchPlan, Error> {
    // The plan will hold the agent's hook wiring (generated files, staged like hook files).
    let wiring = settings.agent_hooks && crate::agent_hooks::wiring::generate(&settings.agent, "").is_some();
    Ok(plan::build(&plan::PlanInput {
        config,
        run: settings,
        identity,
        rootless: service.rootless,
        selinux: service.selinux,
        remote: service.remote,
        exported: service.exported,
        host_memory: service.memory,
        user: user_ids(),
        host_stage_dir: &stage::launch_stage_root(
            &config.paths,
            service.remote,
            !hooks.files.is_empty(),
            wiring,
        )?
        .join(gc::stage_dir_name(identity)),
        hooks,
    })?)
}

/// What the plan needs to know about the Podman service.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Service {
    pub rootless: bool,
    pub selinux: bool,
    /// On another machine (`tcp://`, `ssh://`): generated files go in the staging volume.
    pub remote: bool,
    /// Exported as a Pod (`--format kube`): no proxy of this host reaches it.
    pub exported: bool,
    /// The total memory of the machine that runs the containers (for `memory = auto`), when
    /// known.
    pub memory: Option<u64>,
}

/// Ask the service what the plan depends on.
pub(super) async fn service_facts(client: &podman::Client) -> Result<Service, Error> {
    let (rootless, selinux, memory) =
        tokio::try_join!(client.rootless(), client.selinux_enabled(), client.memory_total())?;
    Ok(Service {
        rootless,
        selinux,
        remote: client.is_remote(),
        exported: false,
        memory,
    })
}

async fn launch_async(
    global: &GlobalArgs,
    config: &Config,
    settings: &RunSettings,
    rules: Rules,
    facts: &mut Facts,
) -> Result<u8, Error> {
    let mut signals = SignalWatch::install().map_err(Error::Signals)?;
    let ready = prepare(global, config, settings, rules, facts, &signals).await?;
    let (client, plan) = (&ready.client, &ready.plan);
    let owner = OwnerMark::write(&config.paths, &ready.identity, client.url());
    let services = start_services(config, plan, (ready.staged, ready.vault), client)?;
    crate::receipt::begin(client, &config.paths, plan).await;
    let session = session::Session::begin(config, plan, &ready.identity, ready.lifecycle_hooks);
    // Started hooks and the reconciliation of other launches' leftovers run once the agent has
    // started: off the path to the agent's first instruction, their output held back.
    let (started, on_start) = tokio::sync::oneshot::channel();
    let background = tokio::spawn(session.after_start(client.clone(), on_start));
    let mut cleanup = Cleanup::default();
    for dir in services.dirs() {
        cleanup.push(Resource::HostDir(dir));
    }
    let locks = config.paths.state_dir().join("locks");
    let settled = ready.watch.settle(Some(client), &settings.protected).await;
    let (records, stage) = (services.records.as_ref(), ready.stage);
    let result = lifecycle::run(
        client,
        plan,
        &locks,
        stage,
        &mut signals,
        &mut cleanup,
        started,
        records,
    )
    .await;
    let ended = std::time::Instant::now();
    crate::trace::mark("exit code known");
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    let (errors, background) = tokio::join!(cleanup.run(client), background);
    (facts.agent_hook_record, facts.tripwires) = services.stop(result.as_ref().ok().copied()).await;
    if !errors.is_empty() {
        owner.keep(); // the next launch after this process is gone sweeps
    }
    let unmoved = report_after(config, settings, settled, errors, facts).await;
    let background = background.unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
    session
        .finish(background, result.as_ref().ok().copied(), ended, &signals)
        .await;
    facts.receipt = crate::receipt::end(&config.paths, &plan.launch_id, result.as_ref().ok().copied());
    let code = result?;
    if unmoved > 0 {
        return Err(crate::workspace::quarantine::LeftInPlace { count: unmoved }.into());
    }
    Ok(code)
}

/// The cleanup's errors (each a leftover of the report) and the workspace checks, said at once:
/// nothing is printed until both have run (`notices::say`, attack2-2). How many planted pieces
/// stayed in place.
async fn report_after(
    config: &Config,
    settings: &RunSettings,
    settled: Settled,
    errors: Vec<CleanupError>,
    facts: &mut Facts,
) -> usize {
    let mut report = String::new();
    for e in errors {
        report.push_str(&crate::text::escape_controls(&format!("ags: {e}\n")));
        facts.leftovers.push((&e).into());
    }
    crate::trace::mark("cleaned up");
    let (git, guards) = (&config.user.git, settings.git_guards.clone());
    let unmoved = settled
        .check(git, guards, &facts.writable, &settings.protected, &mut report)
        .await;
    launch::notices::say(&report);
    unmoved
}

/// What [`prepare`] hands to the run.
struct Ready {
    client: podman::Client,
    identity: LaunchIdentity,
    plan: LaunchPlan,
    /// The staging archive (values in RAM only), when the plan stages anything.
    stage: Option<bytes::Bytes>,
    staged: crate::agent_hooks::log::Scrubber,
    /// The real values of the credentials the proxy adds.
    vault: Option<Arc<crate::credentials::Vault>>,
    watch: Watch,
    lifecycle_hooks: session::LifecycleHooks,
}

/// Everything before the container: the service checked, the prepare hooks run, the plan built,
/// the secrets looked up into the staging archive, the host paths checked again.
async fn prepare(
    global: &GlobalArgs,
    config: &Config,
    settings: &RunSettings,
    mut rules: Rules,
    facts: &mut Facts,
    signals: &SignalWatch,
) -> Result<Ready, Error> {
    let identity = identity::current();
    facts.launch_id = Some(identity.launch_id.clone());
    crate::receipt::open(&config.paths, &identity.launch_id);
    let target = super::target_for(global, Some(config), rules.writable_roots().to_vec());
    let client = podman::connect(&target).await?;
    crate::trace::mark("connected");
    let (service, running) = check_service(&client, config, settings, &identity).await?;
    running.iter().cloned().for_each(|root| rules.writable(root));
    let lifecycle_hooks = session::approve(config)?;
    let prepared = prepare_hooks(config, settings, &identity, signals, rules).await?;
    let hooks = plan::from_hooks::hook_layer(&prepared);
    crate::trace::mark("hooks done");
    // The git metadata as the approved hooks left it, recorded while the launch is prepared;
    // what differs once the container is gone is the launch's (`workspace::git_inventory`).
    let roots = git_host::git_roots(config, &settings.mounts);
    let watch =
        Watch::begin((config.user.protect_git).then(|| git_host::scan_roots(&roots, &settings.git_guards)));
    let mut plan = build_plan(config, settings, &identity, service, &hooks)?;
    launch_input::check_pinned(settings, &plan, &identity)?;
    warn_about_wiring(config, settings, &plan, service)?;
    facts.image = Some(plan.image.clone());
    let mut secrets = lookup_secrets(config, &plan, signals, &running).await?;
    crate::trace::mark("secrets");
    let cas = crate::config::image_ca_certs(config.primary.as_deref())?;
    let vault = stage::take_credentials(&mut plan, &mut secrets, &config.user.credentials, &cas)?;
    let stage = stage::staging_archive(&plan, &secrets, user_ids()).map_err(launch::LaunchError::Stage)?;
    // The agent hook record is scrubbed of every staged value: its own copies, zeroed at the end.
    let staged = match plan.agent_hook_record {
        Some(_) => crate::agent_hooks::log::Scrubber::new(stage::staged_values(&plan, &secrets)),
        None => crate::agent_hooks::log::Scrubber::default(),
    };
    drop(secrets); // zeroed now: the archive holds the only copy until it is uploaded
    let service_url = super::chosen_url(global);
    facts.writable =
        host_paths::check_late(&client, config, settings, &prepared, service_url.as_deref()).await?;
    crate::workspace::written::remember(&config.paths, &facts.writable)?;
    for root in config.paths.stage_roots() {
        gc::sweep_host(&root);
    }
    Ok(Ready {
        client,
        identity,
        plan,
        stage,
        staged,
        vault,
        watch,
        lifecycle_hooks,
    })
}

/// The service's facts, the image and name checked (and a remote workdir), and the read-write
/// mounts of every running launch of this machine when a host program will run: no host
/// program (`op`, the hooks' `PATH`) comes from them. Only prepare hooks and `--op-secret-set`
/// run one.
async fn check_service(
    client: &podman::Client,
    config: &Config,
    settings: &RunSettings,
    identity: &LaunchIdentity,
) -> Result<(Service, Vec<WritableRoot>), Error> {
    let image = settings.image.as_deref().unwrap_or(&config.image);
    let runs_programs = !config.prepare_hooks.is_empty() || !settings.op_secret_sets.is_empty();
    let running = async {
        Ok::<_, Error>(match runs_programs {
            true => podman::local_running_roots(Some(client)).await,
            false => Vec::new(),
        })
    };
    let checks = async {
        lifecycle::preflight(client, image, settings.name.as_deref()).await?;
        if client.is_remote() {
            // The workdir is a path on the service's machine (docs/remote.md).
            launch::remote::check_workdir(client, image, &config.workdir, identity, &settings.labels).await?;
        }
        Ok::<(), Error>(())
    };
    let (service, (), running) = tokio::try_join!(service_facts(client), checks, running)?;
    Ok((service, running))
}

/// The plan's agent-hook warnings, and the dispatcher installed where the plan mounts it.
fn warn_about_wiring(
    config: &Config,
    settings: &RunSettings,
    plan: &LaunchPlan,
    service: Service,
) -> Result<(), Error> {
    for w in plan.agent_hook_wiring.iter().flat_map(|w| &w.warnings) {
        eprintln!("{}", crate::text::escape_controls(&format!("ags: warning: {w}")));
    }
    if service.remote && settings.agent_hooks && !config.agent_hooks.is_empty() {
        eprintln!(
            "ags: warning: agent hooks: a remote Podman service cannot run this host's dispatcher, so the [[agent_hook]] handlers and the [agent_guard] do not run in this launch (docs/agent-hook-handlers.md)"
        );
    }
    if let Some(w) = &plan.agent_hook_wiring {
        crate::agent_hooks::install::install(&w.dispatcher)?;
    }
    Ok(())
}

/// The host-side services of the launch (each only when the plan asks for it), served from this
/// process for the whole session; their private socket directories are removed with the
/// launch's other resources (and swept after a crash).
fn start_services(
    config: &Config,
    plan: &LaunchPlan,
    (staged, vault): (
        crate::agent_hooks::log::Scrubber,
        Option<Arc<crate::credentials::Vault>>,
    ),
    client: &podman::Client,
) -> Result<HostServices, Error> {
    let remote = (!client.is_unix()).then(|| client.url());
    // The record server goes first: its directory is removed when it is dropped.
    let records = crate::agent_hooks::log::start(plan, staged, remote)?;
    let calls = records.as_ref().map(|r| r.calls());
    let egress_log = crate::egress::log::EgressLog::new(config.paths.egress_log(), plan.launch_id.clone());
    let egress_log = Arc::new(egress_log.with_calls(calls));
    let egress = crate::egress::start(&plan.egress, egress_log.clone(), remote, vault)?;
    let ssh_filter = crate::ssh_agent::start(plan.ssh_agent.as_ref(), egress_log.clone(), remote)?;
    Ok(HostServices {
        records,
        egress_log,
        egress,
        ssh_filter,
    })
}

/// The final handoff: resolve the surviving 1Password references in one `op inject` batch and
/// load `--op-secret-set` items. Runs no `op` when there is nothing to look up.
pub(super) async fn lookup_secrets(
    config: &Config,
    plan: &LaunchPlan,
    signals: &SignalWatch,
    running: &[WritableRoot],
) -> Result<stage::Secrets, Error> {
    let sets = &plan.op_secret_sets;
    let refs = stage::op_references(plan)?;
    if refs.is_empty() && sets.is_empty() {
        return Ok(stage::Secrets::default());
    }
    let interrupt = Interrupt::from_receiver(signals.receiver());
    let op = OpCli::new(OpEnv::inherit()).resolve(&op_policy(config, plan, running))?;
    op.check_capability(&interrupt).await?;
    let references = op
        .resolve_refs(refs.iter().map(|(k, r)| (*k, r)), &interrupt)
        .await?;
    let names = launch_input::secret_set_names(sets)?;
    let loaded = op.load_secret_sets(&names, &interrupt).await?;
    for set in &loaded {
        for field in &set.skipped {
            eprintln!(
                "ags: warning: --op-secret-set {}: field {} not loaded: {:?}",
                set.name, field.label, field.reason
            );
        }
    }
    let finals = loaded.into_iter().map(|s| s.values).collect();
    Ok(stage::Secrets {
        references,
        finals,
        placeholders: Default::default(),
    })
}

/// Where `op` comes from (`[op] path`) and the directories it may not come from: the workdir,
/// the sources of the launch's read-write bind mounts (`--add-dir`s, hook and config mounts)
/// and those of the `running` launches.
fn op_policy(config: &Config, plan: &LaunchPlan, running: &[WritableRoot]) -> OpPolicy {
    let own = plan
        .read_write_sources()
        .cloned()
        .chain([config.workdir.clone(), config.project.clone()])
        .map(|path| WritableRoot::new(path, "this launch's read-write mount"));
    OpPolicy {
        configured: config.user.op_path.clone(),
        agent_writable: own.chain(running.iter().cloned()).collect(),
    }
}

/// Run the prepare phase for a launch (also used by `ags plan`).
pub(super) async fn prepare_hooks(
    config: &Config,
    settings: &RunSettings,
    identity: &LaunchIdentity,
    signals: &SignalWatch,
    containment: Rules,
) -> Result<Prepared, Error> {
    let cli_env = settings
        .env
        .iter()
        .map(|(k, v, _)| (k.clone(), v.expose().to_string()))
        .collect();
    let context = HookContext::new(
        identity.launch_id.clone(),
        config.project.clone(),
        config.workdir.clone(),
        settings.agent.clone(),
    );
    let input = PrepareInput {
        paths: &config.paths,
        hooks: &config.prepare_hooks,
        context,
        cwd: config.workdir.clone(),
        project: config.project.clone(),
        interactive: prompt::has_terminal(),
        interrupt: Interrupt::from_receiver(signals.receiver()),
        overrides: LaunchOverrides {
            cli_env,
            cli_mounts: settings.mounts.iter().map(|m| m.destination.clone()).collect(),
            fixed_destinations: vec![config.workdir.clone(), STAGING_MOUNT.into()],
        },
        lockdown: settings.lockdown,
        containment,
    };
    Ok(prepare::prepare(input).await?)
}
