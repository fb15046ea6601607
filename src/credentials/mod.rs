//! Secrets stay on the host (issue 25, docs/credentials.md): a declared credential reaches the
//! container only as a per-launch placeholder; the egress proxy, on the host, puts the real
//! value into the declared header of requests to the credential's hosts, after it has
//! connected to the real host and verified its certificate, and refuses (a tripwire) a
//! request carrying a placeholder anywhere else.
//!
//! [`model`] holds the declarations and the header rule, [`plan`] what the plan shows,
//! [`Vault`] the real values and placeholders of one launch (in memory only, zeroed on drop),
//! `tls` the launch's CA and the verified upstream configuration, `relay` the terminating
//! relay the proxy hands a `CONNECT` to a credential host to.

pub mod model;
pub mod plan;
mod relay;
mod tls;

use std::collections::BTreeMap;
use std::path::PathBuf;

use zeroize::Zeroizing;

use crate::egress::model::AllowEntry;
use model::{Credential, Delivery, basic_payload};
pub use relay::{Inner, Outcome, RequestCheck, terminate};

/// Errors making a launch's credentials ready.
#[derive(Debug, thiserror::Error)]
pub enum CredentialError {
    /// The CA could not be made.
    #[error("credentials: cannot make the launch's CA: {0}")]
    Authority(String),
    /// The host's trust store or an `[image] ca_certs` file is unusable.
    #[error(
        "credentials: cannot load the CA certificates the proxy verifies hosts with ({what}): {why}; check the file, or remove it from [image] ca_certs"
    )]
    Roots { what: String, why: String },
}

/// One credential of a launch: its rule, placeholder and real value.
struct Entry {
    rule: Credential,
    placeholder: String,
    real: Zeroizing<String>,
}

/// The credentials of one launch that go through the proxy.
pub struct Vault {
    entries: Vec<Entry>,
    authority: tls::Authority,
    upstream: std::sync::Arc<rustls::ClientConfig>,
}

impl std::fmt::Debug for Vault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.entries.iter().map(|e| e.rule.env.as_str()).collect();
        f.debug_struct("Vault")
            .field("credentials", &names)
            .finish_non_exhaustive()
    }
}

/// What the launch stages for its credentials.
pub struct Staged {
    /// Placeholder by variable: the env file gets these instead of the real values.
    pub placeholders: BTreeMap<String, String>,
    /// The CA certificate (PEM) and the trust bundle for the container.
    pub ca_pem: String,
    /// This host's CAs, the extra ones and the launch's CA.
    pub bundle_pem: String,
}

impl Vault {
    /// Take the proxied credentials out of `values` (the launch's effective environment):
    /// `creds` from the plan, then any `declared` one only `--op-secret-set` brought. Makes the
    /// placeholders and the launch's CA (allowed to name none but the credentials' hosts and
    /// `inspected`, the destinations of method and path rules; with neither, none at all).
    /// `extra_cas`: `[image] ca_certs`.
    pub fn take(
        creds: &[plan::PlanCredential],
        declared: &[Credential],
        values: &BTreeMap<&str, &str>,
        (inspected, extra_cas): (&[AllowEntry], &[PathBuf]),
    ) -> Result<(Self, Staged), CredentialError> {
        let mut rules: Vec<Credential> = creds.iter().map(|c| c.rule.clone()).collect();
        for d in declared {
            if !rules.iter().any(|r| r.env == d.env) && values.contains_key(d.env.as_str()) {
                rules.push(d.clone());
            }
        }
        let entries: Vec<Entry> = rules
            .into_iter()
            .filter(|r| r.delivery == Delivery::Proxy)
            .filter_map(|rule| {
                let real = Zeroizing::new(values.get(rule.env.as_str())?.to_string());
                let placeholder = placeholder_for(&real);
                Some(Entry {
                    rule,
                    placeholder,
                    real,
                })
            })
            .collect();
        let hosts: Vec<&AllowEntry> = entries
            .iter()
            .flat_map(|e| e.rule.hosts.iter())
            .chain(inspected)
            .collect();
        let authority = tls::Authority::new(&hosts)?;
        let (upstream, host_pems) = tls::upstream(extra_cas)?;
        let ca_pem = authority.ca_pem();
        let staged = Staged {
            placeholders: entries
                .iter()
                .map(|e| (e.rule.env.clone(), e.placeholder.clone()))
                .collect(),
            bundle_pem: format!("{host_pems}{ca_pem}"),
            ca_pem,
        };
        Ok((
            Self {
                entries,
                authority,
                upstream,
            },
            staged,
        ))
    }

    /// Whether the proxy terminates a `CONNECT` to `host:port` (a credential is for it).
    pub fn terminates(&self, host: &str, port: u16) -> bool {
        self.entries.iter().any(|e| e.rule.is_for(host, port))
    }

    /// The variable of a placeholder that `text` (a request line or header value going to
    /// `host:port`) carries although its credential is not for that host: a tripwire.
    pub fn tripwire(&self, host: &str, port: u16, text: &str) -> Option<&str> {
        let decoded = basic_payload(text);
        self.entries
            .iter()
            .find(|e| {
                !e.rule.is_for(host, port)
                    && (text.contains(&e.placeholder)
                        || decoded.as_deref().is_some_and(|d| d.contains(&e.placeholder)))
            })
            .map(|e| e.rule.env.as_str())
    }

    /// The header `name: value` of a request to `host:port` with a placeholder replaced by
    /// its real value, and the variable, when a credential for that host declares this header
    /// and the value carries its placeholder in the declared scheme.
    pub fn rewrite(
        &self,
        host: &str,
        port: u16,
        name: &str,
        value: &str,
    ) -> Option<(Zeroizing<String>, &str)> {
        self.rewrite_if(host, port, name, value, |_| true)
    }

