//! Issue 10, hole 4 (the rest of it): git on the host recurses into submodules (`git status`
//! in the repository enters every gitlink of the index whose directory holds a `.git`) and
//! runs what their config and hooks name; a shell prompt does the same in any repository you
//! `cd` into. The agent (busybox, as an attacker would) goes after an existing submodule's git
//! dir (`.git/modules/sub/`, and `.git/modules/sub/modules/inner/` of a nested one) and creates
//! repositories of its own, registered in the index. Then the user's real git runs on the host:
//! nothing planted may run (marker files), against real Podman, rootful and rootless.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::launch::{assert_clean, run_agent, stderr, stdout};
use common::{TestEnv, each_mode, run_command, show, tool};

fn git_in(env: &TestEnv, dir: &Path, args: &[&str], index: Option<&Path>) -> Output {
    let d = dir.display().to_string();
    let mut all = vec![
        "-C",
        &d,
        "-c",
        "user.name=Test",
        "-c",
        "user.email=t@example.com",
        "-c",
        "protocol.file.allow=always",
    ];
    all.extend_from_slice(args);
    let mut cmd = env.command(tool("git"), all);
    if let Some(index) = index {
        cmd.env("GIT_INDEX_FILE", index);
    }
    run_command(cmd, None, common::RUN_TIMEOUT)
}

fn git_ok(env: &TestEnv, dir: &Path, args: &[&str]) -> String {
    let out = git_in(env, dir, args, None);
    assert!(out.status.success(), "git {args:?}: {}", show(&out));
    stdout(&out)
}

fn repo(env: &TestEnv, dir: &Path) {
    git_ok(env, dir, &["init", "-q", "-b", "main"]);
    git_ok(env, dir, &["commit", "-q", "--allow-empty", "-m", "first"]);
}

/// The markers the planted programs would create, of those named `pwned.<tag>`.
fn planted(pwned: &Path) -> Vec<PathBuf> {
    let dir = pwned.parent().unwrap();
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("pwned."))
        .collect()
}

/// `cfg TAG`: a config whose `core.fsmonitor` touches `pwned.TAG`; `hook TAG`: a hook doing so.
fn prelude(pwned: &Path) -> String {
    let p = pwned.display();
    format!(
        "cfg() {{ printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = \"touch {p}.%s; false\"\\n' \"$1\"; }}\n\
         hook() {{ printf '#!/bin/sh\\ntouch {p}.%s\\n' \"$1\"; }}\n"
    )
}

