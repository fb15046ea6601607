use std::fs;

use super::safety::MAX_CONFIG_BYTES;
use super::*;

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
    fs::create_dir_all(project.join("sub")).unwrap();
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

fn opts(workdir: &Path) -> LoadOptions {
    LoadOptions {
        workdir: Some(workdir.into()),
        ..Default::default()
    }
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

#[test]
fn missing_global_config_means_defaults() {
    let e = env();
    let cfg = load_with(e.paths.clone(), &opts(&e.project.join("sub"))).unwrap();
    assert_eq!(cfg.image, DEFAULT_IMAGE);
    assert_eq!(cfg.project, e.project);
    assert_eq!(cfg.workdir, e.project.join("sub"));
    assert!(cfg.primary.is_none() && cfg.prepare_hooks.is_empty());
}

#[test]
fn unknown_key_is_named() {
    let e = env();
    write(
        &e.paths.global_config(),
        "[sandbox]\nimage = \"x\"\nimagee = \"y\"\n",
    );
    let err = load_with(e.paths.clone(), &opts(&e.project))
        .unwrap_err()
        .to_string();
    assert!(err.contains("imagee"), "{err}");
}

#[test]
fn hooks_resolve_relative_to_their_file_and_accumulate() {
    let e = env();
    write(
        &e.paths.global_config(),
        "[[prepare_hook]]\nname = \"g\"\nexecutable = \"./bin/g\"\n",
    );
    write(
        &e.project.join(".ags/config.toml"),
        "[[prepare_hook]]\nname = \"p\"\nexecutable = \"../hooks/p\"\nargs = [\"--x\"]\ntimeout_seconds = 5\n",
    );
    write(
        &e.paths.overlay_trust_file(),
        &format!("{}\n", e.project.display()),
    );
    let cfg = load_with(e.paths.clone(), &opts(&e.project)).unwrap();
    let names: Vec<_> = cfg.prepare_hooks.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["g", "p"]);
    assert_eq!(
        cfg.prepare_hooks[0].executable,
        e.paths.config_home.join("ags/bin/g")
    );
    assert_eq!(cfg.prepare_hooks[0].timeout_seconds, 30);
    assert_eq!(cfg.prepare_hooks[0].scope, HookScope::Global);
    assert_eq!(cfg.prepare_hooks[1].executable, e.project.join("hooks/p"));
    assert_eq!(
        cfg.prepare_hooks[1].scope,
        HookScope::Project {
            root: e.project.clone()
        }
    );
}

#[test]
fn untrusted_overlay_without_hooks_is_skipped_with_a_warning() {
    let e = env();
    write(&e.project.join(".ags/config.toml"), "");
    let cfg = load_with(e.paths.clone(), &opts(&e.project)).unwrap();
    assert!(cfg.overlay.is_none());
    assert!(
        cfg.warnings[0].contains("skipping untrusted project overlay"),
        "{:?}",
        cfg.warnings
    );
}

#[test]
fn untrusted_overlay_with_hooks_fails() {
    let e = env();
    write(
        &e.project.join(".ags/config.toml"),
        "[[prepare_hook]]\nname = \"p\"\nexecutable = \"x\"\n",
    );
    let err = load_with(e.paths.clone(), &opts(&e.project)).unwrap_err();
    assert!(matches!(err, ConfigError::OverlayHooksUntrusted { .. }), "{err}");
}

#[test]
fn overlay_may_not_set_the_image() {
    let e = env();
    write(
        &e.project.join(".ags/config.toml"),
        "[sandbox]\nimage = \"evil\"\n",
    );
    write(
        &e.paths.overlay_trust_file(),
        &format!("{}\n", e.project.display()),
    );
    let err = load_with(e.paths.clone(), &opts(&e.project))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("sandbox.image may only be set in the global config"),
        "{err}"
    );
}

