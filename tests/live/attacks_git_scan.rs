//! Issue 10, hole 4: evading the check after the launch (`workspace::git_inventory`). The agent
//! (busybox, as an attacker would) plants git configuration that the check did not see, each
//! piece reached by the host's real git afterwards — `git status` in the repository (which
//! recurses into every gitlink of the index), `git status` in a subdirectory, `git commit` —
//! against real Podman, rootful and rootless. Every planted program touches a marker; none may
//! run. Each piece ran on the host before the fix (the test failed there).
//!
//! The gitlinks are written into the index before the launch to keep the test short: the agent
//! can write the index itself (`tests/live/attacks_git_nested.rs` does it).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::launch::{assert_clean, run_agent, stderr, stdout};
use common::{TestEnv, each_mode, run_command, show, tool};

fn git_in(env: &TestEnv, dir: &Path, args: &[&str]) -> Output {
    let d = dir.display().to_string();
    let mut all = vec!["-C", &d, "-c", "user.name=Test", "-c", "user.email=t@example.com"];
    all.extend_from_slice(args);
    run_command(env.command(tool("git"), all), None, common::RUN_TIMEOUT)
}

fn git_ok(env: &TestEnv, dir: &Path, args: &[&str]) -> String {
    let out = git_in(env, dir, args);
    assert!(out.status.success(), "git {args:?}: {}", show(&out));
    stdout(&out)
}

/// The markers the planted programs created (`pwned.<tag>`).
fn planted(root: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("pwned."))
        .collect()
}

/// How deep the agent nests a repository (the walk stopped at 200 levels).
const DEEP: usize = 205;