/// The workdir has a submodule `sub` which has a submodule `inner`: git dirs
/// `.git/modules/sub/` and `.git/modules/sub/modules/inner/`. While the launch runs, the
/// agent cannot change their config or hooks, their `.git` files, or move them; what it can
/// still add (a `commondir` sending git to a config of its own, a replaced checkout directory)
/// is moved aside when the container is gone, before anything on the host runs git.
#[test]
fn existing_submodules_cannot_be_made_to_run_code_on_the_host() {
    each_mode(|env| {
        let work = env.work_dir().canonicalize().unwrap();
        let inner = env.mkdir("inner-src", 0o755);
        repo(env, &inner);
        let lib = env.mkdir("lib-src", 0o755);
        repo(env, &lib);
        git_ok(
            env,
            &lib,
            &["submodule", "add", "-q", &inner.display().to_string(), "inner"],
        );
        git_ok(env, &lib, &["commit", "-q", "-m", "inner"]);
        repo(env, &work);
        git_ok(
            env,
            &work,
            &["submodule", "add", "-q", &lib.display().to_string(), "sub"],
        );
        git_ok(
            env,
            &work,
            &["submodule", "update", "-q", "--init", "--recursive"],
        );
        git_ok(env, &work, &["commit", "-q", "-m", "sub"]);
        let modules = work.join(".git/modules");
        assert!(modules.join("sub/modules/inner/config").is_file());
        let sub_config = std::fs::read(modules.join("sub/config")).unwrap();
        let pwned = env.root().join("pwned");
        let script = format!(
            r#"{}
cfg sub >> .git/modules/sub/config && echo WROTE-SUB-CONFIG
cfg inner >> .git/modules/sub/modules/inner/config && echo WROTE-INNER-CONFIG
hook hook > .git/modules/sub/hooks/post-checkout && echo WROTE-SUB-HOOK
hook innerhook > .git/modules/sub/modules/inner/hooks/pre-commit && echo WROTE-INNER-HOOK
printf 'gitdir: ../evil\n' > sub/.git && echo WROTE-SUB-GITFILE
printf 'gitdir: ../../evil\n' > sub/inner/.git && echo WROTE-INNER-GITFILE
mv .git/modules/sub .git/modules/sub.old && echo MOVED-MODULE
mv .git/modules .git/modules.old && echo MOVED-MODULES
mv .git/modules/sub/modules/inner .git/modules/sub/modules/x && echo MOVED-INNER
mkdir -p evil && cp -a .git/modules/sub/HEAD .git/modules/sub/objects .git/modules/sub/refs evil/ && cfg commondir > evil/config
echo ../../../evil > .git/modules/sub/commondir && echo WROTE-SUB-COMMONDIR
mkdir -p evil2 && cp -a .git/modules/sub/HEAD .git/modules/sub/objects .git/modules/sub/refs evil2/ && cfg replaced > evil2/config
mv sub sub.old && mkdir sub && printf 'gitdir: ../evil2\n' > sub/.git && echo REPLACED-CHECKOUT
echo DONE
"#,
            prelude(&pwned)
        );
        let out = run_agent(env, &[], &["sh", "-c", &script]);
        let said = stdout(&out);
        assert!(said.contains("DONE"), "{}", show(&out));
        for refused in [
            "WROTE-SUB-CONFIG",
            "WROTE-INNER-CONFIG",
            "WROTE-SUB-HOOK",
            "WROTE-INNER-HOOK",
            "WROTE-SUB-GITFILE",
            "WROTE-INNER-GITFILE",
            "MOVED-MODULE",
            "MOVED-MODULES",
            "MOVED-INNER",
        ] {
            assert!(
                !said.contains(refused),
                "{}: the agent could {refused}: {}",
                env.mode(),
                show(&out)
            );
        }
        // What it could do while running was moved aside afterwards, loudly.
        assert!(said.contains("WROTE-SUB-COMMONDIR"), "{}", show(&out));
        let warned = stderr(&out);
        assert!(
            warned.contains("moved aside") && warned.contains(".git/modules/sub/commondir"),
            "{}: {}",
            env.mode(),
            show(&out)
        );
        assert!(modules.join("sub/commondir.ags-quarantine").is_file());
        assert_eq!(std::fs::read(modules.join("sub/config")).unwrap(), sub_config);
        // The user's git on the host: in the repository (recursing) and in each submodule.
        std::fs::write(work.join("file"), "x\n").unwrap();
        git_ok(env, &work, &["status", "--short"]);
        for dir in [work.join("sub"), work.join("sub.old"), work.join("sub.old/inner")] {
            if dir.join(".git").exists() {
                let _ = git_in(env, &dir, &["status", "--short"], None);
            }
        }
        assert_eq!(
            planted(&pwned),
            Vec::<PathBuf>::new(),
            "{}: planted code ran",
            env.mode()
        );
        // The attack was real: put the commondir and its config back, and the host's git
        // runs the program.
        for (aside, back) in [
            (
                modules.join("sub/commondir.ags-quarantine"),
                modules.join("sub/commondir"),
            ),
            (work.join("evil/config.ags-quarantine"), work.join("evil/config")),
        ] {
            std::fs::rename(&aside, &back).unwrap_or_else(|e| panic!("{}: {e}", aside.display()));
        }
        if said.contains("REPLACED-CHECKOUT") {
            // The checkout was swapped for one naming evil2, whose config was moved aside.
            // Written as the user: git refuses a `.git` file of another owner.
            let gitfile = work.join("sub/.git");
            let script = format!("printf 'gitdir: ../.git/modules/sub\\n' > {}", gitfile.display());
            let out = run_command(env.command("/bin/sh", ["-c", &script]), None, common::RUN_TIMEOUT);
            assert!(out.status.success(), "{}", show(&out));
        }
        let status = git_in(env, &work.join("sub"), &["status", "--short"], None);
        let ran: Vec<String> = planted(&pwned).iter().map(|p| p.display().to_string()).collect();
        assert!(
            ran.iter().any(|p| p.ends_with(".commondir")),
            "{}: {ran:?}: {}\nagent: {}",
            env.mode(),
            show(&status),
            show(&out)
        );
        assert_clean(env);
    });
}