    /// [`Self::rewrite`] on plain HTTP: only the credentials declared for it (`plain_http`).
    pub fn rewrite_plain(
        &self,
        host: &str,
        port: u16,
        name: &str,
        value: &str,
    ) -> Option<(Zeroizing<String>, &str)> {
        self.rewrite_if(host, port, name, value, |c| c.plain_http)
    }

    /// Whether a credential for `host:port` may go over plain HTTP: a tunnel there may carry it.
    pub fn plain_http(&self, host: &str, port: u16) -> bool {
        self.entries
            .iter()
            .any(|e| e.rule.plain_http && e.rule.is_for(host, port))
    }

    /// [`Self::rewrite`] for the credentials `allowed` accepts.
    fn rewrite_if(
        &self,
        host: &str,
        port: u16,
        name: &str,
        value: &str,
        allowed: impl Fn(&Credential) -> bool,
    ) -> Option<(Zeroizing<String>, &str)> {
        self.entries.iter().find_map(|e| {
            (allowed(&e.rule) && e.rule.is_for(host, port) && e.rule.header.eq_ignore_ascii_case(name))
                .then(|| e.rule.rewrite(value, &e.placeholder, &e.real))
                .flatten()
                .map(|v| (Zeroizing::new(v), e.rule.env.as_str()))
        })
    }

    /// A real value of this launch appearing in `text` (a response header): replaced by its
    /// placeholder, so a host that echoes the request back does not hand the value inside.
    pub fn mask(&self, text: &str) -> Option<String> {
        let mut out: Option<String> = None;
        for e in &self.entries {
            let current = out.as_deref().unwrap_or(text);
            if current.contains(e.real.as_str()) {
                out = Some(current.replace(e.real.as_str(), &e.placeholder));
            }
        }
        out
    }

    /// A plain-HTTP request head going to `host:port`, with the declared headers of the
    /// credentials for that host declared for plain HTTP (`plain_http`) substituted, and the
    /// variables substituted; or, when a line
    /// carries the placeholder of a credential not for that host, that variable and where (a
    /// tripwire).
    pub fn http_head(&self, host: &str, port: u16, head: &[u8]) -> Result<Substituted, Tripwire> {
        let text = String::from_utf8_lossy(head);
        let mut out = Zeroizing::new(Vec::with_capacity(head.len()));
        let mut done = Vec::new();
        for (i, line) in text.split_inclusive("\r\n").enumerate() {
            let bare = line.trim_end_matches("\r\n");
            let header = (i > 0).then(|| bare.split_once(':')).flatten();
            let (where_, value) = match header {
                Some((name, value)) => (
                    format!("header {}", name.trim().to_ascii_lowercase()),
                    value.trim(),
                ),
                None => ("request line".to_string(), bare),
            };
            if let Some(env) = self.tripwire(host, port, value) {
                return Err(Tripwire {
                    env: env.to_string(),
                    place: where_,
                });
            }
            match header.and_then(|(name, value)| {
                Some((
                    name,
                    self.rewrite_if(host, port, name.trim(), value.trim(), |c| c.plain_http)?,
                ))
            }) {
                Some((name, (real, env))) => {
                    for part in [name.trim(), ": ", real.as_str(), "\r\n"] {
                        out.extend_from_slice(part.as_bytes());
                    }
                    done.push(env.to_string());
                }
                None => out.extend_from_slice(line.as_bytes()),
            }
        }
        Ok(Substituted {
            head: out,
            envs: done,
        })
    }
}

/// A plain-HTTP head with the credentials of its host put in.
pub struct Substituted {
    /// The head to send on.
    pub head: Zeroizing<Vec<u8>>,
    /// The variables put in.
    pub envs: Vec<String>,
}

/// A placeholder seen going to a host its credential is not for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tripwire {
    /// The credential's variable.
    pub env: String,
    /// Where in the request (`request line`, `header NAME`).
    pub place: String,
}

/// Public prefixes of well-known key formats, kept in a placeholder so a client that checks
/// the shape accepts it. Nothing else of the real value is kept: a prefix guessed from
/// separators could be part of the secret (a UUID).
const KNOWN_PREFIXES: &[&str] = &[
    "sk-ant-api03-",
    "sk-ant-oat01-",
    "sk-proj-",
    "sk-",
    "github_pat_",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "glpat-",
    "xoxb-",
    "xoxp-",
    "AIza",
];

/// A placeholder of the real value's shape: its known public prefix, then random letters and
/// digits for the rest of its length, at least 32 (190 bits).
fn placeholder_for(real: &str) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let prefix = KNOWN_PREFIXES
        .iter()
        .find(|p| real.starts_with(**p))
        .copied()
        .unwrap_or("");
    let want = real
        .chars()
        .count()
        .saturating_sub(prefix.chars().count())
        .max(32);
    let mut out = String::with_capacity(prefix.len() + want);
    out.push_str(prefix);
    let mut bytes = vec![0u8; want * 2];
    while out.len() < prefix.len() + want {
        getrandom::fill(&mut bytes).expect("the system random source");
        // Rejection sampling: 248 is the largest multiple of 62 below 256.
        out.extend(
            bytes
                .iter()
                .filter(|b| **b < 248)
                .map(|b| ALPHABET[(*b % 62) as usize] as char)
                .take(prefix.len() + want - out.len()),
        );
    }
    out
}

#[cfg(test)]
#[path = "vault_tests.rs"]
mod tests;
