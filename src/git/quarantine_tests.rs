use super::*;

#[test]
fn planted_pieces_are_renamed_never_through_a_link() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    let git = root.join("sub/.git");
    for dir in [&git, &root.join("guarded/.git")] {
        std::fs::create_dir_all(dir.join("objects")).unwrap();
        std::fs::write(dir.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    }
    let before = git_inventory::take(std::slice::from_ref(&root));
    std::fs::write(git.join("config"), "[core]\n\tfsmonitor = x\n").unwrap();
    std::fs::write(git.join("config.ags-quarantine"), "taken").unwrap();
    std::fs::write(root.join("guarded/.git/config"), "[core]\n\tpager = x\n").unwrap();
    let guards = [GitGuard {
        path: root.join("guarded/.git/config"),
        read_only: true,
        create: None,
    }];
    let q = run(&before, &guards);
    assert_eq!(q.moved.len(), 1, "{q:?}");
    assert_eq!(
        q.moved[0].1.as_ref().unwrap(),
        &git.join("config.ags-quarantine-2")
    );
    assert!(!git.join("config").exists());
    assert!(root.join("guarded/.git/config").exists());
    let m = q.message();
    assert!(m.contains("core.fsmonitor") && m.contains("mv "), "{m}");
    // A directory on the way that is a symbolic link: refused, nothing renamed.
    std::os::unix::fs::symlink(&git, root.join("lnk")).unwrap();
    let e = move_aside(
        std::slice::from_ref(&root),
        &root.join("lnk/config.ags-quarantine"),
    )
    .unwrap_err();
    assert!(git.join("config.ags-quarantine").exists(), "{e}");
}
