//! Issue 22, findings 5 and 8, performed against real Podman (rootful and rootless):
//! - the agent replaces a directory of its workdir by a symlink to a sibling project, so that a
//!   path the user names later (`--env-file config/dev.env`, `--report out/x.json`, `ags login
//!   import --from`) reads that
//!   project's secrets or writes there: refused, naming the link (docs/security.md, "Paths you
//!   name"); the honest uses still work;
//! - the agent names a directory with terminal escape sequences (OSC title, clear screen, CR,
//!   a bidi override) that a later launch's error names: the error reaches stderr escaped.

use crate::common;

use std::time::Duration;

use common::launch::{Background, assert_clean, launch_args, run_agent, stderr, stdout};
use common::{TestEnv, each_mode, show};

/// The sibling project `sibling/config/dev.env` holding a secret, and the workdir's own
/// `config/dev.env` and `out/`.
fn sibling_with_secret(env: &TestEnv) -> (std::path::PathBuf, String) {
    let secret = format!("siblingSecret-{}", env.id());
    env.write_file("sibling/config/dev.env", format!("TOKEN={secret}\n"), 0o600);
    env.write_file("work/config/dev.env", "TOKEN=mine\n", 0o600);
    env.mkdir("work/out", 0o755);
    (env.root().join("sibling").canonicalize().unwrap(), secret)
}

