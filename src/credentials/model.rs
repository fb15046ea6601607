//! Credentials as declared values (issue 25, docs/credentials.md): a variable name, the hosts
//! the value is for and how it is sent (a header and a scheme). The built-in table of the
//! agents' provider keys, the global config's `[[credential]]` entries (which replace a
//! built-in of the same name), and the one rule both the plain-HTTP path and the TLS path of
//! the proxy apply to a header value ([`Credential::rewrite`]). Pure data and rules.

use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use crate::egress::model::{AllowEntry, Target};

/// How the real value reaches its hosts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Delivery {
    /// The container gets a placeholder; the host proxy puts the real value into requests to
    /// the credential's hosts.
    Proxy,
    /// The container gets the real value (opted out, or a remote service).
    Env,
}

/// How the value is written in its header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase", tag = "kind", content = "word")]
pub enum Scheme {
    /// The header value is the credential itself (`x-api-key: VALUE`).
    Raw,
    /// A word, a space, then the credential (`Authorization: Bearer VALUE`).
    Word(String),
    /// `Authorization: Basic base64(user:VALUE)`: the credential is the password (git over
    /// HTTPS with a token).
    Basic,
}

/// One declared credential.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Credential {
    /// The variable holding it.
    pub env: String,
    /// The hosts it is for (allowlist syntax; a bare name means ports 443 and 80).
    pub hosts: Vec<AllowEntry>,
    /// The header it is sent in (lowercase).
    pub header: String,
    /// How it is written there.
    pub scheme: Scheme,
    /// How it reaches them.
    pub delivery: Delivery,
    /// Whether the proxy also puts it into plain-HTTP requests (a gateway without TLS): only
    /// when declared so, or when an `http://` base URL names the host. Otherwise only a
    /// verified TLS connection gets it.
    pub plain_http: bool,
    /// The variable whose URL, when the launch sets it from a trusted source, replaces
    /// `hosts` (`ANTHROPIC_BASE_URL`: the key is for the gateway the agent is pointed at).
    #[serde(skip)]
    pub base_url: Option<&'static str>,
    /// `built-in` or `config`.
    pub origin: &'static str,
}

/// One credential of the launch, as `ags plan --json` shows it (never a value).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanCredential {
    /// The variable.
    pub env: String,
    /// The hosts the real value is sent to.
    pub hosts: Vec<String>,
    /// The header and scheme.
    pub header: String,
    /// How it is delivered.
    pub delivery: Delivery,
    /// `built-in`, `config`, or `base-url` (the hosts come from the agent's base-URL variable).
    pub origin: String,
    /// Why the value goes into the container, when it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The declaration with the effective hosts (for the proxy).
    #[serde(skip)]
    pub rule: Credential,
}

/// `[[credential]]` as written in the global config.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CredentialFile {
    /// The variable name.
    pub env: String,
    /// Hosts the value is for.
    pub hosts: Vec<String>,
    /// Header name (default `authorization`).
    pub header: Option<String>,
    /// `Bearer` (default for `authorization`), another word, `Basic`, or `""` for the bare value.
    pub scheme: Option<String>,
    /// `proxy` (default) or `env`.
    pub delivery: Option<Delivery>,
    /// Also over plain HTTP, unverified (default false).
    pub plain_http: Option<bool>,
}

/// The agents' provider keys: (variable, host, header, scheme word, base-URL variable).
#[rustfmt::skip]
const BUILT_IN: &[(&str, &str, &str, &str, &str)] = &[
    ("ANTHROPIC_API_KEY", "api.anthropic.com:443", "x-api-key", "", "ANTHROPIC_BASE_URL"),
    ("ANTHROPIC_AUTH_TOKEN", "api.anthropic.com:443", "authorization", "Bearer", "ANTHROPIC_BASE_URL"),
    ("OPENAI_API_KEY", "api.openai.com:443", "authorization", "Bearer", "OPENAI_BASE_URL"),
    ("GEMINI_API_KEY", "generativelanguage.googleapis.com:443", "x-goog-api-key", "", "GOOGLE_GEMINI_BASE_URL"),
    ("GOOGLE_API_KEY", "generativelanguage.googleapis.com:443", "x-goog-api-key", "", "GOOGLE_GEMINI_BASE_URL"),
];

/// The built-in declarations (every agent's provider keys; any agent may run another's CLI).
pub fn built_in() -> Vec<Credential> {
    BUILT_IN
        .iter()
        .map(|(env, host, header, word, base)| Credential {
            env: (*env).into(),
            hosts: vec![AllowEntry::parse(host).expect("built-in credential host")],
            header: (*header).into(),
            scheme: scheme_of(word),
            delivery: Delivery::Proxy,
            plain_http: false,
            base_url: Some(base),
            origin: "built-in",
        })
        .collect()
}

fn scheme_of(word: &str) -> Scheme {
    match word {
        "" => Scheme::Raw,
        w if w.eq_ignore_ascii_case("basic") => Scheme::Basic,
        w => Scheme::Word(w.into()),
    }
}

