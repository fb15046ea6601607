use super::*;

fn parse(text: &str) -> Result<Vec<(String, String)>, HostEnvError> {
    parse_dotenv(".env", text)
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[test]
fn dotenv_syntax() {
    let text = "# comment\n\n  A=1\nexport B = two words  # note\nC='single # kept'  # c\r\n\
                D=\"dq \\\"x\\\" \\\\ $HOME\"\nE=\nF=a#b\nG='' \nA=last\n\texport\tH=h\n";
    assert_eq!(
        parse(text).unwrap(),
        pairs(&[
            ("B", "two words"),
            ("C", "single # kept"),
            ("D", "dq \"x\" \\ $HOME"),
            ("E", ""),
            ("F", "a#b"),
            ("G", ""),
            ("A", "last"),
            ("H", "h"),
        ])
    );
}

#[test]
fn dotenv_errors_name_line_and_rule_never_the_value() {
    let cases = [
        ("OK=1\nSECRETVALUE\n", 2, "bare KEY"),
        ("1X=SECRETVALUE", 1, "name must match"),
        ("X='SECRETVALUE", 1, "single quote is not closed"),
        ("X=\"SECRETVALUE", 1, "double quote is not closed"),
        ("X=\"SECRET\\nVALUE\"", 1, "only \\\\"),
        ("X='SECRET'VALUE", 1, "may follow a quoted value"),
        ("exportX", 1, "bare KEY"),
    ];
    for (text, line, rule) in cases {
        let err = parse(text).unwrap_err();
        let msg = err.to_string();
        assert!(
            matches!(err, HostEnvError::File { line: l, .. } if l == line),
            "{text:?}: {msg}"
        );
        assert!(msg.contains(rule), "{text:?}: {msg}");
        assert!(!msg.contains("SECRET"), "{text:?}: {msg}");
    }
}

fn lookup(key: &str) -> Option<OsString> {
    match key {
        "API_KEY" => Some("from-host".into()),
        "PATH" => Some("/usr/bin".into()),
        "MULTI" => Some("a\nSECRET".into()),
        "ANTHROPIC_BASE_URL" => Some("https://gateway.example/v1".into()),
        _ => None,
    }
}

fn input<'a>(
    env_args: &'a [String],
    env_files: &'a [(String, String)],
    passthrough: &'a [String],
    agent_env: &'a BTreeMap<String, String>,
) -> HostEnvInput<'a> {
    HostEnvInput {
        env_args,
        env_files,
        passthrough,
        agent_env,
        lookup: &lookup,
    }
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn exposed(list: &[(String, Secret)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(k, v)| (k.clone(), v.expose().to_string()))
        .collect()
}

fn cli_pairs(env: &HostEnv) -> Vec<(String, Secret)> {
    env.cli.iter().map(|(k, v, _)| (k.clone(), v.clone())).collect()
}

#[test]
fn env_file_variables_carry_their_file_as_origin() {
    let none = BTreeMap::new();
    let args = strings(&["X=1"]);
    let files = vec![("config/dev.env".to_string(), "Y=2\n".to_string())];
    let env = resolve(&input(&args, &files, &[], &none)).unwrap();
    let origins: Vec<String> = env.cli.iter().map(|(k, _, o)| format!("{k} [{o}]")).collect();
    assert_eq!(origins, ["Y [env-file config/dev.env]", "X [cli]"]);
}

#[test]
fn cli_env_files_then_args_config_passthrough_then_agent_env() {
    let args = strings(&["X=1", "API_KEY"]);
    let files = vec![(".env".to_string(), "X=0\nY=2\n".to_string())];
    let passthrough = strings(&["API_KEY", "UNSET_IS_SKIPPED"]);
    let agent_env = BTreeMap::from([("CLAUDE_X".to_string(), "1".to_string())]);
    let env = resolve(&input(&args, &files, &passthrough, &agent_env)).unwrap();
    assert_eq!(
        exposed(&cli_pairs(&env)),
        pairs(&[("X", "0"), ("Y", "2"), ("X", "1"), ("API_KEY", "from-host")])
    );
    assert_eq!(
        exposed(&env.config),
        pairs(&[("API_KEY", "from-host"), ("CLAUDE_X", "1")])
    );
    assert!(!format!("{env:?}").contains("from-host"));
}

