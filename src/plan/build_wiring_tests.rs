//! The agent hook wiring in the plan: read-only generated files with their own origin, pi's
//! extension argument, and the switches that drop the wiring.

use std::path::{Path, PathBuf};

use crate::secret::Secret;

use super::tests::{config, identity};
use super::*;
use crate::agent_hooks::wiring;
use crate::agent_hooks::wiring::GEMINI_SYSTEM;

fn run(agent: &str, command: &[&str], agent_hooks: bool) -> RunSettings {
    RunSettings {
        agent: agent.into(),
        command: command.iter().map(|s| s.to_string()).collect(),
        agent_hooks,
        ..Default::default()
    }
}

fn plan(run: &RunSettings, hooks: &HookLayer) -> Result<LaunchPlan, PlanError> {
    build(&PlanInput {
        host_memory: None,
        config: &config(),
        run,
        identity: &identity(),
        rootless: true,
        selinux: false,
        remote: false,
        exported: false,
        user: (1000, 1000),
        host_stage_dir: Path::new("/run/user/1000/ags/stage-abc123"),
        hooks,
    })
}

#[test]
fn wired_files_are_read_only_binds_of_staged_files_and_shown_in_the_plan() {
    let p = plan(&run("claude", &["-p", "hi"], true), &HookLayer::default()).unwrap();
    let w = p.agent_hook_wiring.as_ref().expect("wiring");
    assert_eq!(w.files, [PathBuf::from(wiring::CLAUDE_MANAGED)]);
    let f = &p.files[0];
    assert_eq!(f.destination, Path::new(wiring::CLAUDE_MANAGED));
    assert_eq!(f.origin, Origin::AgentHooks);
    assert!(f.host_path.starts_with("/run/user/1000/ags/stage-abc123/files"));
    assert!(f.expose_contains("--agent claude --event PreToolUse"));
    let m = p
        .mounts
        .iter()
        .find(|m| m.destination == Path::new(wiring::CLAUDE_MANAGED))
        .expect("mount");
    assert!(m.read_only);
    assert_eq!(
        m.kind,
        MountKind::Bind {
            source: f.host_path.clone()
        }
    );
    assert_eq!(
        p.host_stage_dir.as_deref(),
        Some(Path::new("/run/user/1000/ags/stage-abc123"))
    );
    let json = serde_json::to_value(&p).unwrap();
    assert_eq!(json["agent_hook_wiring"]["files"][0], wiring::CLAUDE_MANAGED);
    assert_eq!(json["files"][0]["origin"]["source"], "agent-hooks");
    assert_eq!(p.command, ["claude", "-p", "hi"]);
}

#[test]
fn hook_files_keep_their_numbers_and_wiring_comes_after_them() {
    let hooks = HookLayer {
        files: vec![PlanFile {
            destination: "/home/dev/.netrc".into(),
            content: Secret::new("x".into()),
            bytes: 1,
            origin: Origin::GlobalHook("h".into()),
            host_path: PathBuf::new(),
        }],
        ..Default::default()
    };
    let p = plan(&run("codex", &[], true), &hooks).unwrap();
    let dests: Vec<&Path> = p.files.iter().map(|f| f.destination.as_path()).collect();
    assert_eq!(
        dests,
        [
            Path::new("/home/dev/.netrc"),
            Path::new(wiring::CODEX_HOOKS),
            Path::new(wiring::CODEX_REQUIREMENTS),
            Path::new(wiring::CODEX_DOTENV),
            Path::new(crate::agent_hooks::HANDLERS_PATH),
        ]
    );
    assert!(p.files[0].host_path.ends_with("files/0"));
    assert!(p.files[2].host_path.ends_with("files/2"));
}

#[test]
fn pi_gets_its_extension_right_after_its_command() {
    let mut r = run("pi", &["-p", "hi"], true);
    r.agent_args = vec!["--model".into(), "m".into()];
    let p = plan(&r, &HookLayer::default()).unwrap();
    assert_eq!(
        p.command,
        [
            "pi",
            "--no-extensions",
            "-e",
            wiring::PI_EXTENSION,
            "--model",
            "m",
            "-p",
            "hi"
        ]
    );
    assert_eq!(p.agent_hook_wiring.unwrap().args, wiring::PI_ARGS);
}

