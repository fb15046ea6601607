//! The Quadlet export of a launch plan (`ags plan --format quadlet`, docs/quadlet.md): a
//! `.container` unit that runs the launch's image, command, user and security settings under
//! systemd, and a `.volume` unit per agent state volume (the same named volumes a launch
//! mounts, so logins and settings are shared with `ags` launches). Pure: a plan in, unit files
//! out.
//!
//! A unit file is a file on disk that anyone reading the unit directory can read, and Podman's
//! secret store is on disk too: the export carries no staged value (decision 0012). A plan
//! that stages values, forwards the ssh-agent, proxies egress or records agent hooks needs the
//! `ags` process and is refused with what to do instead.

use std::fmt::Write as _;
use std::path::Path;

use super::types::*;
use crate::config::Network;

/// Label on the exported units' container and volumes: what made them.
const EXPORT_LABEL: &str = "io.ags.export=quadlet";

/// Errors of the Quadlet export.
#[derive(Debug, thiserror::Error)]
pub enum QuadletError {
    /// The launch needs something only the `ags` process provides.
    #[error(
        "--format quadlet: the launch {what}, which needs the ags process beside the container; a unit run by systemd has none. {fix}"
    )]
    NeedsAgs { what: &'static str, fix: &'static str },
    /// A value that a unit file cannot carry verbatim.
    #[error("--format quadlet: {what} {value:?} contains a line break, which a unit file cannot carry")]
    LineBreak { what: &'static str, value: String },
    /// A value that would change the unit's meaning (a line break starts a new directive, a
    /// `:` in a path a new field of `Volume=`).
    #[error(
        "--format quadlet: the value of {key}= ({value:?}) {rule}, which a unit cannot carry unchanged; rename or move it, or launch with ags"
    )]
    Unwritable {
        key: String,
        value: String,
        rule: &'static str,
    },
}

/// The workspace check the unit runs around its container: `ags unit-check before RECORD` in
/// `ExecStartPre=`, `… after RECORD` in `ExecStopPost=`.
#[derive(Debug, Clone, Copy)]
pub struct Check<'a> {
    /// This `ags` program.
    pub ags: &'a Path,
    /// The unit's record.
    pub record: &'a Path,
}

/// One unit file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit {
    /// File name (`NAME.container`, `NAME-state-N.volume`).
    pub file_name: String,
    /// Contents.
    pub text: String,
}

/// The units of `plan`: the container unit first. `seccomp` is the path of the seccomp
/// profile written on this host (the unit names it).
pub fn export(plan: &LaunchPlan, seccomp: &Path, check: &Check<'_>) -> Result<Vec<Unit>, QuadletError> {
    refuse_what_needs_ags(plan)?;
    let mut c = Section::default();
    c.line("# Made by `ags plan --format quadlet` (docs/quadlet.md).\n[Unit]");
    let description = format!("ags {} in {}", plan.agent, plan.workdir.display());
    // systemd expands `%` specifiers in a description, not `$`.
    c.key("Description", &description.replace('%', "%%"));
    c.line("\n[Container]");
    posture(&mut c, plan, seccomp);
    network(&mut c, plan);
    environment(&mut c, plan)?;
    let mut units = vec![];
    mounts(&mut c, plan, &mut units);
    c.line("\n[Service]\n# The agent runs once: no restart.\nRestart=no");
    // The check after the container may take long on a big (or a planted, slow) workspace:
    // systemd must not kill it at its default 90 s (unit-check attack, F1).
    c.key("TimeoutStopSec", "infinity");
    // As around a launch's agent: the workspace's git metadata and protected files before,
    // and what the agent planted moved aside after (docs/quadlet.md).
    let ags = escape_specifiers(&check.ags.display().to_string());
    let record = quote(&check.record.display().to_string());
    c.key("ExecStartPre", &format!("{ags} unit-check before {record}"));
    c.key("ExecStopPost", &format!("{ags} unit-check after {record}"));
    if ags.contains(char::is_whitespace) {
        c.refuse(
            "ExecStartPre",
            &ags,
            "(this ags program's path) contains whitespace",
        );
    }
    if let Some(t) = plan.timeout_seconds {
        c.key("RuntimeMaxSec", &(t.ceil() as u64).to_string());
    }
    if let Some(err) = c.refused {
        return Err(err);
    }
    let file_name = format!("{}.container", plan.container_name);
    units.insert(
        0,
        Unit {
            file_name,
            text: c.text,
        },
    );
    Ok(units)
}

/// The text of a unit, a line at a time, and the first value it could not carry.
#[derive(Default)]
struct Section {
    text: String,
    refused: Option<QuadletError>,
}

