use super::*;

fn env(root: &Path) -> ConfEnv {
    ConfEnv {
        containers_conf: None,
        config_home: root.join("home/.config"),
        root: root.into(),
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn dirs(list: &[&str]) -> Vec<PathBuf> {
    list.iter().map(PathBuf::from).collect()
}

#[test]
fn effective_value_follows_the_read_order() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let e = env(root);
    assert_eq!(
        effective_hooks_dirs(ServiceKind::Rootful, &e).unwrap(),
        [root.join("usr/share/containers/oci/hooks.d")]
    );
    assert!(
        effective_hooks_dirs(ServiceKind::Rootless, &e)
            .unwrap()
            .is_empty()
    );
    write(
        &root.join("etc/containers/containers.conf"),
        "[engine]\nhooks_dir = [\"/a\"]\n",
    );
    write(
        &root.join("etc/containers/containers.conf.d/50-x.conf"),
        "[engine]\nruntime = \"runc\"\n",
    );
    assert_eq!(
        effective_hooks_dirs(ServiceKind::Rootful, &e).unwrap(),
        dirs(&["/a"])
    );
    write(
        &e.config_home.join("containers/containers.conf"),
        "[engine]\nhooks_dir = [\"/u\"]\n",
    );
    assert_eq!(
        effective_hooks_dirs(ServiceKind::Rootful, &e).unwrap(),
        dirs(&["/a"])
    );
    assert_eq!(
        effective_hooks_dirs(ServiceKind::Rootless, &e).unwrap(),
        dirs(&["/u"])
    );
    let only = ConfEnv {
        containers_conf: Some(root.join("only.conf")),
        ..e
    };
    assert!(
        effective_hooks_dirs(ServiceKind::Rootless, &only)
            .unwrap()
            .is_empty()
    );
    assert_eq!(target_file(ServiceKind::Rootful, &only), root.join("only.conf"));
}

#[test]
fn set_hooks_dir_edits_one_line() {
    let p = Path::new("/c.conf");
    let want = dirs(&["/a", "/b"]);
    assert_eq!(
        set_hooks_dir(p, "", &want).unwrap(),
        "[engine]\nhooks_dir = [\"/a\", \"/b\"]\n"
    );
    assert_eq!(
        set_hooks_dir(p, "# mine\n[containers]\nx = 1", &want).unwrap(),
        "# mine\n[containers]\nx = 1\n\n[engine]\nhooks_dir = [\"/a\", \"/b\"]\n"
    );
    assert_eq!(
        set_hooks_dir(p, "[engine] # e\nruntime = \"runc\"\n[other]\n", &want).unwrap(),
        "[engine] # e\nhooks_dir = [\"/a\", \"/b\"]\nruntime = \"runc\"\n[other]\n"
    );
    assert_eq!(
        set_hooks_dir(
            p,
            "[engine]\n  hooks_dir= [\"/a\"] # old\nruntime = \"runc\"\n",
            &want
        )
        .unwrap(),
        "[engine]\nhooks_dir = [\"/a\", \"/b\"]\nruntime = \"runc\"\n"
    );
}

#[test]
fn set_hooks_dir_refuses_what_it_cannot_edit_safely() {
    let p = Path::new("/c.conf");
    let want = dirs(&["/a"]);
    let multi = set_hooks_dir(p, "[engine]\nhooks_dir = [\n  \"/x\",\n]\n", &want).unwrap_err();
    assert_eq!(
        multi.to_string(),
        "/c.conf: cannot add /a to hooks_dir automatically (its hooks_dir spans several lines); \
         add it to the [engine] hooks_dir list by hand"
    );
    let dotted = set_hooks_dir(p, "engine.hooks_dir = [\"/x\"]\n", &want).unwrap_err();
    assert!(dotted.to_string().contains("in a form other than"), "{dotted}");
    let broken = set_hooks_dir(p, "[engine\n", &want).unwrap_err();
    assert!(broken.to_string().contains("fix the file first"), "{broken}");
}
