use super::*;

fn paths(g: &[GitGuard]) -> Vec<(String, bool, Option<GitCreate>)> {
    g.iter()
        .map(|g| (g.path.display().to_string(), g.read_only, g.create))
        .collect()
}

#[test]
fn a_repository_is_pinned_and_its_config_and_hooks_read_only() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    let r = root.display();
    assert!(guards(std::slice::from_ref(&root)).unwrap().is_empty(), "no .git");
    std::fs::create_dir_all(root.join(".git")).unwrap();
    let got = guards(std::slice::from_ref(&root)).unwrap();
    assert_eq!(got[2].create, Some(GitCreate::EmptyFile), "{got:?}");
    std::fs::write(root.join(".git/config"), "").unwrap();
    let got = guards(std::slice::from_ref(&root)).unwrap();
    assert_eq!(
        paths(&got),
        [
            (format!("{r}/.git"), false, None),
            (
                format!("{r}/.git/commondir"),
                true,
                Some(GitCreate::SelfCommonDir)
            ),
            (format!("{r}/.git/config"), true, None),
            (
                format!("{r}/.git/config.worktree"),
                true,
                Some(GitCreate::EmptyFile)
            ),
            (format!("{r}/.git/hooks"), true, Some(GitCreate::Dir)),
        ]
    );
    // A symbolic link would be mounted as its target: refused, whatever it names.
    std::os::unix::fs::symlink("/etc/passwd", root.join(".git/config.worktree")).unwrap();
    let e = guards(std::slice::from_ref(&root)).unwrap_err().to_string();
    assert!(
        e.contains("config.worktree") && e.contains("not a regular file"),
        "{e}"
    );
    std::fs::remove_file(root.join(".git/config.worktree")).unwrap();
    // Linked worktree entries: pinned, their commondir and config.worktree read-only.
    std::fs::create_dir_all(root.join(".git/worktrees/wt")).unwrap();
    std::fs::write(root.join(".git/worktrees/wt/commondir"), "../..\n").unwrap();
    let got = paths(&guards(std::slice::from_ref(&root)).unwrap());
    for want in [
        (format!("{r}/.git/worktrees"), false, None),
        (format!("{r}/.git/worktrees/wt"), false, None),
        (format!("{r}/.git/worktrees/wt/commondir"), true, None),
        (
            format!("{r}/.git/worktrees/wt/config.worktree"),
            true,
            Some(GitCreate::EmptyFile),
        ),
    ] {
        assert!(got.contains(&want), "{want:?} not in {got:?}");
    }
    std::fs::remove_dir_all(root.join(".git/worktrees")).unwrap();
    std::fs::write(root.join(".git/commondir"), "../evil\n").unwrap();
    let e = guards(std::slice::from_ref(&root)).unwrap_err().to_string();
    assert!(
        e.contains("another directory's config") && e.contains("protect_git = false"),
        "{e}"
    );
    std::fs::write(root.join(".git/commondir"), ".\n").unwrap();
    assert_eq!(guards(std::slice::from_ref(&root)).unwrap()[1].create, None);
}

#[test]
fn a_linked_worktree_guards_its_file_and_a_reachable_common_dir() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    let main = root.join("main");
    let wt = root.join("wt");
    std::fs::create_dir_all(main.join(".git/worktrees/wt")).unwrap();
    std::fs::create_dir_all(main.join(".git/hooks")).unwrap();
    std::fs::create_dir_all(&wt).unwrap();
    std::fs::write(main.join(".git/config"), "").unwrap();
    std::fs::write(main.join(".git/worktrees/wt/commondir"), "../..\n").unwrap();
    std::fs::write(
        wt.join(".git"),
        format!("gitdir: {}/.git/worktrees/wt\n", main.display()),
    )
    .unwrap();
    // Only the worktree is mounted: its .git file is all there is to guard.
    let got = guards(std::slice::from_ref(&wt)).unwrap();
    assert_eq!(paths(&got), [(format!("{}/.git", wt.display()), true, None)]);
    // With the main repository mounted too, its git dir is guarded as well.
    let got = guards(&[wt.clone(), main.clone()]).unwrap();
    let m = main.display();
    let listed: Vec<String> = got.iter().map(|g| g.path.display().to_string()).collect();
    for want in [
        format!("{m}/.git"),
        format!("{m}/.git/config"),
        format!("{m}/.git/hooks"),
        format!("{m}/.git/commondir"),
        format!("{m}/.git/worktrees/wt/commondir"),
        format!("{}/.git", wt.display()),
    ] {
        assert!(listed.contains(&want), "{want} not in {listed:?}");
    }
    std::os::unix::fs::symlink(&wt, root.join("link")).unwrap();
    std::fs::remove_file(wt.join(".git")).unwrap();
    std::os::unix::fs::symlink(main.join(".git"), wt.join(".git")).unwrap();
    assert!(
        guards(std::slice::from_ref(&wt))
            .unwrap_err()
            .to_string()
            .contains("symbolic link")
    );
}

