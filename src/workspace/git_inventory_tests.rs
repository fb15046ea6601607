use super::*;

/// An inventory of nothing: everything under `roots` is judged.
fn nothing(roots: &[PathBuf]) -> Inventory {
    Inventory {
        roots: roots.to_vec(),
        states: HashMap::new(),
        indexes: HashMap::new(),
        tips: HashMap::new(),
        distrusted: None,
    }
}

/// Judge everything under `root` but `skip`.
fn judge_all(roots: &[PathBuf], skip: &[PathBuf]) -> Scan {
    check(&nothing(roots), skip)
}

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
fn clean_repositories_and_what_was_there_before_are_not_reported() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    git_dir(&root.join(".git"), CLEAN);
    git_dir(
        &root.join(".git/modules/sub"),
        "[core]\n\tworktree = ../../../sub\n",
    );
    write(&root.join("sub/.git"), "gitdir: ../.git/modules/sub\n");
    git_dir(&root.join("vendor/lib/.git"), CLEAN);
    // Judged in full (another launch could have written the trees): nothing to say.
    let mut distrusted = take(std::slice::from_ref(&root));
    distrusted.distrust("another launch".into());
    let scan = check(&distrusted, &[]);
    assert_eq!(found(&scan, &root), Vec::<(String, String)>::new());
    assert!(scan.incomplete.is_empty(), "{:?}", scan.incomplete);
    // A submodule's git dir new to the inventory is the one thing said (session-12 attack H7).
    let scan = judge_all(std::slice::from_ref(&root), &[]);
    let made = (
        ".git/modules/sub".to_string(),
        "a submodule's git dir the launch made".to_string(),
    );
    assert_eq!(found(&scan, &root), vec![made]);
    // Planted, but before the launch: not this launch's doing.
    write(&root.join("vendor/lib/.git/config"), EVIL);
    write(&root.join("vendor/lib/.git/hooks/pre-commit"), "#!/bin/sh\n");
    let before = take(std::slice::from_ref(&root));
    assert!(check(&before, &[]).findings.is_empty());
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
    let scan = judge_all(std::slice::from_ref(&root), &[]);
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
    let scan = judge_all(std::slice::from_ref(&root), &skip);
    let got = found(&scan, &root);
    assert!(
        !got.iter()
            .any(|g| g.0 == ".git/modules/sub/config" || g.0.starts_with("evil/")),
        "{got:?}"
    );
}

#[test]
fn a_new_git_file_naming_any_repository_outside_is_reported() {
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
    let scan = judge_all(std::slice::from_ref(&root), &[]);
    let got = found(&scan, &root);
    let paths: Vec<&str> = got.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(paths, ["a/.git", "b/.git"], "{got:?}");
    assert!(
        scan.findings
            .iter()
            .all(|f| f.what.contains("outside the workspace")),
        "{:?}",
        scan.findings
    );
    assert!(scan.findings[0].what.contains("fsmonitor"), "{:?}", scan.findings);
    // One that was there before the launch (a worktree you made on the host) is not.
    let before = take(std::slice::from_ref(&root));
    assert!(check(&before, &[]).findings.is_empty());
}

#[test]
fn a_worktree_outside_or_a_url_that_starts_a_program_is_reported() {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().canonicalize().unwrap();
    let root = base.join("work");
    std::fs::create_dir_all(base.join("home")).unwrap();
    git_dir(&root.join("a/.git"), "[core]\n\tworktree = ../../../home\n");
    git_dir(&root.join("b/.git"), "[core]\n\tworktree = ../../b\n");
    git_dir(&root.join("c/.git"), "[core]\n\tworktree = /nowhere/at/all\n");
    git_dir(
        &root.join("d/.git"),
        "[remote \"origin\"]\n\turl = evil::x\n\tpromisor = true\n[extensions]\n\tpartialClone = origin\n",
    );
    git_dir(
        &root.join("e/.git"),
        "[remote \"origin\"]\n\turl = git@github.com:o/r.git\n",
    );
    let scan = judge_all(std::slice::from_ref(&root), &[]);
    let got = found(&scan, &root);
    assert_eq!(
        got,
        [
            (
                "a/.git/config".into(),
                "git configuration that can run programs".into()
            ),
            (
                "c/.git/config".into(),
                "git configuration that can run programs".into()
            ),
            (
                "d/.git/config".into(),
                "git configuration that can run programs".into()
            ),
        ],
        "{:?}",
        scan.findings
    );
    let home = base.join("home");
    assert!(
        scan.findings[0]
            .what
            .contains(&format!("core.worktree naming {} outside", home.display())),
        "{:?}",
        scan.findings
    );
    assert!(
        scan.findings[2]
            .what
            .contains("remote.origin.url (a URL git hands"),
        "{:?}",
        scan.findings
    );
}

fn mv(root: &Path, from: &str, to: &str) {
    let to = root.join(to);
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::rename(root.join(from), to).unwrap();
}