#[test]
fn no_wiring_without_the_switch_or_for_the_shell() {
    let p = plan(&run("claude", &[], false), &HookLayer::default()).unwrap();
    assert!(p.agent_hook_wiring.is_none() && p.files.is_empty() && p.host_stage_dir.is_none());
    let p = plan(&run("shell", &["true"], true), &HookLayer::default()).unwrap();
    assert!(p.agent_hook_wiring.is_none() && p.files.is_empty());
}

#[test]
fn switches_that_drop_the_wiring_are_refused_or_warned() {
    let err = plan(
        &run("opencode", &["run", "--pure", "hi"], true),
        &HookLayer::default(),
    )
    .unwrap_err();
    assert!(matches!(err, PlanError::WiringSwitchedOff(_)));
    assert!(
        err.to_string().contains("\"--pure\"") && err.to_string().contains("remove it"),
        "{err}"
    );
    let mut r = run("opencode", &[], true);
    r.agent_args = vec!["--pure".into()];
    assert!(plan(&r, &HookLayer::default()).is_err());
    // Without agent hooks the flag is the agent's business.
    assert!(plan(&run("opencode", &["--pure"], false), &HookLayer::default()).is_ok());
    let p = plan(
        &run("claude", &["--bare", "-p", "x"], true),
        &HookLayer::default(),
    )
    .unwrap();
    assert_eq!(p.agent_hook_wiring.unwrap().warnings.len(), 1);
}

/// A wiring file may not collide with a user's mount or a hook's file.
#[test]
fn a_mount_over_a_wiring_file_is_refused() {
    let hooks = HookLayer {
        files: vec![PlanFile {
            destination: "/etc/codex".into(),
            content: Secret::new(String::new()),
            bytes: 0,
            origin: Origin::GlobalHook("h".into()),
            host_path: PathBuf::new(),
        }],
        ..Default::default()
    };
    assert!(matches!(
        plan(&run("codex", &[], true), &hooks),
        Err(PlanError::MountOverlap { .. })
    ));
}

