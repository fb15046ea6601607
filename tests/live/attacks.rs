//! Issue 10, an attacker's second look: the agent (busybox, as an attacker would) goes after the
//! containment that landed — the git guards, the files `ags` reads from the workspace — against
//! real Podman, rootful and rootless. Each test performs one attack and checks it fails
//! (docs/security.md, "Attacks tried"); the submodule and nested-repository attacks are in
//! tests/live/attacks_git_nested.rs.

use crate::common;

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use common::launch::{
    Background, assert_clean, launch_args, run_agent, stderr, stdout, trust_overlay, write_overlay,
};
use common::{TestEnv, each_mode, run_command, show, tool};
use nix::sys::signal::Signal;

/// Longest a refused launch may take here; a hang is what the attack is after.
const REFUSAL_TIMEOUT: Duration = Duration::from_secs(90);

/// `git ARGS` on the host, as the mode's user, in `dir`.
fn git_in(env: &TestEnv, dir: &Path, args: &[&str]) -> Output {
    let d = dir.display().to_string();
    let mut all = vec!["-C", &d, "-c", "user.name=Test", "-c", "user.email=t@example.com"];
    all.extend_from_slice(args);
    run_command(env.command(tool("git"), all), None, common::RUN_TIMEOUT)
}

fn git_ok(env: &TestEnv, dir: &Path, args: &[&str]) {
    let out = git_in(env, dir, args);
    assert!(out.status.success(), "git {args:?}: {}", show(&out));
}

fn init_repo(env: &TestEnv) -> std::path::PathBuf {
    let work = env.work_dir().canonicalize().unwrap();
    git_ok(env, &work, &["init", "-q", "-b", "main"]);
    git_ok(env, &work, &["commit", "-q", "--allow-empty", "-m", "first"]);
    work
}

/// The files the planted programs would create, of those named `pwned.<tag>`.
fn planted(pwned: &Path, tags: &[&str]) -> Vec<String> {
    tags.iter()
        .map(|t| format!("{}.{t}", pwned.display()))
        .filter(|p| Path::new(p).exists())
        .collect()
}

/// A launch that must end (refused) rather than hang.
fn launch_bounded(env: &TestEnv, cmd: &[&str]) -> Output {
    let mut args = vec!["--tty=false".to_string()];
    args.extend(launch_args(env, &[], cmd));
    run_command(env.cmd(args), None, REFUSAL_TIMEOUT)
}

/// The workdir is a repository with a linked worktree elsewhere (`git worktree add`, the way
/// `/work/main` and its helpers' worktrees are laid out), and the config enables
/// `extensions.worktreeConfig` (as `git sparse-checkout` does). Git on the host reads the
/// worktree's metadata from the mounted `.git/worktrees/wt/`: a `commondir` naming a config the
/// agent wrote, a `config.worktree`, and the main repository's `config.worktree`, which did not
/// exist at launch. The agent also tries to move the entries away and rebuild them, to hard-link
/// the read-only files to a writable name (same file system, so only the mount boundary stops
/// it), and to create a device node.
#[test]
fn linked_worktree_metadata_and_config_worktree_cannot_redirect_git() {
    each_mode(|env| {
        let work = init_repo(env);
        git_ok(env, &work, &["config", "extensions.worktreeConfig", "true"]);
        let wt = env.root().join("wt");
        git_ok(env, &work, &["worktree", "add", "-q", &wt.display().to_string()]);
        let pwned = env.root().join("pwned");
        let p = pwned.display();
        let script = format!(
            r#"
cfg() {{ printf '[core]\n\tfsmonitor = "touch {p}.%s; false"\n' "$1"; }}
mkdir -p evil && cp -a .git/objects .git/refs .git/HEAD evil/ && cfg commondir > evil/config
echo "$PWD/evil" > .git/worktrees/wt/commondir && echo WROTE-WT-COMMONDIR
rm -f .git/worktrees/wt/commondir && cfg wtconfig > .git/worktrees/wt/config && echo REMOVED-WT-COMMONDIR
cfg wtworktree > .git/worktrees/wt/config.worktree && echo WROTE-WT-CONFIG-WORKTREE
cfg mainworktree > .git/config.worktree && echo WROTE-CONFIG-WORKTREE
mv .git/worktrees/wt .git/worktrees/wt-old && echo MOVED-WT-ENTRY
mv .git/worktrees .git/worktrees-old && echo MOVED-WORKTREES
if [ -d .git/worktrees-old ]; then mkdir -p .git/worktrees/wt && echo "$PWD/evil" > .git/worktrees/wt/commondir && echo REBUILT-WORKTREES; fi
ln .git/config cfg-link && echo LINKED-CONFIG
ln .git/worktrees/wt/commondir commondir-link && echo LINKED-COMMONDIR
mknod node c 1 3 && echo MADE-DEVICE
echo x > .git/worktrees/wt/ags-probe && rm .git/worktrees/wt/ags-probe && echo ENTRY-WRITABLE
echo DONE
"#
        );
        let out = run_agent(env, &[], &["sh", "-c", &script]);
        let said = stdout(&out);
        assert!(said.contains("DONE"), "{}", show(&out));
        for refused in [
            "WROTE-WT-COMMONDIR",
            "REMOVED-WT-COMMONDIR",
            "WROTE-WT-CONFIG-WORKTREE",
            "WROTE-CONFIG-WORKTREE",
            "MOVED-WT-ENTRY",
            "MOVED-WORKTREES",
            "REBUILT-WORKTREES",
            "LINKED-CONFIG",
            "LINKED-COMMONDIR",
            "MADE-DEVICE",
        ] {
            assert!(
                !said.contains(refused),
                "{}: the agent could {refused}: {}",
                env.mode(),
                show(&out)
            );
        }
        assert!(said.contains("ENTRY-WRITABLE"), "{}: {}", env.mode(), show(&out));
        // The user's git on the host, in the main worktree and in the linked one.
        for dir in [&work, &wt] {
            std::fs::write(dir.join("file"), "content\n").unwrap();
            git_ok(env, dir, &["status", "--short"]);
        }
        let tags = ["commondir", "wtconfig", "wtworktree", "mainworktree"];
        assert_eq!(
            planted(&pwned, &tags),
            Vec::<String>::new(),
            "{}: planted code ran",
            env.mode()
        );
        assert_clean(env);
    });
}

