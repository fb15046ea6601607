//! Issue 22, finding 4: project files that host tools run on their own (`workspace::protected`).
//! The agent (busybox, as an attacker would) edits an existing `.vscode/tasks.json` and CI
//! workflow, tries to rename their directories away, creates `.claude/settings.json` with a hook
//! and an `.envrc` where none existed, and replaces a `.github` (holding no protected file) by a
//! symbolic link to a directory of its own workflows. The existing files cannot be changed; what
//! it created is moved aside after the launch and named on stderr. `[protect] allow` (and
//! `[[project]] protect_allow`) in the global config lets it edit CI on purpose, and the end of
//! the launch names the files it changed. Against real Podman, rootful and rootless.

use crate::common;

use std::time::Duration;

use common::launch::{Background, assert_clean, launch_args, run_agent, stderr, stdout};
use common::{TestEnv, each_mode, run_command, show};
use nix::sys::signal::Signal;

const TASKS: &str = "{\"version\": \"2.0.0\", \"tasks\": []}\n";
const CI: &str = "on: push\njobs: {}\n";

fn setup(env: &TestEnv) {
    env.write_file("work/.vscode/tasks.json", TASKS, 0o644);
    env.write_file("work/.github/workflows/ci.yml", CI, 0o644);
}

fn read(env: &TestEnv, rel: &str) -> String {
    std::fs::read_to_string(env.work_dir().join(rel)).unwrap_or_default()
}

const ATTACK: &str = r#"
printf '{"tasks":[{"label":"x","type":"shell","command":"touch /tmp/pwned","runOptions":{"runOn":"folderOpen"}}]}' > .vscode/tasks.json && echo WROTE-TASKS
rm -f .vscode/tasks.json && echo REMOVED-TASKS
mv .vscode .vscode.old && echo MOVED-VSCODE
echo 'on: push' > .github/workflows/evil.yml && echo WROTE-WORKFLOW
echo 'jobs: {}' >> .github/workflows/ci.yml && echo CHANGED-WORKFLOW
mv .github/workflows .github/w2 && echo MOVED-WORKFLOWS
mv .github .github.old && echo MOVED-GITHUB
mkdir -p .claude && printf '{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"touch /tmp/pwned"}]}]}}' > .claude/settings.json && echo WROTE-CLAUDE
printf 'touch /tmp/pwned\n' > .envrc && echo WROTE-ENVRC
echo DONE
"#;

#[test]
fn existing_protected_files_are_read_only_and_created_ones_moved_aside() {
    each_mode(|env| {
        setup(env);
        let out = run_agent(env, &[], &["sh", "-c", ATTACK]);
        let said = stdout(&out);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert!(said.contains("DONE"), "{}", show(&out));
        for refused in [
            "WROTE-TASKS",
            "REMOVED-TASKS",
            "MOVED-VSCODE",
            "WROTE-WORKFLOW",
            "CHANGED-WORKFLOW",
            "MOVED-WORKFLOWS",
            "MOVED-GITHUB",
        ] {
            assert!(
                !said.contains(refused),
                "{}: the agent could {refused}: {}",
                env.mode(),
                show(&out)
            );
        }
        // Creating them inside works (and is what the check after the launch is for).
        assert!(
            said.contains("WROTE-CLAUDE") && said.contains("WROTE-ENVRC"),
            "{}",
            show(&out)
        );
        assert_eq!(read(env, ".vscode/tasks.json"), TASKS);
        assert_eq!(read(env, ".github/workflows/ci.yml"), CI);
        let work = env.work_dir();
        assert!(!work.join(".github/workflows/evil.yml").exists());
        for planted in [".claude/settings.json", ".envrc"] {
            assert!(
                !work.join(planted).exists(),
                "{}: {planted} left in place",
                env.mode()
            );
            let aside = format!("{planted}.ags-quarantine");
            assert!(work.join(&aside).is_file(), "{}: no {aside}", env.mode());
            let err = stderr(&out);
            assert!(
                err.contains(&format!(
                    "the launch created or changed {}/{planted}, which",
                    work.display()
                )),
                "{}: {planted} not named: {err}",
                env.mode()
            );
            assert!(err.contains(&format!("mv {}/{aside}", work.display())), "{err}");
        }
        assert_clean(env);
    });
}