#[test]
fn explicit_overlay_as_primary_is_loaded_once_with_project_scope() {
    let e = env();
    let overlay = e.project.join(".ags/config.toml");
    write(&overlay, "[[prepare_hook]]\nname = \"p\"\nexecutable = \"x\"\n");
    let o = LoadOptions {
        config: Some(overlay.clone()),
        ..opts(&e.project)
    };
    let cfg = load_with(e.paths.clone(), &o).unwrap();
    assert_eq!(cfg.prepare_hooks.len(), 1);
    assert_eq!(
        cfg.prepare_hooks[0].scope,
        HookScope::Project {
            root: e.project.clone()
        }
    );
    assert!(cfg.overlay.is_none());
}

#[test]
fn another_repositorys_overlay_as_primary_has_that_repositorys_scope() {
    let e = env();
    let other = e.project.parent().unwrap().join("other");
    fs::create_dir_all(other.join(".git")).unwrap();
    let overlay = other.join(".ags/config.toml");
    write(&overlay, "[[prepare_hook]]\nname = \"p\"\nexecutable = \"x\"\n");
    // Named through a symlink and a `..`: the scope follows where the file is.
    std::os::unix::fs::symlink(&other, e.project.join("link")).unwrap();
    for named in [overlay.clone(), e.project.join("link/.git/../.ags/config.toml")] {
        let o = LoadOptions {
            config: Some(named.clone()),
            ..opts(&e.project)
        };
        let cfg = load_with(e.paths.clone(), &o).unwrap();
        assert_eq!(
            cfg.prepare_hooks[0].scope,
            HookScope::Project { root: other.clone() },
            "{}",
            named.display()
        );
    }
    let plain = e.project.parent().unwrap().join("elsewhere/config.toml");
    write(&plain, "[[prepare_hook]]\nname = \"p\"\nexecutable = \"x\"\n");
    let o = LoadOptions {
        config: Some(plain),
        ..opts(&e.project)
    };
    let cfg = load_with(e.paths.clone(), &o).unwrap();
    assert_eq!(cfg.prepare_hooks[0].scope, HookScope::Global);
}

#[test]
fn declaration_limits_and_timeouts() {
    let e = env();
    let many = |n: usize| -> String {
        (0..n)
            .map(|i| format!("[[prepare_hook]]\nname = \"h{i}\"\nexecutable = \"x\"\n"))
            .collect()
    };
    write(&e.paths.global_config(), &many(64));
    let cfg = load_with(e.paths.clone(), &opts(&e.project)).expect("exactly 64 are accepted");
    assert_eq!(cfg.prepare_hooks.len(), 64);
    write(&e.paths.global_config(), &many(65));
    let err = load_with(e.paths.clone(), &opts(&e.project))
        .unwrap_err()
        .to_string();
    assert!(err.contains("at most 64 per config file"), "{err}");
    let timeout = |t: i64| {
        write(
            &e.paths.global_config(),
            &format!("[[prepare_hook]]\nname = \"h\"\nexecutable = \"x\"\ntimeout_seconds = {t}\n"),
        );
        load_with(e.paths.clone(), &opts(&e.project))
    };
    for ok in [1, 300] {
        let cfg = timeout(ok).unwrap_or_else(|e| panic!("timeout {ok} is accepted: {e}"));
        assert_eq!(cfg.prepare_hooks[0].timeout_seconds, ok as u32);
    }
    for bad in [0, 301, -1] {
        let err = timeout(bad).unwrap_err().to_string();
        assert!(err.contains("prepare_hook[0].timeout_seconds"), "{bad}: {err}");
    }
    write(
        &e.paths.global_config(),
        "[[prepare_hook]]\nname = \"a b\"\nexecutable = \"x\"\n",
    );
    let err = load_with(e.paths.clone(), &opts(&e.project))
        .unwrap_err()
        .to_string();
    assert!(err.contains("prepare_hook[0].name"), "{err}");
}

