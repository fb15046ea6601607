use super::*;

fn file(toml_text: &str) -> Vec<CredentialFile> {
    #[derive(Deserialize)]
    struct F {
        credential: Vec<CredentialFile>,
    }
    toml::from_str::<F>(toml_text).unwrap().credential
}

#[test]
fn a_config_entry_replaces_the_built_in_of_its_variable() {
    let all = resolve(&file(
        "[[credential]]\nenv = \"OPENAI_API_KEY\"\nhosts = [\"gw.example:8443\"]\n[[credential]]\nenv = \"GH_TOKEN\"\nhosts = [\"api.github.com\"]\nscheme = \"token\"\n",
    ))
    .unwrap();
    let openai = all.iter().find(|c| c.env == "OPENAI_API_KEY").unwrap();
    assert_eq!(openai.host_entries(), ["gw.example:8443"]);
    assert_eq!(openai.origin, "config");
    let gh = all.iter().find(|c| c.env == "GH_TOKEN").unwrap();
    assert_eq!(
        (gh.header.as_str(), &gh.scheme),
        ("authorization", &Scheme::Word("token".into()))
    );
    assert!(gh.is_for("api.github.com", 443) && gh.is_for("api.github.com", 80));
    assert!(!gh.is_for("github.com", 443) && !gh.is_for("api.github.com", 8443));
    assert_eq!(all.iter().filter(|c| c.env == "OPENAI_API_KEY").count(), 1);
}

#[test]
fn bad_entries_name_the_field_and_the_rule() {
    let err = |t: &str| resolve(&file(t)).unwrap_err();
    assert_eq!(
        err("[[credential]]\nenv = \"A-B\"\nhosts = [\"x.example\"]\n").0,
        "credential[0].env"
    );
    assert_eq!(
        err("[[credential]]\nenv = \"A\"\nhosts = []\n").0,
        "credential[0].hosts"
    );
    let net = err("[[credential]]\nenv = \"A\"\nhosts = [\"10.0.0.0/8\"]\n");
    assert!(net.1.contains("not a network"), "{net:?}");
    assert_eq!(
        err("[[credential]]\nenv = \"A\"\nhosts = [\"x\"]\nheader = \"a b\"\n").0,
        "credential[0].header"
    );
    let twice =
        err("[[credential]]\nenv = \"A\"\nhosts = [\"x\"]\n[[credential]]\nenv = \"A\"\nhosts = [\"y\"]\n");
    assert_eq!(twice.0, "credential[1].env");
    assert!(toml::from_str::<toml::Value>("x = 1").is_ok());
}

#[test]
fn only_the_declared_header_shape_is_rewritten() {
    let all = built_in();
    let key = all.iter().find(|c| c.env == "ANTHROPIC_API_KEY").unwrap();
    assert_eq!(key.rewrite("ph", "ph", "real").as_deref(), Some("real"));
    assert_eq!(key.rewrite("xph", "ph", "real"), None);
    let token = all.iter().find(|c| c.env == "ANTHROPIC_AUTH_TOKEN").unwrap();
    assert_eq!(
        token.rewrite("bearer ph", "ph", "real").as_deref(),
        Some("Bearer real")
    );
    assert_eq!(token.rewrite("Basic ph", "ph", "real"), None);
    let basic = Credential {
        scheme: Scheme::Basic,
        ..token.clone()
    };
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    let sent = format!("Basic {}", b64.encode("x-access-token:ph"));
    let out = basic.rewrite(&sent, "ph", "real").unwrap();
    assert_eq!(out, format!("Basic {}", b64.encode("x-access-token:real")));
    assert_eq!(
        basic.rewrite(&format!("Basic {}", b64.encode("u:other")), "ph", "real"),
        None
    );
}
