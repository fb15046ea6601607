//! Issue 22, "before resolving": an independent attacker's look at the boundary between the host
//! and what the agent can write. The agent (busybox) plants something in the workspace during
//! one launch; the test then does what the user would do next (another launch, `ags plan`) and
//! checks that `ags` on the host did not act on the plant. Real Podman, rootful and rootless.
//! The findings (attack2-1 to attack2-3, attack3-1) are described in docs/security.md,
//! "Overlay trust" and "Git configuration and hooks in the workspace"; all of them now hold.

use crate::common;

use common::launch::{assert_clean, run_agent, stderr, stdout, trust_overlay};
use common::{each_mode, show};

/// The host file the agent wants to read: an `.env`-like file of the user, outside every mount.
const SECRET: &str = "API_TOKEN=sk-HOST-SECRET-5521\n";
const SECRET_MARK: &str = "HOST-SECRET-5521";

/// The agent replaces the project overlay `.ags/config.toml` (or the `.ags` directory) with a
/// symbolic link to a host file it cannot see. At the next launch `ags` on the host reads the
/// overlay: through the link, it would read the user's file and quote its failing line in the
/// "not a valid config" note (untrusted repository) or error (trusted one), on the terminal or
/// in a CI log. The overlay must be read without following a link, and the launch must go on
/// (untrusted: skipped with a note) or be refused (trusted) without quoting the file.
#[test]
fn a_symlinked_overlay_never_reads_a_host_file() {
    each_mode(|env| {
        // `.ags` is a protected path (session-18 attack G2): allowed here, as a user may, so
        // that the overlay's own reading is what is attacked.
        env.write_global_config("[protect]\nallow = [\".ags\"]\n");
        env.mkdir("work/.git", 0o755);
        let secret = env.write_file("home/project.env", SECRET, 0o600);
        let s = secret.display();
        let secret_dir = secret.parent().unwrap().display().to_string();
        for (plant, what) in [
            (
                format!("mkdir -p .ags && ln -s {s} .ags/config.toml && echo PLANTED"),
                "file",
            ),
            (
                format!("rm -rf .ags; mkdir d; ln -s {s} d/config.toml; ln -s $PWD/d .ags && echo PLANTED"),
                "directory",
            ),
            (
                // `.ags` itself names a host directory that holds a `config.toml`.
                format!("rm -rf .ags d; ln -s {secret_dir} .ags && echo PLANTED"),
                "host directory",
            ),
        ] {
            if what == "host directory" {
                env.write_file("home/config.toml", SECRET, 0o600);
            }
            let out = run_agent(env, &[], &["sh", "-c", &plant]);
            assert!(stdout(&out).contains("PLANTED"), "{what}: {}", show(&out));
            // Untrusted repository: the launch goes on without the overlay.
            let out = run_agent(env, &[], &["sh", "-c", "echo RAN"]);
            assert!(
                !stderr(&out).contains(SECRET_MARK),
                "{}: {what}: ags quoted the host file: {}",
                env.mode(),
                show(&out)
            );
            assert!(
                stdout(&out).contains("RAN"),
                "{}: {what}: {}",
                env.mode(),
                show(&out)
            );
            assert!(
                stderr(&out).contains("symbolic link"),
                "{}: {what}: the note should say why: {}",
                env.mode(),
                show(&out)
            );
        }
        // Trusted repository: the user relies on the overlay, so the launch is refused; still
        // without a word of the file.
        trust_overlay(env);
        let out = run_agent(env, &[], &["sh", "-c", "echo RAN"]);
        assert!(
            !stderr(&out).contains(SECRET_MARK) && !stdout(&out).contains("RAN"),
            "{}: {}",
            env.mode(),
            show(&out)
        );
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        assert!(stderr(&out).contains("symbolic link"), "{}", show(&out));
        assert_clean(env);
    });
}

