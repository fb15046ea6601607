use super::*;

fn git_dir(dir: &Path) {
    std::fs::create_dir_all(dir.join("objects")).unwrap();
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