/// The agent makes a repository of its own in the workspace — `n/.git` with a config naming
/// `core.fsmonitor` and a hook — and registers it as a submodule by writing the index (a copy
/// prepared the way its own `git update-index --cacheinfo 160000,…` would write it; busybox has
/// no git). Without the check, the user's next `git status` runs the program (shown at the
/// end by moving the config back). With it, the config and hook are moved aside when the
/// container is gone, and stderr names them.
#[test]
fn a_repository_the_agent_creates_does_not_run_code_on_the_host() {
    each_mode(|env| {
        let work = env.work_dir().canonicalize().unwrap();
        repo(env, &work);
        let prep = env.mkdir("prep", 0o755);
        let index = prep.join("index");
        let head = git_ok(env, &work, &["rev-parse", "HEAD"]);
        let gitlink = format!("160000,{},n", head.trim());
        for args in [
            &["read-tree", "HEAD"][..],
            &["update-index", "--add", "--cacheinfo", &gitlink],
        ] {
            let out = git_in(env, &work, args, Some(&index));
            assert!(out.status.success(), "{}", show(&out));
        }
        let pwned = env.root().join("pwned");
        let script = format!(
            r#"{}
mkdir -p n/.git/objects n/.git/refs/heads n/.git/hooks && echo 'ref: refs/heads/main' > n/.git/HEAD
cfg nested > n/.git/config && hook nestedhook > n/.git/hooks/post-commit && chmod 755 n/.git/hooks/post-commit && echo MADE-REPO
cp {} .git/index && echo WROTE-INDEX
echo DONE
"#,
            prelude(&pwned),
            index.display()
        );
        let ro = format!("{}:ro", prep.display());
        let out = run_agent(env, &["--add-dir", &ro], &["sh", "-c", &script]);
        let said = stdout(&out);
        assert!(
            said.contains("MADE-REPO") && said.contains("WROTE-INDEX") && said.contains("DONE"),
            "{}",
            show(&out)
        );
        let warned = stderr(&out);
        for piece in ["n/.git/config", "n/.git/hooks/post-commit", "core.fsmonitor"] {
            assert!(warned.contains(piece), "{}: {piece}: {}", env.mode(), show(&out));
        }
        let ls = git_ok(env, &work, &["ls-files", "--stage", "n"]);
        assert!(ls.starts_with("160000"), "the gitlink is registered: {ls}");
        git_ok(env, &work, &["status", "--short"]);
        let n = work.join("n");
        git_ok(env, &n, &["status", "--short"]);
        assert_eq!(
            planted(&pwned),
            Vec::<PathBuf>::new(),
            "{}: planted code ran",
            env.mode()
        );
        // The attack was real: with the config back, the host's `git status` runs it.
        std::fs::rename(n.join(".git/config.ags-quarantine"), n.join(".git/config")).unwrap();
        let _ = git_in(env, &work, &["status", "--short"], None);
        let ran: Vec<String> = planted(&pwned).iter().map(|p| p.display().to_string()).collect();
        assert!(
            ran.iter().any(|p| p.ends_with(".nested")),
            "{}: {ran:?}",
            env.mode()
        );
        assert_clean(env);
    });
}
