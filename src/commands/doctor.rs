//! `ags doctor`: check what a launch needs and print one line per check, with a concrete fix
//! for every problem.
//!
//! config → Podman service (socket, version, storage, image, OCI runtime, tmpfs volumes) →
//! host (user namespace mapping and /dev/net/tun for rootless, approval store and overlay
//! trust file permissions) → `op` (located on PATH; `op inject --help` runs through the hook
//! runner). Exit status 1 when a required check failed (`FAIL`); warnings (`warn`) do not
//! change it. Nothing is left behind: the trivial container and the tmpfs volume it creates
//! carry `io.ags.doctor=1` and the owner labels that `ags gc` sweeps.

pub(super) mod container;
mod host;
mod op;
mod service;
mod versions;

use std::io::Write;

use serde::Serialize;

use crate::cli::{DoctorArgs, GlobalArgs};
use crate::config::{self, Config, LoadOptions};
use crate::op::{OpEnv, OpPolicy};
use crate::{Error, podman};

/// Exit status when a required check failed.
const EXIT_CHECK_FAILED: u8 = 1;

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Status {
    /// Fine.
    Ok,
    /// Works, but something optional is missing or weak.
    Warn,
    /// A launch would fail.
    Fail,
    /// Not checked because an earlier check failed.
    Skip,
}

impl Status {
    fn label(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warn => "warn",
            Status::Fail => "FAIL",
            Status::Skip => "skip",
        }
    }
}

/// The outcome of one check.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Check {
    /// Short name (`socket`, `image`, …).
    pub(crate) name: &'static str,
    /// Outcome.
    pub(crate) status: Status,
    /// What was found.
    pub(crate) detail: String,
    /// What to do, when not ok.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) fix: Option<String>,
}

impl Check {
    pub(crate) fn ok(name: &'static str, detail: impl Into<String>) -> Self {
        Check {
            name,
            status: Status::Ok,
            detail: detail.into(),
            fix: None,
        }
    }