#[test]
fn lifecycle_declarations_are_kept_per_event() {
    let e = env();
    write(
        &e.paths.global_config(),
        "[[prepare_hook]]\nname = \"p\"\nexecutable = \"x\"\n\
         [[started_hook]]\nname = \"s\"\nexecutable = \"bin/s\"\nargs = [\"-v\"]\n\
         [[finished_hook]]\nname = \"f\"\nexecutable = \"/abs/f\"\ntimeout_seconds = 5\n",
    );
    let cfg = load_with(e.paths.clone(), &opts(&e.project)).unwrap();
    let names = |d: &[HookDecl]| d.iter().map(|h| (h.event, h.name.clone())).collect::<Vec<_>>();
    assert_eq!(names(&cfg.prepare_hooks), [(HookEvent::Prepare, "p".to_string())]);
    assert_eq!(names(&cfg.started_hooks), [(HookEvent::Started, "s".to_string())]);
    assert_eq!(
        names(&cfg.finished_hooks),
        [(HookEvent::Finished, "f".to_string())]
    );
    let config_dir = e.paths.global_config().parent().unwrap().to_path_buf();
    assert_eq!(cfg.started_hooks[0].executable, config_dir.join("bin/s"));
    assert_eq!(cfg.finished_hooks[0].timeout_seconds, 5);
    write(
        &e.paths.global_config(),
        "[[finished_hook]]\nname = \"f\"\nexecutable = \"x\"\ntimeout_seconds = 0\n",
    );
    let err = load_with(e.paths.clone(), &opts(&e.project))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("finished_hook[0].timeout_seconds: 0 is outside 1..=300"),
        "{err}"
    );
    let many: String = (0..65)
        .map(|i| format!("[[started_hook]]\nname = \"h{i}\"\nexecutable = \"x\"\n"))
        .collect();
    write(&e.paths.global_config(), &many);
    let err = load_with(e.paths.clone(), &opts(&e.project))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("started_hook: 65 declarations; at most 64 per config file"),
        "{err}"
    );
}

#[test]
fn untrusted_overlay_with_lifecycle_hooks_fails_naming_the_events() {
    let e = env();
    write(
        &e.project.join(".ags/config.toml"),
        "[[finished_hook]]\nname = \"f\"\nexecutable = \"x\"\n\
         [[prepare_hook]]\nname = \"p\"\nexecutable = \"x\"\n",
    );
    let err = load_with(e.paths.clone(), &opts(&e.project)).unwrap_err();
    assert!(matches!(err, ConfigError::OverlayHooksUntrusted { .. }), "{err}");
    assert!(
        err.to_string().contains("declares prepare and finished hooks"),
        "{err}"
    );
}

#[test]
fn overlay_may_not_set_everyday_settings() {
    let e = env();
    write(
        &e.paths.overlay_trust_file(),
        &format!("{}\n", e.project.display()),
    );
    let cases = [
        (
            "[sandbox]\nenv_passthrough = [\"AWS_SECRET_ACCESS_KEY\"]\n",
            "sandbox.env_passthrough",
        ),
        ("[[mount]]\nsource = \"/home\"\n", "mount"),
        ("[agent.claude]\nskip_permissions = true\n", "agent"),
        ("[git]\nssh_agent = true\n", "git"),
        ("[[project]]\npath = \"/\"\nimage = \"evil\"\n", "project"),
        ("[sandbox]\nprotect_git = false\n", "sandbox.protect_git"),
        ("[sandbox]\nshared_state = true\n", "sandbox.shared_state"),
        ("[op]\npath = \"/tmp/op\"\n", "op"),
        // The agent can write the overlay: it must not open the protected files to itself.
        ("[protect]\nallow = [\".envrc\"]\n", "protect"),
        // An agent that writes the overlay must not lift the limits that hold it.
        ("[sandbox]\nmemory = \"none\"\n", "sandbox.memory"),
        ("[sandbox]\ncpus = 64\n", "sandbox.cpus"),
        ("[sandbox]\ntmpfs_size = \"100g\"\n", "sandbox.tmpfs_size"),
        ("[ssh]\npath = \"/tmp/ssh\"\n", "ssh"),
        // A CA the agent chose would be trusted by every image built after.
        ("[image]\nca_certs = [\"/tmp/evil.crt\"]\n", "image"),
    ];
    for (toml, key) in cases {
        write(&e.project.join(".ags/config.toml"), toml);
        let err = load_with(e.paths.clone(), &opts(&e.project))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&format!("{key} may only be set in the global config")),
            "{toml}: {err}"
        );
    }
}

