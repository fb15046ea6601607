//! Issue 22, the session-18 attack on the workspace boundary (docs/attacks/session-18-workspace-9.md):
//! - A1: in a linked worktree, a relative `core.hooksPath` (a tracked `.githooks`) was compared
//!   in the main worktree, not in the worktree git runs hooks from;
//! - A2: replace refs kept working after the check: a quarantined `<oid>.ags-quarantine` (git
//!   reads the first 40 hex digits), one in a subdirectory, one only in `packed-refs`;
//! - A3: a git dir moved aside whole kept its config working under its new name, which a `.git`
//!   file reached through a link that dangled during the check;
//! - A4: a `.git` file or a push URL through a link that led nowhere yet was judged as written
//!   (inside the workspace), so a later launch could fill the place the link names;
//! - A6: a half-made git dir under `.git/modules/` stopped every later launch.
//!
//! Performed with the git image, rootful and rootless.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::git::{agent_in, git_ok, has_image};
use common::launch::{assert_clean, stderr};
use common::{CLEAN_PATH, TestEnv, each_mode, run_command, show, tool};

/// A repository at `rel` under the test root with one commit holding `Makefile`.
fn repository(env: &TestEnv, rel: &str) -> PathBuf {
    let dir = env.mkdir(rel, 0o755);
    env.write_file(format!("{rel}/Makefile"), "all:\n\t@echo mine\n", 0o644);
    git_ok(env, &dir, &["init", "-q", "-b", "main"]);
    git_ok(env, &dir, &["add", "Makefile"]);
    git_ok(env, &dir, &["commit", "-q", "-m", "one"]);
    dir.canonicalize().unwrap()
}

/// The user's git in `dir` with a clean PATH and an identity; its output, whatever it says.
fn user(env: &TestEnv, dir: &Path, args: &[&str]) -> Output {
    let d = dir.display().to_string();
    let mut all = vec!["-C", &d, "-c", "user.name=U", "-c", "user.email=u@x"];
    all.extend_from_slice(args);
    let mut cmd = env.command(tool("git"), all);
    cmd.env("PATH", CLEAN_PATH);
    run_command(cmd, None, common::RUN_TIMEOUT)
}

/// A1: the agent rewrites the tracked `.githooks/pre-commit` of the linked worktree it runs
/// in (`core.hooksPath = .githooks`, set in the repository's config). It goes aside, named;
/// the user's commit in the worktree runs nothing of the agent's.
#[test]
fn a1_hooks_path_of_a_linked_worktree_is_compared_where_git_runs_it() {
    each_mode(|env| {
        if !has_image(env) {
            return;
        }
        let repo = repository(env, "a1/R");
        env.write_file("a1/R/.githooks/pre-commit", "#!/bin/sh\nexit 0\n", 0o755);
        git_ok(env, &repo, &["config", "core.hooksPath", ".githooks"]);
        git_ok(env, &repo, &["add", ".githooks"]);
        git_ok(env, &repo, &["commit", "-q", "-m", "hooks"]);
        let wt = env.root().join("a1/W");
        git_ok(
            env,
            &repo,
            &["worktree", "add", "-q", &wt.display().to_string(), "-b", "feat"],
        );
        let wt = wt.canonicalize().unwrap();
        let pwned = env.root().join("pwned-a1");
        let script = format!(
            "printf '#!/bin/sh\\ntouch {}\\n' > .githooks/pre-commit\n",
            pwned.display()
        );
        let err = stderr(&agent_in(env, &wt, &script));
        let hook = format!("{}/.githooks/pre-commit", wt.display());
        assert!(
            err.lines()
                .any(|l| l.contains(&hook) && l.contains("a hook git runs")),
            "{}: not named: {err}",
            env.mode()
        );
        env.write_file("a1/W/change", "x\n", 0o644);
        user(env, &wt, &["add", "change"]);
        user(env, &wt, &["commit", "-q", "-m", "user"]);
        assert!(
            !pwned.exists(),
            "{}: the agent's pre-commit ran on the host",
            env.mode()
        );
        assert_clean(env);
    });
}

