//! TLS of the substituting proxy (docs/decisions/0010-credential-proxy.md): the launch's CA
//! (rcgen; an ECDSA P-256 key that lives in this process's memory only, name-constrained to
//! the credential hosts, valid for a week), the leaf certificate it makes per host on first
//! use, and the client configuration the proxy verifies the real hosts with (rustls with this
//! host's trust store and `[image] ca_certs`). No cryptography of `ags`'s own.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, GeneralSubtree, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    NameConstraints,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use super::CredentialError;
use crate::egress::model::{AllowEntry, Target};

/// The launch's certificate authority.
pub struct Authority {
    issuer: Issuer<'static, KeyPair>,
    ca_pem: String,
    leaves: Mutex<HashMap<String, Arc<rustls::ServerConfig>>>,
}

impl Authority {
    /// A new CA allowed to name only `hosts` (the credentials' hosts and those of method and
    /// path rules).
    pub fn new(hosts: &[&AllowEntry]) -> Result<Self, CredentialError> {
        let fail = |e: rcgen::Error| CredentialError::Authority(e.to_string());
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(fail)?;
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params
            .distinguished_name
            .push(DnType::CommonName, "ags launch CA");
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
        let now = SystemTime::now();
        params.not_before = (now - Duration::from_secs(3600)).into();
        params.not_after = (now + Duration::from_secs(7 * 24 * 3600)).into();
        params.name_constraints = Some(constraints(hosts));
        let key = KeyPair::generate().map_err(fail)?;
        let ca_pem = params.self_signed(&key).map_err(fail)?.pem();
        Ok(Self {
            issuer: Issuer::new(params, key),
            ca_pem,
            leaves: Mutex::new(HashMap::new()),
        })
    }

    /// The CA certificate, PEM.
    pub fn ca_pem(&self) -> String {
        self.ca_pem.clone()
    }

    /// The server configuration presenting a certificate for `host` (made once per host).
    pub fn server_config(&self, host: &str) -> Result<Arc<rustls::ServerConfig>, CredentialError> {
        let mut leaves = self.leaves.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = leaves.get(host) {
            return Ok(c.clone());
        }
        let fail = |e: String| CredentialError::Authority(format!("a certificate for {host}: {e}"));
        let mut params = CertificateParams::new(vec![host.to_string()]).map_err(|e| fail(e.to_string()))?;
        // Not the host: OpenSSL checks a common name that looks like a host name against the
        // CA's DNS constraints, which an IP address is not in.
        params
            .distinguished_name
            .push(DnType::CommonName, "ags launch certificate");
        // Python's default context (3.13) refuses a leaf without it.
        params.use_authority_key_identifier_extension = true;
        params.not_before = ::time::OffsetDateTime::from(SystemTime::now() - Duration::from_secs(3600));
        params.not_after = (SystemTime::now() + Duration::from_secs(7 * 24 * 3600)).into();
        let key = KeyPair::generate().map_err(|e| fail(e.to_string()))?;
        let cert = params
            .signed_by(&key, &self.issuer)
            .map_err(|e| fail(e.to_string()))?;
        let key_der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let mut config = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| fail(e.to_string()))?
            .with_no_client_auth()
            .with_single_cert(vec![cert.der().clone()], key_der)
            .map_err(|e| fail(e.to_string()))?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let config = Arc::new(config);
        leaves.insert(host.to_string(), config.clone());
        Ok(config)
    }
}

/// The names the CA may certify: the host names of `hosts` (a name covers the names below
/// it). With no host name, only the reserved name `invalid` (RFC 6761): an empty list would be
/// no constraint. Addresses are not constrained: some clients (claude's runtime) refuse every
/// certificate under a CA with an address constraint; the CA's key never leaves this process.
fn constraints(hosts: &[&AllowEntry]) -> NameConstraints {
    let mut names: Vec<GeneralSubtree> = hosts
        .iter()
        .filter_map(|h| match &h.target {
            Target::Host(n) | Target::Suffix(n) => Some(GeneralSubtree::DnsName(n.clone())),
            Target::Net { .. } => None,
        })
        .collect();
    if names.is_empty() {
        names.push(GeneralSubtree::DnsName("invalid".into()));
    }
    NameConstraints {
        permitted_subtrees: names,
        excluded_subtrees: Vec::new(),
    }
}

/// The crypto provider: ring, which builds with the C compiler alone (aws-lc-rs, rustls's
/// default, needs more of the build machine); it lacks post-quantum key exchange, which is
/// why rustls marks it deprecated (docs/decisions/0010-credential-proxy.md).
#[allow(deprecated)]
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The client configuration verifying the real hosts (this host's trust store, honouring
/// `SSL_CERT_FILE`/`SSL_CERT_DIR`, plus `extra`), and those CAs as PEM for the container's
/// bundle.
pub fn upstream(extra: &[PathBuf]) -> Result<(Arc<rustls::ClientConfig>, String), CredentialError> {
    let mut roots = rustls::RootCertStore::empty();
    let mut pem = String::new();
    let native = rustls_native_certs::load_native_certs();
    for cert in native.certs {
        if roots.add(cert.clone()).is_ok() {
            pem.push_str(&to_pem(&cert));
        }
    }
    for path in extra {
        let fail = |e: &dyn std::fmt::Display| CredentialError::Roots {
            what: path.display().to_string(),
            why: e.to_string(),
        };
        let certs = CertificateDer::pem_file_iter(path)
            .and_then(|i| i.collect::<Result<Vec<_>, _>>())
            .map_err(|e| fail(&e))?;
        for cert in certs {
            roots.add(cert.clone()).map_err(|e| fail(&e))?;
            pem.push_str(&to_pem(&cert));
        }
    }
    if roots.is_empty() {
        return Err(CredentialError::Roots {
            what: "this host's trust store".into(),
            why: "no CA certificate found (install ca-certificates, or set SSL_CERT_FILE)".into(),
        });
    }
    let mut config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| CredentialError::Authority(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok((Arc::new(config), pem))
}

fn to_pem(cert: &CertificateDer<'_>) -> String {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD.encode(cert.as_ref());
    let mut out = String::from("-----BEGIN CERTIFICATE-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).unwrap_or_default());
        out.push('\n');
    }
    out.push_str("-----END CERTIFICATE-----\n");
    out
}
