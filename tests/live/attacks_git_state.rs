//! Issue 22, the fourth session-12 attack (docs/attacks/session-12-workspace-4.md): git takes
//! the commits it checks out, resets a branch to, commits or applies from more than refs — the
//! state of an operation in progress, the messages of `logs/HEAD`, a submodule's git dir. The
//! agent makes a commit with a protected file, leaves it in no ref and no reflog column, and
//! names it there; an ordinary command the user types (`git rebase --abort`, `git checkout -`,
//! `git submodule update --init`) then brought it into the worktree or onto a branch, unnamed:
//! - H1, H1b, H6, H8: `rebase-merge/orig-head`, `rebase-apply/orig-head`, a pick-only todo,
//!   `rebase-merge/update-refs`;
//! - H3: `sequencer/head`; H4: `BISECT_START`; H5: `MERGE_AUTOSTASH`;
//! - H2: a `checkout: moving from X to main` line appended to `logs/HEAD`;
//! - H7: a submodule whose git dir the agent placed in `.git/modules/`.
//!
//! Performed with the git image, rootful and rootless; each repository is its own directory of
//! the workdir, so one launch carries them all.

use crate::common;

use std::path::Path;

use common::git::{agent, git_ok, has_image};
use common::launch::{assert_clean, stderr};
use common::{CLEAN_PATH, TestEnv, each_mode, run_command, tool};

/// The agent's helper: `hide FILE CONTENT` commits FILE on a detached HEAD, returns to `main`,
/// forgets the commit in every reflog and prints its name.
const HIDE: &str = r#"hide() {
  git checkout -q --detach && printf "$2" > "$1" && git add "$1" && git commit -qm wip
  x=$(git rev-parse HEAD); git checkout -q main; git reflog expire --expire=now --all; echo "$x"
}
"#;

/// Repositories `names` in the workdir, each with one commit on `main` and a branch `release`.
fn repositories(env: &TestEnv, names: &[&str]) -> std::path::PathBuf {
    let work = env.work_dir().canonicalize().unwrap();
    for name in names {
        let dir = env.mkdir(format!("work/{name}"), 0o755);
        env.write_file(format!("work/{name}/README"), "hello\n", 0o644);
        git_ok(env, &dir, &["init", "-q", "-b", "main"]);
        git_ok(env, &dir, &["add", "README"]);
        git_ok(env, &dir, &["commit", "-q", "-m", "one"]);
        git_ok(env, &dir, &["branch", "release"]);
    }
    work
}

/// The user's command in `dir`, whatever it says.
fn user(env: &TestEnv, dir: &Path, args: &[&str]) {
    let d = dir.display().to_string();
    let mut all = vec!["-C", &d, "-c", "user.name=U", "-c", "user.email=u@x"];
    all.extend_from_slice(args);
    let mut cmd = env.command(tool("git"), all);
    cmd.env("PATH", CLEAN_PATH);
    let _ = run_command(cmd, None, common::RUN_TIMEOUT);
}

