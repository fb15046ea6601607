use std::os::unix::fs::symlink;

use super::*;

fn tmp() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    (dir, root)
}

fn rules_with(protected: Vec<Protected>, writable: &[(&Path, bool)]) -> Rules {
    let mut rules = Rules::new(protected);
    for (p, running) in writable {
        rules.writable(WritableRoot {
            path: p.to_path_buf(),
            owner: if *running {
                "running ags container c".into()
            } else {
                "this launch's workdir".into()
            },
            running: *running,
        });
    }
    rules
}

#[test]
fn system_trees_are_refused_as_workdir_but_not_as_hook_mount() {
    let rules = Rules::new(system_trees());
    for p in ["/", "/etc", "/usr/share", "/var", "/tmp", "/run", "/proc"] {
        let err = check(Path::new(p), &Role::Workdir, &rules)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("system directory") && err.contains("run ags from a project directory"),
            "{p}: {err}"
        );
    }
    let hook = Role::HookMount { hook: "h".into() };
    assert!(check(Path::new("/etc"), &hook, &rules).is_ok());
    let (_d, root) = tmp();
    assert!(
        check(&root, &Role::Workdir, &rules).is_ok(),
        "a directory below /tmp is fine"
    );
}

#[test]
fn a_workdir_through_a_user_symlink_resolves_and_reports_the_link() {
    let (_d, root) = tmp();
    std::fs::create_dir(root.join("real")).unwrap();
    symlink(root.join("real"), root.join("link")).unwrap();
    let checked = check(&root.join("link"), &Role::Workdir, &Rules::default()).unwrap();
    assert_eq!(checked.path, root.join("real"));
    assert_eq!(checked.links, [(root.join("link"), root.join("real"))]);
}

#[test]
fn a_workdir_symlink_to_a_credential_directory_is_refused_by_its_target() {
    let (_d, root) = tmp();
    let ssh = root.join("home/.ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::create_dir(root.join("proj")).unwrap();
    symlink(&ssh, root.join("proj/packages")).unwrap();
    let rules = Rules::new([Protected::overlap(
        "credential directory",
        &ssh,
        Class::Credentials,
    )]);
    let err = check(&root.join("proj/packages"), &Role::Workdir, &rules)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&format!(
            "overlaps the credential directory {s}: its real path {s} is that location",
            s = ssh.display()
        )),
        "{err}"
    );
}

#[test]
fn a_workdir_inside_a_running_launchs_mount_is_refused_but_not_inside_its_own() {
    let (_d, root) = tmp();
    std::fs::create_dir(root.join("sub")).unwrap();
    let running = rules_with(vec![], &[(&root, true)]);
    let err = check(&root.join("sub"), &Role::Workdir, &running)
        .unwrap_err()
        .to_string();
    assert!(err.contains("lies inside running ags container c"), "{err}");
    assert!(
        check(&root, &Role::Workdir, &running).is_ok(),
        "the same workdir is fine"
    );
    let own = rules_with(vec![], &[(&root, false)]);
    assert!(check(&root.join("sub"), &Role::Workdir, &own).is_ok());
    assert!(check(&root.join("sub"), &Role::AddDir, &own).is_err());
}

#[test]
fn a_symlink_inside_a_writable_root_is_refused_for_every_role() {
    let (_d, root) = tmp();
    std::fs::create_dir_all(root.join("w")).unwrap();
    std::fs::create_dir_all(root.join("elsewhere")).unwrap();
    symlink(root.join("elsewhere"), root.join("w/l")).unwrap();
    let rules = rules_with(vec![], &[(&root.join("w"), false)]);
    for role in [Role::Workdir, Role::AddDir, Role::HookMount { hook: "h".into() }] {
        let err = check(&root.join("w/l"), &role, &rules).unwrap_err().to_string();
        assert!(
            err.contains("which lies inside this launch's workdir"),
            "{role:?}: {err}"
        );
    }
}

#[test]
fn non_utf8_paths_are_refused() {
    use std::os::unix::ffi::OsStrExt;
    let (_d, root) = tmp();
    let bad = root.join(std::ffi::OsStr::from_bytes(b"caf\xe9"));
    std::fs::create_dir(&bad).unwrap();
    let err = check(&bad, &Role::Workdir, &Rules::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("is not valid UTF-8"), "{err}");
}

#[test]
fn files_are_refused_as_workdir() {
    let (_d, root) = tmp();
    std::fs::write(root.join("f"), "").unwrap();
    let err = check(&root.join("f"), &Role::AddDir, &Rules::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("is a regular file; only directories"), "{err}");
}

#[test]
fn system_layout_links_are_followed_silently_even_for_hooks() {
    let lib = Path::new("/lib");
    if !std::fs::symlink_metadata(lib).is_ok_and(|m| m.file_type().is_symlink()) {
        return; // not a merged-/usr host
    }
    let hook = Role::HookMount { hook: "h".into() };
    let checked = check(lib, &hook, &Rules::default()).unwrap();
    assert_eq!(checked.path, std::fs::canonicalize(lib).unwrap());
    assert!(checked.links.is_empty(), "{:?}", checked.links);
}
