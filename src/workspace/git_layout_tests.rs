use super::*;

/// The guards for `root`'s checkout outside `roots`, with no other writable directory.
fn outside(root: &Path, roots: &[PathBuf]) -> Result<Vec<GitGuard>, GitLayoutError> {
    prove(root, roots, &[], &[]).map(TrustedGitLayout::into_guards)
}

fn git_dir(dir: &Path) {
    std::fs::create_dir_all(dir.join("objects")).unwrap();
    std::fs::create_dir_all(dir.join("refs")).unwrap();
    std::fs::create_dir_all(dir.join("hooks")).unwrap();
    std::fs::write(dir.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(dir.join("config"), "[core]\n\tbare = false\n").unwrap();
}

fn listed(g: &[GitGuard]) -> Vec<(String, bool)> {
    g.iter()
        .map(|g| (g.path.display().to_string(), g.read_only))
        .collect()
}

#[test]
fn a_linked_worktree_gets_the_common_dir_and_nothing_is_created() {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().canonicalize().unwrap();
    let main = base.join("main");
    git_dir(&main.join(".git"));
    std::fs::create_dir_all(main.join(".git/worktrees/wt")).unwrap();
    std::fs::write(main.join(".git/worktrees/wt/commondir"), "../..\n").unwrap();
    let wt = base.join("wt");
    std::fs::create_dir_all(&wt).unwrap();
    std::fs::write(main.join(".git/worktrees/wt/HEAD"), "ref: refs/heads/wt\n").unwrap();
    std::fs::write(
        main.join(".git/worktrees/wt/gitdir"),
        format!("{}/.git\n", wt.display()),
    )
    .unwrap();
    std::fs::write(
        wt.join(".git"),
        format!("gitdir: {}/.git/worktrees/wt\n", main.display()),
    )
    .unwrap();
    let got = outside(&wt, std::slice::from_ref(&wt)).unwrap();
    let m = main.display();
    let l = listed(&got);
    for want in [
        (format!("{m}/.git"), false),
        (format!("{m}/.git/config"), true),
        (format!("{m}/.git/hooks"), true),
        (format!("{m}/.git/worktrees"), false),
        (format!("{m}/.git/worktrees/wt"), false),
        (format!("{m}/.git/worktrees/wt/commondir"), true),
    ] {
        assert!(l.contains(&want), "{want:?} not in {l:?}");
    }
    assert!(got.iter().all(|g| g.create.is_none()), "{got:?}");
    assert_eq!(tops(&got, std::slice::from_ref(&wt)).len(), 1);
    assert_eq!(tops(&got, std::slice::from_ref(&wt))[0].path, main.join(".git"));
    // Mounted anyway (the main repository is an --add-dir): nothing more.
    assert!(outside(&wt, &[wt.clone(), main.clone()]).unwrap().is_empty());
}

#[test]
fn a_submodule_checkout_gets_its_git_dir() {
    let t = tempfile::tempdir().unwrap();
    let sup = t.path().canonicalize().unwrap();
    git_dir(&sup.join(".git"));
    git_dir(&sup.join(".git/modules/sub"));
    std::fs::write(
        sup.join(".git/modules/sub/config"),
        "[core]\n\tbare = false\n\tworktree = ../../../sub\n",
    )
    .unwrap();
    let sub = sup.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(sub.join(".git"), "gitdir: ../.git/modules/sub\n").unwrap();
    let got = outside(&sub, std::slice::from_ref(&sub)).unwrap();
    let l = listed(&got);
    let s = sup.display();
    assert!(l.contains(&(format!("{s}/.git/modules/sub"), false)), "{l:?}");
    assert!(
        l.contains(&(format!("{s}/.git/modules/sub/config"), true)),
        "{l:?}"
    );
    assert!(!l.iter().any(|(p, _)| p == &format!("{s}/.git")), "{l:?}");
}

#[test]
fn a_subdirectory_gets_the_repository_read_only_and_its_git_dir() {
    let t = tempfile::tempdir().unwrap();
    let repo = t.path().canonicalize().unwrap();
    git_dir(&repo.join(".git"));
    let src = repo.join("src/deep");
    std::fs::create_dir_all(&src).unwrap();
    let got = outside(&src, std::slice::from_ref(&src)).unwrap();
    let l = listed(&got);
    let r = repo.display();
    for want in [
        (format!("{r}"), true),
        (format!("{r}/.git"), false),
        (format!("{r}/.git/config"), true),
        (format!("{r}/.git/hooks"), true),
    ] {
        assert!(l.contains(&want), "{want:?} not in {l:?}");
    }
    let top = tops(&got, std::slice::from_ref(&src));
    assert_eq!(top.len(), 1);
    assert_eq!(top[0].path, repo);
    // No repository around: nothing.
    let t2 = tempfile::tempdir().unwrap();
    let plain = t2.path().canonicalize().unwrap();
    if plain.ancestors().all(|a| !a.join(".git").exists()) {
        assert!(outside(&plain, std::slice::from_ref(&plain)).unwrap().is_empty());
    }
    // The repository's top level is the workdir: nothing outside.
    assert!(outside(&repo, std::slice::from_ref(&repo)).unwrap().is_empty());
}

/// A repository `main` with a linked worktree entry `wt` whose `gitdir` names `named`.
fn repo_with_entry(base: &Path, named: &Path) -> PathBuf {
    let main = base.join("main");
    git_dir(&main.join(".git"));
    let entry = main.join(".git/worktrees/wt");
    std::fs::create_dir_all(&entry).unwrap();
    std::fs::write(entry.join("commondir"), "../..\n").unwrap();
    std::fs::write(entry.join("HEAD"), "ref: refs/heads/wt\n").unwrap();
    std::fs::write(entry.join("gitdir"), format!("{}\n", named.display())).unwrap();
    main
}

fn workdir_naming(base: &Path, target: &Path) -> PathBuf {
    let w = base.join("w");
    std::fs::create_dir_all(&w).unwrap();
    std::fs::write(w.join(".git"), format!("gitdir: {}\n", target.display())).unwrap();
    w
}

#[test]
fn a_git_file_naming_a_plain_directory_mounts_nothing() {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().canonicalize().unwrap();
    let bin = base.join("home/.local/bin");
    std::fs::create_dir_all(&bin).unwrap();
    let w = workdir_naming(&base, &bin);
    let e = outside(&w, std::slice::from_ref(&w)).unwrap_err();
    assert!(matches!(e, GitLayoutError::NotAGitDir { .. }), "{e}");
    assert!(e.to_string().contains("not a git dir"), "{e}");
}

#[test]
fn a_git_file_naming_another_repository_mounts_nothing() {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().canonicalize().unwrap();
    let other = base.join("other");
    git_dir(&other.join(".git"));
    let w = workdir_naming(&base, &other.join(".git"));
    let e = outside(&w, std::slice::from_ref(&w)).unwrap_err();
    assert!(matches!(e, GitLayoutError::NotThisCheckout { .. }), "{e}");
    // A submodule-like git dir whose `core.worktree` is elsewhere: refused too.
    let module = other.join(".git/modules/lib");
    git_dir(&module);
    std::fs::write(module.join("config"), "[core]\n\tworktree = ../../../lib\n").unwrap();
    let w2 = base.join("w2");
    std::fs::create_dir_all(&w2).unwrap();
    std::fs::write(w2.join(".git"), format!("gitdir: {}\n", module.display())).unwrap();
    let e = outside(&w2, std::slice::from_ref(&w2)).unwrap_err();
    assert!(
        e.to_string().contains("`core.worktree` is not this directory"),
        "{e}"
    );
}

#[test]
fn a_worktree_entry_of_another_checkout_mounts_nothing() {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().canonicalize().unwrap();
    let real_wt = base.join("wt");
    std::fs::create_dir_all(&real_wt).unwrap();
    let main = repo_with_entry(&base, &real_wt.join(".git"));
    let w = workdir_naming(&base, &main.join(".git/worktrees/wt"));
    let e = outside(&w, std::slice::from_ref(&w)).unwrap_err();
    assert!(e.to_string().contains("not of this `.git` file"), "{e}");
    // The entry itself is the right one for `wt`.
    std::fs::write(
        real_wt.join(".git"),
        format!("gitdir: {}/.git/worktrees/wt\n", main.display()),
    )
    .unwrap();
    assert!(
        !outside(&real_wt, std::slice::from_ref(&real_wt))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn a_proven_entry_in_an_agent_writable_place_mounts_nothing() {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().canonicalize().unwrap();
    let w = base.join("w");
    let main = repo_with_entry(&base, &w.join(".git"));
    let w = workdir_naming(&base, &main.join(".git/worktrees/wt"));
    let writable = [WritableRoot {
        path: main.clone(),
        owner: "running ags container ags-x".into(),
        running: true,
    }];
    let e = prove(&w, std::slice::from_ref(&w), &writable, &[]).unwrap_err();
    assert!(matches!(e, GitLayoutError::Writable { .. }), "{e}");
    assert!(e.to_string().contains("running ags container ags-x"), "{e}");
    assert!(prove(&w, std::slice::from_ref(&w), &[], &[]).is_ok());
}

#[test]
fn a_repository_above_the_workdir_in_an_agent_writable_place_mounts_nothing() {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().canonicalize().unwrap();
    let repo = base.join("shared/repo");
    git_dir(&repo.join(".git"));
    let src = repo.join("src");
    std::fs::create_dir_all(&src).unwrap();
    let writable = [WritableRoot {
        path: base.join("shared"),
        owner: "this launch's --add-dir".into(),
        running: false,
    }];
    let e = prove(&src, std::slice::from_ref(&src), &writable, &[]).unwrap_err();
    assert!(e.to_string().contains("found above the workdir"), "{e}");
    // A parent `.git` file must be proven like the workdir's own.
    std::fs::remove_dir_all(repo.join(".git")).unwrap();
    std::fs::write(repo.join(".git"), "gitdir: /\n").unwrap();
    let e = prove(&src, std::slice::from_ref(&src), &[], &[]).unwrap_err();
    assert!(matches!(e, GitLayoutError::NotAGitDir { .. }), "{e}");
}

/// A running launch in the main repository `main` as its guards bind it: the workdir and the
/// git dir read-write, `worktrees/` and the entry `wt` pinned, its `gitdir`/`commondir` read-only.
fn main_launch(main: &Path, ro_files: &[&str]) -> RunningLaunch {
    let g = main.join(".git");
    let e = g.join("worktrees/wt");
    let mut binds = vec![
        (main.to_path_buf(), main.to_path_buf(), true),
        (g.clone(), g.clone(), true),
        (g.join("worktrees"), g.join("worktrees"), true),
        (e.clone(), e.clone(), true),
    ];
    binds.extend(ro_files.iter().map(|f| (e.join(f), e.join(f), false)));
    RunningLaunch {
        container: "ags-main".into(),
        binds,
    }
}

fn running_root(path: &Path) -> WritableRoot {
    WritableRoot {
        path: path.into(),
        owner: "running ags container ags-main".into(),
        running: true,
    }
}

#[test]
fn a_worktree_entry_a_running_launch_holds_fixed_is_trusted() {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().canonicalize().unwrap();
    let w = base.join("w");
    let main = repo_with_entry(&base, &w.join(".git"));
    let w = workdir_naming(&base, &main.join(".git/worktrees/wt"));
    let roots = std::slice::from_ref(&w);
    // Every read-write bind of the running launch counts, the git dir's as well.
    let writable = [running_root(&main), running_root(&main.join(".git"))];
    let held = main_launch(&main, &["gitdir", "commondir"]);
    let got = prove(&w, roots, &writable, std::slice::from_ref(&held)).unwrap();
    assert_eq!(tops(&got.into_guards(), roots)[0].path, main.join(".git"));
    // Without the read-only `gitdir` (an older launch, or its agent could rewrite it): no.
    let loose = main_launch(&main, &["commondir"]);
    let e = prove(&w, roots, &writable, &[loose]).unwrap_err();
    assert!(e.to_string().contains("running ags container ags-main"), "{e}");
    // A second link to `gitdir` elsewhere in the writable mount: no.
    std::fs::hard_link(main.join(".git/worktrees/wt/gitdir"), main.join("x")).unwrap();
    assert!(prove(&w, roots, &writable, std::slice::from_ref(&held)).is_err());
    std::fs::remove_file(main.join("x")).unwrap();
    // A writable root that no running launch's binds explain: no.
    assert!(prove(&w, roots, &writable, &[]).is_err());
    // This launch's own mounts are never trusted so.
    let own = WritableRoot {
        running: false,
        ..running_root(&main)
    };
    assert!(prove(&w, roots, &[own], std::slice::from_ref(&held)).is_err());
}

#[test]
fn a_worktree_entry_a_running_agent_created_is_not_trusted() {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().canonicalize().unwrap();
    let w = base.join("w");
    let main = repo_with_entry(&base, &base.join("wt/.git"));
    // The running agent adds `worktrees/evil` naming `w`: not pinned in its container.
    let evil = main.join(".git/worktrees/evil");
    std::fs::create_dir_all(&evil).unwrap();
    std::fs::write(evil.join("commondir"), "../..\n").unwrap();
    std::fs::write(evil.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(evil.join("gitdir"), format!("{}/.git\n", w.display())).unwrap();
    let w = workdir_naming(&base, &evil);
    let writable = [running_root(&main), running_root(&main.join(".git"))];
    let held = main_launch(&main, &["gitdir", "commondir"]);
    let e = prove(&w, std::slice::from_ref(&w), &writable, &[held]).unwrap_err();
    assert!(matches!(e, GitLayoutError::Writable { .. }), "{e}");
    assert!(e.to_string().contains("worktrees/evil"), "{e}");
}