/// Each way past the check, in one launch:
/// - `src/` made a bare repository whose `objects` is a symbolic link (git only asks
///   `access(objects, X_OK)`; the check wanted a directory), `core.worktree = .`: `git status`
///   in `src/`;
/// - gitlink `big`: its `.git` file names `../.git/x` followed by 5000 newlines (git reads up to
///   1 MiB; the check gave up over 4 KiB and ignored the file), a git dir hidden in `.git/`;
/// - gitlink `sp`: `.git` says `gitdir: ../.git/y ` — git keeps the trailing space, the check
///   trimmed it (and found nothing at `.git/y`);
/// - gitlink `cd`: a repository whose `commondir` is `. ` — git reads the config in `.git/. /`,
///   the check trimmed it to `.`, "this directory";
/// - gitlink `d/e` under a directory of mode 0111 (git reaches it by name; the walk, not
///   running as root, could not list it and only warned);
/// - a gitlink 205 directories deep (the walk stopped at 200 and only warned);
/// - the user's `.git/config` includes `../.gitconfig` (a tracked file, a common setup), and
///   sets `core.hooksPath = .githooks` (husky and friends): the agent writes both.
#[test]
fn pieces_the_check_missed_do_not_run_on_the_host() {
    each_mode(|env| {
        let work = env.work_dir().canonicalize().unwrap();
        git_ok(env, &work, &["init", "-q", "-b", "main"]);
        git_ok(env, &work, &["commit", "-q", "--allow-empty", "-m", "first"]);
        git_ok(env, &work, &["config", "include.path", "../.gitconfig"]);
        git_ok(env, &work, &["config", "core.hooksPath", ".githooks"]);
        let head = git_ok(env, &work, &["rev-parse", "HEAD"]);
        let deep = "a/".repeat(DEEP);
        let deep = deep.trim_end_matches('/');
        for path in ["big", "sp", "cd", "d/e", deep] {
            let link = format!("160000,{},{path}", head.trim());
            git_ok(env, &work, &["update-index", "--add", "--cacheinfo", &link]);
        }
        let pwned = env.root().join("pwned");
        let p = pwned.display();
        let script = format!(
            r#"cfg() {{ printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch {p}.%s; false"\n%b' "$1" "$2"; }}
repo() {{ mkdir -p "$1/refs/heads" "$1/objects" && echo 'ref: refs/heads/main' > "$1/HEAD" && cfg "$2" > "$1/config"; }}
mkdir -p src/refs/heads && echo 'ref: refs/heads/main' > src/HEAD && ln -s ../.git/objects src/objects \
  && cfg bare '\tworktree = .\n' > src/config && echo BARE
mkdir big && repo .git/x big && {{ printf 'gitdir: ../.git/x'; yes '' | head -n 5000; }} > big/.git && echo BIG
mkdir sp && repo '.git/y ' space && printf 'gitdir: ../.git/y \n' > sp/.git && echo SPACE
mkdir cd && repo cd/.git clean && printf '[core]\n\trepositoryformatversion = 0\n' > cd/.git/config \
  && repo 'cd/.git/. ' commondir && printf '. \n' > cd/.git/commondir && echo COMMONDIR
mkdir -p d/e && repo d/e/.git unlisted && chmod 111 d && echo UNLISTED
mkdir -p {deep} && repo {deep}/.git deep && echo DEEP
cfg include > .gitconfig && echo INCLUDE
mkdir .githooks && printf '#!/bin/sh\ntouch {p}.hookspath\n' > .githooks/pre-commit && chmod 755 .githooks/pre-commit && echo HOOKSPATH
echo DONE
"#
        );
        let out = run_agent(env, &[], &["sh", "-c", &script]);
        let said = stdout(&out);
        for step in [
            "BARE",
            "BIG",
            "SPACE",
            "COMMONDIR",
            "UNLISTED",
            "DEEP",
            "INCLUDE",
            "HOOKSPATH",
            "DONE",
        ] {
            assert!(said.contains(step), "{}: {step}: {}", env.mode(), show(&out));
        }
        // The user's git on the host afterwards.
        let _ = git_in(env, &work, &["status", "--short"]);
        let _ = git_in(env, &work.join("src"), &["status", "--short"]);
        let _ = git_in(env, &work, &["commit", "-q", "--allow-empty", "-m", "after"]);
        let ran: Vec<String> = planted(env.root())
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        assert!(
            ran.is_empty(),
            "{}: planted code ran: {ran:?}\n{}",
            env.mode(),
            show(&out)
        );
        let warned = stderr(&out);
        for piece in [
            "src/config",
            ".git/x/config",
            ".git/y /config",
            "cd/.git/commondir",
            ".gitconfig",
            ".githooks/pre-commit",
        ] {
            assert!(warned.contains(piece), "{}: {piece}: {}", env.mode(), show(&out));
        }
        // Make the tree removable for the harness (the directory of mode 0111).
        for d in [work.join("d"), work.join("d.ags-quarantine")] {
            let _ = run_command(
                env.command("/bin/chmod", ["-R", "u+rwx", &d.display().to_string()]),
                None,
                common::RUN_TIMEOUT,
            );
        }
        assert_clean(env);
    });
}