/// A2: three replace refs of the committed `Makefile` by the agent's: loose, in a
/// subdirectory, and packed. After the check none is in force: the user's `git reset --hard`
/// writes the committed Makefile, and packed branches stay.
#[test]
fn a2_replace_refs_are_out_of_force_after_the_check() {
    each_mode(|env| {
        if !has_image(env) {
            return;
        }
        let work = env.work_dir().canonicalize().unwrap();
        let forms = [
            ("loose", "git replace \"$B\" \"$N\""),
            ("nested", "git update-ref \"refs/replace/x/$B\" \"$N\""),
            ("packed", "git replace \"$B\" \"$N\" && git pack-refs --all"),
            // Attack C3: git takes any blank after the object id.
            (
                "tabbed",
                "git replace \"$B\" \"$N\" && git pack-refs --all && sed -i 's# refs/replace/#\trefs/replace/#' .git/packed-refs",
            ),
            // Attack C4: git follows a link to a directory of refs.
            (
                "linked",
                "mkdir .git/xdir && echo \"$N\" > .git/xdir/$B && mkdir -p .git/refs/replace && ln -s ../../xdir .git/refs/replace/x",
            ),
        ];
        let mut script = String::new();
        for (name, how) in forms {
            repository(env, &format!("work/{name}"));
            script.push_str(&format!(
                "cd {dir}\nprintf 'all:\\n\\t@echo agent\\n' > Makefile\nB=$(git rev-parse HEAD:Makefile); N=$(git hash-object -w Makefile)\n{how}\ngit checkout -q Makefile\ngit cat-file -p HEAD:Makefile | grep -q agent\ncd {work}\n",
                dir = work.join(name).display(),
                work = work.display()
            ));
        }
        let err = stderr(&agent_in(env, &work, &script));
        for (name, _) in forms {
            let repo = work.join(name);
            let what = match name {
                "packed" | "tabbed" => "packed refs holding a replace ref",
                _ => "a replace ref",
            };
            assert!(
                err.lines()
                    .any(|l| l.contains(&repo.display().to_string()) && l.contains(what)),
                "{} {name}: not named: {err}",
                env.mode()
            );
            let out = user(env, &repo, &["reset", "-q", "--hard", "HEAD"]);
            assert!(out.status.success(), "{} {name}: {}", env.mode(), show(&out));
            let make = std::fs::read_to_string(repo.join("Makefile")).unwrap();
            assert_eq!(
                make,
                "all:\n\t@echo mine\n",
                "{} {name}: the agent's Makefile was written",
                env.mode()
            );
        }
        // The packed branch is still there (a copy of packed-refs without the replace ref).
        let out = user(
            env,
            &work.join("packed"),
            &["rev-parse", "--verify", "-q", "refs/heads/main"],
        );
        assert!(out.status.success(), "{}: main lost: {}", env.mode(), show(&out));
        assert_clean(env);
    });
}

/// The agent's submodule git dir `.git/modules/a` with `core.fsmonitor`, and `sub/.git` naming
/// `../lnk`, a link to where the check will move the module (dangling while the check runs).
fn a3_script(pwned: &Path) -> String {
    format!(
        r#"P=$PWD; M=$P/.git/modules/a
git init -q --bare "$M"
mkdir -p /tmp/w && echo x > /tmp/w/f
git --git-dir="$M" --work-tree=/tmp/w add f
git --git-dir="$M" --work-tree=/tmp/w commit -qm m
C=$(git --git-dir="$M" rev-parse HEAD)
printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = "touch {pwned}; exit 1"\n' > "$M/config"
ln -s .git/modules/a.ags-quarantine lnk
mkdir sub && printf 'gitdir: ../lnk\n' > sub/.git
git update-index --add --cacheinfo 160000,$C,sub
"#,
        pwned = pwned.display()
    )
}