/// `ags` in a pipeline that stops reading early (`ags … | head`, `ags … 2>&1 | head`): the
/// agent prints a line, waits for the reader to go, then plants a nested repository (which the
/// git check after the launch moves aside and names on stderr) and a Claude Code settings file
/// (a watched protected path). A closed stdout or stderr must not end `ags` before the protected
/// files are compared and the new settings file is moved aside.
#[test]
fn a_closed_stderr_does_not_skip_the_checks_after_the_launch() {
    use std::io::Read;
    use std::process::Stdio;
    each_mode(|env| {
        let work = env.work_dir().canonicalize().unwrap();
        let git = |args: &[&str]| {
            let d = work.display().to_string();
            let mut all = vec!["-C", &d, "-c", "user.name=T", "-c", "user.email=t@example.com"];
            all.extend_from_slice(args);
            let out = common::run_command(env.command(common::tool("git"), all), None, common::RUN_TIMEOUT);
            assert!(out.status.success(), "git {args:?}: {}", show(&out));
        };
        git(&["init", "-q", "-b", "main"]);
        git(&["commit", "-q", "--allow-empty", "-m", "first"]);
        for (i, closed) in ["stdout", "stderr"].into_iter().enumerate() {
            let redirect = if closed == "stderr" { ">&2" } else { "" };
            let script = format!(
                "echo READY {redirect}; sleep 3; d=sub{i}; \
                 mkdir -p $d/.git/objects $d/.git/refs && echo 'ref: refs/heads/main' > $d/.git/HEAD && \
                 printf '[core]\\n\\tfsmonitor = \"touch /tmp/pwned; false\"\\n' > $d/.git/config && \
                 mkdir -p .claude && echo '{{\"hooks\":{{}}}}' > .claude/settings.json && echo PLANTED{i}"
            );
            let mut args = vec!["--tty=false".to_string()];
            args.extend(common::launch::launch_args(env, &[], &["sh", "-c", &script]));
            let mut child = env
                .cmd(args)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let (mut first, mut other): (Box<dyn Read>, Box<dyn Read>) = match closed {
                "stderr" => (
                    Box::new(child.stderr.take().unwrap()),
                    Box::new(child.stdout.take().unwrap()),
                ),
                _ => (
                    Box::new(child.stdout.take().unwrap()),
                    Box::new(child.stderr.take().unwrap()),
                ),
            };
            let mut seen = Vec::new();
            let mut buf = [0u8; 4096];
            while !String::from_utf8_lossy(&seen).contains("READY") {
                let n = first.read(&mut buf).unwrap();
                assert!(
                    n > 0,
                    "{}: ags ended before READY: {}",
                    env.mode(),
                    String::from_utf8_lossy(&seen)
                );
                seen.extend_from_slice(&buf[..n]);
            }
            drop(first); // `head` has what it wanted
            let mut out = String::new();
            other.read_to_string(&mut out).unwrap();
            let status = child.wait().unwrap();
            assert!(
                work.join(format!("sub{i}/.git/config.ags-quarantine")).exists(),
                "{}: {closed} closed: the git check did not run ({status:?}): {out}",
                env.mode()
            );
            assert!(
                !work.join(".claude/settings.json").exists(),
                "{}: {closed} closed: the planted .claude/settings.json stayed in place (ags ended with {status:?})",
                env.mode()
            );
            assert_eq!(status.code(), Some(0), "{}: {closed} closed: {out}", env.mode());
            std::fs::remove_dir_all(work.join(".claude")).unwrap();
        }
        assert_clean(env);
    });
}

/// The git check after a launch judges a git dir's `config` and hooks by their change time
/// (`ctime`): only what changed during the launch is looked at. Renaming a directory changes
/// the directory's ctime, not that of the files inside. So the agent stages a `config` naming
/// a program in a plain directory during one launch (not a git dir yet: nothing to judge), and
/// in the next one moves that directory to `src/.git` and adds `HEAD` and `objects`. The
/// config inside keeps its old ctime; git on the host, in `src/`, runs its `core.fsmonitor`.
#[test]
fn a_git_dir_assembled_across_two_launches_is_still_caught() {
    each_mode(|env| {
        assembled_across_two_launches(
            env,
            "stash",
            "mv stash src/.git && mkdir src/.git/objects src/.git/refs && \
             echo 'ref: refs/heads/main' > src/.git/HEAD && echo ASSEMBLED",
            "src",
        );
    });
}

/// The same with nothing renamed: a complete git dir staged in the first launch inside
/// `.git/objects/` (only `modules/` and `worktrees/` of a git dir are walked), and in the second
/// only a new `lib/.git` file naming it. The git dir the file names is judged in full.
#[test]
fn a_git_file_naming_a_git_dir_staged_earlier_is_caught() {
    each_mode(|env| {
        assembled_across_two_launches(
            env,
            ".git/objects/zz/g",
            "mkdir -p .git/objects/zz/g/objects .git/objects/zz/g/refs && \
             echo 'ref: refs/heads/main' > .git/objects/zz/g/HEAD && \
             echo 'gitdir: ../.git/objects/zz/g' > lib/.git && echo ASSEMBLED",
            "lib",
        );
    });
}

