//! Doctor checks of the service's versions: the upstream security fixes its Podman and runc
//! lack (`podman::fixes`), and a rootless network that Podman 6 no longer has.

use super::Check;
use crate::podman::{self, Info, fixes};

/// The security fixes this service's Podman and runtime lack upstream.
pub(super) fn fixes_check(info: &Info) -> Check {
    let podman = podman::ServerVersion::parse(&info.version.version);
    let runtime = &info.host.oci_runtime;
    let runc = (runtime.name == "runc")
        .then(|| fixes::runtime_version(&runtime.version))
        .flatten();
    let missing = fixes::missing(podman, runc);
    let runc_text = runc.map_or(String::new(), |v| format!(", runc {v}"));
    let versions = format!("Podman {}{runc_text}", info.version.version);
    if missing.is_empty() {
        return Check::ok("fixes", format!("{versions}: no known security fix missing"));
    }
    let list: Vec<String> = missing
        .iter()
        .map(|fix| {
            let what = match fix.component {
                fixes::Component::Podman => "Podman",
                fixes::Component::Runc => "runc",
            };
            format!("{} ({what} {}: {})", fix.cve, fix.fixed_text(), fix.concerns)
        })
        .collect();
    let package = if runtime.package.is_empty() {
        String::new()
    } else {
        format!(" (the runtime is the package {})", runtime.package)
    };
    Check::warn(
        "fixes",
        format!(
            "{versions} predate(s) these upstream security fixes{package}: {}",
            list.join("; ")
        ),
        "upgrade Podman and runc to a release with the fixes; a distribution may have backported a fix without changing the version (Debian and Ubuntu: `apt changelog podman runc | grep CVE-…`; docs/doctor.md)",
    )
}

/// Podman 5 and later default to pasta for rootless containers; a service configured for
/// slirp4netns is warned: Podman 6 removed it.
pub(super) fn network_check(info: &Info) -> Option<Check> {
    let version = podman::ServerVersion::parse(&info.version.version)?;
    if !info.host.security.rootless || version.major < 5 {
        return None;
    }
    let cmd = info.host.rootless_network_cmd.as_deref().unwrap_or("");
    if cmd == "slirp4netns" {
        return Some(Check::warn(
            "network",
            format!(
                "Podman {version} is set to slirp4netns for rootless containers where pasta is its default; Podman 6 removed slirp4netns"
            ),
            "remove `default_rootless_network_cmd = \"slirp4netns\"` from containers.conf (~/.config/containers/containers.conf or /etc/containers/containers.conf*) and install passt",
        ));
    }
    Some(Check::ok(
        "network",
        format!("rootless containers get {cmd} by default"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::doctor::Status;

    fn info(version: &str, runtime: &str, rootless: bool, net: Option<&str>) -> Info {
        let mut i = Info::default();
        i.version.version = version.into();
        i.host.oci_runtime.name = "runc".into();
        i.host.oci_runtime.version = format!("runc version {runtime}\ncommit: x");
        i.host.security.rootless = rootless;
        i.host.rootless_network_cmd = net.map(str::to_owned);
        i
    }

    #[test]
    fn a_service_lacking_fixes_is_warned_with_each_cve() {
        let c = fixes_check(&info("5.4.2", "1.2.5", false, None));
        assert_eq!(c.status, Status::Warn);
        assert!(
            c.detail.starts_with("Podman 5.4.2, runc 1.2.5 predate"),
            "{}",
            c.detail
        );
        for cve in ["CVE-2025-9566", "CVE-2025-11395", "CVE-2025-52881"] {
            assert!(c.detail.contains(cve), "{}", c.detail);
        }
        assert!(!c.detail.contains("CVE-2024-1753"), "{}", c.detail);
        let c = fixes_check(&info("6.1.2", "1.3.3", false, None));
        assert_eq!(c.status, Status::Ok, "{}", c.detail);
    }

    #[test]
    fn slirp4netns_where_pasta_is_the_default_is_warned() {
        let c = network_check(&info("5.8.6", "1.3.6", true, Some("slirp4netns"))).unwrap();
        assert_eq!(c.status, Status::Warn);
        assert!(c.fix.unwrap().contains("default_rootless_network_cmd"));
        let c = network_check(&info("5.8.6", "1.3.6", true, Some("pasta"))).unwrap();
        assert_eq!(c.status, Status::Ok);
        assert!(network_check(&info("4.3.1", "1.1.5", true, None)).is_none());
        assert!(network_check(&info("5.8.6", "1.3.6", false, None)).is_none());
    }
}