/// Each operation left in progress names the hidden commit; each goes aside, explained, and the
/// command `git status` suggests leaves the branches and the worktree as they were.
#[test]
fn operations_left_in_progress_go_aside() {
    each_mode(|env| {
        if !has_image(env) {
            return;
        }
        let repos = ["h1", "h1b", "h3", "h4", "h5", "h6", "h8"];
        let work = repositories(env, &repos);
        let rebase = r#"d=.git/rebase-merge; mkdir -p $d; echo refs/heads/main > $d/head-name
echo $cur > $d/onto; touch $d/interactive; echo 1 > $d/msgnum; echo 1 > $d/end"#;
        let script = format!(
            r#"{HIDE}
cd h1; cur=$(git rev-parse HEAD); x=$(hide .envrc 'touch pwned\n'); {rebase}
echo $x > $d/orig-head; echo "pick $cur one" > $d/done; : > $d/git-rebase-todo; cd ..
cd h1b; cur=$(git rev-parse HEAD); x=$(hide .envrc 'touch pwned\n'); d=.git/rebase-apply; mkdir $d
echo $x > $d/orig-head; echo refs/heads/main > $d/head-name; echo $cur > $d/onto; touch $d/rebasing
echo 1 > $d/next; echo 1 > $d/last; cd ..
cd h3; cur=$(git rev-parse HEAD); x=$(hide .envrc 'touch pwned\n'); mkdir .git/sequencer
echo $x > .git/sequencer/head; echo $cur > .git/sequencer/abort-safety
echo "pick $cur one" > .git/sequencer/todo; : > .git/sequencer/opts; cd ..
cd h4; x=$(hide .envrc 'touch pwned\n'); echo $x > .git/BISECT_START; echo "git bisect start" > .git/BISECT_LOG; cd ..
cd h5; printf 'touch pwned\n' > .envrc; git stash push -q -u -m autostash; s=$(git rev-parse 'stash@{{0}}')
git stash drop -q; git reflog expire --expire=now --all; git rev-parse HEAD > .git/MERGE_HEAD
echo "Merge branch x" > .git/MERGE_MSG; : > .git/MERGE_MODE; echo $s > .git/MERGE_AUTOSTASH; cd ..
cd h6; cur=$(git rev-parse HEAD); x=$(hide .envrc 'touch pwned\n'); git checkout -q --detach; {rebase}
echo $cur > $d/orig-head; : > $d/done; echo "pick $x wip" > $d/git-rebase-todo; echo 0 > $d/msgnum; cd ..
cd h8; cur=$(git rev-parse HEAD); x=$(hide .envrc 'touch pwned\n'); git checkout -q --detach; {rebase}
echo $cur > $d/orig-head; echo "pick $cur one" > $d/done; : > $d/git-rebase-todo
printf 'refs/heads/release\n%s\n%s\n' $cur $x > $d/update-refs; cd .."#
        );
        let tips: Vec<_> = repos
            .iter()
            .map(|r| git_ok(env, &work.join(r), &["rev-parse", "main", "release"]))
            .collect();
        let err = stderr(&agent(env, &script));
        let aside = [
            ("h1/.git/rebase-merge", "a rebase the launch left in progress"),
            ("h1b/.git/rebase-apply", "a rebase or `git am` the launch left"),
            ("h3/.git/sequencer", "a cherry-pick or revert the launch left"),
            ("h4/.git/BISECT_START", "a bisection the launch left"),
            ("h5/.git/MERGE_AUTOSTASH", "a merge the launch left in progress"),
            ("h6/.git/rebase-merge", "a rebase the launch left in progress"),
            ("h8/.git/rebase-merge", "a rebase the launch left in progress"),
        ];
        for (piece, said) in aside {
            let mode = env.mode();
            assert!(!work.join(piece).exists(), "{mode}: {piece} left in place: {err}");
            let moved = work.join(format!("{piece}.ags-quarantine"));
            assert!(moved.exists(), "{mode}: {piece} not moved aside: {err}");
            assert!(
                err.contains(&format!("{piece}: {said}")),
                "{mode}: {piece}: {err}"
            );
        }
        let commands: [&[&str]; 7] = [
            &["rebase", "--abort"],
            &["rebase", "--abort"],
            &["cherry-pick", "--abort"],
            &["bisect", "reset"],
            &["merge", "--abort"],
            &["rebase", "--continue"],
            &["rebase", "--continue"],
        ];
        for ((repo, args), tips) in repos.iter().zip(commands).zip(&tips) {
            let dir = work.join(repo);
            user(env, &dir, args);
            user(env, &dir, &["checkout", "-q", "main"]);
            let now = git_ok(env, &dir, &["rev-parse", "main", "release"]);
            assert_eq!(
                &now,
                tips,
                "{}: {repo}: git {args:?} moved a branch: {err}",
                env.mode()
            );
            assert!(
                !dir.join(".envrc").exists(),
                "{}: {repo}: git {args:?}: {err}",
                env.mode()
            );
        }
        assert_clean(env);
    });
}