/// Issue 22, finding 2: content staged before the launch (by an earlier launch, by the cloned
/// repository's tracked files, inside `.git/`) keeps its change times when a directory rename
/// moves it into place; the inventory sees a git dir that was not there.
#[test]
fn what_is_moved_into_place_is_judged_in_full() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    git_dir(&root.join(".git"), CLEAN);
    // Not git dirs yet: `objs` is no `objects`.
    write(&root.join("stash/g/HEAD"), "ref: refs/heads/main\n");
    write(&root.join("stash/g/config"), EVIL);
    std::fs::create_dir_all(root.join("stash/g/objs")).unwrap();
    write(&root.join(".git/x/HEAD"), "ref: refs/heads/main\n");
    write(&root.join(".git/x/config"), EVIL);
    std::fs::create_dir_all(root.join(".git/x/objs")).unwrap();
    // A bare repository shipped as tracked files, with a hook: there before, not reported.
    git_dir(&root.join("vendor/pkg"), EVIL);
    write(&root.join("vendor/pkg/hooks/post-checkout"), "#!/bin/sh\n");
    let before = take(std::slice::from_ref(&root));
    assert!(check(&before, &[]).findings.is_empty());
    // The launch only renames.
    mv(&root, "stash/g/objs", "stash/g/objects");
    mv(&root, "stash/g", "sa/.git");
    mv(&root, "vendor/pkg", "sb/.git");
    mv(&root, ".git/x/objs", ".git/x/objects");
    mv(&root, ".git/x", ".git/modules/m");
    write(&root.join("m/.git"), "gitdir: ../.git/modules/m\n");
    let got = found(&check(&before, &[]), &root);
    for want in [
        "sa/.git/config",
        "sb/.git/config",
        "sb/.git/hooks/post-checkout",
        ".git/modules/m/config",
    ] {
        assert!(got.iter().any(|g| g.0 == want), "{want} not in {got:?}");
    }
    // A `.git` file naming a git dir that was there before, unchanged: the pointer goes.
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    git_dir(&root.join("vendor/pkg"), EVIL);
    let before = take(std::slice::from_ref(&root));
    write(&root.join("sc/.git"), "gitdir: ../vendor/pkg\n");
    let got = found(&check(&before, &[]), &root);
    let paths: Vec<&str> = got.iter().map(|g| g.0.as_str()).collect();
    // The pointer, not the git dir: git never pairs a directory with a git dir that does not
    // name it back (session-18 attack E2), and the git dir, unchanged, was the user's.
    assert_eq!(paths, ["sc/.git"], "{got:?}");
}

/// A git dir that stays in place is judged piece by piece: what differs in content,
/// permissions or identity, never what the user had there (a checkout changing `HEAD` included).
#[test]
fn pieces_changed_in_place_are_judged_and_unchanged_ones_are_not() {
    use std::os::unix::fs::PermissionsExt;
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    let lib = root.join("vendor/lib/.git");
    git_dir(&lib, CLEAN);
    write(&lib.join("hooks/pre-commit"), "#!/bin/sh\nexit 0\n");
    write(&lib.join("hooks/post-merge"), "#!/bin/sh\n");
    write(&lib.join("hooks/post-commit"), "#!/bin/sh\n");
    git_dir(&root.join("a/.git"), CLEAN);
    write(&root.join("a/.git/hooks/pre-push"), "#!/bin/sh\n");
    git_dir(&root.join("b/.git"), CLEAN);
    let before = take(std::slice::from_ref(&root));
    // The same inode, new content; a mode change; the same content written again; a checkout.
    std::fs::write(lib.join("config"), EVIL).unwrap();
    let hook = lib.join("hooks/post-merge");
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(lib.join("hooks/post-commit"), "#!/bin/sh\n").unwrap();
    std::fs::write(lib.join("HEAD"), "ref: refs/heads/other\n").unwrap();
    // Two repositories swapped: each git dir is another directory at its path.
    mv(&root, "a/.git", "t");
    mv(&root, "b/.git", "a/.git");
    mv(&root, "t", "b/.git");
    let got = found(&check(&before, &[]), &root);
    let paths: Vec<&str> = got.iter().map(|g| g.0.as_str()).collect();
    assert_eq!(
        paths,
        [
            "b/.git/hooks/pre-push",
            "vendor/lib/.git/config",
            "vendor/lib/.git/hooks/post-merge"
        ],
        "{got:?}"
    );
}

/// A `.git` link or file is judged by what it holds: the same link stays, a retargeted one and
/// a `.git` file rewritten to name another git dir do not: the pointers go aside (`r2` is no
/// worktree entry or submodule naming them back), not the git dir they reached.
#[test]
fn git_links_and_files_are_compared_by_content() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    git_dir(&root.join("r1"), CLEAN);
    git_dir(&root.join("r2"), EVIL);
    std::fs::create_dir_all(root.join("l")).unwrap();
    std::os::unix::fs::symlink("../r1", root.join("l/.git")).unwrap();
    write(&root.join("f/.git"), "gitdir: ../r1\n");
    let before = take(std::slice::from_ref(&root));
    assert!(check(&before, &[]).findings.is_empty());
    std::fs::remove_file(root.join("l/.git")).unwrap();
    std::os::unix::fs::symlink("../r2", root.join("l/.git")).unwrap();
    std::fs::write(root.join("f/.git"), "gitdir: ../r2\n").unwrap();
    let got = found(&check(&before, &[]), &root);
    let paths: Vec<&str> = got.iter().map(|g| g.0.as_str()).collect();
    assert_eq!(paths, ["f/.git", "l/.git"], "{got:?}");
}

