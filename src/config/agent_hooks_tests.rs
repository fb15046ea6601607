use std::fs;
use std::path::{Path, PathBuf};

use crate::agent_hooks::Event;
use crate::agent_hooks::config::*;

type Result<T> = std::result::Result<T, Invalid>;
use crate::config::{ConfigFile, LoadOptions, Paths, load_with};

fn parse(text: &str) -> std::result::Result<ConfigFile, String> {
    toml::from_str(text).map_err(|e| e.to_string())
}

fn resolve_text(text: &str) -> Result<AgentHookSettings> {
    let f = parse(text).unwrap();
    resolve(&[(
        Path::new("/c/config.toml"),
        &f.agent_hook,
        f.agent_guard.as_ref(),
        "global",
    )])
}

fn err(text: &str) -> String {
    resolve_text(text).unwrap_err().to_string()
}

#[test]
fn handlers_resolve_with_defaults_and_both_command_forms() {
    let s = resolve_text(
        r#"
[[agent_hook]]
name = "audit"
event = "pre_tool"
tool = "shell"
command = "logger -t ags \"$1\""

[[agent_hook]]
name = "notify-end"
event = "stop"
command = ["/usr/local/bin/notify", "--done"]
timeout_seconds = 3

[agent_guard]
deny = ["git push --force*", "rm -rf /*"]
protect = [".git/hooks", "/etc"]
"#,
    )
    .unwrap();
    let a = &s.handlers[0];
    assert_eq!(
        (a.name.as_str(), a.event, a.tool.as_deref()),
        ("audit", Event::PreTool, Some("shell"))
    );
    assert_eq!(a.command, ["/bin/sh", "-c", "logger -t ags \"$1\""]);
    assert_eq!(
        (a.timeout_seconds, a.on_failure, a.scope),
        (DEFAULT_TIMEOUT_SECONDS, OnFailure::Ignore, "global")
    );
    assert_eq!(s.handlers[1].command, ["/usr/local/bin/notify", "--done"]);
    assert_eq!(s.handlers[1].timeout_seconds, 3);
    assert_eq!(s.guard.deny, ["git push --force*", "rm -rf /*"]);
    assert_eq!(s.guard.protect, [".git/hooks", "/etc"]);
}

#[test]
fn strict_parsing_names_the_key() {
    let unknown = parse("[[agent_hook]]\nname = \"a\"\nevent = \"pre_tool\"\ncommand = \"x\"\ntimeout = 3\n")
        .unwrap_err();
    assert!(unknown.contains("unknown field `timeout`"), "{unknown}");
    let event = parse("[[agent_hook]]\nname = \"a\"\nevent = \"PreToolUse\"\ncommand = \"x\"\n").unwrap_err();
    assert!(
        event.contains("unknown agent hook event \"PreToolUse\""),
        "{event}"
    );
    let on_failure =
        parse("[[agent_hook]]\nname = \"a\"\nevent = \"pre_tool\"\ncommand = \"x\"\non_failure = \"deny\"\n")
            .unwrap_err();
    assert!(
        on_failure.contains("expected `ignore` or `block`"),
        "{on_failure}"
    );
    let command = parse("[[agent_hook]]\nname = \"a\"\nevent = \"pre_tool\"\ncommand = 3\n").unwrap_err();
    assert!(
        command.contains("a string (run by /bin/sh -c) or an array"),
        "{command}"
    );
    let guard = parse("[agent_guard]\nallow = []\n").unwrap_err();
    assert!(guard.contains("unknown field `allow`"), "{guard}");
}

#[test]
fn values_and_limits_are_checked() {
    let hook = |extra: &str| format!("[[agent_hook]]\nname = \"a\"\ncommand = \"x\"\n{extra}\n");
    for (extra, key, message) in [
        (
            "event = \"stop\"\ntool = \"Bash\"",
            "agent_hook[0].tool",
            "applies only to the pre_tool and post_tool events, not stop",
        ),
        (
            "event = \"pre_tool\"\ntool = \"Ba sh\"",
            "agent_hook[0].tool",
            "without spaces",
        ),
        (
            "event = \"stop\"\non_failure = \"block\"",
            "agent_hook[0].on_failure",
            "applies only to pre_tool",
        ),
        (
            "event = \"pre_tool\"\ntimeout_seconds = 31",
            "agent_hook[0].timeout_seconds",
            "31 is outside 1..=30",
        ),
        (
            "event = \"pre_tool\"\ntimeout_seconds = 0",
            "agent_hook[0].timeout_seconds",
            "0 is outside",
        ),
    ] {
        let e = err(&hook(extra));
        assert!(
            e.contains(&format!("{key}: ")) && e.contains(message),
            "{extra}: {e}"
        );
    }
    let e = err("[[agent_hook]]\nname = \"a b\"\nevent = \"stop\"\ncommand = \"x\"\n");
    assert!(e.contains("agent_hook[0].name: must be 1 to 64"), "{e}");
    let e = err("[[agent_hook]]\nname = \"a\"\nevent = \"stop\"\ncommand = []\n");
    assert!(e.contains("agent_hook[0].command: must not be empty"), "{e}");
    let e = err(
        "[[agent_hook]]\nname = \"a\"\nevent = \"stop\"\ncommand = \"x\"\n[[agent_hook]]\nname = \"a\"\nevent = \"stop\"\ncommand = \"y\"\n",
    );
    assert!(e.contains("agent_hook[1].name: \"a\" is declared twice"), "{e}");
    let many: String = (0..=MAX_AGENT_HOOKS)
        .map(|i| format!("[[agent_hook]]\nname = \"h{i}\"\nevent = \"stop\"\ncommand = \"x\"\n"))
        .collect();
    assert!(err(&many).contains("more than 16 [[agent_hook]] tables"));
    let e = err("[agent_guard]\ndeny = [\"ok\", \"  \"]\n");
    assert!(e.contains("agent_guard.deny[1]: must be non-blank"), "{e}");
    let e = err("[agent_guard]\nprotect = [\"../x\"]\n");
    assert!(e.contains("agent_guard.protect[0]: must not contain `..`"), "{e}");
    let e = err("[agent_guard]\ndeny = [\"a\\nb\"]\n");
    assert!(e.contains("control characters"), "{e}");
}

