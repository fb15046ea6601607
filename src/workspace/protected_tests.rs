use super::*;

#[test]
fn the_table_is_plain_and_no_entry_holds_another() {
    for a in PROTECTED {
        assert!(!a.path.is_empty() && !a.path.starts_with('/') && !a.path.ends_with('/'));
        assert!(a.path.split('/').all(|c| !c.is_empty() && c != "." && c != ".."));
        for b in PROTECTED.iter().filter(|b| b.path != a.path) {
            assert!(
                !Path::new(b.path).starts_with(a.path),
                "{} holds {}",
                a.path,
                b.path
            );
        }
    }
}

#[test]
fn existing_paths_are_read_only_with_their_directories_pinned_missing_ones_watched() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_path_buf();
    std::fs::create_dir_all(root.join(".vscode")).unwrap();
    std::fs::write(root.join(".vscode/tasks.json"), "{}").unwrap();
    std::fs::create_dir_all(root.join(".github/workflows")).unwrap();
    let p = protection(std::slice::from_ref(&root), &[".github/workflows"]).unwrap();
    let handling = |rel: &str| p.paths.iter().find(|x| x.rel == rel).unwrap().handling;
    assert_eq!(handling(".vscode/tasks.json"), Handling::ReadOnly);
    assert_eq!(handling(".vscode/settings.json"), Handling::Watched);
    assert_eq!(handling(".github/workflows"), Handling::Allowed);
    assert_eq!(handling(".claude/settings.json"), Handling::Watched);
    let mounts: Vec<(PathBuf, bool)> = p.mounts.iter().map(|g| (g.path.clone(), g.read_only)).collect();
    assert_eq!(
        mounts,
        [
            (root.join(".vscode"), false),
            (root.join(".vscode/tasks.json"), true)
        ]
    );
}

#[test]
fn a_symbolic_link_on_the_way_refuses_the_launch_naming_the_allow_key() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_path_buf();
    std::fs::create_dir_all(root.join("elsewhere/workflows")).unwrap();
    std::os::unix::fs::symlink("elsewhere", root.join(".github")).unwrap();
    let err = protection(std::slice::from_ref(&root), &[])
        .unwrap_err()
        .to_string();
    assert!(err.contains(".github: it is a symbolic link"), "{err}");
    assert!(err.contains("[protect] allow = [\".github/workflows\"]"), "{err}");
    // Allowed paths (both under .github) are not looked at.
    protection(
        std::slice::from_ref(&root),
        &[".github/workflows", ".github/actions", ".github/hooks"],
    )
    .unwrap();
}

#[test]
fn allow_names_must_come_from_the_table() {
    let lists = vec![(
        "protect.allow".to_string(),
        vec![".github/workflows/".to_string()],
    )];
    assert_eq!(
        check_allow(Path::new("/c"), &lists).unwrap(),
        [".github/workflows"]
    );
    let bad = vec![(
        "project[0].protect_allow".to_string(),
        vec!["Makefile".to_string()],
    )];
    let err = check_allow(Path::new("/c"), &bad).unwrap_err().to_string();
    assert!(err.contains("project[0].protect_allow names `Makefile`"), "{err}");
    assert!(err.contains(".vscode/tasks.json"), "{err}");
}

#[test]
fn docs_security_lists_every_protected_path() {
    let doc = include_str!("../../docs/security.md");
    for e in PROTECTED {
        let slash = if e.kind == Kind::Dir { "/" } else { "" };
        let row = format!("| `{}{slash}` | {} | {} |", e.path, e.tool, e.why);
        assert!(doc.contains(&row), "docs/security.md lacks the row {row}");
    }
}

#[test]
fn a_protected_file_with_another_name_refuses_the_launch() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_path_buf();
    std::fs::write(root.join(".envrc"), "x\n").unwrap();
    std::fs::hard_link(root.join(".envrc"), root.join("notes.txt")).unwrap();
    let err = protection(std::slice::from_ref(&root), &[])
        .unwrap_err()
        .to_string();
    assert!(err.contains(".envrc: the file has other names"), "{err}");
}