#[test]
fn host_sourced_reserved_names_are_refused_with_the_name() {
    let none = BTreeMap::new();
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a [&'a str], &'a str);
    let cases: [Case<'_>; 4] = [
        (&["PATH"], &[], &[], "--env: PATH:"),
        (
            &[],
            &[],
            &["LD_PRELOAD"],
            "[sandbox] env_passthrough: LD_PRELOAD:",
        ),
        (&[], &[(".env", "HOME=/x\n")], &[], "--env-file .env: HOME:"),
        (&[], &[], &["SSH_AUTH_SOCK"], "SSH_AUTH_SOCK"),
    ];
    for (args, files, pass, want) in cases {
        let args = strings(args);
        let files: Vec<(String, String)> = files
            .iter()
            .map(|(p, t)| (p.to_string(), t.to_string()))
            .collect();
        let pass = strings(pass);
        let err = resolve(&input(&args, &files, &pass, &none)).unwrap_err();
        assert!(matches!(err, HostEnvError::Reserved { .. }), "{err}");
        assert!(err.to_string().contains(want), "{err}");
        assert!(!err.to_string().contains("hooks"), "not about hooks: {err}");
    }
    // An explicit value stays the user's choice, as before.
    let args = strings(&["PATH=/opt/bin"]);
    assert!(resolve(&input(&args, &[], &[], &none)).is_ok());
}

#[test]
fn endpoint_overrides_come_from_the_users_own_host_sources_only() {
    let none = BTreeMap::new();
    let key = strings(&["ANTHROPIC_BASE_URL"]);
    let env = resolve(&input(&key, &[], &key, &none)).unwrap();
    let want = pairs(&[("ANTHROPIC_BASE_URL", "https://gateway.example/v1")]);
    assert_eq!(
        (exposed(&cli_pairs(&env)), exposed(&env.config)),
        (want.clone(), want)
    );
    // An env file may lie in the workspace: the agent must not choose where its key goes.
    let files = vec![(".env".to_string(), "OPENAI_BASE_URL=http://evil\n".to_string())];
    let err = resolve(&input(&[], &files, &[], &none)).unwrap_err();
    assert!(
        err.to_string().contains("--env-file .env: OPENAI_BASE_URL:"),
        "{err}"
    );
    for name in crate::hooks::policy::ENDPOINT_ENV_NAMES {
        assert!(
            crate::hooks::policy::RESERVED_ENV_NAMES.contains(name),
            "{name} binds hooks too"
        );
    }
}

#[test]
fn unset_unusable_and_malformed_values() {
    let none = BTreeMap::new();
    let err = resolve(&input(&strings(&["NOPE"]), &[], &[], &none)).unwrap_err();
    assert_eq!(err, HostEnvError::Unset { key: "NOPE".into() });
    assert!(err.to_string().contains("export it first"));
    for args in [strings(&["MULTI"]), strings(&["X=a\nSECRET"])] {
        let err = resolve(&input(&args, &[], &[], &none)).unwrap_err();
        assert!(matches!(err, HostEnvError::BadValue { .. }), "{err}");
        assert!(!err.to_string().contains("SECRET"), "{err}");
    }
    let err = resolve(&input(&strings(&["1X=SECRET"]), &[], &[], &none)).unwrap_err();
    assert!(matches!(err, HostEnvError::BadArg { .. }) && !err.to_string().contains("SECRET"));
    let err = resolve(&input(&strings(&["=v"]), &[], &[], &none)).unwrap_err();
    assert!(matches!(err, HostEnvError::BadArg { .. }), "{err}");
}

#[test]
fn values_longer_than_one_environment_entry_may_hold_are_refused() {
    let fits = "x".repeat(crate::hooks::policy::MAX_ENV_ENTRY_BYTES - 2);
    assert!(check_value("--env", "K", &fits).is_ok());
    let err = check_value("--env", "K", &format!("{fits}y"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("KEY=VALUE may have at most 131071 bytes"), "{err}");
    assert!(!err.contains("xxxx"), "{err}");
}
