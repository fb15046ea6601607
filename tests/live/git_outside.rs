//! Issue 12, item 1 (worktrees and submodules): when the workdir is a linked worktree, a
//! submodule's checkout or a subdirectory of a repository, the git data the checkout needs is
//! mounted too (`workspace::git_layout`), so that git works in the container — with the same
//! read-only guards over config and hooks, nothing created in the user's repository, and the
//! containment rules applied. The host's real git runs inside the busybox container (the
//! binary and its libraries, copied to a read-only `--add-dir`, started through the dynamic
//! loader), in both modes, against real Podman.
//!
//! Issue 22, finding 1: the workdir's `.git` is the agent's to write. The attacks below plant a
//! `.git` file naming a host directory (a fake `~/.local/bin`, another repository's `.git`, a
//! worktree entry a running launch rewrote) and check that the next launch does not mount it
//! (`workspace::git_layout`), and that `--lockdown` mounts nothing outside the workdir.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;

use std::time::Duration;

use common::launch::{Background, assert_clean, launch_args, run_agent, stderr, stdout};
use common::{TestEnv, each_mode, run_command, show, tool};

fn git_in(env: &TestEnv, dir: &Path, args: &[&str]) -> String {
    let d = dir.display().to_string();
    let mut all = vec![
        "-C",
        &d,
        "-c",
        "user.name=Host",
        "-c",
        "user.email=host@example.org",
        "-c",
        "protocol.file.allow=always",
    ];
    all.extend_from_slice(args);
    let out = run_command(env.command(tool("git"), all), None, common::RUN_TIMEOUT);
    assert!(out.status.success(), "git {args:?}: {}", show(&out));
    stdout(&out)
}

fn repo(env: &TestEnv, dir: &Path) {
    git_in(env, dir, &["init", "-q", "-b", "main"]);
    std::fs::write(dir.join("a.txt"), "a\n").unwrap();
    git_in(env, dir, &["add", "a.txt"]);
    git_in(env, dir, &["commit", "-q", "-m", "first"]);
}