#[test]
fn submodule_git_dirs_are_guarded_and_nothing_is_created_in_them() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    let r = root.display();
    let module = |rel: &str, worktree: &str| {
        let dir = root.join(rel);
        std::fs::create_dir_all(dir.join("objects")).unwrap();
        std::fs::create_dir_all(dir.join("hooks")).unwrap();
        std::fs::write(dir.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(dir.join("config"), format!("[core]\n\tworktree = {worktree}\n")).unwrap();
    };
    std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
    std::fs::write(root.join(".git/config"), "").unwrap();
    module(".git/modules/sub", "../../../sub");
    module(".git/modules/sub/modules/inner", "../../../../../sub/inner");
    module(".git/modules/a/b", "../../../../a/b");
    std::fs::remove_dir(root.join(".git/modules/a/b/hooks")).unwrap();
    std::fs::create_dir_all(root.join("sub/inner")).unwrap();
    std::fs::write(root.join("sub/.git"), "gitdir: ../.git/modules/sub\n").unwrap();
    std::fs::write(
        root.join("sub/inner/.git"),
        "gitdir: ../../.git/modules/sub/modules/inner\n",
    )
    .unwrap();
    let got = paths(&guards(std::slice::from_ref(&root)).unwrap());
    for want in [
        (format!("{r}/.git/modules"), false, None),
        (format!("{r}/.git/modules/sub"), false, None),
        (format!("{r}/.git/modules/sub/config"), true, None),
        (format!("{r}/.git/modules/sub/hooks"), true, None),
        (format!("{r}/.git/modules/sub/modules/inner"), false, None),
        (format!("{r}/.git/modules/sub/modules/inner/config"), true, None),
        (format!("{r}/.git/modules/sub/modules/inner/hooks"), true, None),
        (format!("{r}/.git/modules/a"), false, None),
        (format!("{r}/.git/modules/a/b"), false, None),
        (format!("{r}/.git/modules/a/b/config"), true, None),
        (format!("{r}/sub/.git"), true, None),
        (format!("{r}/sub/inner/.git"), true, None),
    ] {
        assert!(got.contains(&want), "{want:?} not in {got:?}");
    }
    // Nothing is created in a submodule's git dir: its missing pieces stay unguarded.
    assert!(
        !got.iter().any(|(p, _, c)| p.contains("/modules/") && c.is_some()),
        "{got:?}"
    );
    // A submodule's commondir naming another directory is refused like the repository's own.
    std::fs::write(root.join(".git/modules/sub/commondir"), "../../../evil\n").unwrap();
    let e = guards(std::slice::from_ref(&root)).unwrap_err().to_string();
    assert!(e.contains("modules/sub/commondir"), "{e}");
}

#[test]
fn pointer_files_are_read_as_git_reads_them() {
    use std::os::unix::ffi::OsStrExt;
    // One space after `gitdir:`, trailing spaces kept, only line ends trimmed, any bytes.
    assert_eq!(gitfile_path(b"gitdir: ../x \r\n\n").unwrap(), "../x ");
    assert_eq!(gitfile_path(b"gitdir: \xff\n").unwrap().as_bytes(), b"\xff");
    assert_eq!(gitfile_path(b"gitdir:../x\n"), None);
    assert_eq!(gitfile_path(b"gitdir: \n"), None);
    let t = tempfile::tempdir().unwrap();
    let git = t.path().canonicalize().unwrap();
    std::fs::create_dir(git.join(". ")).unwrap();
    std::fs::write(git.join("commondir"), ". \n").unwrap();
    assert_eq!(common_dir(&git).unwrap(), git.join(". "));
    assert!(!is_self_commondir(&git.join("commondir")));
}

#[test]
fn an_export_guards_the_missing_pieces_of_every_guarded_git_dir() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    // A repository outside the roots (guarded, nothing created) with a linked worktree entry.
    let dir = root.join("main/.git");
    let entry = dir.join("worktrees/tree");
    std::fs::create_dir_all(dir.join("hooks")).unwrap();
    std::fs::create_dir_all(&entry).unwrap();
    for f in ["HEAD", "config", "worktrees/tree/HEAD", "worktrees/tree/gitdir"] {
        std::fs::write(dir.join(f), "x\n").unwrap();
    }
    let mut guarded = Vec::new();
    guard_git_dir(&dir, Create::Nothing, &[], &mut guarded).unwrap();
    assert!(guarded.iter().all(|g| g.create.is_none()), "{guarded:?}");
    let all = with_missing(guarded.clone());
    let added: Vec<_> = all.iter().filter(|g| !guarded.contains(g)).collect();
    let shown: Vec<(String, Option<GitCreate>)> = added
        .iter()
        .map(|g| (g.path.strip_prefix(&dir).unwrap().display().to_string(), g.create))
        .collect();
    assert_eq!(
        shown,
        [
            ("commondir".to_string(), Some(GitCreate::SelfCommonDir)),
            ("config.worktree".to_string(), Some(GitCreate::EmptyFile)),
            (
                "worktrees/tree/commondir".to_string(),
                Some(GitCreate::ParentCommonDir)
            ),
            (
                "worktrees/tree/config.worktree".to_string(),
                Some(GitCreate::EmptyFile)
            ),
        ]
    );
    assert!(added.iter().all(|g| g.read_only));
    // What exists is left as it was guarded.
    assert_eq!(with_missing(all.clone()), all);
}
