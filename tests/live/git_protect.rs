//! Issue 10, hole 4: git configuration and hooks planted in the workspace must not run on the
//! host. The workspace is a real repository; the agent (busybox, as an attacker would) writes
//! `core.fsmonitor` into `.git/config`, drops `.git/hooks/pre-commit`, points `.git/commondir`
//! elsewhere, and tries to side-step read-only mounts by renaming `.git` and rebuilding it. Then
//! the user's git runs on the host (`status`, `commit`): nothing planted runs, the commits the
//! agent can make still work, and `chmod u+s` / `g+s` inside fail (seccomp), so no setuid file
//! appears on the host. With
//! `[sandbox] protect_git = false` (the documented opt-out) the planted config does run.

use crate::common;

use std::path::Path;
use std::process::Output;

use common::launch::{assert_clean, run_agent, stdout};
use common::{TestEnv, each_mode, run_command, show, tool};

/// `git ARGS` on the host, as the mode's user, in the workspace.
fn git(env: &TestEnv, args: &[&str]) -> Output {
    let mut all = vec!["-c", "user.name=Test", "-c", "user.email=t@example.com"];
    all.extend_from_slice(args);
    run_command(env.command(tool("git"), all), None, common::RUN_TIMEOUT)
}

fn init_repo(env: &TestEnv) {
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["commit", "-q", "--allow-empty", "-m", "first"],
    ] {
        let out = git(env, args);
        assert!(out.status.success(), "git {args:?}: {}", show(&out));
    }
}

/// The attack, as the agent runs it; prints what succeeded.
fn attack_script(pwned: &Path) -> String {
    let p = pwned.display();
    format!(
        r#"
printf '[core]\n\tfsmonitor = "touch {p}.fsmonitor; false"\n' >> .git/config && echo WROTE-CONFIG
printf '#!/bin/sh\ntouch {p}.hook\n' > .git/hooks/pre-commit && chmod 755 .git/hooks/pre-commit && echo WROTE-HOOK
mv .git/config .git/config.old && echo MOVED-CONFIG
rm -rf .git/hooks && echo REMOVED-HOOKS
mv .git .git.old && echo MOVED-GIT
if [ -d .git.old ]; then mkdir -p .git2 && cp -a .git.old/. .git2/ && mv .git2 .git && echo REBUILT-GIT; fi
mkdir -p evil && cp -a .git/objects .git/refs evil/ && printf '[core]\n\tfsmonitor = "touch {p}.commondir; false"\n' > evil/config
echo ../evil > .git/commondir && echo WROTE-COMMONDIR
# What an honest git needs keeps working: new files, renames and objects in .git.
echo x > .git/ags-probe.lock && mv .git/ags-probe.lock .git/ags-probe && rm .git/ags-probe && echo GITDIR-WRITABLE
cp /bin/busybox ./suid-tool && chmod 755 ./suid-tool && echo CHMOD-OK
chmod u+s ./suid-tool && echo SETUID-SET
chmod g+s ./suid-tool && echo SETGID-SET
chmod 4755 ./suid-tool && echo SETUID-OCTAL-SET
grep -E " $PWD(/.git)? " /proc/mounts | cut -d' ' -f2,4
echo DONE
"#
    )
}

fn planted(pwned: &Path) -> Vec<String> {
    ["fsmonitor", "hook", "commondir"]
        .iter()
        .map(|s| format!("{}.{s}", pwned.display()))
        .filter(|p| Path::new(p).exists())
        .collect()
}