/// Launch 1 writes a `config` naming a program into `dir`; launch 2 runs `assemble`; then git
/// on the host runs in `sub` and must not run the program.
fn assembled_across_two_launches(env: &common::TestEnv, dir: &str, assemble: &str, sub: &str) {
    let work = env.work_dir().canonicalize().unwrap();
    let git = |dir: &std::path::Path, args: &[&str]| {
        let d = dir.display().to_string();
        let mut all = vec!["-C", &d, "-c", "user.name=T", "-c", "user.email=t@example.com"];
        all.extend_from_slice(args);
        common::run_command(env.command(common::tool("git"), all), None, common::RUN_TIMEOUT)
    };
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["commit", "-q", "--allow-empty", "-m", "first"],
    ] {
        let out = git(&work, args);
        assert!(out.status.success(), "git {args:?}: {}", show(&out));
    }
    let pwned = env.root().join("pwned-assembled");
    let stage = format!(
        "mkdir -p {sub} {dir} && printf '[core]\\n\\tfsmonitor = \"touch {}; false\"\\n' > {dir}/config && echo STAGED",
        pwned.display()
    );
    let out = run_agent(env, &[], &["sh", "-c", &stage]);
    assert!(stdout(&out).contains("STAGED"), "{}", show(&out));
    // The next launch starts later (the check allows two seconds of clock coarseness).
    std::thread::sleep(std::time::Duration::from_secs(3));
    let out = run_agent(env, &[], &["sh", "-c", assemble]);
    assert!(stdout(&out).contains("ASSEMBLED"), "{}", show(&out));
    // The user works in `sub` on the host.
    std::fs::write(work.join(sub).join("file"), "x\n").unwrap();
    let _ = git(&work.join(sub), &["status", "--short"]);
    assert!(
        !pwned.exists(),
        "{}: git on the host ran the assembled repository's fsmonitor; ags said: {}",
        env.mode(),
        show(&out)
    );
    assert_clean(env);
}

/// The git check names what it moved aside and the command to put it back "only if you trust
/// it": `mv MOVED ORIGINAL`. The agent names the nested repository's directory
/// `x$(touch PWNED)y`; a user who reviews the harmless-looking config and pastes the suggested
/// command into a shell would run the agent's command. The suggestion must be one the shell
/// takes literally.
#[test]
fn the_suggested_mv_back_runs_nothing_the_agent_named() {
    each_mode(|env| {
        let pwned = env.root().join("pwned-mv");
        let dir = format!("x$(touch${{IFS}}{})y", pwned.display());
        let plant = format!(
            "d='{dir}'; mkdir -p \"$d/.git/objects\" \"$d/.git/refs\" && \
             echo 'ref: refs/heads/main' > \"$d/.git/HEAD\" && \
             printf '[alias]\\n\\tst = status\\n' > \"$d/.git/config\" && echo PLANTED"
        );
        let out = run_agent(env, &[], &["sh", "-c", &plant]);
        assert!(stdout(&out).contains("PLANTED"), "{}", show(&out));
        let said = stderr(&out);
        let mv = said
            .lines()
            .find_map(|l| l.split_once("only if you trust it: ").map(|(_, c)| c.to_string()))
            .unwrap_or_else(|| panic!("{}: no suggested command: {}", env.mode(), show(&out)));
        let work = env.work_dir().canonicalize().unwrap();
        let pasted = common::run_command(
            env.command("/bin/sh", ["-c", &format!("cd {} && {mv}", work.display())]),
            None,
            common::RUN_TIMEOUT,
        );
        assert!(
            !pwned.exists(),
            "{}: pasting `{mv}` ran the agent's command: {}",
            env.mode(),
            show(&pasted)
        );
        assert!(
            pasted.status.success(),
            "{}: `{mv}`: {}",
            env.mode(),
            show(&pasted)
        );
        assert!(
            work.join(&dir).join(".git/config").exists(),
            "{}: `{mv}` did not put it back",
            env.mode()
        );
        assert_clean(env);
    });
}

