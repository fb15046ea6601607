//! The credentials part of the plan (issue 25): which of the launch's variables are declared
//! credentials, the hosts each is for and how it is delivered; and, when any goes through the
//! proxy, the variables that make the container's clients trust the launch's own CA (a file
//! `ags` stages owned by root). Pure: the placeholders and the CA are made at launch
//! (`credentials::Vault`).

use std::path::PathBuf;

pub use super::model::PlanCredential;
use super::model::{Credential, Delivery};
use crate::egress::model::AllowEntry;
use crate::plan::types::{EnvSource, Origin, PlanEnv, RootFile, STAGED_ROOT_DIR, STAGING_MOUNT};

/// The CA certificate's file name in the staging volume's root directory.
pub const CA_FILE: &str = "ags-ca.pem";
/// The trust bundle (this host's CAs, `[image] ca_certs`, the launch's CA).
pub const BUNDLE_FILE: &str = "ags-ca-bundle.pem";

/// Variables pointing clients at the bundle (OpenSSL, curl, git, Python, codex) and Node's
/// extra CA file (claude, gemini, pi, opencode): ags's own while a credential goes through
/// the proxy.
pub const CA_ENV: [(&str, &str); 6] = [
    ("SSL_CERT_FILE", BUNDLE_FILE),
    ("CURL_CA_BUNDLE", BUNDLE_FILE),
    ("GIT_SSL_CAINFO", BUNDLE_FILE),
    ("REQUESTS_CA_BUNDLE", BUNDLE_FILE),
    ("CODEX_CA_CERTIFICATE", BUNDLE_FILE),
    ("NODE_EXTRA_CA_CERTS", CA_FILE),
];

/// The launch's credentials: each declared variable the environment sets (a staged literal or
/// a 1Password reference). `elsewhere`: the container is not this machine's (a remote service,
/// an exported Pod), so no proxy of this host can reach it, and values go in as they are.
pub fn plan(declared: &[Credential], env: &[PlanEnv], elsewhere: bool) -> Vec<PlanCredential> {
    let mut out = Vec::new();
    for d in declared {
        let Some(e) = env.iter().find(|e| e.key == d.env) else {
            continue;
        };
        if matches!(e.source, EnvSource::Plain { .. }) {
            continue;
        }
        let mut rule = d.clone();
        let mut origin = d.origin.to_string();
        if let Some((hosts, http)) = d.base_url.and_then(|var| base_url_host(env, var)) {
            rule.hosts = vec![hosts];
            rule.plain_http = http;
            origin = "base-url".into();
        }
        let note = match (rule.delivery, elsewhere) {
            (Delivery::Env, _) => Some("delivery = \"env\" in the global config".to_string()),
            (Delivery::Proxy, true) => {
                rule.delivery = Delivery::Env;
                Some("the container is not on this host (remote service or exported Pod): no proxy of this host reaches it".to_string())
            }
            (Delivery::Proxy, false) => None,
        };
        out.push(PlanCredential {
            env: d.env.clone(),
            hosts: rule.host_entries(),
            header: match &rule.scheme {
                super::model::Scheme::Raw => rule.header.clone(),
                super::model::Scheme::Word(w) => format!("{}: {w}", rule.header),
                super::model::Scheme::Basic => format!("{}: Basic", rule.header),
            },
            delivery: rule.delivery,
            origin,
            note,
            rule,
        });
    }
    out
}

/// Whether any credential goes through the proxy.
pub fn any_proxied(creds: &[PlanCredential]) -> bool {
    creds.iter().any(|c| c.delivery == Delivery::Proxy)
}

/// The host of `var`'s URL when the launch sets it from a source the agent cannot write (the
/// command line, the global config, a global hook): the key is for that endpoint; and whether
/// the URL is `http://`.
fn base_url_host(env: &[PlanEnv], var: &str) -> Option<(AllowEntry, bool)> {
    let e = env.iter().find(|e| e.key == var)?;
    if !matches!(e.origin, Origin::Cli | Origin::Config | Origin::GlobalHook(_)) {
        return None;
    }
    let url = match &e.source {
        EnvSource::Plain { value } => value.as_str(),
        EnvSource::Staged { value } => value.expose(),
        EnvSource::OpRef { .. } => return None,
    };
    let (scheme, rest) = url.split_once("://")?;
    let default = match scheme.to_ascii_lowercase().as_str() {
        "https" => 443,
        "http" => 80,
        _ => return None,
    };
    let authority = rest.split(['/', '?', '#']).next()?;
    let with_port = match authority.rsplit_once(':') {
        Some((_, p)) if !p.contains(']') => authority.to_string(),
        _ => format!("{authority}:{default}"),
    };
    let entry = AllowEntry::parse(&with_port)
        .ok()
        .filter(|e| e.request.is_none())?;
    Some((entry, default == 80))
}

/// The CA variables (plain values: paths in the staging volume), replacing any other value.
pub fn ca_env() -> Vec<PlanEnv> {
    CA_ENV
        .iter()
        .map(|(key, file)| PlanEnv {
            key: (*key).into(),
            source: EnvSource::Plain {
                value: staged_path(file).display().to_string(),
            },
            origin: Origin::Default,
        })
        .collect()
}

/// Where a root file of the staging volume lies in the container.
pub fn staged_path(file: &str) -> PathBuf {
    PathBuf::from(STAGING_MOUNT).join(STAGED_ROOT_DIR).join(file)
}

/// The root files the launch stages, given their contents (made at launch).
pub fn root_files(ca: &str, bundle: &str) -> Vec<RootFile> {
    [(CA_FILE, ca), (BUNDLE_FILE, bundle)]
        .into_iter()
        .map(|(name, content)| RootFile {
            destination: staged_path(name),
            content: content.into(),
            bytes: content.len(),
            origin: Origin::Default,
        })
        .collect()
}