struct Env {
    _dir: tempfile::TempDir,
    paths: Paths,
    project: PathBuf,
}

fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let home = root.join("home");
    let project = root.join("repo");
    fs::create_dir_all(project.join(".git")).unwrap();
    let paths = Paths {
        config_home: home.join(".config"),
        state_home: home.join(".local/state"),
        cache_home: home.join(".cache"),
        runtime_dir: None,
        home,
    };
    Env {
        _dir: dir,
        paths,
        project,
    }
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn opts(workdir: &Path) -> LoadOptions {
    LoadOptions {
        workdir: Some(workdir.into()),
        ..Default::default()
    }
}

#[test]
fn a_trusted_overlay_adds_handlers_and_guard_entries_after_the_global_ones() {
    let e = env();
    write(
        &e.paths.global_config(),
        "[[agent_hook]]\nname = \"g\"\nevent = \"pre_tool\"\ncommand = \"x\"\n[agent_guard]\ndeny = [\"git push --force*\"]\n",
    );
    write(
        &e.project.join(".ags/config.toml"),
        "[[agent_hook]]\nname = \"p\"\nevent = \"post_tool\"\ncommand = \"y\"\n[agent_guard]\ndeny = [\"git push --force*\", \"curl *\"]\nprotect = [\".git/hooks\"]\n",
    );
    write(
        &e.paths.overlay_trust_file(),
        &format!("{}\n", e.project.display()),
    );
    let cfg = load_with(e.paths.clone(), &opts(&e.project)).unwrap();
    let names: Vec<(&str, &str)> = cfg
        .agent_hooks
        .handlers
        .iter()
        .map(|h| (h.name.as_str(), h.scope))
        .collect();
    assert_eq!(names, [("g", "global"), ("p", "project")]);
    assert_eq!(cfg.agent_hooks.guard.deny, ["git push --force*", "curl *"]);
    assert_eq!(cfg.agent_hooks.guard.protect, [".git/hooks"]);
}

#[test]
fn an_untrusted_overlay_with_agent_hooks_fails_instead_of_dropping_them() {
    let e = env();
    write(
        &e.project.join(".ags/config.toml"),
        "[agent_guard]\ndeny = [\"git push --force*\"]\n",
    );
    let err = load_with(e.paths.clone(), &opts(&e.project))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("declares agent hooks but the repository") && err.contains("--no-repo-config"),
        "{err}"
    );
    let skipped = load_with(
        e.paths.clone(),
        &LoadOptions {
            no_repo_config: true,
            ..opts(&e.project)
        },
    )
    .unwrap();
    assert_eq!(skipped.agent_hooks, AgentHookSettings::default());
}

/// The ```toml blocks of a doc page.
fn toml_blocks(page: &str) -> Vec<String> {
    let text = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(page)).unwrap();
    text.split("```toml\n")
        .skip(1)
        .map(|b| b[..b.find("```").unwrap()].to_string())
        .collect()
}

#[test]
fn the_documented_examples_parse_and_resolve() {
    for page in ["docs/agent-hook-handlers.md", "docs/configuration.md"] {
        let blocks = toml_blocks(page);
        assert!(!blocks.is_empty(), "{page}");
        for b in blocks
            .iter()
            .filter(|b| b.contains("agent_hook") || b.contains("agent_guard"))
        {
            let f = parse(b).unwrap_or_else(|e| panic!("{page}: {e}"));
            let s = resolve(&[(Path::new("/c"), &f.agent_hook, f.agent_guard.as_ref(), "global")])
                .unwrap_or_else(|e| panic!("{page}: {e}"));
            assert!(!s.handlers.is_empty() && !s.guard.deny.is_empty(), "{page}");
        }
    }
}
