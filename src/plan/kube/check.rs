//! What the Kubernetes export checks before anything runs: the `--workspace-from-git` source,
//! the names and labels Kubernetes accepts, and the network modes a Pod can express. Pure.

use super::KubeError;
use crate::config::Network;

/// `--workspace-from-git URL[@REF]`, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitSource {
    /// What `git clone` is given.
    pub url: String,
    /// What is checked out after the clone (branch, tag or commit); the remote's default
    /// branch when absent.
    pub reference: Option<String>,
}

impl GitSource {
    /// Parse `URL[@REF]`. REF is what follows the last `@` of the URL's path part (after the
    /// host of `scheme://host/…`, after the `:` of `user@host:path`), so the user of an SSH
    /// URL is never taken for a ref. Refused: empty parts, whitespace and control characters,
    /// a URL or REF starting with `-` (it would be read as an option), and a password in the
    /// URL (the URL is printed in the Pod for anyone who can read pods).
    pub fn parse(arg: &str) -> Result<Self, KubeError> {
        let bad = |rule| KubeError::GitSource {
            arg: arg.to_string(),
            rule,
        };
        if arg.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(bad("no whitespace or control characters"));
        }
        let path_start = match arg.find("://") {
            Some(i) => {
                let rest = &arg[i + 3..];
                let authority = &rest[..rest.find('/').unwrap_or(rest.len())];
                if authority
                    .rfind('@')
                    .is_some_and(|at| authority[..at].contains(':'))
                {
                    return Err(bad(
                        "a password in the URL would be printed in the Pod; use a URL that needs none",
                    ));
                }
                i + 3 + authority.len()
            }
            None => match arg.find(':') {
                Some(colon) if !arg[..colon].contains('/') => colon + 1,
                _ => 0,
            },
        };
        let (url, reference) = match arg[path_start..].rfind('@') {
            Some(at) => (&arg[..path_start + at], Some(&arg[path_start + at + 1..])),
            None => (arg, None),
        };
        if url.is_empty() || url.starts_with('-') {
            return Err(bad("the URL must be given and must not start with '-'"));
        }
        if let Some(r) = reference {
            let ok = r.chars().all(|c| c.is_ascii_alphanumeric() || "._/-".contains(c));
            if r.is_empty() || r.starts_with(['-', '/']) || !ok || r.contains("..") {
                return Err(bad(
                    "REF after '@' is a branch, tag or commit: letters, digits, '.', '_', '/', '-', not starting with '-' or '/'",
                ));
            }
        }
        Ok(Self {
            url: url.to_string(),
            reference: reference.map(str::to_string),
        })
    }
}

/// The network modes a Pod can carry: `open` as is, `none` as a deny-all NetworkPolicy; the
/// allowlist proxy lives in the `ags` process, and a clone needs the network.
pub fn check_network(mode: Network, origin: &str, git: bool) -> Result<(), KubeError> {
    match mode {
        Network::Allowlist => Err(KubeError::Allowlist {
            origin: origin.to_string(),
        }),
        Network::None if git => Err(KubeError::CloneWithoutNetwork),
        _ => Ok(()),
    }
}

/// A Pod name: a DNS label (RFC 1123), at most 63 characters.
pub fn check_pod_name(name: &str) -> Result<(), KubeError> {
    match is_dns_label(name) {
        true => Ok(()),
        false => Err(KubeError::PodName { name: name.into() }),
    }
}

fn is_dns_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// A label name or value: at most 63 of `[A-Za-z0-9_.-]`, alphanumeric at both ends.
fn is_label_word(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter().all(|c| c.is_ascii_alphanumeric() || b"_.-".contains(c))
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
}

/// A label key (`[prefix/]name`, the prefix a DNS subdomain) and value (empty or a label
/// word), as Kubernetes accepts them.
pub fn check_label(key: &str, value: &str) -> Result<(), KubeError> {
    let bad = |rule| KubeError::Label {
        label: format!("{key}={value}"),
        rule,
    };
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    let prefix_ok = prefix.is_none_or(|p| p.len() <= 253 && p.split('.').all(is_dns_label));
    if !prefix_ok || !is_label_word(name) {
        return Err(bad(
            "a Kubernetes label key is [DNS-PREFIX/]NAME, NAME at most 63 letters, digits, '_', '.', '-'",
        ));
    }
    if !value.is_empty() && !is_label_word(value) {
        return Err(bad(
            "a Kubernetes label value is at most 63 letters, digits, '_', '.', '-', alphanumeric at both ends",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(arg: &str) -> (String, Option<String>) {
        let g = GitSource::parse(arg).unwrap_or_else(|e| panic!("{arg}: {e}"));
        (g.url, g.reference)
    }

    #[test]
    fn a_ref_is_what_follows_the_last_at_of_the_path() {
        let cases = [
            ("https://example.com/r.git", "https://example.com/r.git", None),
            (
                "https://example.com/r.git@v1.2",
                "https://example.com/r.git",
                Some("v1.2"),
            ),
            (
                "https://git@example.com/r.git",
                "https://git@example.com/r.git",
                None,
            ),
            (
                "https://example.com/r@feature/x",
                "https://example.com/r",
                Some("feature/x"),
            ),
            ("git@example.com:org/r.git", "git@example.com:org/r.git", None),
            (
                "git@example.com:org/r.git@main",
                "git@example.com:org/r.git",
                Some("main"),
            ),
            (
                "ssh://git@example.com:22/r@0a1b2c",
                "ssh://git@example.com:22/r",
                Some("0a1b2c"),
            ),
            ("/srv/git/r.git@main", "/srv/git/r.git", Some("main")),
        ];
        for (arg, url, reference) in cases {
            assert_eq!(
                parsed(arg),
                (url.to_string(), reference.map(String::from)),
                "{arg}"
            );
        }
    }

    #[test]
    fn options_passwords_and_odd_refs_are_refused() {
        for arg in [
            "",
            "-uhttps://x/r",
            "https://u:secret@example.com/r",
            "https://example.com/r@",
            "https://example.com/r@-b",
            "https://example.com/r@a..b",
            "https://example.com/r@a b",
            "https://example.com/r@$(id)",
            "https://example.com/r\n",
        ] {
            let e = GitSource::parse(arg).expect_err(arg).to_string();
            assert!(e.contains("--workspace-from-git"), "{e}");
        }
    }

    #[test]
    fn kubernetes_names_and_labels() {
        assert!(check_pod_name("ags-project-0a1b2c3d").is_ok());
        for bad in ["Ags", "a_b", "a.b", "-a", "a-", &"a".repeat(64)] {
            assert!(check_pod_name(bad).is_err(), "{bad}");
        }
        assert!(check_label("io.ags.test", "r1-2").is_ok());
        assert!(check_label("example.com/team", "").is_ok());
        assert!(check_label("team", "a b").is_err());
        assert!(check_label("io.ags.project", "/home/u/p").is_err());
        assert!(check_label("Bad_Prefix/x", "1").is_err());
    }

    #[test]
    fn networks_a_pod_can_carry() {
        assert!(check_network(Network::Open, "default", true).is_ok());
        assert!(check_network(Network::None, "cli", false).is_ok());
        assert!(matches!(
            check_network(Network::None, "cli", true),
            Err(KubeError::CloneWithoutNetwork)
        ));
        let e = check_network(Network::Allowlist, "project config", false).unwrap_err();
        assert!(e.to_string().contains("project config"), "{e}");
    }
}
