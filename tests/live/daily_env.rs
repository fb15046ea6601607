//! Environment from the host, never through argv (issue 12, item 2): `--env KEY`, `--env-file`
//! and `[sandbox] env_passthrough` reach the agent through the staging volume, and the values
//! are in neither `ags`'s command line nor the container's inspect output. Host-sourced reserved
//! names are refused with the name, before anything is created.

use crate::common;

use std::time::Duration;

use common::launch::{Background, assert_clean, launch_args, run_agent, stderr, stdout, the_container};
use common::{api, each_mode, show};
use sha2::{Digest, Sha256};

fn sha256_line(value: &str) -> String {
    format!("{}  -\n", hex::encode(Sha256::digest(value.as_bytes())))
}

#[test]
fn host_env_reaches_the_agent_and_stays_out_of_argv_and_inspect() {
    each_mode(|env| {
        let from_env = format!("fromEnvSentinel-{}", env.id());
        let from_file = format!("fromFileSentinel-{}", env.id());
        let passed = format!("passedSentinel-{}", env.id());
        let env_file = env.write_file(
            "secrets.env",
            format!("# API keys\nexport FROM_FILE='{from_file}'  # quoted\nPLAIN = plain value\n"),
            0o600,
        );
        env.write_global_config(
            "[sandbox]\nenv_passthrough = [\"PASSED\", \"NOT_SET_ANYWHERE\"]\n\n\
             [agent.shell]\nenv = { FROM_AGENT_TABLE = \"agent\" }\n",
        );
        let script = r#"for v in "$FROM_ENV" "$FROM_FILE" "$PASSED"; do printf %s "$v" | sha256sum; done
            echo "plain=$PLAIN agent=$FROM_AGENT_TABLE unset=${NOT_SET_ANYWHERE-none}"
            echo READY; while [ ! -e go ]; do sleep 0.1; done; echo done"#;
        let env_file = env_file.to_str().unwrap();
        let args = launch_args(
            env,
            &["--tty=false", "--env", "FROM_ENV", "--env-file", env_file],
            &["sh", "-c", script],
        );
        let mut cmd = env.cmd(&args);
        cmd.env("FROM_ENV", &from_env).env("PASSED", &passed);
        let bg = Background::spawn_cmd(cmd);
        bg.expect_stdout("READY", Duration::from_secs(120));
        let needles = [from_env.as_str(), from_file.as_str(), passed.as_str()];

        let cmdline = std::fs::read(format!("/proc/{}/cmdline", bg.pid())).expect("ags's cmdline");
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        assert!(cmdline.contains("--env FROM_ENV"), "not ags's cmdline: {cmdline}");
        let (id, _) = the_container(env);
        let inspect = api::call(env.mode(), "GET", &format!("/containers/{id}/json"), None);
        assert!(inspect.ok(), "{}", inspect.text());
        for n in needles {
            assert!(!cmdline.contains(n), "{n} in ags's argv: {cmdline}");
            assert!(!inspect.text().contains(n), "{n} in inspect: {}", inspect.text());
        }
        let spec_env = inspect.json()["Config"]["Env"].to_string();
        for key in ["FROM_ENV=", "FROM_FILE=", "PASSED=", "FROM_AGENT_TABLE="] {
            assert!(!spec_env.contains(key), "{key} in the spec env: {spec_env}");
        }

        env.write_file("work/go", "", 0o644);
        let out = bg.wait();
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let hashes: String = needles.iter().map(|v| sha256_line(v)).collect();
        assert_eq!(
            stdout(&out),
            format!("{hashes}plain=plain value agent=agent unset=none\nREADY\ndone\n"),
            "{}",
            show(&out)
        );
        for n in needles {
            assert!(!stderr(&out).contains(n), "{}", show(&out));
        }
        assert_clean(env);
    });
}

#[test]
fn host_sourced_reserved_names_and_bad_env_files_are_refused_before_anything_is_created() {
    each_mode(|env| {
        let cases: [(&[&str], &str); 3] = [
            (
                &["--env", "LD_PRELOAD"],
                "--env: LD_PRELOAD: names starting with `LD_` are reserved",
            ),
            (
                &["--env", "UNSET_VAR_AGS"],
                "UNSET_VAR_AGS is not set in ags's environment",
            ),
            (&["--env", "PATH"], "--env: PATH: `PATH` is reserved"),
        ];
        for (extra, want) in cases {
            let mut cmd = env.cmd(launch_args(env, &[&["--tty=false"], extra].concat(), &["true"]));
            cmd.env("LD_PRELOAD", "/x.so");
            let out = common::run_command(cmd, None, Duration::from_secs(120));
            assert_eq!(out.status.code(), Some(125), "{extra:?}: {}", show(&out));
            assert!(stderr(&out).contains(want), "{extra:?}: {}", show(&out));
        }

        env.write_global_config("[sandbox]\nenv_passthrough = [\"SSH_AUTH_SOCK\"]\n");
        let mut cmd = env.cmd(launch_args(env, &["--tty=false"], &["true"]));
        cmd.env("SSH_AUTH_SOCK", "/tmp/agent.sock");
        let out = common::run_command(cmd, None, Duration::from_secs(120));
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        assert!(
            stderr(&out).contains("[sandbox] env_passthrough: SSH_AUTH_SOCK: `SSH_AUTH_SOCK` is reserved"),
            "{}",
            show(&out)
        );
        env.write_global_config("");

        // An env file the agent replaced with a symlink to a host file is not followed, and a
        // malformed line is named by number, never shown.
        let secret = format!("hostSecret-{}", env.id());
        let target = env.write_file("host-secret.env", format!("TOKEN={secret}\n"), 0o600);
        std::os::unix::fs::symlink(&target, env.work_dir().join(".env")).unwrap();
        env.write_file("work/bad.env", format!("OK=1\n{secret}\n"), 0o644);
        for (file, want) in [
            (".env", "passes through the symlink"),
            ("bad.env", "line 2: expected KEY=VALUE"),
        ] {
            let out = run_agent(env, &["--env-file", file], &["env"]);
            assert_eq!(out.status.code(), Some(125), "{file}: {}", show(&out));
            assert!(stderr(&out).contains(want), "{file}: {}", show(&out));
            assert!(
                !stdout(&out).contains(&secret) && !stderr(&out).contains(&secret),
                "{}",
                show(&out)
            );
        }
        assert_clean(env);
    });
}
