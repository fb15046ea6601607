use crate::secret::Secret;
use std::path::PathBuf;

use super::*;
use crate::config::{Config, Network, Paths};
use crate::plan::*;

pub(super) fn config() -> Config {
    let home = PathBuf::from("/home/u");
    Config {
        paths: Paths {
            config_home: home.join(".config"),
            state_home: home.join(".local/state"),
            cache_home: home.join(".cache"),
            runtime_dir: None,
            home,
        },
        workdir: "/src/My Project/sub".into(),
        project: "/src/My Project".into(),
        image: "localhost/img:1".into(),
        pids_limit: 4096,
        network: Network::None,
        egress: Default::default(),
        prepare_hooks: vec![],
        started_hooks: vec![],
        finished_hooks: vec![],
        agent_hooks: Default::default(),
        primary: None,
        overlay: None,
        warnings: vec![],
        user: Default::default(),
    }
}

pub(super) fn identity() -> LaunchIdentity {
    LaunchIdentity {
        launch_id: "ags-1-2".into(),
        suffix: "abc123".into(),
        pid: 1,
        start_time: 99,
        host: "h".into(),
    }
}

fn plan_with(run: &RunSettings, hooks: &HookLayer, rootless: bool) -> Result<LaunchPlan, PlanError> {
    plan_in(&config(), run, hooks, rootless, false)
}

fn plan_in(
    cfg: &Config,
    run: &RunSettings,
    hooks: &HookLayer,
    rootless: bool,
    selinux: bool,
) -> Result<LaunchPlan, PlanError> {
    let id = identity();
    build(&PlanInput {
        host_memory: None,
        config: cfg,
        run,
        identity: &id,
        rootless,
        selinux,
        remote: false,
        exported: false,
        user: (1000, 1000),
        host_stage_dir: std::path::Path::new("/run/user/1000/ags/stage-abc123"),
        hooks,
    })
}

