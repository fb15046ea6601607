//! Reading `[network]` from the global config and a trusted overlay into the effective
//! settings: the overlay only narrows (a stricter mode, a subset of the list, more deny
//! entries, agent hosts off, never `host_loopback`), and each entry keeps its file and line.

use toml::Spanned;

use super::{AllowEntry, EgressOrigin, EgressSettings, MAX_HOST_PORTS, Network, NetworkFile, Rule};

/// A field error: (key, message).
pub type FieldError = (String, String);

/// One file's `[network]` (and the old `[sandbox] network`), parsed.
struct Parsed {
    mode: Option<Network>,
    allow: Option<Vec<(AllowEntry, Option<String>)>>,
    deny: Vec<(AllowEntry, Option<String>)>,
    agent_hosts: Option<bool>,
    host_loopback: Option<Vec<u16>>,
}

fn parse_file(file: Option<&NetworkFile>, sandbox_network: Option<&str>) -> Result<Parsed, FieldError> {
    let err = |k: &str, m: String| (k.to_string(), m);
    let f = file.cloned().unwrap_or_default();
    if f.mode.is_some() && sandbox_network.is_some() {
        return Err(err(
            "network.mode",
            "also set as [sandbox] network; keep only [network] mode".into(),
        ));
    }
    let mode = match (f.mode.as_deref(), sandbox_network) {
        (Some(m), _) => Some(Network::parse(m).filter(|_| m != "default").ok_or_else(|| {
            err(
                "network.mode",
                format!("{m:?}: must be \"open\", \"allowlist\" or \"none\""),
            )
        })?),
        (None, Some(m)) => Some(Network::parse(m).ok_or_else(|| {
            err(
                "sandbox.network",
                format!("{m:?}: must be \"default\" (or \"open\"), \"allowlist\" or \"none\""),
            )
        })?),
        (None, None) => None,
    };
    let entries = |key: &str, list: Option<Vec<Spanned<String>>>| {
        list.map(|list| {
            list.iter()
                .enumerate()
                .map(|(i, raw)| {
                    let at = f.source.as_ref().map(|s| s.at(raw.span().start));
                    let raw = raw.get_ref();
                    AllowEntry::parse(raw)
                        .map(|e| (e, at))
                        .map_err(|m| err(&format!("network.{key}[{i}]"), format!("{raw:?}: {m}")))
                })
                .collect::<Result<Vec<_>, _>>()
        })
        .transpose()
    };
    let allow = entries("allow", f.allow.clone())?;
    let deny = entries("deny", f.deny.clone())?.unwrap_or_default();
    if let Some(ports) = &f.host_loopback
        && (ports.len() > MAX_HOST_PORTS || ports.contains(&0))
    {
        return Err(err(
            "network.host_loopback",
            format!("{ports:?}: must list at most {MAX_HOST_PORTS} ports from 1 to 65535"),
        ));
    }
    Ok(Parsed {
        mode,
        allow,
        deny,
        agent_hosts: f.agent_hosts,
        host_loopback: f.host_loopback,
    })
}

/// Combine the global `[network]` with a trusted overlay's. Returns the mode and the settings;
/// errors name the key and whether it was the overlay (`Err((true, …))`) that broke a rule.
pub fn resolve(
    global: (Option<&NetworkFile>, Option<&str>),
    overlay: Option<&NetworkFile>,
) -> Result<(Network, EgressSettings), (bool, FieldError)> {
    let g = parse_file(global.0, global.1).map_err(|e| (false, e))?;
    let o = parse_file(overlay, None).map_err(|e| (true, e))?;
    let mut settings = EgressSettings::default();
    let mut mode = Network::Open;
    if let Some(m) = g.mode {
        mode = m;
        settings.mode_origin = EgressOrigin::Config;
    }
    let g_allow = g.allow.unwrap_or_default();
    let narrow = |key: &str, msg: String| (true, (key.to_string(), msg));
    if let Some(m) = o.mode {
        if m < mode {
            return Err(narrow(
                "network.mode",
                format!(
                    "a project overlay may only narrow the network; the global config says \"{mode}\", the overlay \"{m}\""
                ),
            ));
        }
        if m > mode {
            settings.mode_origin = EgressOrigin::ProjectConfig;
        }
        mode = m;
        settings.floor = Some(m);
    }
    let rule = |origin: EgressOrigin| {
        move |(entry, at)| Rule {
            entry,
            origin: origin.clone(),
            at,
        }
    };
    settings.allow = g_allow.iter().cloned().map(rule(EgressOrigin::Config)).collect();
    if let Some(list) = o.allow {
        let restricted = !g_allow.is_empty() || g.mode == Some(Network::Allowlist);
        for (i, (entry, _)) in list.iter().enumerate() {
            if restricted && !g_allow.iter().any(|(e, _)| e == entry || covers(e, entry)) {
                return Err(narrow(
                    &format!("network.allow[{i}]"),
                    format!(
                        "{}: a project overlay may not add destinations to the global allowlist; add it to the global config",
                        entry.entry
                    ),
                ));
            }
        }
        settings.allow = list.into_iter().map(rule(EgressOrigin::ProjectConfig)).collect();
    }
    settings.agent_hosts = g.agent_hosts.unwrap_or(true);
    if let Some(a) = o.agent_hosts {
        if a && !settings.agent_hosts {
            return Err(narrow(
                "network.agent_hosts",
                "a project overlay may not turn agent hosts back on".into(),
            ));
        }
        settings.agent_hosts = a;
    }
    if o.host_loopback.is_some() {
        return Err(narrow(
            "network.host_loopback",
            "a project overlay may not open ports of the host's loopback; set it in the global config".into(),
        ));
    }
    settings.host_loopback = g.host_loopback.unwrap_or_default();
    settings.deny = (g.deny.into_iter().map(rule(EgressOrigin::Config)))
        .chain(o.deny.into_iter().map(rule(EgressOrigin::ProjectConfig)))
        .collect();
    Ok((mode, settings))
}

/// Whether the global entry `g` admits everything the overlay's method and path rule `o`
/// names: the same destination, wholesale, on each of its ports.
fn covers(g: &AllowEntry, o: &AllowEntry) -> bool {
    g.request.is_none()
        && o.request.is_some()
        && g.target == o.target
        && o.ports.iter().all(|p| g.ports.contains(p))
}
