//! Issue 22, the eighth attack on the workspace boundary (docs/attacks/session-15-workspace-8.md):
//! places where the user's own git writes or runs what the agent chose, outside the pieces the
//! check compared:
//! - R8-1: a nested repository's `remote.origin.pushurl` naming a bare repository outside the
//!   workspace (the agent builds it in its state volume), whose `pre-receive` hook the user's
//!   next `git push` ran;
//! - R8-2, R8-3: a forged index entry named `.git/hooks/pre-commit` or `../outside`, which the
//!   user's `git checkout .` (the usual way to drop an agent's changes) wrote into the git dir
//!   or outside the worktree;
//! - R8-4: Mercurial's `.hg/hgrc`, whose `[hooks]` the next `hg` command runs.
//!
//! Performed with the git image, rootful and rootless.

use crate::common;

use std::path::Path;

use common::git::{agent, git_ok, has_image};
use common::launch::{assert_clean, stderr};
use common::{CLEAN_PATH, TestEnv, each_mode, run_command, tool};

/// A repository `name` in the workdir with one commit on `main`.
fn repository(env: &TestEnv, name: &str) -> std::path::PathBuf {
    let dir = env.mkdir(format!("work/{name}"), 0o755);
    env.write_file(format!("work/{name}/README"), "hello\n", 0o644);
    git_ok(env, &dir, &["init", "-q", "-b", "main"]);
    git_ok(env, &dir, &["add", "README"]);
    git_ok(env, &dir, &["commit", "-q", "-m", "one"]);
    dir.canonicalize().unwrap()
}

/// The user's git command in `dir`, whatever it says.
fn user(env: &TestEnv, dir: &Path, args: &[&str]) -> String {
    let d = dir.display().to_string();
    let mut all = vec!["-C", &d, "-c", "user.name=U", "-c", "user.email=u@x"];
    all.extend_from_slice(args);
    let mut cmd = env.command(tool("git"), all);
    cmd.env("PATH", CLEAN_PATH);
    let out = run_command(cmd, None, common::RUN_TIMEOUT);
    format!("{out:?}")
}

/// Some line of the launch's `err` names `path` with `what`; else fail saying `failure`.
fn assert_named(env: &TestEnv, err: &str, path: &str, what: &str, failure: &str) {
    assert!(
        err.lines().any(|l| l.contains(path) && l.contains(what)),
        "{}: {failure}: {err}",
        env.mode()
    );
}

/// R8-1: the push URL of a repository nested in the workspace, rewritten to a bare repository
/// outside it with a `pre-receive` hook (the attacker built it in the agent's state volume,
/// whose host path the container's mountinfo shows; here the test builds it beside the
/// workdir). The earlier check took a local path for a harmless URL; the user's `git push`
/// ran the hook. The config goes aside, named; the push runs nothing.
#[test]
fn a_push_url_naming_a_repository_outside_goes_aside() {
    each_mode(|env| {
        if !has_image(env) {
            return;
        }
        let top = repository(env, "r1");
        let lib = top.join("vendor/lib");
        env.mkdir("work/r1/vendor/lib", 0o755);
        env.write_file("work/r1/vendor/lib/a", "a\n", 0o644);
        git_ok(env, &lib, &["init", "-q", "-b", "main"]);
        git_ok(env, &lib, &["add", "a"]);
        git_ok(env, &lib, &["commit", "-q", "-m", "a"]);
        git_ok(
            env,
            &lib,
            &["remote", "add", "origin", "https://example.invalid/lib.git"],
        );
        let evil = env.root().join("evil.git");
        git_ok(env, env.root(), &["init", "-q", "--bare", "evil.git"]);
        let pwned = env.root().join("pwned-r1");
        env.write_file(
            "evil.git/hooks/pre-receive",
            format!("#!/bin/sh\ntouch {}\n", pwned.display()),
            0o755,
        );
        let script = format!(
            "printf '[remote \"origin\"]\\n\\tpushurl = {}\\n' >> r1/vendor/lib/.git/config",
            evil.display()
        );
        let err = stderr(&agent(env, &script));
        let config = format!("{}/.git/config", lib.display());
        assert_named(
            env,
            &err,
            &config,
            "remote.origin.pushurl naming",
            "the push URL was not named",
        );
        user(env, &lib, &["push", "-q", "origin", "main"]);
        assert!(
            !pwned.exists(),
            "{}: the pre-receive hook ran on the host",
            env.mode()
        );
        assert_clean(env);
    });
}

