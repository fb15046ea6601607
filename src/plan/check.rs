//! Checks of the launch's command-line values, run before anything else happens (before the
//! first hook is spawned, before `op`, before Podman is asked): agent name (with a suggestion),
//! `--label`, `--name`, `--publish` and the image reference's syntax (`--env` is `host_env`'s).
//! Pure; no I/O.

use std::net::IpAddr;

use super::PlanError;
use super::types::{LABEL_LAUNCH_ID, LABEL_MANAGED, PortMapping, Protocol};
use crate::agents::{self, AgentProfile};

/// The profile of `name`, or an error that suggests the nearest known name.
pub fn find_agent(name: &str) -> Result<&'static AgentProfile, PlanError> {
    agents::find(name).ok_or_else(|| PlanError::UnknownAgent {
        name: name.to_string(),
        suggestion: suggest(name)
            .map(|s| format!("did you mean {s:?}? "))
            .unwrap_or_default(),
        known: agents::names(),
    })
}

/// The known agent closest to `name`: one edit away (two for names of 5 letters or more), or
/// starting with `name` (at least 2 letters).
fn suggest(name: &str) -> Option<&'static str> {
    let lower = name.to_ascii_lowercase();
    agents::AGENTS
        .iter()
        .map(|a| (distance(&lower, a.name), a.name))
        .filter(|(d, n)| {
            *d <= 1 || (*d <= 2 && lower.len() >= 5) || (lower.len() >= 2 && n.starts_with(&lower))
        })
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
}

/// Levenshtein distance (the names are short ASCII words).
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Split and check one `--label KEY=VALUE` (`io.ags.*` ownership keys are reserved).
pub fn parse_label(arg: &str) -> Result<(&str, &str), PlanError> {
    let bad = |rule| PlanError::BadLabel {
        arg: arg.to_string(),
        rule,
    };
    let (k, v) = arg.split_once('=').ok_or_else(|| bad("use KEY=VALUE"))?;
    if k.is_empty() || k == LABEL_MANAGED || k.starts_with("io.ags.owner") || k == LABEL_LAUNCH_ID {
        return Err(bad("this key is reserved for ags"));
    }
    if arg.contains(['\n', '\r', '\0']) {
        return Err(bad("labels must be a single line without NUL"));
    }
    Ok((k, v))
}

/// A container name as Podman accepts it: `[a-zA-Z0-9][a-zA-Z0-9_.-]*`.
pub fn check_name(name: &str) -> Result<(), PlanError> {
    let mut chars = name.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
        && name.len() <= 253;
    if ok {
        Ok(())
    } else {
        Err(PlanError::BadName { name: name.into() })
    }
}

/// Parse `-p [[IP:]HOST_PORT:]CONTAINER_PORT[/tcp|udp]`. The host port is required: `ags`
/// does not pick a random one it would then have to report.
pub fn parse_publish(arg: &str) -> Result<PortMapping, PlanError> {
    let bad = |rule: &str| PlanError::BadPublish {
        arg: arg.into(),
        rule: rule.into(),
    };
    let (spec, protocol) = match arg.rsplit_once('/') {
        Some((s, "tcp")) => (s, Protocol::Tcp),
        Some((s, "udp")) => (s, Protocol::Udp),
        Some((_, p)) => return Err(bad(&format!("unknown protocol {p:?}; use tcp or udp"))),
        None => (arg, Protocol::Tcp),
    };
    let (host_ip, ports) = match spec.strip_prefix('[') {
        Some(rest) => {
            let (ip, ports) = rest
                .split_once("]:")
                .ok_or_else(|| bad("unclosed [IPv6] address"))?;
            (Some(ip), ports)
        }
        None => match spec.matches(':').count() {
            2 => spec
                .split_once(':')
                .map(|(ip, p)| (Some(ip), p))
                .unwrap_or((None, spec)),
            _ => (None, spec),
        },
    };
    let host_ip = match host_ip.filter(|ip| !ip.is_empty()) {
        Some(ip) => Some(
            ip.parse::<IpAddr>()
                .map_err(|_| bad(&format!("{ip:?} is not an IP address")))?,
        ),
        None => None,
    };
    let (host, container) = ports
        .split_once(':')
        .ok_or_else(|| bad("give HOST_PORT:CONTAINER_PORT (ags does not choose a random host port)"))?;
    let port = |p: &str| {
        p.parse::<u16>().ok().filter(|n| *n > 0).ok_or_else(|| {
            bad(&format!(
                "{p:?} is not a port (1-65535; ranges are not supported)"
            ))
        })
    };
    Ok(PortMapping {
        host_ip,
        host_port: port(host)?,
        container_port: port(container)?,
        protocol,
    })
}