/// attack3-1: two launches on the same tree at once. The git inventory of a launch is its
/// baseline: what is there when it is taken counts as the user's. Launch A's agent plants a
/// nested repository whose config names a program; launch B starts on the same tree and records
/// it; A's agent moves the config into a plain directory before A ends (A's check finds a new
/// git dir without config: nothing to move); once A's `ags` is done, B's agent moves the config
/// back: same path, inode, mode and bytes as in B's inventory, so B's check passes it too. (The
/// test tells B's agent when A is gone; a real agent would just wait.) Git on the host, in
/// `sub/`, runs the fsmonitor. A launch whose inventory another running launch could write
/// judges every git dir in full.
#[test]
fn a_plant_handed_between_two_running_launches_is_caught() {
    use common::launch::{Background, launch_args};
    use std::time::Duration;
    each_mode(|env| {
        let work = env.work_dir().canonicalize().unwrap();
        let git = |dir: &std::path::Path, args: &[&str]| {
            let d = dir.display().to_string();
            let mut all = vec!["-C", &d, "-c", "user.name=T", "-c", "user.email=t@example.com"];
            all.extend_from_slice(args);
            common::run_command(env.command(common::tool("git"), all), None, common::RUN_TIMEOUT)
        };
        for args in [
            &["init", "-q", "-b", "main"][..],
            &["commit", "-q", "--allow-empty", "-m", "first"],
        ] {
            let out = git(&work, args);
            assert!(out.status.success(), "git {args:?}: {}", show(&out));
        }
        let pwned = env.root().join("pwned-handover");
        let plant = format!(
            "mkdir -p sub/.git/objects sub/.git/refs stash && echo 'ref: refs/heads/main' > sub/.git/HEAD && \
             printf '[core]\\n\\tfsmonitor = \"touch {}; false\"\\n' > sub/.git/config && echo PLANTED; \
             while [ ! -e b-started ]; do sleep 0.2; done; mv sub/.git/config stash/c && echo HIDDEN",
            pwned.display()
        );
        let with_tty = |cmd: &str| {
            let mut args = vec!["--tty=false".to_string()];
            args.extend(launch_args(env, &[], &["sh", "-c", cmd]));
            args
        };
        let a = Background::spawn(env, &with_tty(&plant));
        a.expect_stdout("PLANTED", Duration::from_secs(120));
        let b = Background::spawn(
            env,
            &with_tty(
                "touch b-started; while [ ! -e a-gone ]; do sleep 0.2; done; \
                 mv stash/c sub/.git/config && echo RESTORED",
            ),
        );
        let a = a.wait();
        assert!(
            stdout(&a).contains("HIDDEN"),
            "{}: launch A: {}",
            env.mode(),
            show(&a)
        );
        env.write_file("work/a-gone", "", 0o644);
        let b = b.wait();
        assert!(
            stdout(&b).contains("RESTORED"),
            "{}: launch B: {}",
            env.mode(),
            show(&b)
        );
        // B's check says why it judged everything.
        assert!(
            stderr(&b).contains("yours included") && work.join("sub/.git/config.ags-quarantine").exists(),
            "{}: launch B: {}",
            env.mode(),
            show(&b)
        );
        std::fs::write(work.join("sub/file"), "x\n").unwrap();
        let _ = git(&work.join("sub"), &["status", "--short"]);
        assert!(
            !pwned.exists(),
            "{}: git on the host ran the fsmonitor handed from launch A to launch B; A said: {}; B said: {}",
            env.mode(),
            show(&a),
            show(&b)
        );
        assert_clean(env);
    });
}

/// attack3-1, the same hand-over with a protected project file: launch A's agent plants
/// `.claude/settings.json` (watched: it did not exist), launch B starts and records it, A's
/// agent moves it into a plain directory and exits, B's agent tries to move it back once A is
/// gone. This already held: a protected file that exists when a launch starts is mounted
/// read-only onto itself in it, so B cannot put anything at that path.
#[test]
fn a_protected_file_handed_between_two_running_launches_does_not_stay() {
    use common::launch::{Background, launch_args};
    use std::time::Duration;
    each_mode(|env| {
        let work = env.work_dir().canonicalize().unwrap();
        let with_tty = |cmd: &str| {
            let mut args = vec!["--tty=false".to_string()];
            args.extend(launch_args(env, &[], &["sh", "-c", cmd]));
            args
        };
        let a = Background::spawn(
            env,
            &with_tty(
                "mkdir -p .claude stash && echo '{\"hooks\":{}}' > .claude/settings.json && echo PLANTED; \
                 i=0; while [ ! -e b-started ] && [ $i -lt 50 ]; do sleep 0.2; i=$((i+1)); done; \
                 mv .claude/settings.json stash/s && echo HIDDEN",
            ),
        );
        a.expect_stdout("PLANTED", Duration::from_secs(120));
        let b = Background::spawn(
            env,
            &with_tty(
                "touch b-started; while [ ! -e a-gone ]; do sleep 0.2; done; \
                 mv stash/s .claude/settings.json || cp stash/s .claude/settings.json; echo TRIED",
            ),
        );
        let a = a.wait();
        assert!(
            stdout(&a).contains("HIDDEN"),
            "{}: launch A: {}",
            env.mode(),
            show(&a)
        );
        env.write_file("work/a-gone", "", 0o644);
        let b = b.wait();
        // B is refused outright (its read-only guard lies in A's read-write mount, which A has
        // not pinned), or runs and cannot put the file back.
        let refused = b.status.code() == Some(125) && stderr(&b).contains("running");
        assert!(
            refused || stdout(&b).contains("TRIED"),
            "{}: launch B: {}",
            env.mode(),
            show(&b)
        );
        assert!(
            !work.join(".claude/settings.json").exists(),
            "{}: the planted settings stayed in place; A said: {}; B said: {}",
            env.mode(),
            show(&a),
            show(&b)
        );
        assert_clean(env);
    });
}