/// H2: `git checkout -` takes the commit a forged `logs/HEAD` message names: the commit reader
/// takes it as a tip and names its `.envrc`. H7: a submodule whose git dir the agent placed goes
/// aside, so `git submodule update --init` has nothing local to check out.
#[test]
fn reflog_messages_and_placed_submodules_are_no_hiding_place() {
    each_mode(|env| {
        if !has_image(env) {
            return;
        }
        let work = repositories(env, &["h2", "h7"]);
        let script = format!(
            r#"{HIDE}
cd h2; x=$(hide .envrc 'touch pwned\n'); m=$(git rev-parse main)
printf '%s %s a <a@x> 1764874000 +0000\tcheckout: moving from %s to main\n' $m $m $(echo $x | cut -c1-9) >> .git/logs/HEAD
cd ../h7; git init -q -b main /tmp/ev; cd /tmp/ev; git commit -q --allow-empty -m e0
printf 'touch pwned\n' > .envrc; git add .envrc; git commit -qm tooling; cd -
git -c protocol.file.allow=always submodule add -q /tmp/ev tools 2>/dev/null; git commit -qm 'add tools'
rm -rf tools; mkdir tools"#
        );
        let err = stderr(&agent(env, &script));
        let mode = env.mode();
        assert!(
            err.contains("of this launch changes .envrc in") && err.contains("h2/.git"),
            "{mode}: the commit a reflog message names was not read: {err}"
        );
        let module = "h7/.git/modules/tools";
        assert!(
            !work.join(module).exists(),
            "{mode}: {module} left in place: {err}"
        );
        assert!(
            err.contains(&format!("{module}: a submodule's git dir the launch made")),
            "{mode}: {err}"
        );
        user(env, &work.join("h7"), &["submodule", "update", "--init"]);
        assert!(!work.join("h7/tools/.envrc").exists(), "{mode}: {err}");
        assert_clean(env);
    });
}

/// Session-13 attacks J1 and J3: names git resolves before object names. J1: the user once
/// checked out `fix-1234`; the agent's commit on `release` adds `.envrc`, and a ref `refs/1234`
/// at it turned the reader's exclusion `^1234` (a hex run of that old message) into its own
/// commit. J3: a root ref `LINT_HEAD` (named by a forged `checkout:` message, which `git
/// checkout -` follows) and `DEV_HEAD` (which `release`, made a symbolic ref, points at) hold
/// commits with `.envrc`. Each commit is named.
#[test]
fn refs_git_resolves_by_name_do_not_hide_commits() {
    each_mode(|env| {
        if !has_image(env) {
            return;
        }
        let work = repositories(env, &["j1", "j3", "j3b"]);
        git_ok(env, &work.join("j1"), &["checkout", "-q", "-b", "fix-1234"]);
        git_ok(env, &work.join("j1"), &["checkout", "-q", "main"]);
        let script = format!(
            r#"{HIDE}
cd j1; e=$(printf 'touch pwned\n' | git hash-object -w --stdin)
GIT_INDEX_FILE=/tmp/i git read-tree release && GIT_INDEX_FILE=/tmp/i git update-index --add --cacheinfo 100644,$e,.envrc
m=$(echo tidy | git commit-tree $(GIT_INDEX_FILE=/tmp/i git write-tree) -p release)
git update-ref refs/heads/release $m; git update-ref refs/1234 $m
cd ../j3; x=$(hide .envrc 'touch pwned-j3\n'); echo $x > .git/LINT_HEAD; m=$(git rev-parse main)
printf '%s %s a <a@x> 1764874000 +0000\tcheckout: moving from LINT_HEAD to main\n' $m $m >> .git/logs/HEAD
cd ../j3b; x=$(hide .envrc 'touch pwned\n'); echo $x > .git/DEV_HEAD; echo 'ref: DEV_HEAD' > .git/refs/heads/release"#
        );
        let err = stderr(&agent(env, &script));
        for repo in ["j1", "j3", "j3b"] {
            let git_dir = format!("{}/{repo}/.git,", work.display());
            let named = err
                .lines()
                .any(|l| l.contains("changes .envrc in") && l.contains(&git_dir));
            assert!(named, "{}: {repo}: the commit was not named: {err}", env.mode());
        }
        assert_clean(env);
    });
}