/// The syntax of an image reference: `[HOST[:PORT]/]PATH[:TAG][@ALGO:HEX]`, with lowercase
/// path components, or a bare image id. Existence is the Podman service's business.
pub fn check_image_ref(image: &str) -> Result<(), PlanError> {
    image_ref_problem(image).map_or(Ok(()), |rule| {
        Err(PlanError::BadImage {
            image: image.into(),
            rule,
        })
    })
}

fn image_ref_problem(image: &str) -> Option<&'static str> {
    if image.is_empty() || image.len() > 4096 {
        return Some("empty or too long");
    }
    if image.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Some("contains whitespace or control characters");
    }
    let (rest, digest) = match image.split_once('@') {
        Some((r, d)) => (r, Some(d)),
        None => (image, None),
    };
    if let Some(d) = digest {
        let ok = d.split_once(':').is_some_and(|(algo, hex)| {
            !algo.is_empty()
                && algo
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "+._-".contains(c))
                && hex.len() >= 32
                && hex.chars().all(|c| c.is_ascii_hexdigit())
        });
        if !ok {
            return Some("the digest after '@' must look like sha256:<hex>");
        }
    }
    // A tag is after the last ':' that follows the last '/'.
    let slash = rest.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match rest[slash..].rfind(':') {
        Some(i) => (&rest[..slash + i], Some(&rest[slash + i + 1..])),
        None => (rest, None),
    };
    if let Some(t) = tag {
        let mut cs = t.chars();
        let ok = cs.next().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
            && cs.all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
            && t.len() <= 128;
        if !ok {
            return Some("the tag must be [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}");
        }
    }
    let mut parts: Vec<&str> = name.split('/').collect();
    let first = parts[0];
    let has_domain = parts.len() > 1 && (first.contains(['.', ':']) || first == "localhost");
    if has_domain {
        let (host, port) = first.split_once(':').unwrap_or((first, ""));
        let host_ok = !host.is_empty()
            && host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || ".-".contains(c));
        if !host_ok || !(port.is_empty() || port.parse::<u16>().is_ok()) {
            return Some("the registry host must be HOST[:PORT]");
        }
        parts.remove(0);
    }
    let component_ok = |p: &&str| {
        !p.is_empty()
            && p.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
            && p.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
            && p.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._-".contains(c))
    };
    if !parts.iter().all(component_ok) {
        return Some(
            "repository path components are lowercase letters, digits and . _ - (not at either end)",
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_agent_suggests_the_nearest_name() {
        let err = find_agent("clade").unwrap_err().to_string();
        assert!(err.contains("did you mean \"claude\"?"), "{err}");
        assert!(err.contains("known agents: pi, claude"), "{err}");
        for (typo, want) in [
            ("codx", "codex"),
            ("Gemini", "gemini"),
            ("open", "opencode"),
            ("shel", "shell"),
        ] {
            assert_eq!(suggest(typo), Some(want), "{typo}");
        }
        assert_eq!(suggest("vim-with-plugins"), None);
        let err = find_agent("vim-with-plugins").unwrap_err().to_string();
        assert!(!err.contains("did you mean"), "{err}");
    }

    #[test]
    fn image_references() {
        for ok in [
            "localhost/ags-agent:latest",
            "docker.io/library/debian:trixie-slim",
            "registry:5000/a/b",
            "busybox",
            "quay.io/x/y@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "0123456789ab",
        ] {
            assert_eq!(image_ref_problem(ok), None, "{ok}");
        }
        for bad in [
            "",
            "Localhost/Agent",
            "localhost/ags agent",
            "localhost/x:",
            "localhost/x:-bad",
            "x@sha256:zz",
            "a//b",
            "host:99999/a",
            "-x",
        ] {
            assert!(image_ref_problem(bad).is_some(), "{bad:?}");
        }
    }

    #[test]
    fn publish_forms() {
        let p = parse_publish("1455:1455").unwrap();
        assert_eq!(
            (p.host_ip, p.host_port, p.container_port, p.protocol),
            (None, 1455, 1455, Protocol::Tcp)
        );
        let p = parse_publish("127.0.0.1:8080:80/udp").unwrap();
        assert_eq!(p.host_ip, Some("127.0.0.1".parse().unwrap()));
        assert_eq!(p.protocol, Protocol::Udp);
        let p = parse_publish("[::1]:8080:80").unwrap();
        assert_eq!(p.host_ip, Some("::1".parse().unwrap()));
        for bad in [
            "80",
            "0:80",
            "80:70000",
            "x:80:80",
            "80:80/sctp",
            "1000-1001:1000-1001",
            "[::1:80:80",
        ] {
            assert!(parse_publish(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn names_and_labels() {
        assert!(check_name("my-agent_1.x").is_ok());
        for bad in ["", "-x", "a b", "a/b", "ä"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        assert!(parse_label("a=b").is_ok());
        for bad in ["ab", "=x", "io.ags.managed=x", "io.ags.owner-pid=1", "a=b\nc"] {
            assert!(parse_label(bad).is_err(), "{bad:?}");
        }
    }
}