    pub(crate) fn warn(name: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Self {
        Check {
            status: Status::Warn,
            fix: Some(fix.into()),
            ..Check::ok(name, detail)
        }
    }

    pub(crate) fn fail(name: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Self {
        Check {
            status: Status::Fail,
            fix: Some(fix.into()),
            ..Check::ok(name, detail)
        }
    }

    pub(crate) fn skip(name: &'static str, detail: impl Into<String>) -> Self {
        Check {
            status: Status::Skip,
            ..Check::ok(name, detail)
        }
    }

    /// One line: status, name, detail and the fix.
    fn render(&self) -> String {
        let mut line = format!("{:<5}{:<16}{}", self.status.label(), self.name, self.detail);
        if let Some(fix) = &self.fix {
            line.push_str(" — fix: ");
            line.push_str(fix);
        }
        line
    }
}

/// The whole report, as printed by `--json`.
#[derive(Debug, Serialize)]
struct Report {
    /// No required check failed.
    ok: bool,
    checks: Vec<Check>,
}

/// Run every check, print the report and return 0, or 1 when a required check failed.
pub fn doctor(global: &GlobalArgs, args: &DoctorArgs) -> Result<u8, Error> {
    let (config, mut checks) = load_config(global);
    let rt = super::runtime()?;
    let (service, op) = rt.block_on(async {
        let service = service::check(
            &super::target_for(global, config.as_ref(), Vec::new()),
            config.as_ref(),
        )
        .await;
        let policy = OpPolicy {
            configured: config.as_ref().and_then(|c| c.user.op_path.clone()),
            agent_writable: config
                .iter()
                .flat_map(|c| [c.workdir.clone(), c.project.clone()])
                .map(|path| crate::containment::WritableRoot::new(path, "the project directory"))
                .chain(crate::podman::local_running_roots(None).await)
                .collect(),
        };
        (service, op::check(OpEnv::inherit(), &policy).await)
    });
    super::finish(rt);
    checks.extend(service.checks);
    checks.extend(host::check(config.as_ref(), service.rootless));
    checks.push(op);
    let report = Report {
        ok: !checks.iter().any(|c| c.status == Status::Fail),
        checks,
    };
    let text = if args.json {
        serde_json::to_string_pretty(&report).expect("the report always serializes") + "\n"
    } else {
        report.checks.iter().map(|c| c.render() + "\n").collect()
    };
    std::io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .map_err(Error::Output)?;
    Ok(if report.ok { 0 } else { EXIT_CHECK_FAILED })
}

/// Load the configuration as a launch in the current directory would, without asking about
/// overlay trust.
fn load_config(global: &GlobalArgs) -> (Option<Config>, Vec<Check>) {
    let opts = LoadOptions {
        config: global.config.clone(),
        no_repo_config: global.no_repo_config,
        workdir: None,
        ask_overlay_trust: false,
    };
    match config::load(&opts) {
        Ok(cfg) => {
            let source = match &cfg.primary {
                Some(p) => p.display().to_string(),
                None => "built-in defaults (no config file)".into(),
            };
            let mut checks = vec![Check::ok("config", format!("{source}; image {}", cfg.image))];
            checks.extend(
                cfg.warnings
                    .iter()
                    .map(|w| Check::warn("config", w.clone(), "see docs/configuration.md")),
            );
            (Some(cfg), checks)
        }
        Err(e) => {
            let fix = "correct the file named above (docs/configuration.md), or pass --config PATH";
            let check = Check::fail("config", e.to_string(), fix);
            (None, vec![check])
        }
    }
}

/// The short explanation of a failed connection: each socket tried and why.
pub(crate) fn no_service_detail(e: &podman::PodmanError) -> (String, String) {
    match e {
        podman::PodmanError::NoService { tried, hint } => {
            let list: Vec<String> = tried
                .iter()
                .map(|t| format!("{} (from {}): {}", t.url, t.source, t.reason))
                .collect();
            let hint = hint.strip_prefix("To fix: ").unwrap_or(hint);
            let mut fix = hint.to_owned();
            if host_is_cgroup_v1() {
                fix.push_str(V1_NOTE);
            }
            (
                format!("no Podman API service answered; tried {}", list.join(", ")),
                fix,
            )
        }
        other => (
            other.to_string(),
            "pass --url unix:///path/to/podman.sock or tcp://host:port".to_owned(),
        ),
    }
}

/// Why a Podman 6 service may not answer here (docs/podman5.md, "Podman 6").
const V1_NOTE: &str = "; this host uses cgroup v1, on which Podman 6 and later do not start at all (\"Cgroups v1 not supported\" in the service's log): use Podman 5, or boot with cgroup v2 (`systemd.unified_cgroup_hierarchy=1`)";

/// Whether this machine mounts cgroup v1 at /sys/fs/cgroup.
pub(super) fn host_is_cgroup_v1() -> bool {
    nix::sys::statfs::statfs("/sys/fs/cgroup")
        .is_ok_and(|s| s.filesystem_type() != nix::sys::statfs::CGROUP2_SUPER_MAGIC)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_carry_status_and_fix() {
        let c = Check::fail("image", "x is not present", "run `ags image build`");
        assert_eq!(
            c.render(),
            "FAIL image           x is not present — fix: run `ags image build`"
        );
        assert_eq!(Check::ok("socket", "fine").render(), "ok   socket          fine");
        let json = serde_json::to_value(Check::warn("op", "missing", "install it")).unwrap();
        assert_eq!(json["status"], "warn");
        assert_eq!(json["fix"], "install it");
        assert!(
            serde_json::to_value(Check::ok("a", "b"))
                .unwrap()
                .get("fix")
                .is_none()
        );
    }

    #[test]
    fn no_service_names_each_socket_and_the_start_command() {
        let e = podman::PodmanError::NoService {
            tried: vec![podman::Tried {
                url: "unix:///nonexistent.sock".into(),
                source: "--url".into(),
                reason: "the socket does not exist".into(),
            }],
            hint: "To fix: start it with `podman system service`".into(),
        };
        let (detail, fix) = no_service_detail(&e);
        assert!(detail.contains("unix:///nonexistent.sock (from --url): the socket does not exist"));
        let note = if host_is_cgroup_v1() { V1_NOTE } else { "" };
        assert_eq!(fix, format!("start it with `podman system service`{note}"));
    }
}