#[test]
fn everyday_settings_resolve_with_defaults_and_syntax_checks() {
    let e = env();
    let global = e.paths.global_config();
    write(
        &global,
        &format!(
            "[sandbox]\nimage = \"base\"\nenv_passthrough = [\"ANTHROPIC_API_KEY\"]\n\n\
             [[mount]]\nsource = \"~/data\"\n\n[[mount]]\nsource = \"/opt/x\"\ntarget = \"/opt/y\"\n\
             readonly = true\noptional = true\n\n\
             [agent.claude]\nargs = [\"--model\", \"opus\"]\nenv = {{ SECRET_TOKEN = \"hidden-value\" }}\n\
             skip_permissions = true\n\n[git]\nssh_agent = false\n\n\
             [[project]]\npath = \"{root}\"\nimage = \"outer\"\n\n\
             [[project]]\npath = \"{project}\"\nimage = \"inner\"\n\n\
             [[project]]\npath = \"/does/not/exist\"\nimage = \"never\"\n",
            root = e.project.parent().unwrap().display(),
            project = e.project.display()
        ),
    );
    let cfg = load_with(e.paths.clone(), &opts(&e.project.join("sub"))).unwrap();
    assert_eq!(cfg.image, "inner", "the most specific [[project]] wins");
    let u = &cfg.user;
    assert_eq!(u.env_passthrough, ["ANTHROPIC_API_KEY"]);
    assert_eq!(u.mounts[0].source, e.paths.home.join("data"));
    assert_eq!((u.mounts[0].readonly, u.mounts[0].optional), (false, false));
    assert_eq!(u.mounts[1].target.as_deref(), Some(Path::new("/opt/y")));
    assert!(u.mounts[1].readonly && u.mounts[1].optional);
    let claude = &u.agents["claude"];
    assert!(claude.skip_permissions);
    assert_eq!(claude.args, ["--model", "opus"]);
    assert!(!format!("{cfg:?}").contains("hidden-value"));
    assert!(!u.git.ssh_agent && u.git.identity);
    assert!(
        u.protect_git && !u.shared_state && u.op_path.is_none(),
        "defaults"
    );

    for (toml, key) in [
        (
            "[sandbox]\nenv_passthrough = [\"A-B\"]\n",
            "sandbox.env_passthrough[0]",
        ),
        ("[[mount]]\nsource = \"rel\"\n", "mount[0].source"),
        (
            "[[mount]]\nsource = \"/a\"\ntarget = \"/a:b\"\n",
            "mount[0].target",
        ),
        ("[agent.pi]\nenv = { K = \"a\\nb\" }\n", "agent.pi.env.K"),
        ("[[project]]\npath = \"/\"\nimage = \" \"\n", "project[0].image"),
        ("[op]\npath = \"op\"\n", "op.path"),
        (
            "[git]\nssh_keys = [\"SHA256:Kkj8Z9tc5NjuwVC0D1VADBULbVKqbjTzIbHbMaemHEw\", \"MD5:ab\"]\n",
            "git.ssh_keys[1]",
        ),
        ("[sandbox]\nmemory = \"lots\"\n", "sandbox.memory"),
        ("[sandbox]\nmemory = 1024\n", "sandbox.memory"),
        ("[sandbox]\ncpus = 0\n", "sandbox.cpus"),
        ("[sandbox]\ncpus = \"1.23456\"\n", "sandbox.cpus"),
        ("[sandbox]\ntmpfs_size = \"10k\"\n", "sandbox.tmpfs_size"),
        ("[ssh]\npath = \"ssh\"\n", "ssh.path"),
        ("[git]\npath = \"git\"\n", "git.path"),
    ] {
        write(&global, toml);
        let err = load_with(e.paths.clone(), &opts(&e.project)).unwrap_err();
        assert!(
            matches!(&err, ConfigError::Invalid { key: k, .. } if k == key),
            "{toml}: {err}"
        );
    }
}