/// The session-9 attack's additions: files other agents, editors and git-hook managers run on
/// their own (the earlier table missed them, and they stayed in place); session 12's: npm's
/// `node-options`, pnpm's install hook, GitLab CI includes; session 13's: `.vimrc`, Copilot
/// CLI hooks, lefthook's other names.
#[test]
fn other_tools_files_created_by_the_agent_are_moved_aside() {
    each_mode(|env| {
        setup(env);
        let planted = [
            ".vscode/mcp.json",
            ".kiro/hooks/x.kiro.hook",
            "lefthook.yml",
            "mise.toml",
            ".aider.conf.yml",
            ".zed/tasks.json",
            // Session 12: package managers' and more CI services' files.
            ".npmrc",
            ".pnpmfile.cjs",
            ".gitlab/ci/x.yml",
            // Session 13 (K2): Vim's other exrc name, Copilot CLI hooks, lefthook's JSON.
            ".vimrc",
            ".github/hooks/setup.json",
            "lefthook-local.json",
        ];
        let script = planted
            .iter()
            .map(|p| format!("mkdir -p \"$(dirname {p})\" && echo 'touch /tmp/pwned' > {p}"))
            .collect::<Vec<_>>()
            .join(" && ")
            + " && echo PLANTED";
        let out = run_agent(env, &[], &["sh", "-c", &script]);
        assert!(stdout(&out).contains("PLANTED"), "{}", show(&out));
        let work = env.work_dir();
        let err = stderr(&out);
        for p in planted {
            assert!(!work.join(p).exists(), "{}: {p} left in place: {err}", env.mode());
        }
        // A directory that appeared is moved whole; a file next to a pinned one alone.
        for aside in [
            ".vscode/mcp.json.ags-quarantine",
            ".kiro.ags-quarantine",
            "lefthook.yml.ags-quarantine",
            ".zed.ags-quarantine",
            ".npmrc.ags-quarantine",
            ".gitlab.ags-quarantine",
            ".vimrc.ags-quarantine",
            "lefthook-local.json.ags-quarantine",
        ] {
            assert!(work.join(aside).exists(), "{}: no {aside}: {err}", env.mode());
        }
        assert_clean(env);
    });
}

#[test]
fn a_github_replaced_by_a_symbolic_link_is_moved_aside() {
    each_mode(|env| {
        // `.github` holds no protected file: it is not pinned, only watched.
        env.write_file("work/.github/dependabot.yml", "version: 2\n", 0o644);
        let script = "mv .github gh-old && mkdir -p store/workflows && echo 'on: push' > store/workflows/evil.yml \
            && ln -s store .github && echo REPLACED";
        let out = run_agent(env, &[], &["sh", "-c", script]);
        assert!(stdout(&out).contains("REPLACED"), "{}", show(&out));
        let work = env.work_dir();
        assert!(
            std::fs::symlink_metadata(work.join(".github")).is_err(),
            "{}: .github left",
            env.mode()
        );
        let aside = std::fs::symlink_metadata(work.join(".github.ags-quarantine")).unwrap();
        assert!(aside.file_type().is_symlink());
        // Its target is the agent's data, left alone (nothing runs it at that name).
        assert!(work.join("store/workflows/evil.yml").is_file());
        let err = stderr(&out);
        assert!(err.contains(".github (not a directory)"), "{}: {err}", env.mode());
        assert!(!err.contains("NOT MOVED"), "{}: {err}", env.mode());
        assert_clean(env);
    });
}

