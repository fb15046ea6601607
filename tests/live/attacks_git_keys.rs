//! Issue 22, after the session-9 attack: git settings judged by name alone let planted
//! repositories through the check after the launch (`workspace::git_inventory`). The agent
//! (busybox, as an attacker would) plants, against real Podman, rootful and rootless:
//! - a nested repository whose `remote.origin.url` is `evil::x` (git runs `git-remote-evil`
//!   from `PATH`) beside a `bin/git-remote-evil`, with `bin` on the user's `PATH` (direnv's
//!   `PATH_add bin`); the user's next `git fetch` there ran it;
//! - a nested repository whose `core.worktree` names a directory outside the workspace: git on
//!   the host then checks out and runs hooks there;
//! - a `.git` file naming another repository outside the workspace (no risky piece in it);
//! - an interactive rebase "in progress" in the repository itself whose todo has an `exec`
//!   line: the user's `git rebase --continue` (which `git status` suggests) ran it.
//!
//! Each ran or pointed outside before the fix: every piece must now be moved aside.

use crate::common;

use std::path::Path;
use std::process::Output;

use common::launch::{assert_clean, run_agent, stderr, stdout};
use common::{CLEAN_PATH, TestEnv, each_mode, run_command, show, tool};

fn git(env: &TestEnv, dir: &Path, path: &str, args: &[&str]) -> Output {
    let d = dir.display().to_string();
    let mut all = vec!["-C", &d, "-c", "user.name=Test", "-c", "user.email=t@example.com"];
    all.extend_from_slice(args);
    let mut cmd = env.command(tool("git"), all);
    cmd.env("PATH", path);
    run_command(cmd, None, common::RUN_TIMEOUT)
}

fn git_ok(env: &TestEnv, dir: &Path, args: &[&str]) -> String {
    let out = git(env, dir, CLEAN_PATH, args);
    assert!(out.status.success(), "git {args:?}: {}", show(&out));
    stdout(&out)
}

/// Each `(piece, said)`: moved aside next to itself, and stderr explains it with `said`.
fn assert_moved(env: &TestEnv, work: &Path, out: &Output, pieces: &[(&str, &str)]) {
    let err = stderr(out);
    for (piece, said) in pieces {
        let mode = env.mode();
        assert!(!work.join(piece).exists(), "{mode}: {piece} left in place: {err}");
        // A replace ref gets the mark in front, with a dot: git reads an object id from its
        // start, and skips names starting with a dot.
        let aside = match piece.rsplit_once("refs/replace/") {
            Some((dir, name)) => work.join(format!("{dir}refs/replace/.ags-quarantine.{name}")),
            None => work.join(format!("{piece}.ags-quarantine")),
        };
        assert!(aside.exists(), "{mode}: {piece}: {err}");
        assert!(err.contains(said), "{mode}: {piece} not explained: {err}");
    }
}

#[test]
fn urls_worktrees_git_files_and_rebase_todos_pointing_away_are_moved_aside() {
    each_mode(|env| {
        let work = env.work_dir().canonicalize().unwrap();
        git_ok(env, &work, &["init", "-q", "-b", "main"]);
        git_ok(env, &work, &["commit", "-q", "--allow-empty", "-m", "one"]);
        let head = git_ok(env, &work, &["rev-parse", "HEAD"]).trim().to_string();
        let outside = env.mkdir("outside", 0o755).canonicalize().unwrap();
        git_ok(env, &outside, &["init", "-q", "-b", "main"]);
        let marker = env.root().join("pwned");
        let m = marker.display();
        let script = format!(
            r#"repo() {{ mkdir -p "$1/.git/refs/heads" "$1/.git/objects" && echo 'ref: refs/heads/main' > "$1/.git/HEAD" && printf '%b' "$2" > "$1/.git/config"; }}
mkdir -p bin && printf '#!/bin/sh\ntouch {m}.helper\nexit 1\n' > bin/git-remote-evil && chmod 755 bin/git-remote-evil
repo fetcher '[remote "origin"]\n\turl = evil::x\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n'
repo away '[core]\n\tworktree = {o}\n'
mkdir -p other && echo 'gitdir: {o}/.git' > other/.git
mkdir .git/rebase-merge && cd .git/rebase-merge && echo refs/heads/main > head-name && echo {head} > onto \
  && echo {head} > orig-head && touch interactive && echo 'exec touch {m}.rebase' > git-rebase-todo && cd ../..
echo PLANTED"#,
            o = outside.display()
        );
        let out = run_agent(env, &[], &["sh", "-c", &script]);
        assert!(stdout(&out).contains("PLANTED"), "{}", show(&out));
        assert_moved(
            env,
            &work,
            &out,
            &[
                ("fetcher/.git/config", "remote.origin.url (a URL git hands"),
                ("away/.git/config", "core.worktree naming"),
                ("other/.git", "outside the workspace"),
                (".git/rebase-merge", "a rebase the launch left in progress"),
            ],
        );
        // The user's day afterwards: `bin` on PATH (direnv), fetch, rebase --continue.
        let path = format!("{}:{CLEAN_PATH}", work.join("bin").display());
        let _ = git(env, &work.join("fetcher"), &path, &["fetch", "origin"]);
        let _ = git(env, &work, CLEAN_PATH, &["rebase", "--continue"]);
        let top = git(
            env,
            &work.join("away"),
            CLEAN_PATH,
            &["rev-parse", "--show-toplevel"],
        );
        assert!(
            !stdout(&top).contains(&outside.display().to_string()),
            "{}",
            show(&top)
        );
        let ran: Vec<_> = ["helper", "rebase"]
            .iter()
            .filter(|t| env.root().join(format!("pwned.{t}")).exists())
            .collect();
        assert!(ran.is_empty(), "{}: planted programs ran: {ran:?}", env.mode());
        assert_clean(env);
    });
}

