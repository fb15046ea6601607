//! `ags plan`: the effective launch plan, creating nothing.

use super::run::Service;
use crate::cli::{GlobalArgs, PlanArgs};
use crate::launch::identity;
use crate::launch::signals::SignalWatch;
use crate::plan::LaunchPlan;
use crate::{Error, podman};

/// Print the plan as JSON or text.
pub fn plan(global: &GlobalArgs, args: &PlanArgs) -> Result<u8, Error> {
    if args.run.report.is_some() {
        return Err(Error::Usage(
            "--report describes a launch; `ags plan` launches nothing (its --json output is the plan)".into(),
        ));
    }
    super::run::check_args(global, &args.run)?;
    let config = super::run::load_config(global, args.run.workdir.clone())?;
    let named = super::host_paths::named_workdir(args.run.workdir.as_deref());
    let service_url = super::chosen_url(global);
    let mut rules = super::host_paths::check_early(&config, named.as_deref(), service_url.as_deref())?;
    let terminals = crate::launch::terminal::both_are_terminals();
    let settings = super::run::settings(&args.run, &config, &mut rules, terminals)?;
    let image = settings.image.clone().unwrap_or_else(|| config.image.clone());
    crate::plan::check::check_image_ref(&image)?;
    let identity = identity::current();
    let rt = super::runtime()?;
    let service = rt.block_on(service(global, &image, settings.name.as_deref()));
    let prepared = rt.block_on(async {
        if args.no_hooks {
            return Ok(None);
        }
        let signals = SignalWatch::install().map_err(Error::Output)?;
        super::run::prepare_hooks(&config, &settings, &identity, &signals, rules)
            .await
            .map(Some)
    });
    super::finish(rt);
    let hooks = prepared?.map(|p| super::run::hook_layer(&p)).unwrap_or_default();
    let plan = super::run::build_plan(&config, &settings, &identity, service, &hooks)?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&plan).expect("a plan always serializes")
        );
    } else {
        print!("{}", render(&plan));
    }
    Ok(0)
}

/// Ask the service what the plan depends on, and warn about what a launch would refuse (a
/// missing image, a taken name); without a service, assume rootless unless root, no SELinux.
async fn service(global: &GlobalArgs, image: &str, name: Option<&str>) -> Service {
    match podman::connect(&super::target(global)).await {
        Ok(client) => {
            if let Err(e) = crate::launch::lifecycle::preflight(&client, image, name).await {
                eprintln!("ags: warning: a launch would fail: {e}");
            }
            match super::run::service_facts(&client).await {
                Ok(facts) => return facts,
                Err(e) => eprintln!("ags: warning: {e}"),
            }
        }
        Err(e) => eprintln!(
            "ags: warning: no Podman service answered; planning as if it were rootless unless root: {e}"
        ),
    }
    Service {
        rootless: !nix::unistd::geteuid().is_root(),
        selinux: false,
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
            crate::plan::MountKind::Tmpfs => "tmpfs".into(),
            crate::plan::MountKind::Volume { name } => format!("volume {name}"),
        };
        let mode = if m.read_only { "ro" } else { "rw" };
        line(
            "mount",
            format!("{} <- {what} ({mode}) [{}]", m.destination.display(), m.origin),
        );
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
    for w in plan.agent_hook_wiring.iter().flat_map(|w| &w.warnings) {
        line("warning", w.clone());
    }
    for s in &plan.op_secret_sets {
        line("op secret set", s.clone());
    }
    out
}