#[test]
fn the_allow_list_lets_the_agent_edit_ci_on_purpose() {
    each_mode(|env| {
        setup(env);
        env.write_global_config("[protect]\nallow = [\".github/workflows\"]\n");
        let script = "echo 'jobs: {build: {}}' >> .github/workflows/ci.yml && echo CHANGED-WORKFLOW; \
            echo x > .vscode/tasks.json && echo WROTE-TASKS; echo DONE";
        let out = run_agent(env, &[], &["sh", "-c", script]);
        let said = stdout(&out);
        assert!(said.contains("CHANGED-WORKFLOW"), "{}", show(&out));
        assert!(
            !said.contains("WROTE-TASKS"),
            "only the allowed path opens: {}",
            show(&out)
        );
        assert!(read(env, ".github/workflows/ci.yml").ends_with("jobs: {build: {}}\n"));
        let err = stderr(&out);
        assert!(
            err.contains(".github/workflows/ci.yml") && err.contains("allowed by [protect] allow"),
            "{}: the change is not named: {err}",
            env.mode()
        );

        // Per project, in the global config: `[[project]] protect_allow`.
        let work = env.work_dir().canonicalize().unwrap();
        env.write_global_config(&format!(
            "[[project]]\npath = \"{}\"\nprotect_allow = [\".vscode/tasks.json\"]\n",
            work.display()
        ));
        let out = run_agent(
            env,
            &[],
            &["sh", "-c", "echo '{}' > .vscode/tasks.json && echo WROTE-TASKS"],
        );
        assert!(stdout(&out).contains("WROTE-TASKS"), "{}", show(&out));
        assert_eq!(read(env, ".vscode/tasks.json"), "{}\n");

        // A name that is not on the list is refused, naming the key.
        env.write_global_config("[protect]\nallow = [\"Makefile\"]\n");
        let out = run_agent(env, &[], &["true"]);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        assert!(
            stderr(&out).contains("protect.allow names `Makefile`"),
            "{}",
            show(&out)
        );
        assert_clean(env);
    });
}

/// A sibling launch, started before `.vscode/tasks.json` existed (so it can write it), creates
/// it and then loops swapping it with a symbolic link to a host secret while this launch starts:
/// a read-only mount would bind whatever is there when Podman resolves it. While the file is
/// there, every launch is refused (it lies inside the sibling's read-write mount and is not
/// mounted there); during the swaps, no launch ever shows the secret.
#[test]
fn a_sibling_swapping_a_protected_file_never_gets_a_host_file_mounted() {
    each_mode(|env| {
        let secret = env.write_file("secretdir/secret-file", "secret-5531\n", 0o600);
        let script = format!(
            "mkdir -p .vscode && echo '{{}}' > .vscode/tasks.json && ln -s {} link && echo READY && \
             while [ ! -e go ]; do sleep 0.1; done; echo SWAPPING; \
             while :; do mv .vscode/tasks.json tmp; mv link .vscode/tasks.json; mv .vscode/tasks.json link; mv tmp .vscode/tasks.json; done",
            secret.display()
        );
        let args = launch_args(env, &["--tty=false"], &["sh", "-c", &script]);
        let sibling = Background::spawn(env, &args);
        sibling.expect_stdout("READY", Duration::from_secs(120));
        let launch = || {
            let mut args = vec!["--tty=false".to_string()];
            args.extend(launch_args(
                env,
                &[],
                &["sh", "-c", "cat .vscode/tasks.json; echo READ"],
            ));
            run_command(env.cmd(args), None, Duration::from_secs(120))
        };
        let out = launch();
        assert_eq!(out.status.code(), Some(125), "{}: {}", env.mode(), show(&out));
        assert!(
            stderr(&out).contains("running ags container"),
            "{}: {}",
            env.mode(),
            show(&out)
        );
        env.write_file("work/go", "", 0o644);
        sibling.expect_stdout("SWAPPING", Duration::from_secs(60));
        for _ in 0..8 {
            let out = launch();
            assert!(
                !stdout(&out).contains("secret-5531"),
                "{}: {}",
                env.mode(),
                show(&out)
            );
        }
        sibling.signal(Signal::SIGTERM);
        let _ = sibling.wait();
        assert_clean(env);
    });
}

