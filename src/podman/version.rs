//! `ServerVersion`: which Podman answers, and what `ags` knows about that version.
//!
//! Part of stage 4 (`podman`); no I/O. The client records the version once per client, from the
//! `Libpod-Api-Version` header of the ping (Podman 4 and 5 both send it) or, failing that, from
//! `GET /libpod/version`. Behaviour that differs between the Podman versions `ags` is tested with
//! (4.3 on Debian 12, 5.4 on Debian 13) is described here and in [`super::PodmanError`]'s
//! predicates, so that no later stage compares version numbers or error texts.

use std::fmt;

/// A Podman version: `4.3.1`, `5.4.2` (a suffix such as `-dev` or `-rc1` is ignored).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServerVersion {
    /// The major version (4, 5).
    pub major: u32,
    /// The minor version.
    pub minor: u32,
    /// The patch level (0 when the text had none).
    pub patch: u32,
}

/// The oldest major version `ags` is tested with.
const OLDEST_TESTED_MAJOR: u32 = 4;

impl ServerVersion {
    /// Parse `MAJOR.MINOR[.PATCH][-SUFFIX]`; `None` for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        let core = text.trim().split(['-', '+', '~']).next()?;
        let mut parts = core.split('.');
        let mut number = |required: bool| match parts.next() {
            Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => p.parse().ok(),
            None if !required => Some(0),
            _ => None,
        };
        let version = ServerVersion {
            major: number(true)?,
            minor: number(true)?,
            patch: number(false)?,
        };
        parts.next().is_none().then_some(version)
    }

    /// True for the versions `ags` is tested with (4.x and 5.x) and later ones; `ags doctor`
    /// warns about older ones.
    pub fn is_tested(self) -> bool {
        self.major >= OLDEST_TESTED_MAJOR
    }

    /// True when a rootful service accepts a `keep-id` create (Podman 4.5 and later, with an
    /// identity mapping); 4.3 refuses it with "keep-id is only supported in rootless mode".
    /// `ags` asks for keep-id only from rootless services.
    pub fn accepts_rootful_keep_id(self) -> bool {
        (self.major, self.minor) >= (4, 5)
    }

    /// True when a rootless `keep-id` create can fail spuriously under concurrency with
    /// [`super::PodmanError::is_keep_id_subuid_failure`]: Podman 4's check of the subordinate id
    /// ranges (read through libsubid, which is not thread-safe). Podman 5 no longer has that check.
    pub fn has_keep_id_subuid_check(self) -> bool {
        self.major < 5
    }

    /// True when a named volume can be mounted by a sub path (`subpath`, the libpod spec's
    /// `NamedVolume.SubPath`), a single file of it included: how hook-generated files reach a
    /// remote service (docs/remote.md). `ags` uses it from Podman 5 on, where it is tested
    /// (5.4.2); Podman 4 is refused for generated files on a remote service.
    pub fn mounts_volume_subpaths(self) -> bool {
        self.major >= 5
    }

    /// True when the create body's `group_entry` is honoured (Podman 4.5 and later); 4.3 and 4.4
    /// ignore the field, so a spelled-out `keep-id` ([`super::spell_out_keep_id`]) gets Podman's
    /// numeric group entry there instead of the named one.
    pub fn honours_group_entry(self) -> bool {
        (self.major, self.minor) >= (4, 5)
    }
}

impl fmt::Display for ServerVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(major: u32, minor: u32, patch: u32) -> ServerVersion {
        ServerVersion { major, minor, patch }
    }

    #[test]
    fn parses_what_podman_reports() {
        // The ping header and /version of Debian 12's and Debian 13's Podman.
        assert_eq!(ServerVersion::parse("4.3.1"), Some(v(4, 3, 1)));
        assert_eq!(ServerVersion::parse("5.4.2"), Some(v(5, 4, 2)));
        assert_eq!(ServerVersion::parse("5.5.0-dev"), Some(v(5, 5, 0)));
        assert_eq!(ServerVersion::parse("5.0.0-rc1"), Some(v(5, 0, 0)));
        assert_eq!(ServerVersion::parse(" 4.9 "), Some(v(4, 9, 0)));
        assert_eq!(v(4, 3, 1).to_string(), "4.3.1");
    }

    #[test]
    fn refuses_other_text() {
        for text in ["", "4", "v4.3.1", "4.x", "4.3.1.2", "4..1", "four"] {
            assert_eq!(ServerVersion::parse(text), None, "{text:?}");
        }
        // "1.41" is the Docker API version a ping also carries; it parses, and is not tested.
        assert!(!ServerVersion::parse("1.41").unwrap().is_tested());
    }

    #[test]
    fn version_differences() {
        assert!(v(4, 3, 1).is_tested() && v(5, 4, 2).is_tested() && !v(3, 4, 4).is_tested());
        assert!(!v(4, 3, 1).accepts_rootful_keep_id());
        assert!(v(4, 5, 0).accepts_rootful_keep_id() && v(5, 4, 2).accepts_rootful_keep_id());
        assert!(v(4, 3, 1).has_keep_id_subuid_check() && !v(5, 4, 2).has_keep_id_subuid_check());
        assert!(!v(4, 9, 4).mounts_volume_subpaths() && v(5, 0, 0).mounts_volume_subpaths());
        assert!(!v(4, 3, 1).honours_group_entry() && !v(4, 4, 2).honours_group_entry());
        assert!(v(4, 5, 0).honours_group_entry() && v(5, 4, 2).honours_group_entry());
        assert!(v(4, 3, 1) < v(4, 10, 0) && v(4, 10, 0) < v(5, 0, 0));
    }
}