/// A3: the user's `git status` runs nothing, and the module moved aside is inert wherever a
/// pointer leads: git run on it directly runs no fsmonitor either.
#[test]
fn a3_a_git_dir_moved_aside_whole_keeps_nothing_working() {
    each_mode(|env| {
        if !has_image(env) {
            return;
        }
        let repo = repository(env, "work");
        let pwned = env.root().join("pwned-a3");
        let err = stderr(&agent_in(env, &repo, &a3_script(&pwned)));
        assert!(
            err.contains(&format!("{}/sub/.git", repo.display())),
            "{}: the .git file was not named: {err}",
            env.mode()
        );
        user(env, &repo, &["status"]);
        assert!(
            !pwned.exists(),
            "{}: git status ran the agent's fsmonitor",
            env.mode()
        );
        let moved: Vec<PathBuf> = std::fs::read_dir(repo.join(".git/modules"))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        assert_eq!(moved.len(), 1, "{}: {moved:?}", env.mode());
        assert!(
            !moved[0].join("config").exists(),
            "{}: the module's config is in force at {}",
            env.mode(),
            moved[0].display()
        );
        let tree = env.mkdir("a3-tree", 0o755);
        let gd = format!("--git-dir={}", moved[0].display());
        user(env, &tree, &[&gd, "--work-tree=.", "status"]);
        assert!(
            !pwned.exists(),
            "{}: the moved module's fsmonitor ran",
            env.mode()
        );
        assert_clean(env);
    });
}

/// A4: a `.git` file and a nested repository's push URL, each through a link that leads
/// nowhere during the check; the place it names is filled afterwards (a later launch can do
/// that in its state volume; here the host does it). The user's `git status` and `git push`
/// run nothing.
#[test]
fn a4_paths_through_links_that_lead_nowhere_yet_go_aside() {
    each_mode(|env| {
        if !has_image(env) {
            return;
        }
        let repo = repository(env, "work");
        let lib = repository(env, "work/vendor/lib");
        git_ok(
            env,
            &lib,
            &["remote", "add", "origin", "https://example.invalid/lib.git"],
        );
        let later = env.root().join("later");
        let script = format!(
            "ln -s {later}/evil lnk\nmkdir sub && printf 'gitdir: ../lnk\\n' > sub/.git\nmkdir sub2 && printf 'gitdir: ../nx/../lnk\\n' > sub2/.git\nln -s {later}/evil.git vendor/lib/.cache-lnk\nprintf '[remote \"origin\"]\\n\\tpushurl = {repo}/vendor/lib/.cache-lnk\\n' >> vendor/lib/.git/config\n",
            later = later.display(),
            repo = repo.display()
        );
        let err = stderr(&agent_in(env, &repo, &script));
        assert!(
            err.contains(&format!("{}/sub/.git", repo.display())),
            "{}: the .git file was not named: {err}",
            env.mode()
        );
        assert!(
            err.contains("remote.origin.pushurl naming a path through"),
            "{}: the push URL was not named: {err}",
            env.mode()
        );
        // What a later launch builds where the links point.
        let pwned = env.root().join("pwned-a4");
        env.mkdir("later/evil/objects", 0o755);
        env.mkdir("later/evil/refs", 0o755);
        env.write_file("later/evil/HEAD", "ref: refs/heads/main\n", 0o644);
        env.write_file(
            "later/evil/config",
            format!(
                "[core]\n\tbare = false\n\tfsmonitor = \"touch {}; exit 1\"\n",
                pwned.display()
            ),
            0o644,
        );
        git_ok(
            env,
            env.root(),
            &[
                "init",
                "-q",
                "--bare",
                &later.join("evil.git").display().to_string(),
            ],
        );
        env.write_file(
            "later/evil.git/hooks/pre-receive",
            format!("#!/bin/sh\ntouch {}\n", pwned.display()),
            0o755,
        );
        assert!(
            err.contains(&format!("{}/sub2/.git", repo.display())),
            "{}: `nx/..` was not named (attack C2): {err}",
            env.mode()
        );
        user(env, &repo.join("sub"), &["status"]);
        env.mkdir("work/nx", 0o755);
        user(env, &repo.join("sub2"), &["status"]);
        user(env, &lib, &["push", "-q", "origin", "main"]);
        assert!(
            !pwned.exists(),
            "{}: the later launch's program ran on the host",
            env.mode()
        );
        assert_clean(env);
    });
}