#[test]
fn the_handlers_file_and_the_dispatcher_are_read_only_and_shown_in_the_plan() {
    use crate::agent_hooks::{DISPATCHER_PATH, HANDLERS_PATH, dispatch};
    let mut cfg = config();
    let file: crate::config::ConfigFile = toml::from_str(
        "[[agent_hook]]\nname = \"a\"\nevent = \"pre_tool\"\ntool = \"shell\"\ncommand = \"exit 0\"\non_failure = \"block\"\n\
         [agent_guard]\ndeny = [\"git push --force*\"]\nprotect = [\".git/hooks\"]\n",
    )
    .unwrap();
    cfg.agent_hooks = crate::agent_hooks::config::resolve(&[(
        Path::new("/c"),
        &file.agent_hook,
        file.agent_guard.as_ref(),
        "global",
    )])
    .unwrap();
    let r = run("codex", &[], true);
    let p = build(&PlanInput {
        host_memory: None,
        config: &cfg,
        run: &r,
        identity: &identity(),
        rootless: true,
        selinux: false,
        remote: false,
        exported: false,
        user: (1000, 1000),
        host_stage_dir: Path::new("/run/user/1000/ags/stage-abc123"),
        hooks: &HookLayer::default(),
    })
    .unwrap();
    let f = p
        .files
        .iter()
        .find(|f| f.destination == Path::new(HANDLERS_PATH))
        .expect("handlers file");
    let parsed = dispatch::handlers::parse(f.content.expose().as_bytes()).unwrap();
    assert_eq!(parsed.handlers.len(), 1);
    let h = &parsed.handlers[0];
    assert_eq!(
        (h.name.as_str(), h.event.as_str(), h.tool.as_deref()),
        ("a", "pre_tool", Some("shell"))
    );
    assert_eq!(h.command, ["/bin/sh", "-c", "exit 0"]);
    assert!(h.block_on_failure && h.timeout_seconds == 10);
    assert_eq!(parsed.guard.deny, ["git push --force*"]);
    assert_eq!(parsed.guard.protect, [".git/hooks"]);
    // gemini ignores a system file uid 0 does not own: under keep-id it is staged owned by
    // uid 0, and gemini is pointed at it (issue 23 item 5).
    let gemini = build(&PlanInput {
        run: &run("gemini", &[], true),
        host_memory: None,
        config: &cfg,
        identity: &identity(),
        rootless: true,
        selinux: false,
        remote: false,
        exported: false,
        user: (1000, 1000),
        host_stage_dir: Path::new("/run/user/1000/ags/stage-abc123"),
        hooks: &HookLayer::default(),
    })
    .unwrap();
    let staged = "/run/ags/root/gemini-settings.json";
    let root_files = &gemini.staging.as_ref().expect("a staging volume").root_files;
    assert_eq!(root_files.len(), 1);
    assert_eq!(root_files[0].destination, Path::new(staged));
    assert!(root_files[0].content.contains("BeforeTool"));
    let env = gemini
        .env
        .iter()
        .find(|e| e.key == "GEMINI_CLI_SYSTEM_SETTINGS_PATH");
    assert!(matches!(&env.unwrap().source, EnvSource::Plain { value } if value == staged));
    let bound =
        |p: &crate::plan::LaunchPlan| p.mounts.iter().any(|m| m.destination == Path::new(GEMINI_SYSTEM));
    assert!(!bound(&gemini), "{:?}", gemini.mounts);
    // As root on a rootful service the file is root's already: bound as before.
    let as_root = build(&PlanInput {
        run: &run("gemini", &[], true),
        host_memory: None,
        config: &cfg,
        identity: &identity(),
        rootless: false,
        selinux: false,
        remote: false,
        exported: false,
        user: (0, 0),
        host_stage_dir: Path::new("/run/ags/stage-abc123"),
        hooks: &HookLayer::default(),
    })
    .unwrap();
    assert!(bound(&as_root) && as_root.staging.is_none_or(|s| s.root_files.is_empty()));
    let m = p
        .mounts
        .iter()
        .find(|m| m.destination == Path::new(DISPATCHER_PATH))
        .expect("dispatcher mount");
    let w = p.agent_hook_wiring.as_ref().unwrap();
    assert!(m.read_only);
    assert_eq!(
        m.kind,
        MountKind::Bind {
            source: w.dispatcher.clone()
        }
    );
    assert!(
        w.dispatcher
            .ends_with(Path::new("agent-hooks").join(dispatch::INSTALLED_NAME))
    );
    let json = serde_json::to_value(&p).unwrap();
    let shown = &json["agent_hook_wiring"];
    assert_eq!(shown["handlers_file"], HANDLERS_PATH);
    assert_eq!(shown["handlers"][0]["name"], "a");
    assert_eq!(shown["handlers"][0]["on_failure"], "block");
    assert_eq!(shown["guard"]["deny"][0], "git push --force*");
    // Without agent hooks: no dispatcher, no handlers file.
    let p = plan(&run("gemini", &[], false), &HookLayer::default()).unwrap();
    assert!(
        !p.mounts
            .iter()
            .any(|m| m.destination == Path::new(DISPATCHER_PATH))
    );
}

trait ExposeContains {
    fn expose_contains(&self, s: &str) -> bool;
}

impl ExposeContains for PlanFile {
    fn expose_contains(&self, s: &str) -> bool {
        self.content.expose().contains(s)
    }
}