impl Section {
    fn line(&mut self, line: &str) {
        self.text.push_str(line);
        self.text.push('\n');
    }

    /// `KEY=value`, refused when systemd or quadlet would read the value otherwise: a control
    /// character (a line break starts a directive of its own), a trailing `\` (it joins the
    /// next line), whitespace at either end (quadlet trims it, Unicode spaces included: a
    /// workdir named `ws ` would become `ws`, outside every guard).
    fn key(&mut self, key: &str, value: &str) {
        if value.chars().any(char::is_control) {
            self.refuse(key, value, "contains a line break or another control character");
        } else if value.ends_with('\\') {
            self.refuse(key, value, "ends with a backslash (it would join the next line)");
        } else if value.starts_with(char::is_whitespace) || value.ends_with(char::is_whitespace) {
            self.refuse(key, value, "starts or ends with whitespace (quadlet trims it)");
        }
        let _ = writeln!(self.text, "{key}={value}");
    }

    /// `Volume=` or `Tmpfs=` of `fields` joined by `:`, then the mount `options`; a field with
    /// a `:` or a `,` (Podman's separators), or with whitespace at either end, is refused.
    fn mount(&mut self, key: &str, fields: &[&str], options: &str) {
        for f in fields {
            if f.contains([':', ',']) {
                self.refuse(key, f, "contains ':' or ','");
            } else if f.starts_with(char::is_whitespace) || f.ends_with(char::is_whitespace) {
                self.refuse(key, f, "starts or ends with whitespace (quadlet trims it)");
            }
        }
        self.key(
            key,
            &escape_specifiers(&format!("{}:{options}", fields.join(":"))),
        );
    }

    fn refuse(&mut self, key: &str, value: &str, rule: &'static str) {
        let value = value.to_string();
        self.refused.get_or_insert(QuadletError::Unwritable {
            key: key.into(),
            value,
            rule,
        });
    }
}

/// Name, image, command, user and the security settings.
fn posture(c: &mut Section, plan: &LaunchPlan, seccomp: &Path) {
    c.key("ContainerName", &plan.container_name);
    c.key("Image", &plan.image);
    let (entry, args) = plan
        .container_command
        .split_first()
        .map_or(("", &[][..]), |(e, a)| (e.as_str(), a));
    c.key("Entrypoint", &escape_specifiers(entry));
    if args.iter().any(String::is_empty) {
        // Quadlet drops an empty word of Exec= and every word after it.
        c.refuse(
            "Exec",
            "",
            "is an empty argument, which quadlet drops with every argument after it",
        );
    }
    c.key("Exec", &exec_line(args));
    // A launch keeps no log of the agent's output (it is attached); nor does the unit.
    c.key("LogDriver", "none");
    c.key(
        "WorkingDir",
        &escape_specifiers(&plan.workdir.display().to_string()),
    );
    if let Some((uid, gid)) = plan.user.as_deref().and_then(|u| u.split_once(':')) {
        c.key("User", uid);
        c.key("Group", gid);
    }
    if plan.user_namespace == UserNamespace::KeepId {
        c.key("UserNS", "keep-id");
    }
    for cap in &plan.security.cap_drop {
        c.key("DropCapability", &cap.to_lowercase());
    }
    if plan.security.no_new_privileges {
        c.key("NoNewPrivileges", "true");
    }
    c.key(
        "SeccompProfile",
        &escape_specifiers(&seccomp.display().to_string()),
    );
    c.key("PidsLimit", &plan.security.pids_limit.to_string());
    if plan.init {
        c.key("RunInit", "true");
    }
    let mut podman_args = Vec::new();
    if let Some(bytes) = plan.security.memory_limit {
        podman_args.push(format!("--memory={bytes}b"));
        podman_args.push(format!("--memory-swap={bytes}b"));
    }
    if let Some(cpus) = plan.security.cpus {
        podman_args.push(format!("--cpus={cpus}"));
    }
    if !podman_args.is_empty() {
        c.key("PodmanArgs", &podman_args.join(" "));
    }
}

/// `--network none` and the published ports.
fn network(c: &mut Section, plan: &LaunchPlan) {
    if plan.network == Network::None {
        c.key("Network", "none");
    }
    for p in &plan.ports {
        let ip = p.host_ip.map_or(String::new(), |ip| format!("{ip}:"));
        let proto = match p.protocol {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
        };
        c.key(
            "PublishPort",
            &format!("{ip}{}:{}/{proto}", p.host_port, p.container_port),
        );
    }
}

