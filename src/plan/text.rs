//! `ags plan`'s text form: one `key value` line per fact of the launch plan; staged values are
//! redacted (`<redacted> (staged)`), 1Password references shown as references.

use super::{EnvSource, LaunchPlan, MountKind};
use crate::workspace::protected::Handling;

/// The rendered lines.
struct Lines(String);

impl Lines {
    fn line(&mut self, key: &str, value: String) {
        self.0.push_str(&format!("{key:<16}{value}\n"));
    }
}

/// The plan as text, a line per fact.
pub fn render(plan: &LaunchPlan) -> String {
    let mut out = Lines(String::new());
    launch(&mut out, plan);
    mounts(&mut out, plan);
    values(&mut out, plan);
    agent_hooks(&mut out, plan);
    out.0
}

/// The launch: identity, command, namespaces, network, security, limits, ports.
fn launch(out: &mut Lines, plan: &LaunchPlan) {
    out.line("launch id", plan.launch_id.clone());
    out.line("container", plan.container_name.clone());
    out.line("image", plan.image.clone());
    out.line("agent", plan.agent.clone());
    out.line("command", format!("{:?}", plan.command));
    out.line("workdir", plan.workdir.display().to_string());
    out.line("tty", plan.tty.to_string());
    out.line("user namespace", word(&plan.user_namespace));
    out.line("user", plan.user.clone().unwrap_or_default());
    network(out, plan);
    out.line(
        "security",
        format!(
            "cap-drop={} no-new-privileges={} pids-limit={}",
            plan.security.cap_drop.join(","),
            plan.security.no_new_privileges,
            plan.security.pids_limit
        ),
    );
    out.line(
        "limits",
        format!(
            "memory={} cpus={}",
            plan.security
                .memory_limit
                .map_or("none".into(), crate::limits::show_size),
            plan.security.cpus.map_or("none".into(), |c| c.to_string())
        ),
    );
    out.line("lockdown", plan.lockdown.to_string());
    out.line("skip prompts", plan.skip_permissions.to_string());
    out.line("init", plan.init.to_string());
    if let Some(t) = plan.timeout_seconds {
        out.line("timeout", format!("{t} s"));
    }
    for p in &plan.ports {
        let ip = p.host_ip.map(|ip| format!("{ip}:")).unwrap_or_default();
        out.line(
            "publish",
            format!("{ip}{}:{}/{:?}", p.host_port, p.container_port, p.protocol).to_lowercase(),
        );
    }
}

/// The network: its mode, the allowlist, the host's loopback ports, the proxied credentials.
fn network(out: &mut Lines, plan: &LaunchPlan) {
    out.line(
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
        out.line(
            "allow",
            format!("{} ports {ports} from {}", a.entry.entry, a.origin),
        );
    }
    for d in &plan.egress.deny {
        let ports = match d.entry.ports.as_slice() {
            [p] => format!("port {p}"),
            _ => "every port".into(),
        };
        out.line("deny", format!("{} {ports} from {}", d.entry.entry, d.origin));
    }
    for port in &plan.egress.host_ports {
        out.line(
            "host loopback",
            format!(
                "port {port}: 127.0.0.1:{port} and host.ags.internal:{port} reach the host's 127.0.0.1:{port}"
            ),
        );
    }
    for c in &plan.credentials {
        let how = match &c.note {
            None => "placeholder; the proxy adds the key".to_string(),
            Some(note) => format!("the real value goes in: {note}"),
        };
        out.line(
            "credential",
            format!(
                "{} for {} ({}, {}): {how}",
                c.env,
                c.hosts.join(", "),
                c.header,
                c.origin
            ),
        );
    }
}

/// The mounts and the protected project files.
fn mounts(out: &mut Lines, plan: &LaunchPlan) {
    for m in &plan.mounts {
        let what = match &m.kind {
            MountKind::Bind { source } => format!("bind {}", source.display()),
            MountKind::Tmpfs { size } => {
                format!("tmpfs size={}", crate::limits::show_size(*size))
            }
            MountKind::Volume { name } => format!("volume {name}"),
            MountKind::StagedFile { volume, path } => format!("volume {volume}, {path}"),
        };
        let mode = if m.read_only { "ro" } else { "rw" };
        out.line(
            "mount",
            format!("{} <- {what} ({mode}) [{}]", m.destination.display(), m.origin),
        );
    }
    let protected = &plan.protected.paths;
    let count = |h| protected.iter().filter(|p| p.handling == h).count();
    if !protected.is_empty() {
        let (ro, watched) = (count(Handling::ReadOnly), count(Handling::Watched));
        out.line(
            "protected",
            format!("{ro} read-only, {watched} watched (docs/security.md)"),
        );
    }
    for p in protected.iter().filter(|p| p.handling == Handling::Allowed) {
        out.line("protected", format!("{} allowed to change", p.path().display()));
    }
}

/// The environment (staged values redacted) and the generated files.
fn values(out: &mut Lines, plan: &LaunchPlan) {
    for e in &plan.env {
        let how = match &e.source {
            EnvSource::Plain { value } => format!("= {value}"),
            EnvSource::Staged { .. } => "= <redacted> (staged)".into(),
            EnvSource::OpRef { reference } => format!("<- {reference} (1Password)"),
        };
        out.line("env", format!("{} {how} [{}]", e.key, e.origin));
    }
    for f in &plan.files {
        out.line(
            "file",
            format!(
                "{} ({} bytes, read-only) [{}]",
                f.destination.display(),
                f.bytes,
                f.origin
            ),
        );
    }
}

/// The agent hook handlers and guard, warnings, 1Password secret sets.
fn agent_hooks(out: &mut Lines, plan: &LaunchPlan) {
    if let Some(w) = &plan.agent_hook_wiring {
        for h in &w.handlers {
            let tool = h.tool.as_ref().map(|t| format!(" tool {t}")).unwrap_or_default();
            out.line(
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
            out.line("agent guard", format!("deny {d:?}"));
        }
        for p in &w.guard.protect {
            out.line("agent guard", format!("protect {p:?}"));
        }
    }
    for w in plan.agent_hook_wiring.iter().flat_map(|w| &w.warnings) {
        out.line("warning", w.clone());
    }
    for s in &plan.op_secret_sets {
        out.line("op secret set", s.clone());
    }
}

/// An enum as the bare word it serializes to (`default`, `keep-id`), not as a JSON string (also
/// the decisions of the agent hook and egress logs' rows).
pub fn word<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}