#[test]
fn a_remote_service_gets_the_files_in_the_staging_volume_by_subpath() {
    let hooks = HookLayer {
        files: vec![PlanFile {
            destination: "/home/dev/.netrc".into(),
            content: Secret::new("x".into()),
            bytes: 1,
            origin: Origin::GlobalHook("h".into()),
            host_path: PathBuf::new(),
        }],
        ..Default::default()
    };
    let p = build(&PlanInput {
        host_memory: None,
        config: &config(),
        run: &run("codex", &[], true),
        identity: &identity(),
        rootless: true,
        selinux: false,
        remote: true,
        exported: false,
        user: (1000, 1000),
        host_stage_dir: Path::new("/run/user/1000/ags/stage-abc123"),
        hooks: &hooks,
    })
    .unwrap();
    // No host file, no host staging directory: everything travels in the staging volume, which
    // exists although no environment value is staged, and the command loads its (empty) env file.
    assert!(p.host_stage_dir.is_none() && !p.annotations.contains_key(ANNOTATION_STAGE));
    assert!(p.files.iter().all(|f| f.host_path.as_os_str().is_empty()));
    assert!(p.files_in_volume());
    let volume = p.staging.as_ref().expect("a staging volume").volume.clone();
    for (i, f) in p.files.iter().enumerate() {
        let m = p
            .mounts
            .iter()
            .find(|m| m.destination == f.destination)
            .expect("mount");
        assert!(m.read_only);
        let path = format!("files/{i}");
        assert_eq!(
            m.kind,
            MountKind::StagedFile {
                volume: volume.clone(),
                path
            }
        );
    }
    assert!(p.container_command[2].contains(STAGING_ENV_FILE));
    let json = serde_json::to_value(&p).unwrap();
    let mount = json["mounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["destination"] == "/home/dev/.netrc")
        .unwrap();
    assert_eq!(mount["type"], "staged-file");
    // A remote service cannot bind this host's dispatcher: no agent hook wiring.
    assert!(p.agent_hook_wiring.is_none());
    assert!(
        !p.mounts
            .iter()
            .any(|m| m.destination.starts_with(crate::agent_hooks::CONTAINER_DIR))
    );
    assert_eq!(mount["path"], "files/0");
    // A local service: binds of host files, as before.
    assert!(!plan(&run("codex", &[], true), &hooks).unwrap().files_in_volume());
}

#[test]
fn the_record_socket_directory_is_a_read_only_sibling_of_the_staging_directory() {
    for agent in ["claude", "shell"] {
        let p = plan(&run(agent, &[], true), &HookLayer::default()).unwrap();
        let r = p.agent_hook_record.as_ref().expect("record");
        assert_eq!(r.socket_dir, Path::new("/run/user/1000/ags/stage-abc123-hooks"));
        assert_eq!(
            r.socket(),
            Path::new("/run/user/1000/ags/stage-abc123-hooks/record.sock")
        );
        assert_eq!(r.log, Path::new("/home/u/.local/state/ags/agent-hooks.jsonl"));
        let m: Vec<_> = p
            .mounts
            .iter()
            .filter(|m| m.destination == Path::new(crate::agent_hooks::SOCKET_DIR))
            .collect();
        assert_eq!(m.len(), 1, "{agent}");
        assert!(m[0].read_only && m[0].origin == Origin::AgentHooks);
        assert_eq!(
            m[0].kind,
            MountKind::Bind {
                source: r.socket_dir.clone()
            }
        );
    }
    // Not without agent hooks, and not with a remote service.
    let p = plan(&run("shell", &[], false), &HookLayer::default()).unwrap();
    assert!(p.agent_hook_record.is_none());
    let remote = build(&PlanInput {
        host_memory: None,
        config: &config(),
        run: &run("shell", &[], true),
        identity: &identity(),
        rootless: true,
        selinux: false,
        remote: true,
        exported: false,
        user: (1000, 1000),
        host_stage_dir: Path::new("/run/user/1000/ags/stage-abc123"),
        hooks: &HookLayer::default(),
    })
    .unwrap();
    assert!(remote.agent_hook_record.is_none());
    assert!(
        !remote
            .mounts
            .iter()
            .any(|m| m.destination.starts_with(crate::agent_hooks::CONTAINER_DIR))
    );
}