/// The plain variables and the labels.
fn environment(c: &mut Section, plan: &LaunchPlan) -> Result<(), QuadletError> {
    for e in &plan.env {
        if let EnvSource::Plain { value } = &e.source {
            no_line_break("the variable", &e.key, value)?;
            c.key("Environment", &quote(&format!("{}={value}", e.key)));
        }
    }
    for (k, v) in labels(plan) {
        no_line_break("the label", &k, &v)?;
        c.key("Label", &quote(&format!("{k}={v}")));
    }
    Ok(())
}

/// The mounts; a `.volume` unit for each named volume.
fn mounts(c: &mut Section, plan: &LaunchPlan, units: &mut Vec<Unit>) {
    for (i, m) in plan.mounts.iter().enumerate() {
        // As a launch mounts them: no setuid bits or device nodes honoured inside.
        let options = if m.read_only {
            "ro,nosuid,nodev"
        } else {
            "rw,nosuid,nodev"
        };
        let dest = m.destination.display().to_string();
        match &m.kind {
            MountKind::Bind { source } => {
                let source = source.display().to_string();
                c.mount("Volume", &[&source, &dest], options);
            }
            MountKind::Tmpfs { size } => {
                c.mount("Tmpfs", &[&dest], &format!("{options},size={size}"));
            }
            MountKind::Volume { name: volume } => {
                let file_name = format!("{}-state-{i}.volume", plan.container_name);
                c.mount("Volume", &[&file_name, &dest], options);
                units.push(volume_unit(&file_name, volume, plan));
            }
            MountKind::StagedFile { .. } => unreachable!("refused before: staged values"),
        }
    }
}

/// The unit of one agent state volume: the named volume a launch mounts (made when missing).
fn volume_unit(file_name: &str, volume: &str, plan: &LaunchPlan) -> Unit {
    let mut text =
        String::from("# Made by `ags plan --format quadlet`: the agent's state volume.\n[Volume]\n");
    let _ = writeln!(text, "VolumeName={volume}");
    let state = plan.state_volumes.iter().find(|s| s.name == volume);
    for (k, v) in state.map(|s| &s.labels).into_iter().flatten() {
        let _ = writeln!(text, "Label={}", quote(&format!("{k}={v}")));
    }
    Unit {
        file_name: file_name.to_string(),
        text,
    }
}

/// Refuse what a unit cannot carry without `ags` beside it.
fn refuse_what_needs_ags(plan: &LaunchPlan) -> Result<(), QuadletError> {
    let needs = |what, fix| Err(QuadletError::NeedsAgs { what, fix });
    if plan.needs_staging() || !plan.files.is_empty() || !plan.op_secret_sets.is_empty() {
        return needs(
            "stages values (--env, --env-file, config passthrough, hook env or files, 1Password)",
            "A unit file and Podman's secret store are on disk (docs/quadlet.md). Use --no-hooks without staged values, `ags plan --format kube` (a Secret), or a systemd service that runs `ags run` itself.",
        );
    }
    if plan.ssh_agent.is_some() {
        return needs(
            "forwards the ssh-agent through ags's filter",
            "Drop --ssh-agent (and [git] ssh_agent).",
        );
    }
    if plan.network == Network::Allowlist {
        return needs(
            "has an allowlist, whose egress proxy runs in the ags process",
            "Use --network none or --network open.",
        );
    }
    if plan.agent_hook_record.is_some() {
        return needs("records agent hooks on the host", "Use --no-agent-hooks.");
    }
    Ok(())
}

/// The launch's labels a unit carries: as in the Kubernetes export, not the owner labels of a
/// local launch (`ags gc` must not take a unit's container for an orphan).
fn labels(plan: &LaunchPlan) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = plan
        .labels
        .iter()
        .filter(|(k, _)| !LOCAL_LABELS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let (k, v) = EXPORT_LABEL.split_once('=').expect("a label");
    out.push((k.into(), v.into()));
    out
}

fn no_line_break(what: &'static str, key: &str, value: &str) -> Result<(), QuadletError> {
    match key.contains(['\n', '\r']) || value.contains(['\n', '\r']) {
        true => Err(QuadletError::LineBreak {
            what,
            value: key.to_string(),
        }),
        false => Ok(()),
    }
}

/// systemd expands `%` specifiers and `$` variables in the command line it runs: double them.
fn escape_specifiers(text: &str) -> String {
    text.replace('%', "%%").replace('$', "$$")
}

/// One word in double quotes, with C escapes for `\`, `"`, control characters (line breaks
/// in a script), and systemd's specifiers doubled.
fn quote(word: &str) -> String {
    let mut out = String::from("\"");
    for ch in escape_specifiers(word).chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The arguments as `Exec=` reads them: each a quoted word.
fn exec_line(args: &[String]) -> String {
    args.iter().map(|a| quote(a)).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
#[path = "quadlet_tests.rs"]
mod tests;
