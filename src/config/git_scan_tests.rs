use super::*;

const ALL: Since = (0, 0);
const NONE: Since = (i64::MAX, 0);

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A minimal git dir (what `git init` makes, hooks samples included).
fn git_dir(dir: &Path, config: &str) {
    write(&dir.join("HEAD"), "ref: refs/heads/main\n");
    std::fs::create_dir_all(dir.join("objects")).unwrap();
    std::fs::create_dir_all(dir.join("refs/heads")).unwrap();
    write(&dir.join("config"), config);
    write(&dir.join("hooks/pre-commit.sample"), "#!/bin/sh\n");
}

fn found(scan: &Scan, root: &Path) -> Vec<(String, String)> {
    scan.findings
        .iter()
        .map(|f| {
            let rel = f.path.strip_prefix(root).unwrap().display().to_string();
            let what = f
                .what
                .split(" (")
                .next()
                .unwrap()
                .split(':')
                .next()
                .unwrap()
                .to_string();
            (rel, what)
        })
        .collect()
}

const CLEAN: &str = "[core]\n\trepositoryformatversion = 0\n\tbare = false\n";
const EVIL: &str = "[core]\n\tfsmonitor = \"touch /tmp/x\"\n";

#[test]
fn clean_repositories_and_old_changes_are_not_reported() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    git_dir(&root.join(".git"), CLEAN);
    git_dir(
        &root.join(".git/modules/sub"),
        "[core]\n\tworktree = ../../../sub\n",
    );
    write(&root.join("sub/.git"), "gitdir: ../.git/modules/sub\n");
    git_dir(&root.join("vendor/lib/.git"), CLEAN);
    let scan = scan(std::slice::from_ref(&root), &[], ALL);
    assert_eq!(found(&scan, &root), Vec::<(String, String)>::new());
    assert!(scan.incomplete.is_empty(), "{:?}", scan.incomplete);
    // Planted, but before the launch: not this launch's doing.
    write(&root.join("vendor/lib/.git/config"), EVIL);
    assert!(
        super::scan(std::slice::from_ref(&root), &[], NONE)
            .findings
            .is_empty()
    );
}

#[test]
fn every_planted_piece_is_reported() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    git_dir(&root.join(".git"), CLEAN);
    // An existing submodule's config, a nested submodule's hook, a commondir redirect.
    git_dir(&root.join(".git/modules/sub"), EVIL);
    git_dir(&root.join(".git/modules/sub/modules/inner"), CLEAN);
    write(
        &root.join(".git/modules/sub/modules/inner/hooks/post-checkout"),
        "#!/bin/sh\n",
    );
    git_dir(&root.join(".git/modules/a/b"), CLEAN);
    write(&root.join(".git/modules/a/b/commondir"), "../../../../evil\n");
    git_dir(&root.join("evil"), EVIL);
    // A new nested repository, a bare-looking directory, a linked worktree entry.
    git_dir(&root.join("src/new/.git"), "[alias]\n\tst = !sh\n");
    git_dir(&root.join("docs/bare"), "[core]\n\tpager = x\n");
    write(&root.join(".git/worktrees/wt/HEAD"), "ref: refs/heads/wt\n");
    write(&root.join(".git/worktrees/wt/commondir"), "../..\n");
    write(
        &root.join(".git/worktrees/wt/config.worktree"),
        "[core]\n\thooksPath = /x\n",
    );
    // A .git file naming a git dir hidden in a part of .git the walk skips.
    git_dir(&root.join(".git/objects/hide"), EVIL);
    write(&root.join("sub2/.git"), "gitdir: ../.git/objects/hide\n");
    std::fs::create_dir_all(root.join("lnk")).unwrap();
    std::os::unix::fs::symlink(root.join("evil"), root.join("lnk/.git")).unwrap();
    write(&root.join("not-a-config/.git/config"), "[core\n");
    write(&root.join("not-a-config/.git/HEAD"), "ref: refs/heads/main\n");
    let scan = scan(std::slice::from_ref(&root), &[], ALL);
    let got = found(&scan, &root);
    for want in [
        (
            ".git/modules/sub/config",
            "git configuration that can run programs",
        ),
        (
            ".git/modules/sub/modules/inner/hooks/post-checkout",
            "a hook git runs",
        ),
        (".git/modules/a/b/commondir", "a commondir sending git to /"),
        ("evil/config", "git configuration that can run programs"),
        ("src/new/.git/config", "git configuration that can run programs"),
        ("docs/bare/config", "git configuration that can run programs"),
        (
            ".git/worktrees/wt/config.worktree",
            "git configuration that can run programs",
        ),
        (
            ".git/objects/hide/config",
            "git configuration that can run programs",
        ),
        ("lnk/.git", "a symbolic link git follows to a repository"),
        (
            "not-a-config/.git/config",
            "git configuration that can run programs",
        ),
    ] {
        let want = (want.0.to_string(), want.1.to_string());
        assert!(
            got.iter().any(|g| g.0 == want.0 && g.1.starts_with(&want.1)),
            "{want:?} not in {got:?}"
        );
    }
    assert!(
        !got.iter().any(|g| g.0.contains("worktrees/wt/commondir")),
        "{got:?}"
    );
    let what = &scan
        .findings
        .iter()
        .find(|f| f.path.ends_with("sub/config"))
        .unwrap()
        .what;
    assert!(what.ends_with("core.fsmonitor"), "{what}");
    // The read-only guards are never reported.
    let skip = [root.join(".git/modules/sub/config"), root.join("evil")];
    let scan = super::scan(std::slice::from_ref(&root), &skip, ALL);
    let got = found(&scan, &root);
    assert!(
        !got.iter()
            .any(|g| g.0 == ".git/modules/sub/config" || g.0.starts_with("evil/")),
        "{got:?}"
    );
}

#[test]
fn a_git_file_naming_a_risky_repository_outside_is_reported() {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().canonicalize().unwrap();
    let root = base.join("work");
    git_dir(&base.join("elsewhere"), EVIL);
    git_dir(&base.join("tame"), CLEAN);
    write(
        &root.join("a/.git"),
        &format!("gitdir: {}\n", base.join("elsewhere").display()),
    );
    write(
        &root.join("b/.git"),
        &format!("gitdir: {}\n", base.join("tame").display()),
    );
    let scan = scan(std::slice::from_ref(&root), &[], ALL);
    let got = found(&scan, &root);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0, "a/.git");
    assert!(
        scan.findings[0].what.contains("outside the workspace"),
        "{:?}",
        scan.findings
    );
}
