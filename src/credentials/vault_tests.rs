use super::*;

fn vault(values: &[(&str, &str)]) -> (Vault, Staged) {
    let map: BTreeMap<&str, &str> = values.iter().copied().collect();
    let declared = model::built_in();
    Vault::take(&[], &declared, &map, (&[], &[])).unwrap()
}

#[test]
fn placeholders_keep_only_a_known_prefix_and_are_random() {
    let a = placeholder_for("sk-ant-api03-0123456789abcdef");
    assert!(
        a.starts_with("sk-ant-api03-") && a.len() >= "sk-ant-api03-".len() + 32,
        "{a}"
    );
    assert_ne!(a, placeholder_for("sk-ant-api03-0123456789abcdef"));
    let uuid = placeholder_for("123e4567-e89b-12d3-a456-426614174000");
    assert!(!uuid.contains("123e4567") && !uuid.contains('-'), "{uuid}");
    assert_eq!(uuid.len(), 36);
}

#[test]
fn the_real_value_goes_only_into_the_declared_header_of_its_hosts() {
    let (v, staged) = vault(&[("ANTHROPIC_API_KEY", "sk-ant-api03-REAL"), ("PATH", "/bin")]);
    let ph = &staged.placeholders["ANTHROPIC_API_KEY"];
    assert_eq!(staged.placeholders.len(), 1);
    assert!(staged.bundle_pem.ends_with(&staged.ca_pem));
    assert!(v.terminates("api.anthropic.com", 443) && !v.terminates("api.openai.com", 443));
    let (real, env) = v.rewrite("api.anthropic.com", 443, "X-Api-Key", ph).unwrap();
    assert_eq!((real.as_str(), env), ("sk-ant-api03-REAL", "ANTHROPIC_API_KEY"));
    assert!(
        v.rewrite("api.anthropic.com", 443, "authorization", &format!("Bearer {ph}"))
            .is_none()
    );
    assert!(v.rewrite("evil.example", 443, "x-api-key", ph).is_none());
    assert_eq!(
        v.tripwire("evil.example", 443, &format!("/?k={ph}")),
        Some("ANTHROPIC_API_KEY")
    );
    assert_eq!(v.tripwire("api.anthropic.com", 443, ph), None);
    use base64::Engine as _;
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("u:{ph}"))
    );
    assert_eq!(v.tripwire("evil.example", 443, &basic), Some("ANTHROPIC_API_KEY"));
    assert_eq!(
        v.mask("echo sk-ant-api03-REAL").as_deref(),
        Some(format!("echo {ph}").as_str())
    );
}

#[test]
fn plain_http_heads_get_a_key_only_where_declared_and_trip_elsewhere() {
    let map: BTreeMap<&str, &str> = [("GW_KEY", "gw-REAL"), ("TLS_KEY", "tls-REAL")]
        .into_iter()
        .collect();
    let files = [("GW_KEY", true), ("TLS_KEY", false)].map(|(env, plain)| model::CredentialFile {
        env: env.into(),
        hosts: vec!["gw.lan:4000".into()],
        plain_http: Some(plain),
        ..Default::default()
    });
    let declared = model::resolve(&files).unwrap();
    let (v, staged) = Vault::take(&[], &declared, &map, (&[], &[])).unwrap();
    let (gw, tls) = (&staged.placeholders["GW_KEY"], &staged.placeholders["TLS_KEY"]);
    let head = format!("GET / HTTP/1.1\r\nAuthorization: Bearer {gw}\r\nX-T: {tls}\r\n\r\n");
    let out = v.http_head("gw.lan", 4000, head.as_bytes()).unwrap();
    let text = String::from_utf8(out.head.to_vec()).unwrap();
    assert!(
        text.contains("Authorization: Bearer gw-REAL\r\n") && text.contains(tls.as_str()),
        "{text}"
    );
    assert_eq!(out.envs, ["GW_KEY"]);
    let tls_only = format!("GET / HTTP/1.1\r\nAuthorization: Bearer {tls}\r\n\r\n");
    let out = v.http_head("gw.lan", 4000, tls_only.as_bytes()).unwrap();
    assert!(out.envs.is_empty() && !String::from_utf8_lossy(&out.head).contains("tls-REAL"));
    let Err(trip) = v.http_head("other.lan", 80, head.as_bytes()) else {
        panic!("a placeholder to another host passed");
    };
    assert_eq!(trip.place, "header authorization");
}