fn shell(cmd: &[&str]) -> RunSettings {
    RunSettings {
        agent: "shell".into(),
        command: cmd.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

#[test]
fn minimal_plan() {
    let plan = plan_with(&shell(&["true"]), &HookLayer::default(), true).unwrap();
    assert_eq!(plan.container_name, "ags-my-project-abc123");
    // Under init the command is checked by a wrapper (podman run's 126/127), then exec'd.
    assert_eq!(plan.container_command[..2], ["/bin/sh", "-c"]);
    assert_eq!(plan.container_command[3..], ["ags-env", "true"]);
    let direct = RunSettings {
        no_init: true,
        ..shell(&["true"])
    };
    let plan_direct = plan_with(&direct, &HookLayer::default(), true).unwrap();
    assert_eq!(plan_direct.container_command, ["true"]);
    assert_eq!(plan.user_namespace, UserNamespace::KeepId);
    assert_eq!(plan.security.cap_drop, ["ALL"]);
    assert!(plan.security.no_new_privileges);
    assert_eq!(plan.mounts.len(), 1);
    assert_eq!(plan.mounts[0].destination, PathBuf::from("/src/My Project/sub"));
    assert!(!plan.mounts[0].read_only);
    assert!(plan.staging.is_none());
    assert_eq!(plan.labels[LABEL_MANAGED], "true");
    assert_eq!(plan.labels[LABEL_OWNER_START], "99");
    assert_eq!(plan.annotations[ANNOTATION_LAUNCH], "ags-1-2");
    assert_eq!(
        plan.annotations[ANNOTATION_SPOOL],
        "/home/u/.local/state/ags/spool"
    );
    assert!(
        !plan.annotations.contains_key(ANNOTATION_STAGE),
        "no generated files"
    );
    let rootful = plan_with(&shell(&[]), &HookLayer::default(), false).unwrap();
    assert_eq!(rootful.user_namespace, UserNamespace::Default);
    assert_eq!(rootful.container_command[..2], ["/bin/sh", "-c"]);
}

#[test]
fn cli_env_is_staged_redacted_and_wraps_the_command() {
    let mut run = shell(&["env"]);
    run.env = vec![("TOKEN".into(), Secret::new("s3cr3t".into()), Origin::Cli)];
    let plan = plan_with(&run, &HookLayer::default(), true).unwrap();
    assert_eq!(plan.staging.as_ref().unwrap().volume, "ags-stage-abc123");
    assert_eq!(plan.container_command[..2], ["/bin/sh", "-c"]);
    assert_eq!(plan.container_command.last().unwrap(), "env");
    let json = serde_json::to_string(&plan).unwrap();
    assert!(!json.contains("s3cr3t"), "{json}");
    assert!(!format!("{plan:?}").contains("s3cr3t"));
    assert!(
        plan.mounts
            .iter()
            .any(|m| m.destination.as_path() == std::path::Path::new(STAGING_MOUNT) && m.read_only)
    );
}

#[test]
fn generated_files_name_their_staging_dir_for_the_oci_hook() {
    let hooks = HookLayer {
        files: vec![PlanFile {
            destination: "/tmp/x".into(),
            content: Secret::new("x".into()),
            bytes: 1,
            origin: Origin::GlobalHook("h".into()),
            host_path: PathBuf::new(),
        }],
        ..HookLayer::default()
    };
    let plan = plan_with(&shell(&[]), &hooks, true).unwrap();
    assert_eq!(
        plan.annotations[ANNOTATION_STAGE],
        "/run/user/1000/ags/stage-abc123"
    );
    assert_eq!(
        plan.host_stage_dir.as_deref(),
        Some(std::path::Path::new("/run/user/1000/ags/stage-abc123"))
    );
}

#[test]
fn cli_env_beats_hook_env_which_beats_config_env() {
    let mut run = shell(&[]);
    run.env = vec![("K".into(), Secret::new("cli".into()), Origin::Cli)];
    run.config_env = vec![
        ("K".into(), Secret::new("config".into())),
        ("C".into(), Secret::new("config".into())),
        ("H".into(), Secret::new("config".into())),
    ];
    let hooks = HookLayer {
        env: vec![
            (
                "K".into(),
                EnvSource::Staged {
                    value: Secret::new("hook".into()),
                },
                Origin::GlobalHook("g".into()),
            ),
            (
                "H".into(),
                EnvSource::Staged {
                    value: Secret::new("hook".into()),
                },
                Origin::GlobalHook("g".into()),
            ),
        ],
        ..Default::default()
    };
    let plan = plan_with(&run, &hooks, true).unwrap();
    let origin = |key: &str| {
        let k: Vec<_> = plan.env.iter().filter(|e| e.key == key).collect();
        assert_eq!(k.len(), 1);
        k[0].origin.clone()
    };
    assert_eq!(origin("K"), Origin::Cli);
    assert_eq!(origin("H"), Origin::GlobalHook("g".into()));
    assert_eq!(origin("C"), Origin::Config);
}

#[test]
fn unknown_agent_is_refused() {
    let run = RunSettings {
        agent: "vim".into(),
        ..Default::default()
    };
    let err = plan_with(&run, &HookLayer::default(), true)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "--agent \"vim\": unknown agent; known agents: pi, claude, codex, gemini, opencode, shell"
    );
}

fn user_mount(source: &str, destination: &str, read_only: bool, origin: Origin) -> UserMount {
    UserMount {
        source: source.into(),
        destination: destination.into(),
        read_only,
        origin,
    }
}

#[test]
fn nested_add_dir_is_an_overlap() {
    let mut run = shell(&[]);
    let inner = "/src/My Project/sub/inner";
    run.mounts = vec![user_mount(inner, inner, false, Origin::Cli)];
    let err = plan_with(&run, &HookLayer::default(), true)
        .unwrap_err()
        .to_string();
    assert!(err.contains("overlap"), "{err}");
    run.mounts = vec![
        user_mount("/data", "/data", false, Origin::Cli),
        user_mount("/home/u/ref", "/opt/ref", true, Origin::Config),
    ];
    let plan = plan_with(&run, &HookLayer::default(), true).unwrap();
    assert_eq!(plan.mounts[1].origin, Origin::Cli);
    let config = &plan.mounts[2];
    assert_eq!(config.origin, Origin::Config);
    assert!(config.read_only);
    assert_eq!(config.destination, PathBuf::from("/opt/ref"));
    assert_eq!(
        config.kind,
        MountKind::Bind {
            source: "/home/u/ref".into()
        }
    );
}

#[test]
fn user_mount_destinations_stay_clear_of_system_and_staging_paths() {
    for dest in [
        "/",
        "/proc",
        "/sys/x",
        "/dev",
        "/run",
        "/run/ags",
        "/run/ags/env",
        "/a/../b",
        "/a/./b",
        "/a//b",
        "rel",
    ] {
        let mut run = shell(&[]);
        run.mounts = vec![user_mount("/data", dest, false, Origin::Config)];
        let err = plan_with(&run, &HookLayer::default(), true).unwrap_err();
        assert!(matches!(err, PlanError::BadMount { .. }), "{dest}: {err}");
        assert!(err.to_string().starts_with("[[mount]] target"), "{dest}: {err}");
    }
}

#[test]
fn lockdown_adds_tmpfs() {
    let mut run = shell(&[]);
    run.lockdown = true;
    let plan = plan_with(&run, &HookLayer::default(), true).unwrap();
    let tmpfs: Vec<_> = plan
        .mounts
        .iter()
        .filter_map(|m| match m.kind {
            MountKind::Tmpfs { size } => Some((m.destination.clone(), size)),
            _ => None,
        })
        .collect();
    let (g, m) = (crate::limits::GIB, crate::limits::MIB);
    assert_eq!(
        tmpfs,
        [
            (PathBuf::from("/tmp"), g),
            ("/var/tmp".into(), g),
            ("/run".into(), 64 * m)
        ]
    );
    // `[sandbox] tmpfs_size` sizes /tmp and /var/tmp; /run stays small.
    run.limits.tmpfs_size = 3 * m;
    let plan = plan_with(&run, &HookLayer::default(), true).unwrap();
    let sizes: Vec<_> = plan
        .mounts
        .iter()
        .filter_map(|m| match m.kind {
            MountKind::Tmpfs { size } => Some(size),
            _ => None,
        })
        .collect();
    assert_eq!(sizes, [3 * m, 3 * m, 64 * m]);
}

#[test]
fn memory_and_cpu_limits_are_resolved_into_the_plan() {
    use crate::limits::{GIB, Memory, parse_cpus};
    let mut run = shell(&[]);
    // The default: half of the host's memory (unknown here: the 8g cap).
    let plan = plan_with(&run, &HookLayer::default(), true).unwrap();
    assert_eq!(plan.security.memory_limit, Some(8 * GIB));
    assert_eq!(plan.security.cpus, None);
    run.limits.memory = Memory::Bytes(256 << 20);
    run.limits.cpus = Some(parse_cpus("1.5").unwrap());
    let plan = plan_with(&run, &HookLayer::default(), true).unwrap();
    assert_eq!(plan.security.memory_limit, Some(256 << 20));
    let json = serde_json::to_value(&plan).unwrap();
    assert_eq!(json["security"]["memory_limit"], 268435456);
    assert_eq!(json["security"]["cpus"], 1.5);
    run.limits.memory = Memory::Unlimited;
    let plan = plan_with(&run, &HookLayer::default(), true).unwrap();
    assert_eq!(plan.security.memory_limit, None);
}

#[test]
fn reserved_labels_are_refused() {
    let mut run = shell(&[]);
    run.labels = vec!["io.ags.managed=false".into()];
    assert!(plan_with(&run, &HookLayer::default(), true).is_err());
    run.labels = vec!["io.ags.test-id=t1".into()];
    let plan = plan_with(&run, &HookLayer::default(), true).unwrap();
    assert_eq!(plan.labels["io.ags.test-id"], "t1");
}

#[test]
fn slugs() {
    assert_eq!(slug("/a/Hello World!".as_ref()), "hello-world");
    assert_eq!(slug("/".as_ref()), "project");
    assert_eq!(slug("/x/___".as_ref()), "project");
}

#[test]
fn agents_get_home_their_env_and_state_volumes() {
    let run = RunSettings {
        agent: "codex".into(),
        ..Default::default()
    };
    let plan = plan_with(&run, &HookLayer::default(), true).unwrap();
    let env: Vec<(&str, &EnvSource)> = plan.env.iter().map(|e| (e.key.as_str(), &e.source)).collect();
    assert!(
        env.contains(&(
            "HOME",
            &EnvSource::Plain {
                value: "/home/dev".into()
            }
        )),
        "{env:?}"
    );
    assert!(
        env.contains(&(
            "CODEX_HOME",
            &EnvSource::Plain {
                value: "/home/dev/.codex".into()
            }
        )),
        "{env:?}"
    );
    let state: Vec<_> = plan
        .mounts
        .iter()
        .filter(
            |m| matches!(&m.kind, MountKind::Volume { name } if name.starts_with("ags-state-codex-codex-")),
        )
        .collect();
    assert_eq!(state.len(), 1);
    assert_eq!(state[0].destination, std::path::PathBuf::from("/home/dev/.codex"));
    assert!(!state[0].read_only);
    assert_eq!(plan.state_volumes.len(), 1);
    assert_eq!(
        plan.state_volumes[0].labels[LABEL_STATE_WORKDIR],
        "/src/My Project/sub"
    );
    let locked = RunSettings {
        agent: "codex".into(),
        lockdown: true,
        ..Default::default()
    };
    let plan = plan_with(&locked, &HookLayer::default(), true).unwrap();
    assert!(
        !plan
            .mounts
            .iter()
            .any(|m| matches!(&m.kind, MountKind::Volume { name } if name.starts_with("ags-state-"))),
        "lockdown mounts no agent state"
    );
}

#[test]
fn git_guards_are_nested_binds_of_themselves() {
    use crate::git::model::guard::{GitCreate, GitGuard};
    let git = PathBuf::from("/src/My Project/sub/.git");
    let run = RunSettings {
        git_guards: vec![
            GitGuard {
                path: git.clone(),
                read_only: false,
                create: None,
            },
            GitGuard {
                path: git.join("hooks"),
                read_only: true,
                create: Some(GitCreate::Dir),
            },
        ],
        ..shell(&["true"])
    };
    let plan = plan_with(&run, &HookLayer::default(), true).unwrap();
    let binds: Vec<(&PathBuf, bool)> = plan
        .mounts
        .iter()
        .filter_map(|m| match &m.kind {
            MountKind::Bind { source } if source == &m.destination => Some((source, m.read_only)),
            _ => None,
        })
        .collect();
    assert_eq!(
        binds,
        [
            (&PathBuf::from("/src/My Project/sub"), false),
            (&git, false),
            (&git.join("hooks"), true)
        ]
    );
    assert_eq!(plan.git_guards.len(), 2);
}

#[test]
fn sandbox_mode_adds_each_agents_own_switch_and_config_args() {
    let mut run = RunSettings {
        agent: "claude".into(),
        command: vec!["-p".into(), "hi".into()],
        skip_permissions: true,
        agent_args: vec!["--model".into(), "opus".into()],
        ..Default::default()
    };
    let plan = plan_with(&run, &HookLayer::default(), false).unwrap();
    assert_eq!(
        plan.command,
        [
            "claude",
            "--dangerously-skip-permissions",
            "--model",
            "opus",
            "-p",
            "hi"
        ]
    );
    assert!(plan.skip_permissions);
    let sandbox = plan
        .env
        .iter()
        .find(|e| e.key == "IS_SANDBOX")
        .expect("IS_SANDBOX");
    assert_eq!(sandbox.source, EnvSource::Plain { value: "1".into() });
    for (agent, flag) in [
        ("codex", Some("--dangerously-bypass-approvals-and-sandbox")),
        ("gemini", Some("--yolo")),
        ("opencode", Some("--auto")),
        ("pi", None),
    ] {
        run.agent = agent.into();
        run.agent_args.clear();
        let plan = plan_with(&run, &HookLayer::default(), true).unwrap();
        assert_eq!(
            plan.command.get(1).map(String::as_str),
            flag.or(Some("-p")),
            "{agent}"
        );
        assert!(plan.env.iter().all(|e| e.key != "IS_SANDBOX"), "{agent}");
    }
    run.skip_permissions = false;
    run.agent = "claude".into();
    let plan = plan_with(&run, &HookLayer::default(), true).unwrap();
    assert_eq!(plan.command, ["claude", "-p", "hi"]);
    assert!(plan.env.iter().all(|e| e.key != "IS_SANDBOX"));
}

#[test]
fn init_name_timeout_and_ports() {
    let plan = plan_with(&shell(&["true"]), &HookLayer::default(), true).unwrap();
    assert!(plan.init, "init runs as PID 1 by default");
    assert!(plan.ports.is_empty() && plan.timeout_seconds.is_none());
    let run = RunSettings {
        name: Some("my-agent".into()),
        timeout: Some(std::time::Duration::from_millis(1500)),
        no_init: true,
        ..shell(&["true"])
    };
    let plan = plan_with(&run, &HookLayer::default(), true).unwrap();
    assert_eq!(plan.container_name, "my-agent");
    assert_eq!(plan.timeout_seconds, Some(1.5));
    assert!(!plan.init);
    // Publishing needs a network: refused under network = "none", planned otherwise.
    let run = RunSettings {
        publish: vec!["127.0.0.1:1455:1455".into()],
        ..shell(&["true"])
    };
    let err = plan_with(&run, &HookLayer::default(), true).unwrap_err();
    assert!(matches!(err, PlanError::PublishWithoutNetwork), "{err}");
    let cfg = Config {
        network: Network::Open,
        ..config()
    };
    let plan = plan_in(&cfg, &run, &HookLayer::default(), true, false).unwrap();
    assert_eq!(plan.ports.len(), 1);
    assert_eq!(
        (plan.ports[0].host_port, plan.ports[0].container_port),
        (1455, 1455)
    );
}

#[test]
fn bad_values_are_refused_by_the_plan_too() {
    for run in [
        RunSettings {
            name: Some("bad name".into()),
            ..shell(&[])
        },
        RunSettings {
            image: Some("Bad Image".into()),
            ..shell(&[])
        },
        RunSettings {
            publish: vec!["80".into()],
            ..shell(&[])
        },
    ] {
        assert!(plan_with(&run, &HookLayer::default(), true).is_err(), "{run:?}");
    }
}

#[test]
fn selinux_decides_the_label() {
    let plan = plan_in(&config(), &shell(&[]), &HookLayer::default(), true, false).unwrap();
    assert_eq!(plan.security.selinux_label, SelinuxLabel::NotEnabled);
    let plan = plan_in(&config(), &shell(&[]), &HookLayer::default(), true, true).unwrap();
    assert_eq!(plan.security.selinux_label, SelinuxLabel::Disabled);
}

#[test]
fn host_loopback_ports_allow_and_deny_reach_the_plan() {
    use crate::config::{AllowEntry, EgressOrigin};
    let entry = |e: &str| AllowEntry::parse(e).unwrap();
    let rule = |e: &str| crate::egress::model::Rule {
        entry: entry(e),
        origin: EgressOrigin::Config,
        at: None,
    };
    let mut cfg = Config {
        network: Network::Allowlist,
        ..config()
    };
    cfg.egress.allow = vec![rule("127.0.0.1:11434")];
    cfg.egress.deny = vec![rule("localhost:5432"), rule("evil.example")];
    cfg.egress.host_loopback = vec![5432, 8080, 3128];
    let run = RunSettings {
        allow: vec![entry("[::1]:9000"), entry("example.org")],
        ..shell(&["true"])
    };
    let plan = plan_in(&cfg, &run, &HookLayer::default(), true, false).unwrap();
    let e = &plan.egress;
    // Denied 5432 and the forwarder's own 3128 are not opened; --allow adds its entries.
    assert_eq!(e.host_ports, vec![8080, 9000, 11434]);
    let cli: Vec<&str> = e
        .allow
        .iter()
        .filter(|a| a.origin == EgressOrigin::Cli)
        .map(|a| a.entry.entry.as_str())
        .collect();
    assert_eq!(cli, ["[::1]:9000", "example.org"]);
    assert_eq!(e.deny.len(), 2);
    let cmd = plan.container_command.join(" ");
    assert!(
        cmd.contains("--forward 8080 --forward 9000 --forward 11434 --"),
        "{cmd}"
    );
    assert!(plan.env.iter().any(|v| v.key == "HTTP_PROXY"));
    // Open mode: only host_loopback, no proxy variables; a remote launch opens nothing.
    cfg.network = Network::Open;
    let plan = plan_in(&cfg, &run, &HookLayer::default(), true, false).unwrap();
    assert_eq!(plan.egress.host_ports, vec![8080]);
    assert!(plan.egress.proxy.is_some() && plan.egress.allow.is_empty());
    assert!(!plan.env.iter().any(|v| v.key == "HTTP_PROXY"), "{:?}", plan.env);
    let text = crate::plan::text::render(&plan);
    assert!(
        text.contains("port 8080: 127.0.0.1:8080") && text.contains("evil.example every port"),
        "{text}"
    );
}