/// The effective declarations: the built-ins, each replaced by a `[[credential]]` of the same
/// variable, then the others. Errors name the field (`credential[N].FIELD`) and the rule.
pub fn resolve(files: &[CredentialFile]) -> Result<Vec<Credential>, (String, String)> {
    let mut out = built_in();
    for (i, f) in files.iter().enumerate() {
        let field = |name: &str| format!("credential[{i}].{name}");
        let c = parse(f).map_err(|(name, msg)| (field(name), msg))?;
        if files[..i].iter().any(|o| o.env == f.env) {
            return Err((field("env"), format!("{} is declared twice", f.env)));
        }
        match out.iter_mut().find(|b| b.env == c.env) {
            Some(b) => *b = c,
            None => out.push(c),
        }
    }
    Ok(out)
}

fn parse(f: &CredentialFile) -> Result<Credential, (&'static str, String)> {
    let mut bytes = f.env.bytes();
    let name_ok = matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if !name_ok {
        return Err((
            "env",
            "must be a variable name matching [A-Za-z_][A-Za-z0-9_]*".into(),
        ));
    }
    if f.hosts.is_empty() {
        return Err(("hosts", "must name at least one host the value is for".into()));
    }
    let hosts = f
        .hosts
        .iter()
        .map(|h| {
            let entry = AllowEntry::parse(h).map_err(|e| ("hosts", format!("{h:?}: {e}")))?;
            if entry.request.is_some() {
                return Err((
                    "hosts",
                    format!("{h:?}: a credential is for hosts (HOST[:PORT]), not for a method or a path"),
                ));
            }
            match entry.target {
                Target::Net { addr, prefix } if prefix != full_prefix(addr) => Err((
                    "hosts",
                    format!("{h:?}: a credential is for named hosts or single addresses, not a network"),
                )),
                _ => Ok(entry),
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    let header = f
        .header
        .as_deref()
        .unwrap_or("authorization")
        .to_ascii_lowercase();
    if header.is_empty() || !header.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        return Err(("header", "must be a header name (letters, digits, '-')".into()));
    }
    let word = f
        .scheme
        .as_deref()
        .unwrap_or(if header == "authorization" { "Bearer" } else { "" });
    if !word.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        return Err(("scheme", "must be one word (Bearer, token, Basic) or \"\"".into()));
    }
    Ok(Credential {
        env: f.env.clone(),
        hosts,
        header,
        scheme: scheme_of(word),
        delivery: f.delivery.unwrap_or(Delivery::Proxy),
        plain_http: f.plain_http.unwrap_or(false),
        base_url: None,
        origin: "config",
    })
}

fn full_prefix(addr: std::net::IpAddr) -> u8 {
    if addr.is_ipv4() { 32 } else { 128 }
}

impl Credential {
    /// Whether a request to `host` (a name, or an IP literal as text) on `port` may carry it.
    pub fn is_for(&self, host: &str, port: u16) -> bool {
        match host.trim_matches(['[', ']']).parse::<std::net::IpAddr>() {
            Ok(ip) => self.hosts.iter().any(|e| e.allows_addr(ip, port)),
            Err(_) => self.hosts.iter().any(|e| e.allows_name(host, port)),
        }
    }

    /// The value of its header with `placeholder` replaced by `real`, when the header is
    /// written in the declared scheme and carries the placeholder; `None` otherwise (the
    /// header then goes on as it is).
    pub fn rewrite(&self, value: &str, placeholder: &str, real: &str) -> Option<String> {
        match &self.scheme {
            Scheme::Raw => (value.trim() == placeholder).then(|| real.to_string()),
            Scheme::Word(w) => {
                let (word, rest) = value.trim().split_once(' ')?;
                (word.eq_ignore_ascii_case(w) && rest.trim() == placeholder).then(|| format!("{w} {real}"))
            }
            Scheme::Basic => {
                use base64::Engine as _;
                let text = basic_payload(value)?;
                let (user, password) = text.split_once(':')?;
                let joined = Zeroizing::new(format!("{user}:{real}"));
                let b64 = base64::engine::general_purpose::STANDARD;
                (password == placeholder).then(|| format!("Basic {}", b64.encode(joined.as_bytes())))
            }
        }
    }

    /// The hosts as written (for the plan).
    pub fn host_entries(&self) -> Vec<String> {
        self.hosts.iter().map(|e| e.entry.clone()).collect()
    }
}

/// The decoded `user:password` of `Basic BASE64`, when `text` is one (zeroed on drop).
pub(crate) fn basic_payload(text: &str) -> Option<Zeroizing<String>> {
    use base64::Engine as _;
    let (word, rest) = text.trim().split_once(' ')?;
    if !word.eq_ignore_ascii_case("basic") {
        return None;
    }
    let b64 = base64::engine::general_purpose::STANDARD;
    let decoded = Zeroizing::new(b64.decode(rest.trim()).ok()?);
    std::str::from_utf8(&decoded)
        .ok()
        .map(|t| Zeroizing::new(t.to_owned()))
}

#[cfg(test)]
#[path = "model_tests.rs"]
mod tests;