/// A6: a half-made git dir under `.git/modules/` (`HEAD`, and `config` a directory) does not
/// stop the next launch.
#[test]
fn a6_a_half_made_module_does_not_stop_later_launches() {
    each_mode(|env| {
        if !has_image(env) {
            return;
        }
        let repo = repository(env, "work");
        agent_in(
            env,
            &repo,
            "mkdir -p .git/modules/x/config && echo 'ref: refs/heads/main' > .git/modules/x/HEAD\n",
        );
        agent_in(env, &repo, "true\n");
        assert_clean(env);
    });
}

/// Attack C1: a `.git` file names `<deep dir>.ags-quarantine/../lnk`, a path that only exists
/// once the check has moved the too-deep directory aside, and `lnk` then leads into it (to a
/// git dir with `core.fsmonitor` the check never walked). The `.git` file goes aside.
#[test]
fn c1_a_path_made_by_the_quarantine_itself_leads_nowhere() {
    each_mode(|env| {
        if !has_image(env) {
            return;
        }
        let repo = repository(env, "work");
        let pwned = env.root().join("pwned-c1");
        let script = format!(
            r#"p=deep; i=0; while [ $i -lt 199 ]; do p=$p/d; i=$((i+1)); done
G=$p/d/e/g
mkdir -p $G/objects $G/refs; echo 'ref: refs/heads/main' > $G/HEAD
printf '[core]\n\tbare = false\n\tfsmonitor = "touch {pwned}; exit 1"\n' > $G/config
ln -s d.ags-quarantine/e/g $p/lnk
mkdir sub; printf 'gitdir: ../%s/d.ags-quarantine/../lnk\n' "$p" > sub/.git
"#,
            pwned = pwned.display()
        );
        let err = stderr(&agent_in(env, &repo, &script));
        assert!(
            err.contains(&format!("{}/sub/.git", repo.display())),
            "{}: the .git file was not named: {err}",
            env.mode()
        );
        user(env, &repo.join("sub"), &["status"]);
        assert!(
            !pwned.exists(),
            "{}: the deep git dir's fsmonitor ran",
            env.mode()
        );
        assert_clean(env);
    });
}