/// A guarded file that is a symbolic link would be bind-mounted as its target: the agent plants
/// `.git/config.worktree -> <a host file outside every mount>` and reads the file at the next
/// launch. With the guards the plant fails (the file is created and mounted read-only); planted
/// from the host (a launch with `protect_git = false`, a clone) the launch is refused.
#[test]
fn a_symlinked_git_file_never_mounts_a_host_file() {
    each_mode(|env| {
        let work = init_repo(env);
        let secret = env.write_file("secret", "HOST-SECRET-4417\n", 0o600);
        let s = secret.display();
        let plant =
            format!("rm -f .git/config.worktree; ln -s {s} .git/config.worktree && echo PLANTED; echo DONE");
        let out = run_agent(env, &[], &["sh", "-c", &plant]);
        assert!(
            stdout(&out).contains("DONE") && !stdout(&out).contains("PLANTED"),
            "{}",
            show(&out)
        );
        let read = "cat .git/config.worktree; echo DONE";
        let out = run_agent(env, &[], &["sh", "-c", read]);
        assert!(
            !stdout(&out).contains("HOST-SECRET"),
            "{}: {}",
            env.mode(),
            show(&out)
        );

        let link = work.join(".git/config.worktree");
        let out = run_command(
            env.command(
                "/bin/sh",
                ["-c", &format!("rm -f {0} && ln -s {s} {0}", link.display())],
            ),
            None,
            common::RUN_TIMEOUT,
        );
        assert!(out.status.success(), "{}", show(&out));
        let out = run_agent(env, &[], &["sh", "-c", read]);
        assert!(
            !stdout(&out).contains("HOST-SECRET"),
            "{}: {}",
            env.mode(),
            show(&out)
        );
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        assert!(
            stderr(&out).contains("config.worktree") && stderr(&out).contains("not a regular file"),
            "{}",
            show(&out)
        );
        assert_clean(env);
    });
}