/// The agent replaces `name` in its workdir by a symlink to `target`.
fn agent_plants_link(env: &TestEnv, name: &str, target: &std::path::Path) {
    let script = format!(
        "rm -rf {name} && ln -s '{}' {name} && echo planted",
        target.display()
    );
    let out = run_agent(env, &[], &["sh", "-c", &script]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(stdout(&out), "planted\n", "{}", show(&out));
    let link = std::fs::read_link(env.work_dir().join(name)).expect("the agent's link");
    assert_eq!(link, target);
}

#[test]
fn an_env_file_through_a_planted_directory_link_is_refused() {
    each_mode(|env| {
        let (sibling, secret) = sibling_with_secret(env);
        // Honest use: a regular file in the workdir.
        let out = run_agent(
            env,
            &["--env-file", "config/dev.env"],
            &["sh", "-c", "echo \"t=$TOKEN\""],
        );
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert_eq!(stdout(&out), "t=mine\n", "{}", show(&out));

        agent_plants_link(env, "config", &sibling.join("config"));
        let out = run_agent(
            env,
            &["--env-file", "config/dev.env"],
            &["sh", "-c", "echo \"t=$TOKEN\""],
        );
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        let err = stderr(&out);
        let link = format!(
            "{} -> {}",
            env.work_dir().canonicalize().unwrap().join("config").display(),
            sibling.join("config").display()
        );
        assert!(
            err.contains("--env-file config/dev.env passes through the symlink"),
            "{}",
            show(&out)
        );
        assert!(err.contains(&link), "names the link {link}: {}", show(&out));
        assert!(!show(&out).contains(&secret), "{}", show(&out));
        // The same path as the login file to copy into the agent's state volume.
        let out = env.run(["login", "import", "claude", "--from", "config/dev.env"]);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        assert!(
            stderr(&out).contains(&format!(
                "login file config/dev.env passes through the symlink {link}"
            )),
            "{}",
            show(&out)
        );
        assert_clean(env);
    });
}

#[test]
fn a_report_through_a_planted_directory_link_is_refused() {
    each_mode(|env| {
        let (sibling, _) = sibling_with_secret(env);
        // Honest use: a regular directory in the workdir.
        let out = run_agent(env, &["--report", "out/x.json"], &["true"]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let report = std::fs::read_to_string(env.work_dir().join("out/x.json")).expect("the report");
        assert!(report.contains("\"exit_code\": 0"), "{report}");

        agent_plants_link(env, "out", &sibling.join("config"));
        let out = run_agent(env, &["--report", "out/x.json"], &["sh", "-c", "echo ran"]);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        assert!(
            !stdout(&out).contains("ran"),
            "refused before the launch: {}",
            show(&out)
        );
        let err = stderr(&out);
        assert!(
            err.contains("--report out/x.json passes through the symlink"),
            "{}",
            show(&out)
        );
        assert!(
            err.contains(&format!("-> {}", sibling.join("config").display())),
            "{}",
            show(&out)
        );
        let written: Vec<_> = std::fs::read_dir(sibling.join("config"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(written, ["dev.env"], "nothing written through the link");

        // Planted by the agent of the launch that writes the report: checked again at the end.
        std::fs::remove_file(env.work_dir().join("out")).unwrap();
        env.mkdir("work/out", 0o755);
        let script = format!("rm -rf out && ln -s '{}' out", sibling.join("config").display());
        let out = run_agent(env, &["--report", "out/x.json"], &["sh", "-c", &script]);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        assert!(
            stderr(&out).contains("--report out/x.json passes through the symlink"),
            "{}",
            show(&out)
        );
        let written: Vec<_> = std::fs::read_dir(sibling.join("config"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(written, ["dev.env"], "nothing written through the link");
        assert_clean(env);
    });
}

/// Session-14 attack F3: the agent writes a forged report at the report path and makes its
/// directory read-only; `ags` cannot write, and the forged file stayed, unremarked, for a CI
/// step that uploads it. Rootless (where the host user is the directory's owner inside too),
/// the failure now says the file there is not ags's; rootful, ags (root on the host) writes
/// its report over the forged one.
#[test]
fn a_forged_report_left_where_ags_cannot_write_is_called_so() {
    each_mode(|env| {
        env.mkdir("work/out", 0o755);
        env.write_file("work/out/r.json", "{\"from\": \"the previous launch\"}\n", 0o644);
        let script = r#"echo '{"forged": true, "exit_code": 0}' > out/r.json; chmod 555 out; exit 3"#;
        let out = run_agent(env, &["--report", "out/r.json"], &["sh", "-c", script]);
        let report = std::fs::read_to_string(env.work_dir().join("out/r.json")).unwrap_or_default();
        let _ = std::fs::set_permissions(
            env.work_dir().join("out"),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        );
        match out.status.code() {
            Some(3) => assert!(report.contains("\"exit_code\": 3"), "{report}"),
            _ => {
                assert_eq!(out.status.code(), Some(125), "{}", show(&out));
                assert!(
                    stderr(&out).contains("the file there now is not ags's report"),
                    "{}",
                    show(&out)
                );
            }
        }
        if env.mode() == common::Mode::Rootless {
            assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        }
        assert_clean(env);
    });
}

#[test]
fn an_env_file_in_a_running_launchs_workdir_through_its_planted_link_is_refused() {
    each_mode(|env| {
        let (sibling, secret) = sibling_with_secret(env);
        let other = env.mkdir("other", 0o755).canonicalize().unwrap();
        env.write_file("other/dev.env", "TOKEN=mine\n", 0o600);
        // A launch running in the sibling project: its agent plants `config` -> the secrets
        // of a third directory and keeps running.
        std::fs::rename(sibling.join("config"), env.root().join("secrets")).unwrap();
        let secrets = env.root().join("secrets").canonicalize().unwrap();
        let script = format!(
            "ln -s '{}' config && echo READY; while [ ! -e go ]; do sleep 0.1; done",
            secrets.display()
        );
        let workdir = sibling.display().to_string();
        let args = launch_args(
            env,
            &["--tty=false", "--workdir", &workdir],
            &["sh", "-c", &script],
        );
        let running = Background::spawn(env, &args);
        running.expect_stdout("READY", Duration::from_secs(120));
        // This launch names the file through the running launch's workdir; it is outside its
        // own mounts, so only the running launch's mounts show the link is the agent's.
        let named = sibling.join("config/dev.env").display().to_string();
        let out = run_agent(env, &["--env-file", &named], &["sh", "-c", "echo \"t=$TOKEN\""]);
        std::fs::write(sibling.join("go"), "").unwrap();
        let done = running.wait();
        assert_eq!(done.status.code(), Some(0), "{}", show(&done));
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        assert!(
            stderr(&out).contains("which lies inside running ags container"),
            "{}",
            show(&out)
        );
        assert!(!show(&out).contains(&secret), "{}", show(&out));
        // Honest use of a file outside every mount, through no link, still works.
        let named = other.join("dev.env").display().to_string();
        let out = run_agent(env, &["--env-file", &named], &["sh", "-c", "echo \"t=$TOKEN\""]);
        assert_eq!(stdout(&out), "t=mine\n", "{}", show(&out));
        assert_clean(env);
    });
}

/// ESC, an OSC window title, clear screen, CR and a right-to-left override.
const NASTY: &str = "wt\x1b]0;PWNED\x07\x1b[2J\rforged\u{202e}";

#[test]
fn a_directory_name_with_escape_sequences_reaches_the_terminal_escaped() {
    each_mode(|env| {
        let work = env.work_dir().canonicalize().unwrap();
        let git = |args: &[&str]| {
            let d = work.display().to_string();
            let mut all = vec!["-C", d.as_str()];
            all.extend_from_slice(args);
            let out = common::run_command(env.command(common::tool("git"), all), None, common::RUN_TIMEOUT);
            assert!(out.status.success(), "git {args:?}: {}", show(&out));
        };
        git(&["init", "-q", "-b", "main"]);
        // The agent plants a worktree entry whose name holds the sequences and whose
        // config.worktree is a symlink (as a clone could, with protect_git off).
        env.write_global_config("[sandbox]\nprotect_git = false\n");
        let script = "d=\".git/worktrees/$(printf 'wt\\033]0;PWNED\\007\\033[2J\\rforged\\342\\200\\256')\"; \
                      mkdir -p \"$d\" && ln -s /etc/hostname \"$d/config.worktree\" && echo planted";
        let out = run_agent(env, &[], &["sh", "-c", script]);
        assert_eq!(stdout(&out), "planted\n", "{}", show(&out));
        assert!(
            work.join(".git/worktrees").join(NASTY).is_dir(),
            "the agent's directory"
        );

        // Every later launch is refused by the git guard, which names that path.
        env.write_global_config("");
        let out = run_agent(env, &[], &["true"]);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        let err = stderr(&out);
        assert!(
            err.contains("config.worktree"),
            "the guard's error: {}",
            show(&out)
        );
        for raw in ['\x1b', '\x07', '\r', '\u{202e}'] {
            assert!(!err.contains(raw), "raw {raw:?} on stderr: {err:?}");
        }
        assert!(err.contains("\\u{1b}]0;PWNED"), "shown escaped: {err:?}");
        assert_clean(env);
    });
}