#[test]
fn resource_limits_resolve_from_the_global_config() {
    use crate::limits::{GIB, MIB, Memory};
    let e = env();
    let cfg = load_with(e.paths.clone(), &opts(&e.project)).unwrap();
    assert_eq!(cfg.user.limits, crate::limits::LimitSettings::default());
    assert_eq!(cfg.user.limits.memory, Memory::Auto);
    let global = e.paths.global_config();
    for (toml, memory, cpus, tmpfs) in [
        (
            "memory = \"2g\"\ncpus = 1.5\ntmpfs_size = \"512m\"",
            Memory::Bytes(2 * GIB),
            Some(1500),
            512 * MIB,
        ),
        (
            "memory = 268435456\ncpus = 2",
            Memory::Bytes(256 * MIB),
            Some(2000),
            GIB,
        ),
        (
            "memory = \"none\"\ncpus = \"0.5\"",
            Memory::Unlimited,
            Some(500),
            GIB,
        ),
    ] {
        write(&global, &format!("[sandbox]\n{toml}\n"));
        let l = load_with(e.paths.clone(), &opts(&e.project)).unwrap().user.limits;
        assert_eq!(
            (l.memory, l.cpus.map(|c| c.millis()), l.tmpfs_size),
            (memory, cpus, tmpfs),
            "{toml}"
        );
    }
    write(&global, "[sandbox]\nmemory = \"1m\"\n");
    let err = load_with(e.paths.clone(), &opts(&e.project))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("sandbox.memory: \"1m\" is below the smallest memory limit Podman accepts (6m)"),
        "{err}"
    );
}

fn chmod(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn config_and_trust_files_writable_by_others_are_refused() {
    let e = env();
    let global = e.paths.global_config();
    write(&global, "[sandbox]\nimage = \"x\"\n");
    chmod(global.parent().unwrap(), 0o700);
    chmod(&global, 0o666);
    let err = load_with(e.paths.clone(), &opts(&e.project))
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        format!(
            "config file {0} has mode 0666: other users can change it, so ags does not use it; run `chmod go-w {0}`",
            global.display()
        )
    );
    chmod(&global, 0o600);
    chmod(global.parent().unwrap(), 0o777);
    let err = load_with(e.paths.clone(), &opts(&e.project))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("has mode 0777") && err.contains("chmod go-w"),
        "{err}"
    );
    chmod(global.parent().unwrap(), 0o700);
    assert!(load_with(e.paths.clone(), &opts(&e.project)).is_ok());

    let trust = e.paths.overlay_trust_file();
    write(&e.project.join(".ags/config.toml"), "");
    write(&trust, &format!("{}\n", e.project.display()));
    chmod(&trust, 0o646);
    let err = load_with(e.paths.clone(), &opts(&e.project))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(&format!("overlay trust file {} has mode 0646", trust.display())),
        "{err}"
    );
    chmod(&trust, 0o600);
    let overlay = e.project.join(".ags/config.toml");
    chmod(&overlay, 0o622);
    let err = load_with(e.paths.clone(), &opts(&e.project))
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("project config overlay"), "{err}");
    chmod(&overlay, 0o644);
    assert!(
        load_with(e.paths.clone(), &opts(&e.project))
            .unwrap()
            .overlay
            .is_some()
    );
}