/// Whether the host's git reads reftable (2.45 and later).
fn host_git_reads_reftable(env: &TestEnv) -> bool {
    let out = user(env, env.root(), &["--version"]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let version: Vec<u32> = text
        .split_whitespace()
        .nth(2)
        .unwrap_or("0")
        .split('.')
        .take(2)
        .map(|n| n.parse().unwrap_or(0))
        .collect();
    version >= vec![2, 45]
}

/// Attack C5: a nested repository switched to reftable refs (which the check cannot read)
/// with a replace ref: the config goes aside, so the host's git reads no reftable and the
/// user's checkout writes the committed Makefile.
#[test]
fn c5_a_switch_to_reftable_goes_aside() {
    each_mode(|env| {
        if !has_image(env) || !host_git_reads_reftable(env) {
            eprintln!("SKIP: the host's git reads no reftable (before 2.45)");
            return;
        }
        let work = env.work_dir().canonicalize().unwrap();
        let nested = repository(env, "work/n");
        let script = "cd n\nrm -rf .git/logs\ngit refs migrate --ref-format=reftable\nprintf 'all:\\n\\t@echo agent\\n' > Makefile\nB=$(git rev-parse HEAD:Makefile); N=$(git hash-object -w Makefile)\ngit replace \"$B\" \"$N\"\ngit checkout -q Makefile\n";
        let err = stderr(&agent_in(env, &work, script));
        assert!(
            err.contains("extensions.refstorage"),
            "{}: not named: {err}",
            env.mode()
        );
        user(env, &nested, &["checkout", "-q", "--", "Makefile"]);
        let make = std::fs::read_to_string(nested.join("Makefile")).unwrap();
        assert_eq!(
            make,
            "all:\n\t@echo mine\n",
            "{}: the agent's Makefile was written",
            env.mode()
        );
        assert_clean(env);
    });
}

/// Attack C6: shapes under `.git/worktrees` the guard refuses (`worktrees` a file; an entry's
/// `gitdir` a link) do not stop the next launch: the check moves them aside.
#[test]
fn c6_worktree_shapes_do_not_stop_later_launches() {
    each_mode(|env| {
        if !has_image(env) {
            return;
        }
        let a = repository(env, "work/a");
        let b = repository(env, "work/b");
        agent_in(env, &a, "echo x > .git/worktrees\n");
        agent_in(env, &a, "true\n");
        agent_in(
            env,
            &b,
            "mkdir -p .git/worktrees/w && ln -s /etc/passwd .git/worktrees/w/gitdir && mkfifo .git/worktrees/w/commondir\n",
        );
        agent_in(env, &b, "true\n");
        assert_clean(env);
    });
}

/// Attack E1: a nested repository `n` whose `.git` file names a git dir deep below it, with a
/// relative push URL that leads out of the workspace from `n` (where git runs) but to a plain
/// directory inside from the git dir's parent (where the check used to read it). The `.git`
/// file goes aside (no worktree entry or submodule names `n` back) and the URL is judged from
/// where git runs: the user's push runs no hook.
#[test]
fn e1_a_relative_url_is_judged_from_where_git_runs() {
    each_mode(|env| {
        if !has_image(env) {
            return;
        }
        let repo = repository(env, "work");
        let outside = env.root().join("e1-outside.git");
        git_ok(
            env,
            env.root(),
            &["init", "-q", "--bare", &outside.display().to_string()],
        );
        let pwned = env.root().join("pwned-e1");
        env.write_file(
            "e1-outside.git/hooks/pre-receive",
            format!("#!/bin/sh\ntouch {}\n", pwned.display()),
            0o755,
        );
        let ups = repo.join("n").components().count() - 1;
        let rel = format!(
            "{}{}",
            "../".repeat(ups),
            outside.display().to_string().trim_start_matches('/')
        );
        let script = format!(
            r#"G=n/.g/a/b/c/d
mkdir -p $G/objects $G/refs/heads && echo 'ref: refs/heads/main' > $G/HEAD
printf '[core]\n\tbare = false\n[remote "origin"]\n\turl = %s\n' '{rel}' > $G/config
printf 'gitdir: .g/a/b/c/d\n' > n/.git
D=$(cd n/.g/a/b/c && for i in $(seq {ups}); do cd ..; done && pwd)/{tail}; mkdir -p "$D"
"#,
            tail = outside.display().to_string().trim_start_matches('/')
        );
        let err = stderr(&agent_in(env, &repo, &script));
        assert!(
            err.contains(&format!("{}/n/.git", repo.display())),
            "{}: the .git file was not named: {err}",
            env.mode()
        );
        let n = repo.join("n");
        user(env, &n, &["commit", "-q", "--allow-empty", "-m", "wip"]);
        user(env, &n, &["push", "-q", "origin", "HEAD:main"]);
        assert!(
            !pwned.exists(),
            "{}: the pre-receive hook outside ran",
            env.mode()
        );
        assert_clean(env);
    });
}

/// Attack E2: `app/.git` = `gitdir: ../.git` makes `app` a second checkout of the user's
/// repository, whose `core.hooksPath = .githooks` then runs `app/.githooks`. The `.git` file
/// goes aside, and the user's own hooks stay where they are.
#[test]
fn e2_a_second_checkout_of_the_users_repository_goes_aside() {
    each_mode(|env| {
        if !has_image(env) {
            return;
        }
        let repo = repository(env, "work");
        env.write_file("work/.githooks/pre-commit", "#!/bin/sh\nexit 0\n", 0o755);
        git_ok(env, &repo, &["config", "core.hooksPath", ".githooks"]);
        git_ok(env, &repo, &["add", ".githooks"]);
        git_ok(env, &repo, &["commit", "-q", "-m", "hooks"]);
        env.mkdir("work/app", 0o755);
        let pwned = env.root().join("pwned-e2");
        let script = format!(
            "printf 'gitdir: ../.git\\n' > app/.git\nmkdir -p app/.githooks\nprintf '#!/bin/sh\\ntouch {}\\n' > app/.githooks/pre-commit\nchmod 755 app/.githooks/pre-commit\n",
            pwned.display()
        );
        let err = stderr(&agent_in(env, &repo, &script));
        assert!(
            err.contains(&format!("{}/app/.git", repo.display())),
            "{}: not named: {err}",
            env.mode()
        );
        assert!(
            repo.join(".githooks/pre-commit").exists(),
            "{}: the user's own hook went aside: {err}",
            env.mode()
        );
        env.write_file("work/app/change", "x\n", 0o644);
        let app = repo.join("app");
        user(env, &app, &["add", "change"]);
        user(env, &app, &["commit", "-q", "-m", "user"]);
        assert!(!pwned.exists(), "{}: the agent's pre-commit ran", env.mode());
        assert_clean(env);
    });
}

/// Attack E3: an existing submodule's `commondir` written as `./` passed the check (it names
/// the module itself) but not the next launch's guard (only `.`), which then stopped every
/// launch. It goes aside; the next launch runs.
#[test]
fn e3_a_commondir_the_guard_refuses_goes_aside() {
    each_mode(|env| {
        if !has_image(env) {
            return;
        }
        let repo = repository(env, "work");
        agent_in(
            env,
            &repo,
            "git init -q --bare .git/modules/lib && printf './\\n' > .git/modules/lib/commondir\n",
        );
        let repo2 = repository(env, "two");
        // The same on a module that was there before the launch.
        git_ok(env, &repo2, &["init", "-q", "--bare", ".git/modules/lib"]);
        agent_in(env, &repo2, "printf './\\n' > .git/modules/lib/commondir\n");
        agent_in(env, &repo2, "true\n");
        agent_in(env, &repo, "true\n");
        assert_clean(env);
    });
}

/// Attack F1: a worktree entry and its common dir both made by the agent — the common dir
/// (`objects`, `refs`, a `config` with `core.fsmonitor`, a `pre-commit`, no `HEAD`) hidden in
/// `.git/lost+found` — with `vendor/lib/.git` naming the entry, whose `gitdir` names it back,
/// and a gitlink so that the top-level `git status` recurses. The `.git` file goes aside (the
/// common dir is no git dir the inventory held); nothing runs.
#[test]
fn f1_a_worktree_entry_of_a_forged_common_dir_goes_aside() {
    each_mode(|env| {
        if !has_image(env) {
            return;
        }
        let repo = repository(env, "work");
        let pwned = env.root().join("pwned-f1");
        let script = format!(
            r#"X=.git/lost+found
mkdir -p $X/objects $X/refs/heads $X/hooks $X/worktrees/W vendor/lib
git rev-parse HEAD > $X/worktrees/W/HEAD
echo '../..' > $X/worktrees/W/commondir
echo "$PWD/vendor/lib/.git" > $X/worktrees/W/gitdir
cp -r .git/objects/. $X/objects/
printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = "touch {p}; false"\n' > $X/config
printf '#!/bin/sh\ntouch {p}\n' > $X/hooks/pre-commit; chmod 755 $X/hooks/pre-commit
echo "gitdir: ../../$X/worktrees/W" > vendor/lib/.git
git update-index --add --cacheinfo 160000,$(git rev-parse HEAD),vendor/lib
"#,
            p = pwned.display()
        );
        let err = stderr(&agent_in(env, &repo, &script));
        assert!(
            err.contains(&format!("{}/vendor/lib/.git", repo.display())),
            "{}: not named: {err}",
            env.mode()
        );
        user(env, &repo, &["status", "--short"]);
        env.write_file("work/vendor/lib/y", "x\n", 0o644);
        let lib = repo.join("vendor/lib");
        user(env, &lib, &["add", "y"]);
        user(env, &lib, &["commit", "-q", "-m", "y"]);
        assert!(
            !pwned.exists(),
            "{}: the forged common dir's program ran",
            env.mode()
        );
        assert_clean(env);
    });
}

/// Attack G1: the agent's submodule git dir `.git/modules/x` is moved aside, and `.gitmodules`
/// names the submodule `x.ags-quarantine`, the name the quarantine used to give it: the user's
/// `git submodule update --init` checked out the agent's commit from there without fetching.
/// A submodule git dir now goes aside under a name with random digits: the update finds no
/// git dir and tries the URL (a path that does not exist), so nothing of the agent's is written.
#[test]
fn g1_a_submodule_git_dir_moved_aside_is_not_found_by_name() {
    each_mode(|env| {
        if !has_image(env) {
            return;
        }
        let repo = repository(env, "work");
        let script = r#"rm -rf /tmp/src && git init -q -b main /tmp/src && cd /tmp/src
printf 'echo agent\n' > .envrc
git add -A && git commit -qm lib
C=$(git rev-parse HEAD)
cd "$OLDPWD"
git clone -q --bare /tmp/src .git/modules/x
printf '[submodule "x.ags-quarantine"]\n\tpath = sub\n\turl = /nonexistent/lib.git\n' > .gitmodules
git update-index --add --cacheinfo 160000,$C,sub
git add .gitmodules
git commit -qm 'add lib submodule'
"#;
        let err = stderr(&agent_in(env, &repo, script));
        assert!(
            err.contains(".git/modules/x: a submodule's git dir"),
            "{}: not named: {err}",
            env.mode()
        );
        assert!(
            !repo.join(".git/modules/x.ags-quarantine").exists(),
            "{}: a name the agent can guess",
            env.mode()
        );
        user(
            env,
            &repo,
            &[
                "-c",
                "protocol.file.allow=always",
                "submodule",
                "update",
                "--init",
            ],
        );
        assert!(
            !repo.join("sub/.envrc").exists(),
            "{}: the agent's commit was checked out",
            env.mode()
        );
        assert_clean(env);
    });
}

/// Attack G2: the agent writes a project overlay declaring a prepare hook; every later launch
/// without a terminal stopped (an untrusted overlay with hooks is refused). `.ags` is a
/// protected path now: what appeared there goes aside, and the next launch runs.
#[test]
fn g2_a_planted_overlay_does_not_stop_later_launches() {
    each_mode(|env| {
        if !has_image(env) {
            return;
        }
        let repo = repository(env, "work");
        let script = "mkdir -p .ags && printf '[[prepare_hook]]\\nname = \"x\"\\nexecutable = \"/bin/true\"\\n' > .ags/config.toml\n";
        let err = stderr(&agent_in(env, &repo, script));
        assert!(err.contains(".ags"), "{}: not named: {err}", env.mode());
        agent_in(env, &repo, "true\n");
        assert_clean(env);
    });
}
