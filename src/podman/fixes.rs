//! Upstream security fixes of Podman and runc that concern what `ags` does with them (builds the
//! agent image, plays its Kubernetes export, loads images, runs the agent's container), and which
//! of them a service's versions lack (`ags doctor`, docs/doctor.md).
//!
//! The versions are upstream's. A distribution may carry a fix in an older version (Debian's
//! `+debNuM` revisions do): the API shows the upstream version of Podman and the package of the
//! runtime, so a lacking fix is a reason to look, not a proof.

use super::ServerVersion;

/// What a fix is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Component {
    /// The Podman service.
    Podman,
    /// The runc OCI runtime.
    Runc,
}

/// One upstream security fix.
#[derive(Debug, Clone, Copy)]
pub struct KnownFix {
    /// What the fix is in.
    pub component: Component,
    /// Its CVE.
    pub cve: &'static str,
    /// What it concerns, in `ags`'s words.
    pub concerns: &'static str,
    /// The first fixed release of each release line that has one (ascending). A version is
    /// fixed from the entry of its own `major.minor` line on, and from the last entry on.
    pub fixed: &'static [(u32, u32, u32)],
}

/// The fixes `ags doctor` knows about (from the projects' release notes).
pub const KNOWN_FIXES: &[KnownFix] = &[
    KnownFix {
        component: Component::Podman,
        cve: "CVE-2024-1753",
        concerns: "a Containerfile's build step could write to the host's / (`ags image build`)",
        fixed: &[(4, 9, 4), (5, 0, 1)],
    },
    KnownFix {
        component: Component::Podman,
        cve: "CVE-2024-9675",
        concerns: "`RUN --mount=type=cache` could reach the host's files (`ags image build`)",
        fixed: &[(5, 2, 5)],
    },
    KnownFix {
        component: Component::Podman,
        cve: "CVE-2025-9566",
        concerns: "a played Kubernetes Secret volume could overwrite host files through a symlink (`ags plan --format kube` played with `podman kube play`)",
        fixed: &[(5, 6, 1)],
    },
    KnownFix {
        component: Component::Podman,
        cve: "CVE-2025-11395",
        concerns: "a crafted image archive loaded into the store could create files on the host (`podman load` of an agent image)",
        fixed: &[(5, 8, 9), (6, 1, 2)],
    },
    KnownFix {
        component: Component::Runc,
        cve: "CVE-2024-21626",
        concerns: "a container could reach the host's file system through a leaked descriptor",
        fixed: &[(1, 1, 12)],
    },
    KnownFix {
        component: Component::Runc,
        cve: "CVE-2025-52881",
        concerns: "a container could redirect runc's writes to /proc and escape (with CVE-2025-31133 and CVE-2025-52565)",
        fixed: &[(1, 2, 8), (1, 3, 3), (1, 4, 0)],
    },
];

impl KnownFix {
    /// Whether `version` of this fix's component has it (upstream).
    pub fn is_fixed_in(&self, version: ServerVersion) -> bool {
        let v = (version.major, version.minor, version.patch);
        let last = self.fixed.last().is_some_and(|&last| v >= last);
        last || self
            .fixed
            .iter()
            .any(|&(major, minor, patch)| (major, minor) == (v.0, v.1) && v.2 >= patch)
    }

    /// The fixed versions, as text (`4.9.4, 5.0.1`).
    pub fn fixed_text(&self) -> String {
        let versions: Vec<String> = self
            .fixed
            .iter()
            .map(|(a, b, c)| format!("{a}.{b}.{c}"))
            .collect();
        versions.join(", ")
    }
}

/// The version of an OCI runtime from the first line of its `--version` (as in
/// `host.ociRuntime.version`): `runc version 1.1.5+ds1` is 1.1.5.
pub fn runtime_version(text: &str) -> Option<ServerVersion> {
    let first = text.lines().next()?;
    ServerVersion::parse(first.rsplit(' ').next()?)
}

/// The fixes that `podman` (the service's version) and `runc` (its runtime's version, when the
/// runtime is runc) lack upstream.
pub fn missing(podman: Option<ServerVersion>, runc: Option<ServerVersion>) -> Vec<&'static KnownFix> {
    KNOWN_FIXES
        .iter()
        .filter(|fix| {
            let version = match fix.component {
                Component::Podman => podman,
                Component::Runc => runc,
            };
            version.is_some_and(|v| !fix.is_fixed_in(v))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> Option<ServerVersion> {
        ServerVersion::parse(text)
    }

    fn cves(podman: &str, runc: &str) -> Vec<&'static str> {
        missing(v(podman), runtime_version(runc))
            .iter()
            .map(|f| f.cve)
            .collect()
    }

    #[test]
    fn the_versions_of_these_machines_lack_what_upstream_fixed_later() {
        // Debian 12 (4.3.1, runc 1.1.5), trixie (5.4.2), sid (5.8.6), experimental (6.1.1).
        let runc = "runc version 1.1.5+ds1\ncommit: 1.1.5+ds1-1+deb12u1";
        assert_eq!(
            cves("4.3.1", runc),
            [
                "CVE-2024-1753",
                "CVE-2024-9675",
                "CVE-2025-9566",
                "CVE-2025-11395",
                "CVE-2024-21626",
                "CVE-2025-52881"
            ]
        );
        assert_eq!(
            cves("5.4.2", "runc version 1.2.5"),
            ["CVE-2025-9566", "CVE-2025-11395", "CVE-2025-52881"]
        );
        assert_eq!(cves("5.8.6", "runc version 1.3.6"), ["CVE-2025-11395"]);
        assert_eq!(cves("6.1.1", "runc version 1.4.0"), ["CVE-2025-11395"]);
        assert!(cves("6.1.2", "runc version 1.3.3").is_empty());
        assert!(cves("5.8.9", "runc version 1.2.8").is_empty());
    }

    #[test]
    fn a_release_line_is_fixed_from_its_own_entry_on() {
        let fix = KNOWN_FIXES.iter().find(|f| f.cve == "CVE-2024-1753").unwrap();
        assert!(fix.is_fixed_in(v("4.9.4").unwrap()));
        assert!(!fix.is_fixed_in(v("4.9.3").unwrap()));
        assert!(!fix.is_fixed_in(v("5.0.0").unwrap()));
        assert!(fix.is_fixed_in(v("5.0.1").unwrap()));
        assert!(fix.is_fixed_in(v("6.0.0").unwrap()));
        assert_eq!(fix.fixed_text(), "4.9.4, 5.0.1");
    }

    #[test]
    fn an_unknown_version_lacks_nothing_it_cannot_tell() {
        assert!(missing(None, None).is_empty());
        assert_eq!(runtime_version("crun version 1.21"), v("1.21"));
        assert_eq!(runtime_version(""), None);
    }
}