/// The agent's index forgery: stage `CONTENT` as `PLACEHOLDER`, then rename the entry in
/// `.git/index` to `NAME` (same length, so the entry stays well-formed) and fix the checksum.
fn forge(placeholder: &str, name: &str, content: &str) -> String {
    assert_eq!(placeholder.len(), name.len());
    format!(
        r#"b=$(printf '{content}' | git hash-object -w --stdin)
git update-index --add --cacheinfo 100755,$b,{placeholder}
perl -e 'use Digest::SHA qw(sha1); local $/; open F, ".git/index"; $d = <F>; close F; $d = substr($d, 0, -20); $d =~ s{{\Q{placeholder}\E}}{{{name}}}; open F, ">.git/index"; print F $d . sha1($d); close F'
git ls-files -s
"#
    )
}

/// R8-2 and R8-3: index entries git would never add — `.git/hooks/pre-commit` and
/// `../outside-r3` — which git does not check when it reads the index back. The earlier check
/// kept them; the user's `git checkout .` wrote a hook into the git dir (run by the next
/// commit) and a file outside the worktree (`~/.bashrc` in the attack). The index goes aside,
/// named; `git checkout .` writes neither.
#[test]
fn index_entries_git_would_refuse_go_aside() {
    each_mode(|env| {
        if !has_image(env) {
            return;
        }
        let top = repository(env, "r2");
        let pwned = env.root().join("pwned-r2");
        let hook = format!("#!/bin/sh\\ntouch {}\\n", pwned.display());
        let script = format!(
            "cd r2\n{}{}",
            forge("xgit/hooks/pre-commit", ".git/hooks/pre-commit", &hook),
            forge("xx/outside-r3", "../outside-r3", "planted\\n"),
        );
        let err = stderr(&agent(env, &script));
        let index = format!("{}/.git/index", top.display());
        assert_named(
            env,
            &err,
            &index,
            "entries git would refuse",
            "the forged index was not named",
        );
        let out = user(env, &top, &["checkout", "."]);
        let outside = top.parent().unwrap().join("outside-r3");
        assert!(
            !outside.exists(),
            "{}: written outside the worktree: {out}",
            env.mode()
        );
        let planted = top.join(".git/hooks/pre-commit");
        assert!(
            !planted.exists(),
            "{}: a hook written into the git dir: {out}",
            env.mode()
        );
        env.write_file("work/r2/b.txt", "b\n", 0o644);
        user(env, &top, &["add", "b.txt"]);
        user(env, &top, &["commit", "-q", "-m", "user"]);
        assert!(!pwned.exists(), "{}: the forged hook ran", env.mode());
        assert_clean(env);
    });
}

/// R8-4: `.hg/hgrc` of a Mercurial checkout in the workspace: `[hooks]` run by the user's next
/// `hg status`. It is a protected path now: read-only when it exists (the append fails), moved
/// aside when the agent creates it.
#[test]
fn mercurial_and_jujutsu_configs_are_protected() {
    each_mode(|env| {
        if !has_image(env) {
            return;
        }
        env.mkdir("work/.hg", 0o755);
        env.write_file("work/.hg/hgrc", "[ui]\nusername = u\n", 0o644);
        env.mkdir("work/.jj/repo", 0o755);
        let script = "(printf '[hooks]\\npre-status = touch /tmp/pwned\\n' >> .hg/hgrc) 2>/dev/null && echo APPENDED || true\n\
                      printf '[aliases]\\nx = [\"util\", \"exec\", \"--\", \"sh\"]\\n' > .jj/repo/config.toml";
        let out = agent(env, script);
        assert!(
            !common::launch::stdout(&out).contains("APPENDED"),
            "{}: hgrc was writable",
            env.mode()
        );
        let hgrc = std::fs::read_to_string(env.work_dir().join(".hg/hgrc")).unwrap();
        assert!(!hgrc.contains("hooks"), "{}: {hgrc}", env.mode());
        let err = stderr(&out);
        assert!(
            err.contains(".jj/repo/config.toml"),
            "{}: the created jj config was not named: {err}",
            env.mode()
        );
        assert!(
            !env.work_dir().join(".jj/repo/config.toml").exists(),
            "{}",
            env.mode()
        );
        assert_clean(env);
    });
}

/// S15-G1 (on R8-2's fix): git takes an index entry's name length from its flags and reads
/// that many bytes; the check read each name up to its NUL. A forged pair of entries read as
/// two junk names to the check and as `.git/hooks/pre-commit` to git
/// (`tests/support/forge/index-name-length.pl`, the attacker's). The index goes aside as one
/// the check cannot read; `git restore .` writes no hook.
#[test]
fn an_index_whose_name_lengths_disagree_goes_aside() {
    each_mode(|env| {
        if !has_image(env) {
            return;
        }
        let top = repository(env, "g1");
        let forge = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/forge/index-name-length.pl");
        env.write_file("work/forge.pl", std::fs::read(forge).unwrap(), 0o644);
        let pwned = env.root().join("pwned-g1");
        let script = format!(
            "cd g1 && perl ../forge.pl .git/hooks/pre-commit .gis '#!/bin/sh\ntouch {}' && rm ../forge.pl",
            pwned.display()
        );
        let err = stderr(&agent(env, &script));
        let index = format!("{}/.git/index", top.display());
        assert_named(env, &err, &index, "name length", "the forged index was not named");
        let out = user(env, &top, &["restore", "."]);
        assert!(
            !top.join(".git/hooks/pre-commit").exists(),
            "{}: a hook was written: {out}",
            env.mode()
        );
        user(env, &top, &["commit", "-q", "--allow-empty", "-m", "user"]);
        assert!(!pwned.exists(), "{}: the forged hook ran", env.mode());
        assert_clean(env);
    });
}