#[test]
fn plan_json_shows_the_protected_paths() {
    each_mode(plan_json);
}

fn plan_json(env: &TestEnv) {
    setup(env);
    let out = env.run([
        "plan",
        "--json",
        "--no-hooks",
        "--image",
        &env.image(),
        "--",
        "true",
    ]);
    assert!(out.status.success(), "{}", show(&out));
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let paths = plan["protected"]["paths"].as_array().unwrap();
    let handling = |rel: &str| {
        paths
            .iter()
            .find(|p| p["rel"] == rel)
            .map(|p| p["handling"].as_str().unwrap().to_string())
    };
    assert_eq!(handling(".vscode/tasks.json").as_deref(), Some("read-only"));
    assert_eq!(handling(".claude/settings.json").as_deref(), Some("watched"));
    let tasks = env.work_dir().canonicalize().unwrap().join(".vscode/tasks.json");
    assert!(
        plan["mounts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["destination"] == tasks.to_str().unwrap() && m["read_only"] == true),
        "{}",
        show(&out)
    );
}

/// Session-10 attack S10-2: two launches on one tree hand a planted file over. B runs; A is
/// planned (`.envrc` missing: watched); while A's prepare hook runs, B's agent plants `.envrc`,
/// so A's inventory holds it; B's agent removes it and B ends (its own check: missing before,
/// missing after); A's agent writes the same bytes again (A's check: as before). Before, `.envrc`
/// stayed and neither launch said a word. Now A's inventory is no proof while B can write the
/// tree: what is there after A is moved aside and named.
#[test]
fn two_launches_cannot_hand_a_planted_file_over() {
    each_mode(|env| {
        let work = env.work_dir().canonicalize().unwrap();
        env.mkdir("work/.coord", 0o777);
        let w = work.display();
        let plant = "printf 'touch /tmp/pwned\\n' > .envrc";
        let b_script = format!(
            "echo READY; while [ ! -e .coord/hook-running ]; do sleep 0.1; done; {plant}; \
             while [ ! -e .coord/a-running ]; do sleep 0.1; done; rm .envrc; echo B-DONE"
        );
        let b = Background::spawn(env, &launch_args(env, &["--tty=false"], &["sh", "-c", &b_script]));
        b.expect_stdout("READY", Duration::from_secs(120));
        let hook = env.write_file(
            "hooks/slow",
            format!(
                "#!/bin/sh\ncat >/dev/null\ntouch {w}/.coord/hook-running\ni=0\nwhile [ ! -e {w}/.envrc ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\necho '{{\"version\":1}}'\n"
            ),
            0o755,
        );
        env.write_global_config(&common::launch::decl("slow", &hook, &[], ""));
        common::launch::approve_hooks(env);
        let a_script = format!(
            "touch .coord/a-running; while [ ! -e .coord/b-gone ]; do sleep 0.1; done; {plant}; echo A-DONE"
        );
        let a = Background::spawn(env, &launch_args(env, &["--tty=false"], &["sh", "-c", &a_script]));
        let b_out = b.wait();
        assert!(stdout(&b_out).contains("B-DONE"), "{}", show(&b_out));
        assert!(
            !stderr(&b_out).contains(".envrc"),
            "B saw it after all: {}",
            show(&b_out)
        );
        env.write_file("work/.coord/b-gone", "", 0o644);
        let a_out = a.wait();
        assert!(stdout(&a_out).contains("A-DONE"), "{}", show(&a_out));
        assert!(
            !work.join(".envrc").exists(),
            "{}: .envrc handed over: {}",
            env.mode(),
            show(&a_out)
        );
        assert!(work.join(".envrc.ags-quarantine").exists(), "{}", show(&a_out));
        assert!(
            stderr(&a_out).contains(".envrc, which direnv runs"),
            "{}",
            show(&a_out)
        );
        assert_clean(env);
    });
}