/// The host's git, runnable in a busybox container: the binary, its libraries and the dynamic
/// loader in one directory, and a `git` script there starting it through the loader.
fn git_kit(env: &TestEnv) -> PathBuf {
    let kit = env.root().join("gitkit");
    std::fs::create_dir_all(&kit).unwrap();
    let git = tool("git");
    std::fs::copy(&git, kit.join("git.real")).unwrap();
    let ldd = std::process::Command::new("ldd").arg(&git).output().unwrap();
    let mut loader = None;
    for word in String::from_utf8_lossy(&ldd.stdout).split_whitespace() {
        if word.starts_with('/') {
            let src = Path::new(word);
            let name = src.file_name().unwrap();
            std::fs::copy(src, kit.join(name)).unwrap();
            if name.to_string_lossy().starts_with("ld-linux") {
                loader = Some(kit.join(name));
            }
        }
    }
    let loader = loader.expect("the dynamic loader of git");
    let k = kit.display();
    std::fs::write(
        kit.join("git"),
        format!(
            "#!/bin/sh\nexec {} --library-path {k} {k}/git.real \"$@\"\n",
            loader.display()
        ),
    )
    .unwrap();
    for entry in std::fs::read_dir(&kit).unwrap().flatten() {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(entry.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::set_permissions(&kit, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    kit
}

/// `script` in the container with the host's git on `PATH`, in `workdir`.
fn in_container(env: &TestEnv, kit: &Path, workdir: &Path, script: &str) -> Output {
    let k = kit.display();
    let script = format!("export PATH={k}:$PATH GIT_EXEC_PATH={k}; {script}");
    let ro = format!("{k}:ro");
    let w = workdir.display().to_string();
    run_agent(env, &["--workdir", &w, "--add-dir", &ro], &["sh", "-c", &script])
}

/// What the agent does: status, a commit; then the attacks on the git dir outside the workdir.
fn agent_script(git_dir: &Path, pwned: &Path) -> String {
    let g = git_dir.display();
    let p = pwned.display();
    format!(
        r#"echo "STATUS:[$(git status --porcelain)]"
echo agent > agent.txt && git add agent.txt && git -c user.name=Agent -c user.email=agent@example.org commit -q -m from-agent && echo COMMITTED
printf '[core]\n\tfsmonitor = "touch {p}.config; false"\n' >> {g}/config && echo WROTE-CONFIG
printf '#!/bin/sh\ntouch {p}.hook\n' > {g}/hooks/pre-commit && echo WROTE-HOOK
mv {g} {g}.old && echo MOVED-GIT-DIR
echo DONE"#
    )
}

fn check_agent(env: &TestEnv, out: &Output) {
    let said = stdout(out);
    assert!(said.contains("DONE"), "{}: {}", env.mode(), show(out));
    assert!(
        said.contains("STATUS:[]"),
        "{}: git status is clean: {}",
        env.mode(),
        show(out)
    );
    assert!(said.contains("COMMITTED"), "{}: {}", env.mode(), show(out));
    for refused in ["WROTE-CONFIG", "WROTE-HOOK", "MOVED-GIT-DIR"] {
        assert!(
            !said.contains(refused),
            "{}: the agent could {refused}: {}",
            env.mode(),
            show(out)
        );
    }
}

/// Entries of a git dir that ags must never have created.
fn assert_nothing_created(git_dir: &Path) {
    for name in ["config.worktree", "commondir"] {
        assert!(
            !git_dir.join(name).exists(),
            "{} was created",
            git_dir.join(name).display()
        );
    }
    let hooks: Vec<_> = std::fs::read_dir(git_dir.join("hooks"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| !n.ends_with(".sample"))
        .collect();
    assert_eq!(hooks, Vec::<String>::new());
}

#[test]
fn git_works_in_a_linked_worktree() {
    each_mode(|env| {
        let kit = git_kit(env);
        let main = env.mkdir("main", 0o755);
        repo(env, &main);
        let wt = env.root().join("wt");
        git_in(
            env,
            &main,
            &["worktree", "add", "-q", "-b", "wt", &wt.display().to_string()],
        );
        let config = std::fs::read(main.join(".git/config")).unwrap();
        let pwned = env.root().join("pwned");
        let out = in_container(env, &kit, &wt, &agent_script(&main.join(".git"), &pwned));
        check_agent(env, &out);
        assert_eq!(std::fs::read(main.join(".git/config")).unwrap(), config);
        assert_nothing_created(&main.join(".git"));
        assert!(git_in(env, &main, &["log", "--oneline", "wt"]).contains("from-agent"));
        assert_eq!(git_in(env, &wt, &["status", "--porcelain"]), "");
        assert!(!pwned.with_extension("config").exists() && !pwned.with_extension("hook").exists());
        assert_clean(env);
    });
}

#[test]
fn git_works_in_a_submodule_checkout() {
    each_mode(|env| {
        let kit = git_kit(env);
        let lib = env.mkdir("lib", 0o755);
        repo(env, &lib);
        let sup = env.mkdir("super", 0o755);
        repo(env, &sup);
        git_in(
            env,
            &sup,
            &["submodule", "add", "-q", &lib.display().to_string(), "sub"],
        );
        git_in(env, &sup, &["commit", "-q", "-m", "sub"]);
        let module = sup.join(".git/modules/sub");
        let config = std::fs::read(module.join("config")).unwrap();
        let pwned = env.root().join("pwned");
        let out = in_container(env, &kit, &sup.join("sub"), &agent_script(&module, &pwned));
        check_agent(env, &out);
        assert_eq!(std::fs::read(module.join("config")).unwrap(), config);
        assert_nothing_created(&module);
        assert!(git_in(env, &sup.join("sub"), &["log", "--oneline"]).contains("from-agent"));
        // The superproject sees the submodule's new commit; nothing planted runs.
        git_in(env, &sup, &["status", "--short"]);
        assert!(!pwned.with_extension("config").exists() && !pwned.with_extension("hook").exists());
        assert_clean(env);
    });
}

#[test]
fn git_works_in_a_subdirectory_and_the_rest_of_the_repository_is_read_only() {
    each_mode(|env| {
        let kit = git_kit(env);
        let top = env.mkdir("repo", 0o755);
        repo(env, &top);
        let src = top.join("src");
        std::fs::create_dir_all(&src).unwrap();
        std::fs::write(src.join("s.txt"), "s\n").unwrap();
        git_in(env, &top, &["add", "src"]);
        git_in(env, &top, &["commit", "-q", "-m", "src"]);
        env.give_tree(&top);
        let pwned = env.root().join("pwned");
        let script = format!(
            "{}\necho changed > ../a.txt && echo WROTE-OUTSIDE\necho DONE2",
            agent_script(&top.join(".git"), &pwned)
        );
        let out = in_container(env, &kit, &src, &script);
        check_agent(env, &out);
        assert!(!stdout(&out).contains("WROTE-OUTSIDE"), "{}", show(&out));
        assert_eq!(std::fs::read_to_string(top.join("a.txt")).unwrap(), "a\n");
        assert_nothing_created(&top.join(".git"));
        let log = git_in(env, &top, &["log", "--stat", "-1"]);
        assert!(
            log.contains("from-agent") && log.contains("src/agent.txt"),
            "{log}"
        );
        assert_eq!(git_in(env, &top, &["status", "--porcelain"]), "");
        assert_clean(env);
    });
}

/// The repository around the workdir is the home directory (a dotfiles repository): the
/// containment rules refuse to mount it, the launch goes on without it and says so.
#[test]
fn a_repository_the_containment_rules_refuse_is_left_out_with_a_note() {
    each_mode(|env| {
        let home = env.home();
        git_in(env, &home, &["init", "-q", "-b", "main"]);
        let proj = env.mkdir("home/proj", 0o755);
        let out = run_agent(
            env,
            &["--workdir", &proj.display().to_string()],
            &[
                "sh",
                "-c",
                &format!(
                    "ls {}/.git >/dev/null 2>&1 && echo SEEN; echo DONE",
                    home.display()
                ),
            ],
        );
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert!(
            stdout(&out).contains("DONE") && !stdout(&out).contains("SEEN"),
            "{}",
            show(&out)
        );
        assert!(
            stderr(&out).contains("git in the container will not see the repository"),
            "{}",
            show(&out)
        );
        assert_clean(env);
    });
}

/// A launch in `workdir` running `script`; it must succeed.
fn agent_in(env: &TestEnv, workdir: &Path, script: &str) -> Output {
    let w = workdir.display().to_string();
    let out = run_agent(env, &["--workdir", &w], &["sh", "-c", script]);
    assert_eq!(out.status.code(), Some(0), "{}: {}", env.mode(), show(&out));
    out
}

/// `out` did not write `file` (its agent printed WROTE if it could) and said why on stderr.
fn assert_not_mounted(env: &TestEnv, out: &Output, file: &Path, why: &str) {
    assert!(!stdout(out).contains("WROTE"), "{}: {}", env.mode(), show(out));
    assert!(!file.exists(), "{}: {} was written", env.mode(), file.display());
    let err = stderr(out);
    assert!(
        err.contains("git in the container will not see the repository") && err.contains(why),
        "{}: expected a note containing {why:?}: {}",
        env.mode(),
        show(out)
    );
}

/// The agent writes `.git` = `gitdir: DIR` in directories that are not repositories; the next
/// launch there (or in a subdirectory below) must not mount DIR. DIR: a fake `~/.local/bin`
/// (the earlier code mounted it read-write: a trojan `git` there runs in the user's next
/// shell), or another repository's `.git` (not a worktree entry of the workdir).
#[test]
fn a_git_file_the_agent_wrote_does_not_mount_what_it_names() {
    each_mode(|env| {
        let bin = env.mkdir("home/.local/bin", 0o755);
        let other = env.mkdir("other", 0o755);
        repo(env, &other);
        let proj = env.mkdir("proj", 0o755);
        env.mkdir("proj/c/src", 0o755);
        // Written as an earlier launch's agent would; the check after that launch now moves
        // such a file aside (tests/live/attacks_git_keys.rs), so they are written here as if it had
        // not (`protect_git = false`, or a launch that ended without the check).
        for (dir, target) in [("a", &bin), ("b", &other.join(".git")), ("c", &bin)] {
            let text = format!("gitdir: {}\n", target.display());
            env.write_file(format!("proj/{dir}/.git"), &text, 0o644);
        }
        for d in ["a", "b", "c"] {
            assert!(
                proj.join(d).join(".git").is_file(),
                "{}: {d}/.git is gone",
                env.mode()
            );
        }
        let trojan = bin.join("git");
        let write = |file: &Path| format!("echo x > {} && echo WROTE; true", file.display());
        let out = agent_in(env, &proj.join("a"), &write(&trojan));
        assert_not_mounted(env, &out, &trojan, "which is not a git dir");
        let planted = other.join(".git/planted");
        let out = agent_in(env, &proj.join("b"), &write(&planted));
        assert_not_mounted(env, &out, &planted, "is a repository of its own");
        // A subdirectory launch: the `.git` found above the workdir is proven the same way.
        let out = agent_in(env, &proj.join("c/src"), &write(&trojan));
        assert_not_mounted(env, &out, &trojan, "which is not a git dir");
        assert_clean(env);
    });
}

/// A launch in `dir` running `script`, then waiting until `dir/stop` exists; returned once its
/// output shows `ready`.
fn running_in(env: &TestEnv, dir: &Path, script: &str, ready: &str) -> Background {
    let d = dir.display().to_string();
    let script = format!("{script}; while [ ! -e stop ]; do sleep 0.2; done");
    let args = launch_args(env, &["--tty=false", "--workdir", &d], &["sh", "-c", &script]);
    let sibling = Background::spawn(env, &args);
    sibling.expect_stdout(ready, Duration::from_secs(120));
    sibling
}

/// A running launch in a repository tries to rewrite the `gitdir` of an existing worktree entry
/// to name another workdir's `.git` (the earlier code let it: its pinned entry stayed writable
/// inside; now `gitdir` is read-only), then creates a new entry `worktrees/evil` naming that
/// workdir, whose `.git` an earlier launch there pointed at it. The launch in that workdir must
/// not get the repository's git dir (its history, read-write): the new entry lies in the running
/// launch's read-write mount and that launch does not hold it fixed, so it proves nothing and
/// the launch is refused, saying why.
#[test]
fn a_worktree_entry_in_a_running_launchs_mount_is_not_trusted() {
    each_mode(|env| {
        let main = env.mkdir("main", 0o755);
        repo(env, &main);
        let wt = env.root().join("wt");
        git_in(
            env,
            &main,
            &["worktree", "add", "-q", "-b", "wt", &wt.display().to_string()],
        );
        let entry = main.join(".git/worktrees/wt");
        let gitdir = std::fs::read(entry.join("gitdir")).unwrap();
        let evil = main.join(".git/worktrees/evil");
        let w = env.mkdir("w", 0o755);
        // As an earlier launch's agent would write it; the check after that launch now moves
        // a `.git` naming a missing git dir aside (tests/live/attacks_git_keys.rs), so it is written
        // here as if it had not.
        env.write_file("w/.git", format!("gitdir: {}\n", evil.display()), 0o644);
        let wg = format!("{}/.git", w.display());
        let script = format!(
            "printf '{wg}\\n' > .git/worktrees/wt/gitdir && echo REWROTE; \
             mkdir .git/worktrees/evil && printf '../..\\n' > .git/worktrees/evil/commondir && \
             cp .git/HEAD .git/worktrees/evil/HEAD && printf '{wg}\\n' > .git/worktrees/evil/gitdir && \
             echo CRAFTED"
        );
        let sibling = running_in(env, &main, &script, "CRAFTED");
        let m = main.display().to_string();
        let wd = w.display().to_string();
        let look = format!("ls {m}/.git/objects >/dev/null && echo SEEN; echo DONE");
        let out = run_agent(env, &["--workdir", &wd], &["sh", "-c", &look]);
        env.write_file(main.join("stop"), "", 0o644);
        let sib = sibling.wait();
        assert!(!stdout(&sib).contains("REWROTE"), "{}", show(&sib));
        assert_eq!(std::fs::read(entry.join("gitdir")).unwrap(), gitdir);
        assert!(!stdout(&out).contains("SEEN"), "{}: {}", env.mode(), show(&out));
        assert_eq!(out.status.code(), Some(125), "{}: {}", env.mode(), show(&out));
        let err = stderr(&out);
        assert!(
            err.contains("no longer proven")
                && err.contains("running ags container")
                && err.contains("worktrees/evil"),
            "{}: {}",
            env.mode(),
            show(&out)
        );
        assert_clean(env);
    });
}

/// One agent per `git worktree`, in parallel (issue 22, follow-up of finding 1): while a launch
/// runs in the linked worktree `wt1`, and then while one runs in the main repository (both have
/// the repository's git dir in their read-write mounts), a launch in the worktree `wt2` gets the
/// repository and commits; the running launches hold `wt2`'s entry fixed.
#[test]
fn launches_in_linked_worktrees_run_side_by_side() {
    each_mode(|env| {
        let kit = git_kit(env);
        let main = env.mkdir("main", 0o755);
        repo(env, &main);
        let [wt1, wt2] = ["wt1", "wt2"].map(|n| env.root().join(n));
        for (wt, branch) in [(&wt1, "wt1"), (&wt2, "wt2")] {
            let w = wt.display().to_string();
            git_in(env, &main, &["worktree", "add", "-q", "-b", branch, &w]);
        }
        for (n, first) in [&wt1, &main].into_iter().enumerate() {
            let sibling = running_in(env, first, "echo STARTED", "STARTED");
            let script = format!(
                "echo \"STATUS:[$(git status --porcelain)]\"; echo {n} > n{n}.txt && git add n{n}.txt && \
                 git -c user.name=Agent -c user.email=agent@example.org commit -q -m from-agent-{n} && \
                 echo COMMITTED"
            );
            let out = in_container(env, &kit, &wt2, &script);
            env.write_file(first.join("stop"), "", 0o644);
            let sib = sibling.wait();
            std::fs::remove_file(first.join("stop")).unwrap();
            assert_eq!(out.status.code(), Some(0), "{}: {}", env.mode(), show(&out));
            assert_eq!(sib.status.code(), Some(0), "{}: {}", env.mode(), show(&sib));
            let said = stdout(&out);
            assert!(
                said.contains("STATUS:[]") && said.contains("COMMITTED"),
                "{}: {}",
                env.mode(),
                show(&out)
            );
            let log = git_in(env, &main, &["log", "--oneline", "wt2"]);
            assert!(log.contains(&format!("from-agent-{n}")), "{log}");
        }
        assert_eq!(git_in(env, &wt2, &["status", "--porcelain"]), "");
        assert_clean(env);
    });
}

/// Under `--lockdown` a linked worktree's repository is not mounted, with a note saying so.
#[test]
fn lockdown_mounts_no_git_data_outside_the_workdir() {
    each_mode(|env| {
        let main = env.mkdir("main", 0o755);
        repo(env, &main);
        let wt = env.root().join("wt");
        git_in(
            env,
            &main,
            &["worktree", "add", "-q", "-b", "wt", &wt.display().to_string()],
        );
        let w = wt.display().to_string();
        let look = format!(
            "ls {}/.git/objects >/dev/null 2>&1 && echo SEEN; echo DONE",
            main.display()
        );
        let out = run_agent(env, &["--workdir", &w, "--lockdown"], &["sh", "-c", &look]);
        assert_eq!(out.status.code(), Some(0), "{}: {}", env.mode(), show(&out));
        assert!(
            stdout(&out).contains("DONE") && !stdout(&out).contains("SEEN"),
            "{}: {}",
            env.mode(),
            show(&out)
        );
        assert!(
            stderr(&out).contains("--lockdown mounts nothing outside the workdir"),
            "{}: {}",
            env.mode(),
            show(&out)
        );
        assert_clean(env);
    });
}

/// Two subdirectory launches of one repository run side by side: the running one has the
/// repository's `.git` in its read-write mounts, but the repository's top level, where that
/// `.git` was found, is read-only to it.
#[test]
fn two_subdirectory_launches_of_one_repository_run_side_by_side() {
    each_mode(|env| {
        let top = env.mkdir("repo", 0o755);
        repo(env, &top);
        let a = env.mkdir("repo/a", 0o755);
        let b = env.mkdir("repo/b", 0o755);
        let sibling = running_in(env, &a, "echo STARTED", "STARTED");
        let look = format!("ls {}/.git/objects >/dev/null && echo SEEN", top.display());
        let bd = b.display().to_string();
        let out = run_agent(env, &["--workdir", &bd], &["sh", "-c", &look]);
        env.write_file(a.join("stop"), "", 0o644);
        let _ = sibling.wait();
        assert_eq!(out.status.code(), Some(0), "{}: {}", env.mode(), show(&out));
        assert!(stdout(&out).contains("SEEN"), "{}: {}", env.mode(), show(&out));
        assert_clean(env);
    });
}