/// S15-G2 (on R8-1's fix): three more spellings of a push target outside the workspace —
/// `branch.main.pushremote` naming a path (git takes a name no remote has for a URL),
/// `file://HOST/PATH` (git drops the host), and `~user/..PATH` (git expands another user's
/// home). Each config goes aside, named; no push runs a hook.
#[test]
fn push_targets_outside_in_every_spelling_go_aside() {
    each_mode(|env| {
        if !has_image(env) {
            return;
        }
        let top = repository(env, "g2");
        git_ok(env, env.root(), &["init", "-q", "--bare", "evil.git"]);
        let evil = env.root().join("evil.git");
        let pwned = env.root().join("pwned-g2");
        env.write_file(
            "evil.git/hooks/pre-receive",
            format!("#!/bin/sh\ntouch {}\n", pwned.display()),
            0o755,
        );
        let forms = [
            (
                "a",
                format!("[branch \"main\"]\\n\\tpushremote = {}", evil.display()),
            ),
            (
                "b",
                format!("[remote \"origin\"]\\n\\tpushurl = file://x{}", evil.display()),
            ),
            (
                "c",
                format!("[remote \"origin\"]\\n\\tpushurl = ~sys/..{}", evil.display()),
            ),
        ];
        let mut script = String::new();
        for (name, plant) in &forms {
            env.mkdir(format!("work/g2/{name}"), 0o755);
            env.write_file(format!("work/g2/{name}/a"), "a\n", 0o644);
            let lib = top.join(name);
            git_ok(env, &lib, &["init", "-q", "-b", "main"]);
            git_ok(env, &lib, &["add", "a"]);
            git_ok(env, &lib, &["commit", "-q", "-m", "a"]);
            git_ok(
                env,
                &lib,
                &["remote", "add", "origin", "https://example.invalid/lib.git"],
            );
            script.push_str(&format!("printf '{plant}\\n' >> g2/{name}/.git/config\n"));
        }
        let err = stderr(&agent(env, &script));
        for (name, _) in &forms {
            let config = format!("{}/{name}/.git/config", top.display());
            assert!(
                err.lines().any(|l| l.contains(&config)),
                "{}: the config of {name} was not named: {err}",
                env.mode()
            );
            user(env, &top.join(name), &["push", "-q", "origin", "main"]);
            user(env, &top.join(name), &["push", "-q"]);
        }
        assert!(
            !pwned.exists(),
            "{}: the pre-receive hook ran on the host",
            env.mode()
        );
        assert_clean(env);
    });
}

/// S15-G3 (b) (on the session-14 A fix): the user's hook runs `tools/lint.sh`; the agent
/// replaced the directory `tools` by a link to a directory outside the workspace (its state
/// volume in the attack) holding its own `lint.sh`. The named path resolved out of the walked
/// trees and nothing was compared. The link on the way is a piece: it goes aside, named.
#[test]
fn a_named_scripts_directory_turned_into_a_link_goes_aside() {
    each_mode(|env| {
        if !has_image(env) {
            return;
        }
        let top = repository(env, "g3");
        env.write_file("work/g3/tools/lint.sh", "#!/bin/sh\necho lint\n", 0o755);
        git_ok(env, &top, &["add", "tools"]);
        git_ok(env, &top, &["commit", "-q", "-m", "tools"]);
        env.write_file(
            "work/g3/.git/hooks/pre-commit",
            "#!/bin/sh\nexec tools/lint.sh\n",
            0o755,
        );
        let pwned = env.root().join("pwned-g3");
        env.write_file(
            "vol/lint.sh",
            format!("#!/bin/sh\ntouch {}\n", pwned.display()),
            0o755,
        );
        let script = format!(
            "cd g3 && rm -rf tools && ln -s {} tools",
            env.root().join("vol").display()
        );
        let err = stderr(&agent(env, &script));
        let link = format!("{}/tools", top.display());
        assert_named(
            env,
            &err,
            &link,
            "a directory on its way",
            "the link was not named",
        );
        user(env, &top, &["commit", "-q", "-am", "user"]);
        assert!(
            !pwned.exists(),
            "{}: the agent's script ran on the host",
            env.mode()
        );
        assert_clean(env);
    });
}
