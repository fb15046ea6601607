use std::os::unix::fs::PermissionsExt;

use super::*;

struct World {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    program: PathBuf,
}

fn world() -> World {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
    let program = root.join("ags-oci-hook");
    std::fs::write(&program, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    World {
        _tmp: tmp,
        root,
        program,
    }
}

fn opts(w: &World, kind: ServiceKind) -> InstallOptions {
    InstallOptions {
        kind,
        env: ConfEnv {
            containers_conf: None,
            config_home: w.root.join("home/.config"),
            root: w.root.clone(),
        },
        hooks_dir: None,
        program: w.program.clone(),
    }
}

#[test]
fn rootless_install_adds_definitions_and_hooks_dir_then_nothing() {
    let w = world();
    let o = opts(&w, ServiceKind::Rootless);
    let plan = plan(&o).unwrap();
    let hooks = w.root.join("home/.config/containers/oci/hooks.d");
    assert_eq!(plan.hooks_dir, hooks);
    let paths: Vec<&Path> = plan.changes.iter().map(|c| c.path.as_path()).collect();
    let conf = w.root.join("home/.config/containers/containers.conf");
    assert_eq!(
        paths,
        [
            hooks.join("ags-poststart.json").as_path(),
            &hooks.join("ags-poststop.json"),
            &conf
        ]
    );
    assert_eq!(
        diff(&plan.changes[2]),
        format!(
            "--- {} (new file)\n+++ {}\n+[engine]\n+hooks_dir = [\"{}\"]\n",
            conf.display(),
            conf.display(),
            hooks.display()
        )
    );
    apply(&plan).unwrap();
    assert_eq!(
        crate::events::oci::definitions::status(o.kind, &o.env),
        crate::events::oci::OciHooksStatus::Active {
            dir: hooks,
            program: w.program.clone()
        }
    );
    assert!(super::plan(&o).unwrap().changes.is_empty(), "idempotent");
}

#[test]
fn rootful_install_keeps_the_default_dir_in_its_drop_in() {
    let w = world();
    let mut o = opts(&w, ServiceKind::Rootful);
    o.hooks_dir = Some(w.root.join("hooks"));
    let plan = plan(&o).unwrap();
    let conf = plan.changes.last().unwrap();
    assert_eq!(
        conf.path,
        w.root
            .join("etc/containers/containers.conf.d/60-ags-oci-hooks.conf")
    );
    assert!(
        conf.new.ends_with(&format!(
            "[engine]\nhooks_dir = [\"{}\", \"{}\"]\n",
            w.root.join("usr/share/containers/oci/hooks.d").display(),
            w.root.join("hooks").display()
        )),
        "{}",
        conf.new
    );
    // Installing into the default directory needs no configuration change at all.
    let default = super::plan(&opts(&w, ServiceKind::Rootful)).unwrap();
    assert_eq!(default.changes.len(), 2);
}

#[test]
fn a_program_others_can_replace_is_refused() {
    let w = world();
    std::fs::set_permissions(&w.program, std::fs::Permissions::from_mode(0o777)).unwrap();
    let err = plan(&opts(&w, ServiceKind::Rootless)).unwrap_err().to_string();
    assert!(err.contains("can be changed by another user"), "{err}");
    assert!(err.contains("install -D -m 0755"), "{err}");
    let mut o = opts(&w, ServiceKind::Rootless);
    o.program = "relative".into();
    assert!(plan(&o).unwrap_err().to_string().contains("absolute"));
}