#[test]
fn an_overlay_parse_error_is_escaped_and_capped() {
    let e = env();
    let long = "A".repeat(500_000);
    let overlay = e.project.join(".ags/config.toml");
    write(&overlay, &format!("x = \"\x1b]0;owned\x07\x1b[2J{long}\n"));
    // Untrusted: skipped with a note (the agent can write it; it must not stop every launch).
    let cfg = load_with(e.paths.clone(), &opts(&e.project)).unwrap();
    assert!(cfg.overlay.is_none());
    let note = cfg.warnings.join("\n");
    assert!(note.starts_with("skipping untrusted project overlay"), "{note}");
    assert!(note.contains("no hook runs from it"), "{note}");
    // Trusted: refused.
    write(
        &e.paths.overlay_trust_file(),
        &format!("{}\n", e.project.display()),
    );
    let err = load_with(e.paths.clone(), &opts(&e.project))
        .unwrap_err()
        .to_string();
    for shown in [&err, &note] {
        assert!(!shown.chars().any(|c| c.is_control() && c != '\n'), "{shown:?}");
        assert!(shown.contains("\\u{1b}]0;owned\\u{7}"), "{shown}");
        assert!(shown.len() < 4000, "{} bytes", shown.len());
    }

    let huge = "#".repeat(MAX_CONFIG_BYTES as usize + 1);
    write(&overlay, &huge);
    let err = load_with(e.paths.clone(), &opts(&e.project))
        .unwrap_err()
        .to_string();
    assert!(err.contains("larger than 1048576 bytes"), "{err}");
    fs::remove_file(e.paths.overlay_trust_file()).unwrap();
    let cfg = load_with(e.paths.clone(), &opts(&e.project)).unwrap();
    assert!(
        cfg.warnings.join("\n").contains("larger than 1048576 bytes"),
        "{:?}",
        cfg.warnings
    );
}

#[test]
fn a_nested_git_that_hides_a_trusted_overlay_is_reported() {
    let e = env();
    write(&e.project.join(".ags/config.toml"), "");
    write(
        &e.paths.overlay_trust_file(),
        &format!("{}\n", e.project.display()),
    );
    let sub = e.project.join("sub");
    assert!(
        load_with(e.paths.clone(), &opts(&sub))
            .unwrap()
            .warnings
            .is_empty()
    );
    fs::create_dir(sub.join(".git")).unwrap();
    let cfg = load_with(e.paths.clone(), &opts(&sub)).unwrap();
    assert_eq!(cfg.project, sub);
    assert!(cfg.overlay.is_none());
    assert_eq!(cfg.warnings.len(), 1, "{:?}", cfg.warnings);
    let note = &cfg.warnings[0];
    assert!(
        note.starts_with(&format!(
            "not using the project overlay {}/.ags/config.toml of the trusted repository {}: {} has its own .git",
            e.project.display(),
            e.project.display(),
            sub.display()
        )),
        "{note}"
    );
}

#[test]
fn a_fifo_config_is_refused_without_blocking() {
    let e = env();
    let fifo = e.project.join("fifo.toml");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    // Opened with O_NONBLOCK: a FIFO without a writer would block a plain open forever.
    let err = parse_file(&fifo).unwrap_err().to_string();
    assert!(err.contains("not a regular file"), "{err}");
}

#[test]
fn a_projects_network_goes_over_the_global_one() {
    let e = env();
    write(
        &e.paths.global_config(),
        &format!(
            "[network]\nmode = \"open\"\nallow = [\"a.example\"]\ndeny = [\"x.example\"]\n\n\
             [[project]]\npath = \"{project}\"\n[project.network]\nmode = \"allowlist\"\nallow = [\"b.example:8443\"]\nhost_loopback = [11434]\n\n\
             [[project]]\npath = \"/does/not/exist\"\n[project.network]\nallow = [\"never.example\"]\n",
            project = e.project.display()
        ),
    );
    let cfg = load_with(e.paths.clone(), &opts(&e.project.join("sub"))).unwrap();
    assert_eq!(cfg.network, Network::Allowlist);
    let allow: Vec<(&str, Option<&str>)> = cfg
        .egress
        .allow
        .iter()
        .map(|r| (r.entry.entry.as_str(), r.at.as_deref()))
        .collect();
    let file = e.paths.global_config().display().to_string();
    assert_eq!(
        allow,
        [
            ("a.example", Some(format!("{file}:3").as_str())),
            ("b.example:8443", Some(format!("{file}:10").as_str()))
        ]
    );
    assert_eq!(cfg.egress.deny.len(), 1);
    assert_eq!(cfg.egress.host_loopback, [11434]);
    // Another project gets the global network alone.
    let other = e.project.parent().unwrap().join("other");
    fs::create_dir_all(&other).unwrap();
    let cfg = load_with(e.paths.clone(), &opts(&other)).unwrap();
    assert_eq!((cfg.network, cfg.egress.allow.len()), (Network::Open, 1));
}