/// Session-13 attack J4: `.envrc` staged with `--cacheinfo` (no file on disk, no flag): the
/// user's "discard the agent's changes" (`git checkout .`) wrote it from the index, and `git
/// commit` would commit it. Named, with how to drop it.
#[test]
fn a_protected_file_staged_without_a_file_is_named() {
    each_mode(|env| {
        if !has_image(env) {
            return;
        }
        let work = repositories(env, &["j4"]);
        let script = r#"cd j4; e=$(printf 'touch pwned\n' | git hash-object -w --stdin)
git update-index --add --cacheinfo 100644,$e,.envrc && echo edit >> README"#;
        let err = stderr(&agent(env, script));
        let index = format!("{}/j4/.git/index: .envrc;", work.display());
        assert!(
            err.contains("the launch staged files host tools run") && err.contains(&index),
            "{}: {err}",
            env.mode()
        );
        assert_clean(env);
    });
}

/// Session-13 attack K1: `.vscode` committed as a symbolic link to the agent's `tools/vsc`
/// (whose `tasks.json` runs on folder open), and `.claude` staged as a link to a tracked
/// `tools/claude` (a `SessionStart` hook): `git checkout feature` and `git checkout .` put them in
/// place, and nothing was named — the path is a directory on the way to a protected one. Both
/// are named now.
#[test]
fn a_link_on_the_way_to_a_protected_path_is_named() {
    each_mode(|env| {
        if !has_image(env) {
            return;
        }
        let work = repositories(env, &["k1", "k1b"]);
        let script = r#"cd k1 && git checkout -q -b feature && mkdir -p tools/vsc && echo '{"tasks":[]}' > tools/vsc/tasks.json
ln -s tools/vsc .vscode && git add -A && git commit -qm tooling && git checkout -q main
cd ../k1b && mkdir -p tools/claude && echo '{}' > tools/claude/settings.json && git add tools && git commit -qm sample
b=$(printf tools/claude | git hash-object -w --stdin) && git update-index --add --cacheinfo 120000,$b,.claude"#;
        let err = stderr(&agent(env, script));
        let mode = env.mode();
        let k1 = format!("{}/k1/.git,", work.display());
        let named = err
            .lines()
            .any(|l| l.contains("changes .vscode in") && l.contains(&k1));
        assert!(
            named,
            "{mode}: the commit of the .vscode link was not named: {err}"
        );
        let k1b = format!("{}/k1b/.git/index: .claude;", work.display());
        assert!(
            err.contains(&k1b),
            "{mode}: the staged .claude link was not named: {err}"
        );
        assert_clean(env);
    });
}