/// Issue 22, finding 2: the check judged each piece by its own change time, and a directory
/// rename keeps the times of what is inside. Three ways to move a planted `core.fsmonitor` into
/// place, each reached by the host's `git status` in the repository (gitlinks `sa`, `sb`, `m`):
/// - (a) launch 1 stages a git dir that is not one yet (`objs` for `objects`) in `stash/g`;
///   launch 2 only renames it into `sa/.git`;
/// - (b) the cloned repository ships a bare repository layout as tracked files (`vendor/pkg`,
///   there before the launch); the agent renames it to `sb/.git`;
/// - (c) launch 1 stages `.git/x/` (the walk looked only at `modules/` and `worktrees/` in
///   `.git`); launch 2 renames it to `.git/modules/m` and writes `m/.git` naming it.
///
/// The check now compares an inventory taken before each launch: nothing planted may run, and
/// stderr names each piece moved aside. Each variant ran on the host before (the test failed).
#[test]
fn what_is_moved_into_place_does_not_run_on_the_host() {
    each_mode(|env| {
        let work = env.work_dir().canonicalize().unwrap();
        let pwned = env.root().join("pwned");
        let p = pwned.display();
        let config = |tag: &str| {
            format!("[core]\n\trepositoryformatversion = 0\n\tfsmonitor = \"touch {p}.{tag}; false\"\n")
        };
        git_ok(env, &work, &["init", "-q", "-b", "main"]);
        // As the user who clones it (the agent must be able to move it).
        let ship = format!(
            "cd {} && mkdir -p vendor/pkg/objects vendor/pkg/refs/heads && touch vendor/pkg/objects/.keep \
             vendor/pkg/refs/heads/.keep && echo 'ref: refs/heads/main' > vendor/pkg/HEAD && printf '{}' > vendor/pkg/config",
            work.display(),
            printf_text(&config("tracked"))
        );
        let out = run_command(env.command("/bin/sh", ["-c", &ship]), None, common::RUN_TIMEOUT);
        assert!(out.status.success(), "{}", show(&out));
        git_ok(env, &work, &["add", "vendor"]);
        git_ok(env, &work, &["commit", "-q", "-m", "first"]);
        let head = git_ok(env, &work, &["rev-parse", "HEAD"]);
        for path in ["sa", "sb", "m"] {
            let link = format!("160000,{},{path}", head.trim());
            git_ok(env, &work, &["update-index", "--add", "--cacheinfo", &link]);
        }
        // The earlier check counted what changed from two seconds before the launch: all the
        // content here is older than that.
        let settle = || std::thread::sleep(std::time::Duration::from_secs(3));
        settle();
        let stage = format!(
            r#"mkdir -p stash/g/refs/heads stash/g/objs && echo 'ref: refs/heads/main' > stash/g/HEAD \
  && printf '{}' > stash/g/config && echo STAGED
mkdir -p .git/x/refs/heads .git/x/objs && echo 'ref: refs/heads/main' > .git/x/HEAD \
  && printf '{}' > .git/x/config && echo INSIDE
"#,
            printf_text(&config("staged")),
            printf_text(&config("inside")),
        );
        let first = run_agent(env, &[], &["sh", "-c", &stage]);
        let said = stdout(&first);
        assert!(
            said.contains("STAGED") && said.contains("INSIDE"),
            "{}: {}",
            env.mode(),
            show(&first)
        );
        settle();
        let rename = r#"mv stash/g/objs stash/g/objects && mkdir sa && mv stash/g sa/.git && echo A
mkdir sb && mv vendor/pkg sb/.git && echo B
mv .git/x/objs .git/x/objects && mkdir -p .git/modules && mv .git/x .git/modules/m \
  && mkdir m && printf 'gitdir: ../.git/modules/m\n' > m/.git && echo C
"#;
        let out = run_agent(env, &[], &["sh", "-c", rename]);
        let said = stdout(&out);
        for step in ["A", "B", "C"] {
            assert!(
                said.lines().any(|l| l == step),
                "{}: {step}: {}",
                env.mode(),
                show(&out)
            );
        }
        // The user's git on the host afterwards: `git status` recurses into every gitlink.
        let _ = git_in(env, &work, &["status", "--short"]);
        let ran: Vec<String> = planted(env.root())
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        assert!(
            ran.is_empty(),
            "{}: planted code ran: {ran:?}\n{}\n{}",
            env.mode(),
            show(&first),
            show(&out)
        );
        let warned = stderr(&out);
        for piece in ["sa/.git/config", "sb/.git/config", ".git/modules/m/config"] {
            assert!(warned.contains(piece), "{}: {piece}: {}", env.mode(), show(&out));
        }
        assert_clean(env);
    });
}

/// `text` for a `printf '…'` format: line ends and tabs escaped.
fn printf_text(text: &str) -> String {
    text.replace('\n', "\\n").replace('\t', "\\t")
}
