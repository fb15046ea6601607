use super::*;

fn commands(v: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (native, groups) in v["hooks"].as_object().expect("hooks object") {
        for g in groups.as_array().expect("groups") {
            assert!(g.get("matcher").is_none(), "{native}: every tool matches");
            for h in g["hooks"].as_array().expect("handlers") {
                assert_eq!(h["type"], "command");
                out.push((
                    native.clone(),
                    h["command"].as_str().expect("command").to_string(),
                ));
            }
        }
    }
    out
}

#[test]
fn command_agents_call_the_dispatcher_once_per_wired_event() {
    for agent in ["claude", "codex", "gemini"] {
        let w = generate(agent, "t0").expect(agent);
        let row = matrix::agent(agent).unwrap();
        let v: Value = serde_json::from_str(&w.files[0].content).expect("JSON");
        let got = commands(&v);
        let want: Vec<(String, String)> = row
            .wired()
            .map(|(_, n)| {
                (
                    n.to_string(),
                    format!("{DISPATCHER_PATH} --agent {agent} --event {n}"),
                )
            })
            .collect();
        let mut got_sorted = got.clone();
        got_sorted.sort();
        let mut want_sorted = want.clone();
        want_sorted.sort();
        assert_eq!(got_sorted, want_sorted, "{agent}");
        assert!(w.args.is_empty());
    }
}

#[test]
fn each_agent_gets_its_own_locations() {
    let dest = |a: &str| -> Vec<&str> {
        generate(a, "t")
            .unwrap()
            .files
            .iter()
            .map(|f| f.destination)
            .collect()
    };
    assert_eq!(dest("claude"), [CLAUDE_MANAGED]);
    assert_eq!(dest("codex"), [CODEX_HOOKS, CODEX_REQUIREMENTS, CODEX_DOTENV]);
    assert_eq!(dest("gemini"), [GEMINI_SYSTEM, GEMINI_DOTENV]);
    assert_eq!(dest("opencode"), [OPENCODE_SYSTEM, OPENCODE_PLUGIN]);
    assert_eq!(dest("pi"), [PI_EXTENSION]);
    assert_eq!(
        generate("pi", "t").unwrap().args,
        ["--no-extensions", "-e", PI_EXTENSION]
    );
    assert_eq!(
        generate("opencode", "t").unwrap().empty_dirs,
        OPENCODE_PLUGIN_DIRS
    );
    assert_eq!(generate("claude", "t").unwrap().empty_dirs, [CLAUDE_DROP_INS]);
    assert_eq!(generate("gemini", "t").unwrap().empty_dirs, [GEMINI_EXTENSIONS]);
    assert_eq!(generate("pi", "t").unwrap().empty_dirs, [PI_BIN]);
    assert!(generate("shell", "t").is_none());
    assert!(generate("vim", "t").is_none());
}

#[test]
fn codex_requirements_pin_the_hooks_feature() {
    let w = generate("codex", "t").unwrap();
    let req: toml::Table = toml::from_str(&w.files[1].content).expect("TOML");
    assert_eq!(req["features"]["hooks"].as_bool(), Some(true));
}

#[test]
fn gemini_hooks_are_named_per_launch_and_pinned_on() {
    let v: Value = serde_json::from_str(&generate("gemini", "abc123").unwrap().files[0].content).unwrap();
    assert_eq!(v["hooksConfig"]["enabled"], true);
    let h = &v["hooks"]["BeforeTool"][0]["hooks"][0];
    assert_eq!(h["name"], "ags-abc123-BeforeTool");
    assert_eq!(h["timeout"], AGENT_TIMEOUT_SECONDS * 1000);
    let other: Value = serde_json::from_str(&generate("gemini", "def456").unwrap().files[0].content).unwrap();
    assert_ne!(other["hooks"]["BeforeTool"][0]["hooks"][0]["name"], h["name"]);
}

#[test]
fn opencode_config_loads_the_plugin_and_the_plugin_covers_every_wired_event() {
    let w = generate("opencode", "t").unwrap();
    let v: Value = serde_json::from_str(&w.files[0].content).unwrap();
    assert_eq!(v, json!({ "plugin": [format!("file://{OPENCODE_PLUGIN}")] }));
    let js = &w.files[1].content;
    for (_, n) in matrix::agent("opencode").unwrap().wired() {
        assert!(js.contains(&format!("\"{n}\"")), "{n}");
    }
    for n in OPENCODE_BUS_EVENTS {
        assert!(matrix::normalise("opencode", n).is_some(), "{n}");
    }
    assert!(js.contains("throw new Error(reason(answer))"));
    assert!(!js.contains("@opencode-ai"));
}

#[test]
fn pi_extension_registers_every_wired_event() {
    let js = &generate("pi", "t").unwrap().files[0].content;
    for (_, n) in matrix::agent("pi").unwrap().wired() {
        assert!(js.contains(&format!("pi.on(\"{n}\"")), "{n}");
    }
    assert!(js.contains("return { block: true, reason: reason(answer) }"));
}

#[test]
fn switches_that_drop_the_wiring_are_refused_or_warned() {
    let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert!(matches!(
        check_args("opencode", &args(&["run", "--pure", "x"]))[..],
        [SwitchOff::Refuse(_)]
    ));
    assert!(matches!(
        check_args("claude", &args(&["--bare", "-p", "x"]))[..],
        [SwitchOff::Warn(_)]
    ));
    assert!(check_args("pi", &args(&["--no-extensions"])).is_empty());
    assert!(check_args("claude", &args(&["-p", "--pure"])).is_empty());
    // Every spelling the CLIs accept.
    assert!(matches!(
        check_args("opencode", &args(&["run", "--pure=true"]))[..],
        [SwitchOff::Refuse(_)]
    ));
    assert!(matches!(
        check_args("claude", &args(&["--bare=true"]))[..],
        [SwitchOff::Warn(_)]
    ));
}

#[test]
fn variables_that_drop_the_wiring_are_refused_for_their_agent() {
    for (name, agent, _) in SWITCH_OFF_ENV {
        let got = check_env(agent, [*name, "TERM"]);
        assert!(
            matches!(&got[..], [SwitchOff::Refuse(m)] if m.contains(name)),
            "{name}"
        );
        assert!(check_env("shell", [*name]).is_empty());
    }
}

#[test]
fn opencode_with_handlers_is_warned_about_its_user_config_plugins() {
    assert!(matches!(check_agent("opencode", true), Some(SwitchOff::Warn(_))));
    assert!(check_agent("opencode", false).is_none());
}

#[test]
fn claude_managed_settings_pin_bare_mode_off() {
    let w = generate("claude", "t").unwrap();
    let v: Value = serde_json::from_str(&w.files[0].content).unwrap();
    assert_eq!(v["env"]["CLAUDE_CODE_SIMPLE"], "0");
}