#[test]
fn planted_git_config_and_hooks_never_run_on_the_host() {
    each_mode(|env| {
        init_repo(env);
        let config_before = std::fs::read(env.work_dir().join(".git/config")).unwrap();
        let pwned = env.root().join("pwned");
        let out = run_agent(env, &[], &["sh", "-c", &attack_script(&pwned)]);
        let said = stdout(&out);
        assert!(said.contains("DONE"), "{}", show(&out));
        for refused in [
            "WROTE-CONFIG",
            "WROTE-HOOK",
            "WROTE-COMMONDIR",
            "MOVED-CONFIG",
            "REMOVED-HOOKS",
            "MOVED-GIT",
            "REBUILT-GIT",
            "SETUID-SET",
            "SETGID-SET",
            "SETUID-OCTAL-SET",
        ] {
            assert!(
                !said.contains(refused),
                "{}: the agent could {refused}: {}",
                env.mode(),
                show(&out)
            );
        }
        assert!(said.contains("GITDIR-WRITABLE"), "{}: {}", env.mode(), show(&out));
        assert!(said.contains("CHMOD-OK"), "{}: {}", env.mode(), show(&out));
        let tool_mode = std::fs::metadata(env.work_dir().join("suid-tool"))
            .unwrap()
            .permissions();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&tool_mode) & 0o7777,
            0o755,
            "{}: no setuid or setgid bit on the host",
            env.mode()
        );
        let work = env.work_dir().canonicalize().unwrap();
        let mount_line = said
            .lines()
            .find(|l| l.starts_with(&format!("{} ", work.display())))
            .unwrap_or_else(|| panic!("no workspace mount line: {said}"));
        assert!(
            mount_line.contains("nosuid") && mount_line.contains("nodev"),
            "{mount_line}"
        );
        assert_eq!(std::fs::read(work.join(".git/config")).unwrap(), config_before);
        assert!(!work.join(".git/hooks/pre-commit").exists());
        assert_eq!(
            std::fs::read_to_string(work.join(".git/commondir")).unwrap(),
            ".\n"
        );
        assert!(!work.join(".git.old").exists());

        // The user's git on the host: nothing the agent planted runs.
        std::fs::write(work.join("file"), "content\n").unwrap();
        for args in [
            &["status", "--short"][..],
            &["add", "file"],
            &["commit", "-q", "-m", "second"],
        ] {
            let out = git(env, args);
            assert!(out.status.success(), "git {args:?}: {}", show(&out));
        }
        assert_eq!(
            planted(&pwned),
            Vec::<String>::new(),
            "{}: planted code ran",
            env.mode()
        );
        let log = git(env, &["log", "--oneline"]);
        assert_eq!(stdout(&log).lines().count(), 2, "{}", show(&log));
        assert_clean(env);
    });
}

/// The agent's own git work: commit, log, branch switches (real git inside when the agent
/// image is available to the service; otherwise host git over what busybox wrote).
#[test]
fn the_agent_can_still_commit_and_switch_branches() {
    each_mode(|env| {
        init_repo(env);
        let agent_image = "localhost/ags-agent:latest";
        let has_git_image = common::api::image_exists(&env.mode().socket(), agent_image).unwrap_or(false);
        let script = "set -e; echo one > a; git add a; git -c user.name=A -c user.email=a@x commit -q -m agent-one; \
            git switch -q -c feature; echo two > b; git add b; git -c user.name=A -c user.email=a@x commit -q -m agent-two; \
            git switch -q main; git log --oneline --all | wc -l; echo OK";
        if has_git_image {
            let out = env.run([
                "--tty=false",
                "--image",
                agent_image,
                "--label",
                &env.label(),
                "--",
                "sh",
                "-c",
                script,
            ]);
            assert_eq!(out.status.code(), Some(0), "{}", show(&out));
            assert!(stdout(&out).ends_with("3\nOK\n"), "{}", show(&out));
        } else {
            println!(
                "{}: no {agent_image}: git on the host over busybox writes",
                env.mode()
            );
            let out = run_agent(env, &[], &["sh", "-c", "echo one > a && echo OK"]);
            assert!(stdout(&out).contains("OK"), "{}", show(&out));
            for args in [
                &["add", "a"][..],
                &["commit", "-q", "-m", "agent-one"],
                &["switch", "-q", "-c", "feature"],
            ] {
                let out = git(env, args);
                assert!(out.status.success(), "git {args:?}: {}", show(&out));
            }
        }
        let fsck = git(env, &["fsck"]);
        assert!(fsck.status.success(), "{}", show(&fsck));
        assert_clean(env);
    });
}

#[test]
fn protect_git_false_is_the_documented_opt_out() {
    each_mode(|env| {
        init_repo(env);
        env.write_global_config("[sandbox]\nprotect_git = false\n");
        let pwned = env.root().join("pwned");
        let script = format!(
            r#"printf '[core]\n\tfsmonitor = "touch {}.fsmonitor; false"\n' >> .git/config && echo WROTE-CONFIG"#,
            pwned.display()
        );
        let out = run_agent(env, &[], &["sh", "-c", &script]);
        assert!(stdout(&out).contains("WROTE-CONFIG"), "{}", show(&out));
        // Without the protection the planted config runs on the host: the attack is real.
        let _ = git(env, &["status", "--short"]);
        assert!(
            planted(&pwned).iter().any(|p| p.ends_with(".fsmonitor")),
            "{}: {:?}",
            env.mode(),
            planted(&pwned)
        );
        assert_clean(env);
    });
}
