//! Issue 22, after the session-9 attack: stopping the move aside (`workspace::quarantine`).
//! What the check after a launch finds must leave its place, or the launch must fail; before,
//! a piece that could not be renamed was only named ("NOT MOVED") and the launch exited 0, so the
//! host's next `git status` (a shell prompt's included) ran the planted program. The agent
//! (busybox, as an attacker would), against real Podman, rootful and rootless:
//! - takes every quarantine name `ags` would use (`NAME.ags-quarantine`, `-2` … `-100`);
//! - makes the directory holding the piece read-only (`chmod 555`; a rootless agent owns the
//!   user's files, and `ags` running as the user then cannot rename in it);
//! - does both for a protected project file (`.envrc`) in the workdir itself.
//!
//! Giving the directory to another uid of the container (which the host user could not write
//! as) is refused in the container (`chown`: no `CAP_CHOWN`); were a piece still unmovable, the
//! launch ends with 125 (`src/error/tests.rs`).

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;

use common::launch::{assert_clean, run_agent, stderr, stdout};
use common::{TestEnv, each_mode, run_command, show, tool};

fn git(env: &TestEnv, dir: &Path, args: &[&str]) -> Output {
    let d = dir.display().to_string();
    let mut all = vec!["-C", &d, "-c", "user.name=Test", "-c", "user.email=t@example.com"];
    all.extend_from_slice(args);
    run_command(env.command(tool("git"), all), None, common::RUN_TIMEOUT)
}

/// Names ending in `.ags-quarantine…` next to `path` (besides those the agent made).
fn moved_to(path: &Path) -> Vec<String> {
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let prefix = format!("{name}.ags-quarantine-");
    std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| {
            n.strip_prefix(&prefix)
                .is_some_and(|h| h.len() == 16 && h.bytes().all(|b| b.is_ascii_hexdigit()))
        })
        .collect()
}

fn mode_of(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// A shell snippet taking every numbered quarantine name of `$1`.
const TAKE: &str = r#"take() { mkdir "$1.ags-quarantine"; i=2; while [ $i -le 100 ]; do mkdir "$1.ags-quarantine-$i"; i=$((i+1)); done; }"#;

#[test]
fn taken_names_and_a_read_only_directory_do_not_keep_a_plant_in_place() {
    each_mode(|env| {
        let work = env.work_dir().canonicalize().unwrap();
        assert!(git(env, &work, &["init", "-q", "-b", "main"]).status.success());
        let marker = env.root().join("pwned");
        let script = format!(
            r#"{TAKE}
mkdir -p sub/.git/refs/heads sub/.git/objects && echo 'ref: refs/heads/main' > sub/.git/HEAD
printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch {m}; false"\n' > sub/.git/config
take sub/.git/config && chmod 555 sub/.git
printf 'touch {m}\n' > .envrc && take .envrc && chmod 555 . && echo PLANTED"#,
            m = marker.display()
        );
        let out = run_agent(env, &[], &["sh", "-c", &script]);
        assert!(stdout(&out).contains("PLANTED"), "{}", show(&out));
        assert_eq!(out.status.code(), Some(0), "{}: {}", env.mode(), show(&out));
        for planted in [work.join("sub/.git/config"), work.join(".envrc")] {
            assert!(
                !planted.exists(),
                "{}: {} left in place: {}",
                env.mode(),
                planted.display(),
                show(&out)
            );
            let to = moved_to(&planted);
            assert_eq!(to.len(), 1, "{}: {to:?}: {}", env.mode(), show(&out));
            assert!(
                stderr(&out).contains(&to[0]),
                "{}: not named: {}",
                env.mode(),
                show(&out)
            );
        }
        assert!(!stderr(&out).contains("NOT MOVED"), "{}", show(&out));
        // The agent's modes are put back.
        assert_eq!(mode_of(&work.join("sub/.git")), 0o555);
        assert_eq!(mode_of(&work), 0o555);
        std::fs::set_permissions(&work, std::fs::Permissions::from_mode(0o755)).unwrap();
        // The host's git in the nested repository runs no fsmonitor.
        let _ = git(env, &work.join("sub"), &["status"]);
        assert!(!marker.exists(), "{}: the planted fsmonitor ran", env.mode());
        assert_clean(env);
    });
}

/// Session-10 attack S10-8: a rootless agent (the user, in the container) takes its own
/// workdir's permissions (`chmod 000`) after planting. Before, the git check renamed the whole
/// project to `work.ags-quarantine` ("a directory that cannot be listed") and the protected-file
/// check saw nothing: neither the nested `core.fsmonitor` nor `.vscode/tasks.json` was named.
/// Now the user's permissions are given back first, the root is never moved, and each plant is.
/// (Rootful: `ags` runs as root and lists anything; the same launch must hold too.)
#[test]
fn a_workdir_made_unreadable_is_given_back_and_checked_never_moved() {
    each_mode(|env| {
        let work = env.work_dir().canonicalize().unwrap();
        assert!(git(env, &work, &["init", "-q", "-b", "main"]).status.success());
        let script = format!(
            r#"mkdir -p .vscode n/.git/objects n/.git/refs/heads && echo '{{"tasks":[]}}' > .vscode/tasks.json
echo 'ref: refs/heads/main' > n/.git/HEAD && printf '[core]\n\tfsmonitor = touch /tmp/x\n' > n/.git/config
chmod 000 {w} && echo PLANTED"#,
            w = work.display()
        );
        let out = run_agent(env, &[], &["sh", "-c", &script]);
        assert!(stdout(&out).contains("PLANTED"), "{}", show(&out));
        assert_eq!(out.status.code(), Some(0), "{}: {}", env.mode(), show(&out));
        assert!(
            work.is_dir(),
            "{}: the project itself was moved: {}",
            env.mode(),
            show(&out)
        );
        assert_eq!(mode_of(&work), 0o500, "{}", show(&out));
        assert!(
            stderr(&out).contains("read and search given back (0500)"),
            "{}",
            show(&out)
        );
        for planted in ["n/.git/config", ".vscode/tasks.json"] {
            assert!(
                !work.join(planted).exists(),
                "{}: {planted} left in place: {}",
                env.mode(),
                show(&out)
            );
            let aside = work.join(format!("{planted}.ags-quarantine"));
            assert!(
                aside.exists(),
                "{}: no {}: {}",
                env.mode(),
                aside.display(),
                show(&out)
            );
        }
        std::fs::set_permissions(&work, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_clean(env);
    });
}