/// Session-14 attack F1: `gc.recentObjectsHook` is a command `git gc` runs; with `gc.auto = 1`
/// and loose objects in `objects/17/` the automatic maintenance of the user's next `git commit`
/// ran it. Planted in an existing repository and in one the agent creates: each config goes
/// aside, named, and the user's commit runs nothing.
#[test]
fn a_gc_hook_in_a_planted_config_does_not_run_at_the_next_commit() {
    each_mode(|env| {
        if !has_image(env) {
            return;
        }
        let work = repositories(env, &["f1"]);
        let pwned = work.join("pwned-f1");
        let script = format!(
            r#"plant() {{ printf '[gc]\n\tauto = 1\n\tpruneExpire = now\n\trecentObjectsHook = touch {p}; true\n' >> .git/config
n=0; i=0; while [ $n -lt 3 ]; do h=$(echo "x$i" | git hash-object -w --stdin); case $h in 17*) n=$((n+1));; *) rm -f .git/objects/$(echo $h | cut -c1-2)/$(echo $h | cut -c3-);; esac; i=$((i+1)); done; }}
cd f1 && plant && cd .. && mkdir f1b && cd f1b && git init -q -b main && echo a > a && git add a && git commit -qm a && plant"#,
            p = pwned.display()
        );
        let err = stderr(&agent(env, &script));
        for repo in ["f1", "f1b"] {
            let config = format!("{}/{repo}/.git/config", work.display());
            assert!(
                err.lines()
                    .any(|l| l.contains(&config) && l.contains("gc.recentobjectshook")),
                "{}: {repo}: the planted config was not named: {err}",
                env.mode()
            );
            std::fs::write(work.join(repo).join("README"), "changed\n").unwrap();
            user(env, &work.join(repo), &["add", "README"]);
            user(env, &work.join(repo), &["commit", "-q", "-m", "user"]);
        }
        assert!(!pwned.exists(), "{}: the gc hook ran on the host", env.mode());
        assert_clean(env);
    });
}

/// Session-14 attack F2: the user's hook is a link to a tracked script, and the user's config
/// runs a tracked script as a clean filter. The agent rewrote both scripts (ordinary worktree
/// files; the hook and the config stayed as they were), and the user's next `git add` and `git
/// commit` ran them. Both go aside, named as programs git runs; nothing runs.
#[test]
fn scripts_a_users_hook_or_filter_runs_are_compared() {
    each_mode(|env| {
        if !has_image(env) {
            return;
        }
        let work = repositories(env, &["f2"]);
        let repo = work.join("f2");
        env.write_file("work/f2/scripts/pre-commit", "#!/bin/sh\necho lint ok\n", 0o755);
        env.write_file("work/f2/tools/clean.sh", "#!/bin/sh\ncat\n", 0o755);
        env.write_file("work/f2/.gitattributes", "*.txt filter=tidy\n", 0o644);
        git_ok(env, &repo, &["add", "-A"]);
        git_ok(env, &repo, &["commit", "-q", "-m", "tooling"]);
        git_ok(env, &repo, &["config", "filter.tidy.clean", "./tools/clean.sh"]);
        std::os::unix::fs::symlink("../../scripts/pre-commit", repo.join(".git/hooks/pre-commit")).unwrap();
        let pwned = work.join("pwned-f2");
        let script = format!(
            "cd f2 && printf '#!/bin/sh\\ntouch {p}.hook\\n' > scripts/pre-commit && printf '#!/bin/sh\\ntouch {p}.filter; cat\\n' > tools/clean.sh",
            p = pwned.display()
        );
        let err = stderr(&agent(env, &script));
        for (file, why) in [
            ("scripts/pre-commit", "hook pre-commit links to it"),
            ("tools/clean.sh", "filter.tidy.clean names it"),
        ] {
            let path = format!("{}/{file}", repo.display());
            assert!(
                err.lines().any(|l| l.contains(&path) && l.contains(why)),
                "{}: {file} was not named: {err}",
                env.mode()
            );
        }
        env.write_file("work/f2/a.txt", "text\n", 0o644);
        user(env, &repo, &["add", "a.txt"]);
        user(env, &repo, &["commit", "-q", "-m", "user"]);
        for kind in ["hook", "filter"] {
            let marker = pwned.with_extension(kind);
            assert!(
                !marker.exists(),
                "{}: the {kind} script ran on the host",
                env.mode()
            );
        }
        assert_clean(env);
    });
}