/// attack3-1: an inventory another running launch could write is no baseline: what it held
/// (here a nested repository's fsmonitor and hook) is judged as if planted; the sample is not.
#[test]
fn a_distrusted_inventory_judges_what_it_held() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    git_dir(&root.join("sub/.git"), "[core]\n\tfsmonitor = \"touch PWNED\"\n");
    write(&root.join("sub/.git/hooks/post-checkout"), "#!/bin/sh\n");
    let mut before = take(std::slice::from_ref(&root));
    assert!(check(&before, &[]).findings.is_empty());
    before.distrust("shared".into());
    assert_eq!(before.distrusted(), Some("shared"));
    let scan = check(&before, &[]);
    let paths: Vec<_> = scan
        .findings
        .iter()
        .map(|f| f.path.strip_prefix(&root).unwrap())
        .collect();
    assert_eq!(
        paths,
        [
            Path::new("sub/.git/config"),
            Path::new("sub/.git/hooks/post-checkout")
        ],
        "{scan:?}"
    );
}

#[test]
fn files_that_hide_changes_from_review_are_reported_unless_only_comments() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    git_dir(&root.join("a/.git"), CLEAN);
    write(
        &root.join("a/.git/info/exclude"),
        "# git ls-files --others --exclude-from=.git/info/exclude\n# *~\n",
    );
    git_dir(&root.join("b/.git"), CLEAN);
    write(&root.join("b/.git/info/exclude"), "# hidden\ntools/\n");
    write(&root.join("b/.git/refs/replace/0123abcd"), "4567\n");
    write(
        &root.join("b/.git/objects/info/alternates"),
        "/elsewhere/objects\n",
    );
    let scan = judge_all(std::slice::from_ref(&root), &[]);
    let got: Vec<String> = found(&scan, &root).into_iter().map(|(p, _)| p).collect();
    assert_eq!(
        got,
        [
            "b/.git/info/exclude",
            "b/.git/objects/info/alternates",
            "b/.git/refs/replace/0123abcd"
        ],
        "{:?}",
        scan.findings
    );
}

#[test]
fn operations_in_progress_the_launch_started_or_changed_are_reported_whole() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    git_dir(&root.join(".git"), CLEAN);
    // The user's own rebase, left alone by the launch: unchanged.
    write(&root.join(".git/rebase-apply/orig-head"), "1111\n");
    write(&root.join(".git/BISECT_LOG"), "git bisect start\n");
    let roots = std::slice::from_ref(&root);
    let before = take(roots);
    assert!(check(&before, &[]).findings.is_empty());
    // A file of it changed, a new sequencer, a new bisection file, an autostash (session-12
    // attacks H1, H3, H4, H5): each names commits that an ordinary command brings in.
    write(&root.join(".git/rebase-apply/orig-head"), "2222\n");
    write(&root.join(".git/sequencer/head"), "3333\n");
    write(&root.join(".git/BISECT_START"), "4444\n");
    write(&root.join(".git/MERGE_AUTOSTASH"), "5555\n");
    let said: Vec<_> = found(&check(&before, &[]), &root)
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    let want = [
        ".git/BISECT_START",
        ".git/MERGE_AUTOSTASH",
        ".git/rebase-apply",
        ".git/sequencer",
    ];
    assert_eq!(said, want);
}

/// `state::strict`: a link anywhere on the way, or `..` after a missing part, is planted.
#[test]
fn paths_are_taken_component_by_component() {
    use super::state::strict;
    let t = tempfile::tempdir().unwrap();
    let base = t.path().canonicalize().unwrap();
    let root = base.join("work");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::create_dir_all(base.join("volume")).unwrap();
    std::os::unix::fs::symlink("sub", root.join("lnk")).unwrap();
    assert_eq!(strict(&root.join("lnk/x")), Err(root.join("lnk")));
    assert_eq!(strict(&root.join("nx/../sub")), Err(root.join("nx")));
    assert_eq!(strict(&root.join("sub/../sub/y")), Ok(root.join("sub/y")));
    // A link anywhere else (the agent's state volume), into the workspace or to an ancestor
    // of it: re-pointed later, it leads anywhere.
    std::os::unix::fs::symlink(root.join("sub"), base.join("volume/in")).unwrap();
    assert_eq!(strict(&base.join("volume/in/z")), Err(base.join("volume/in")));
    std::os::unix::fs::symlink(&base, base.join("volume/up")).unwrap();
    assert_eq!(
        strict(&base.join("volume/up/work/sub")),
        Err(base.join("volume/up"))
    );
    // Outside, without links: as written.
    assert_eq!(strict(&base.join("volume/q")), Ok(base.join("volume/q")));
}