/// Podman resolves a guard's path again when it binds it. A sibling launch that started before
/// the linked worktree existed has no mount on `.git/worktrees/wt` and can rename it: it swaps
/// the entry for a symlink to a host directory in a loop while launches happen, hoping that the
/// pinned (read-write) entry gets mounted as that directory. Every launch must be refused while
/// the sibling runs, and none may show the directory.
#[test]
fn a_sibling_swapping_a_guarded_entry_never_gets_a_host_dir_mounted() {
    each_mode(|env| {
        let work = init_repo(env);
        let secret = env.mkdir("secretdir", 0o700);
        env.write_file("secretdir/secret-file-7781", "x\n", 0o600);
        let script = format!(
            "echo STARTED; while [ ! -e go ]; do sleep 0.1; done; cd .git/worktrees && \
             ln -s {} link && echo swapping && \
             while :; do mv wt tmp; mv link wt; mv wt link; mv tmp wt; done",
            secret.display()
        );
        let args = launch_args(env, &["--tty=false"], &["sh", "-c", &script]);
        let sibling = Background::spawn(env, &args);
        // The user adds a linked worktree while the sibling runs (its mounts are made).
        sibling.expect_stdout("STARTED", Duration::from_secs(120));
        git_ok(
            env,
            &work,
            &[
                "worktree",
                "add",
                "-q",
                &env.root().join("wt").display().to_string(),
            ],
        );
        env.write_file("work/go", "", 0o644);
        sibling.expect_stdout("swapping", Duration::from_secs(60));
        for _ in 0..8 {
            let out = launch_bounded(env, &["sh", "-c", "ls .git/worktrees/wt/ && echo LISTED"]);
            assert!(
                !stdout(&out).contains("secret-file"),
                "{}: {}",
                env.mode(),
                show(&out)
            );
            assert_eq!(out.status.code(), Some(125), "{}", show(&out));
            assert!(stderr(&out).contains("running ags container"), "{}", show(&out));
        }
        sibling.signal(Signal::SIGTERM);
        let _ = sibling.wait();
        assert_clean(env);
    });
}

/// `ags` reads the `commondir` of a `.git` file's git dir; in a workspace that is not a
/// repository yet the agent makes both: `.git` a file naming `.gitd`, `.gitd/commondir` a FIFO.
/// The check after the launch moves the `.git` file aside (`.gitd` is no worktree entry or
/// submodule git dir naming it back) without reading the FIFO; put back, as after an `ags`
/// killed with SIGKILL (no check), the next launch must refuse it, not block opening the FIFO
/// forever.
#[test]
fn a_fifo_commondir_does_not_hang_the_next_launch() {
    each_mode(|env| {
        let plant =
            "mkdir .gitd && printf 'gitdir: .gitd\\n' > .git && mkfifo .gitd/commondir && echo PLANTED";
        let out = launch_bounded(env, &["sh", "-c", plant]);
        assert!(stdout(&out).contains("PLANTED"), "{}", show(&out));
        let work = env.work_dir().canonicalize().unwrap();
        assert!(
            stderr(&out).contains(&format!("{}/.git:", work.display())),
            "{}",
            show(&out)
        );
        std::fs::rename(work.join(".git.ags-quarantine"), work.join(".git")).unwrap();
        let out = launch_bounded(env, &["true"]);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        assert!(stderr(&out).contains("commondir"), "{}", show(&out));
        assert_clean(env);
    });
}

/// A trusted project overlay lives in the workspace: the agent replaces `.ags/config.toml` with
/// a FIFO (or a link to one, or to `/dev/tty`). The next launch must not block opening it: it
/// treats it like a missing overlay, which is what the agent could get by deleting the file.
#[test]
fn a_fifo_project_overlay_does_not_hang_the_next_launch() {
    each_mode(|env| {
        // `.ags` is a protected path (session-18 attack G2): allowed here, as a user may, so
        // that the overlay's own reading is what is attacked.
        env.write_global_config("[protect]\nallow = [\".ags\"]\n");
        write_overlay(env, "");
        trust_overlay(env);
        for plant in [
            "rm -f .ags/config.toml && mkfifo .ags/config.toml && echo PLANTED",
            "rm -f .ags/config.toml && mkfifo .ags/fifo && ln -s fifo .ags/config.toml && echo PLANTED",
            "rm -f .ags/config.toml && ln -s /dev/tty .ags/config.toml && echo PLANTED",
        ] {
            let out = run_agent(env, &[], &["sh", "-c", plant]);
            assert!(stdout(&out).contains("PLANTED"), "{}", show(&out));
            let out = launch_bounded(env, &["true"]);
            assert_eq!(out.status.code(), Some(0), "{plant}: {}", show(&out));
            let out = run_agent(env, &[], &["sh", "-c", "rm -f .ags/config.toml .ags/fifo"]);
            assert!(out.status.success(), "{}", show(&out));
        }
        assert_clean(env);
    });
}