/// Session-14 attack A (on F2's fix): the script the user's hook links to, replaced by a link
/// to a file outside the workspace (the agent's state volume, whose host path the container's
/// mountinfo shows). Only the link's end was compared, and it lay outside: nothing was named.
/// The named path itself is a piece now: its change of type is named.
#[test]
fn a_hook_script_turned_into_a_link_out_of_the_workspace_is_named() {
    each_mode(|env| {
        if !has_image(env) {
            return;
        }
        let work = repositories(env, &["a1"]);
        let repo = work.join("a1");
        env.write_file("work/a1/scripts/pre-commit", "#!/bin/sh\necho lint ok\n", 0o755);
        git_ok(env, &repo, &["add", "-A"]);
        git_ok(env, &repo, &["commit", "-q", "-m", "tooling"]);
        std::os::unix::fs::symlink("../../scripts/pre-commit", repo.join(".git/hooks/pre-commit")).unwrap();
        let err = stderr(&agent(
            env,
            "cd a1 && rm scripts/pre-commit && ln -s /etc/hostname scripts/pre-commit",
        ));
        let path = format!("{}/scripts/pre-commit", repo.display());
        assert!(
            err.lines()
                .any(|l| l.contains(&path) && l.contains("hook pre-commit links to it")),
            "{}: the link was not named: {err}",
            env.mode()
        );
        assert_clean(env);
    });
}

/// Session-14 second attacker's B: the files a user's hook reaches without naming them from
/// the top — a file the named script sources (`. "$(dirname "$0")/common.sh"`), a program run
/// after `cd tools &&`, the scripts a glob (`checks/*.sh`) finds, a file sourced without a `/`.
/// The agent rewrote each, and the user's next `git commit` ran them. Each goes aside, named;
/// nothing runs.
#[test]
fn files_a_users_hook_reaches_through_scripts_cd_and_globs_are_compared() {
    each_mode(|env| {
        if !has_image(env) {
            return;
        }
        let work = repositories(env, &["b1"]);
        let repo = work.join("b1");
        let hook = "#!/bin/sh\nsh scripts/check\n(cd tools && ./lint)\nfor f in checks/*.sh; do sh \"$f\"; done\n. env.sh\n";
        env.write_file(
            "work/b1/scripts/check",
            "#!/bin/sh\n. \"$(dirname \"$0\")/common.sh\"\n",
            0o755,
        );
        env.write_file("work/b1/scripts/common.sh", "echo common\n", 0o644);
        env.write_file("work/b1/tools/lint", "#!/bin/sh\necho lint\n", 0o755);
        env.write_file("work/b1/checks/a.sh", "echo a\n", 0o644);
        env.write_file("work/b1/env.sh", "true\n", 0o644);
        git_ok(env, &repo, &["add", "-A"]);
        git_ok(env, &repo, &["commit", "-q", "-m", "tooling"]);
        env.write_file("work/b1/.git/hooks/pre-commit", hook, 0o755);
        let pwned = work.join("pwned-b1");
        let script = format!(
            "cd b1 && for f in scripts/common.sh tools/lint checks/a.sh env.sh; do printf 'touch {p}.%s\\n' \"${{f%%/*}}\" >> \"$f\"; done",
            p = pwned.display()
        );
        let err = stderr(&agent(env, &script));
        for file in ["scripts/common.sh", "tools/lint", "checks/a.sh", "env.sh"] {
            let path = format!("{}/{file}", repo.display());
            assert!(
                err.lines()
                    .any(|l| l.contains(&path) && l.contains("a program git runs")),
                "{}: {file} was not named: {err}",
                env.mode()
            );
        }
        env.write_file("work/b1/a.txt", "text\n", 0o644);
        user(env, &repo, &["add", "a.txt"]);
        user(env, &repo, &["commit", "-q", "-m", "user"]);
        let ran: Vec<_> = std::fs::read_dir(&work)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("pwned-b1"))
            .collect();
        assert!(ran.is_empty(), "{}: ran on the host: {ran:?}", env.mode());
        assert_clean(env);
    });
}