/// The session-10 attack on the same check: an upper-case scheme (`HTTPS://` runs
/// `git-remote-HTTPS`, git compares schemes byte for byte), an old-style remote file
/// (`.git/remotes/origin`, read when the config has no `origin`; in the repository itself), a
/// partial clone (git fetches from its promisor remote on its own: a plain `git status` reached
/// an agent-chosen URL from a `--network none` launch), and a `.git` file naming a git dir that
/// does not exist yet (a later launch made it in the agent's state volume, never walked); and
/// what hides a change from the user's review (`info/exclude`, a replace ref).
#[test]
fn upper_case_schemes_old_remotes_partial_clones_and_missing_git_dirs_are_moved_aside() {
    each_mode(|env| {
        let work = env.work_dir().canonicalize().unwrap();
        git_ok(env, &work, &["init", "-q", "-b", "main"]);
        let later = env.root().join("later");
        let script = format!(
            r#"repo() {{ mkdir -p "$1/.git/refs/heads" "$1/.git/objects" && echo 'ref: refs/heads/main' > "$1/.git/HEAD" && printf '%b' "$2" > "$1/.git/config"; }}
repo upper '[remote "origin"]\n\turl = HTTPS://example.invalid/x\n'
repo lazy '[core]\n\trepositoryformatversion = 1\n[extensions]\n\tpartialClone = origin\n[remote "origin"]\n\turl = http://127.0.0.1:9/x\n\tpromisor = true\n'
mkdir -p .git/remotes && printf 'URL: evil::x\nPull: refs/heads/main:refs/heads/main\n' > .git/remotes/origin
mkdir -p notyet && echo 'gitdir: {l}' > notyet/.git
echo 'tools/' >> .git/info/exclude && mkdir -p .git/refs/replace && echo {z} > .git/refs/replace/{z}
echo PLANTED"#,
            l = later.display(),
            z = "0".repeat(40)
        );
        let out = run_agent(env, &[], &["sh", "-c", &script]);
        assert!(stdout(&out).contains("PLANTED"), "{}", show(&out));
        assert_moved(
            env,
            &work,
            &out,
            &[
                ("upper/.git/config", "remote.origin.url (a URL git hands"),
                ("lazy/.git/config", "extensions.partialclone"),
                (
                    ".git/remotes/origin",
                    "a remote git fetches and pushes with (remotes/origin)",
                ),
                ("notyet/.git", "which does not exist (yet)"),
                (".git/info/exclude", "changes what git shows you"),
                (&format!(".git/refs/replace/{}", "0".repeat(40)), "a replace ref"),
            ],
        );
        assert_clean(env);
    });
}

/// Session-10 attack S10-6 and S10-1, with git in the container: the agent changes the tracked
/// `Makefile` and marks it `skip-worktree` (`git status` and `git diff` then show nothing, and
/// `make` runs its recipe), and stages `.envrc` without ever writing it (`update-index
/// --cacheinfo`, `skip-worktree`) and commits it (a push sends it, a checkout writes it). The
/// end of the launch names both index entries.
#[test]
fn index_entries_hidden_from_git_status_are_named() {
    each_mode(|env| {
        if !common::git::has_image(env) {
            return;
        }
        let work = env.work_dir().canonicalize().unwrap();
        env.write_file("work/Makefile", "all:\n\techo build\n", 0o644);
        git_ok(env, &work, &["init", "-q", "-b", "main"]);
        git_ok(env, &work, &["add", "Makefile"]);
        git_ok(env, &work, &["commit", "-q", "-m", "one"]);
        let out = common::git::agent(
            env,
            r#"printf 'all:\n\t@touch /tmp/pwned\n' > Makefile && git update-index --skip-worktree Makefile
b=$(printf 'touch /tmp/pwned\n' | git hash-object -w --stdin) && git update-index --add --cacheinfo "100644,$b,.envrc" && git update-index --skip-worktree .envrc
git commit -qm docs"#,
        );
        let err = stderr(&out);
        assert!(
            err.contains("hid files from `git status`"),
            "{}: {err}",
            env.mode()
        );
        for entry in ["Makefile (skip-worktree)", ".envrc (skip-worktree)"] {
            assert!(err.contains(entry), "{}: {entry} not named: {err}", env.mode());
        }
        assert_clean(env);
    });
}
