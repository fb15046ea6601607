//! Hook contributions in a real launch, in every mode (issue 4): env precedence (global hook <
//! project hook < `--env`) in the agent and in `ags plan --json`; secret values that reach the
//! agent and appear nowhere else (inspect, Podman's storage, ags output and logs, the test's
//! files) during and after the launch; generated files exact and read-only (also under
//! `--lockdown`); hook mounts ro/rw; lockdown refusals before Podman is even contacted.

use crate::common;

use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use common::launch::{
    Background, approve_hooks, assert_clean, container_events, decl, files_containing, fs_type, install_hook,
    launch_args, now_secs, podman_storage_dirs, respond_hook, run_agent, stderr, stdout, the_container,
    trust_overlay, write_overlay,
};
use common::{TestEnv, api, each_mode, show};

/// `ags plan --json` with the launch arguments `extra` (the agent command is `true`).
fn plan_json(env: &TestEnv, extra: &[&str]) -> Value {
    let mut args = vec!["plan".to_string(), "--json".into()];
    args.extend(launch_args(env, extra, &["true"]));
    let out = env.run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("plan is not JSON ({e}): {}", show(&out)))
}

/// The `origin` of env key `key` in a plan, with a check that its value is redacted.
fn origin_of(plan: &Value, key: &str) -> Value {
    let entry = plan["env"]
        .as_array()
        .expect("env is a list")
        .iter()
        .find(|e| e["key"] == key)
        .unwrap_or_else(|| panic!("no {key} in {plan}"));
    assert_eq!(entry["value"], "<redacted>", "{entry}");
    entry["origin"].clone()
}

#[test]
fn env_precedence_global_hook_then_project_hook_then_cli() {
    each_mode(|env| {
        let global = json!({"version": 1, "env": {"K": "kGlobal", "G": "gGlobal"}});
        env.write_global_config(&respond_hook(env, "g", &global, None));
        approve_hooks(env);
        let script = r#"echo "K=$K G=$G P=${P-unset}""#;
        let out = run_agent(env, &[], &["sh", "-c", script]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert_eq!(stdout(&out), "K=kGlobal G=gGlobal P=unset\n", "{}", show(&out));

        let project = json!({"version": 1, "env": {"K": "kProject", "P": "pProject"}});
        write_overlay(env, &respond_hook(env, "p", &project, None));
        trust_overlay(env);
        approve_hooks(env);
        let out = run_agent(env, &[], &["sh", "-c", script]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert_eq!(
            stdout(&out),
            "K=kProject G=gGlobal P=pProject\n",
            "{}",
            show(&out)
        );
        let plan = plan_json(env, &[]);
        assert_eq!(
            origin_of(&plan, "K"),
            json!({"source": "project-hook", "name": "p"})
        );
        assert_eq!(
            origin_of(&plan, "G"),
            json!({"source": "global-hook", "name": "g"})
        );
        assert_eq!(
            origin_of(&plan, "P"),
            json!({"source": "project-hook", "name": "p"})
        );

        let out = run_agent(env, &["--env", "K=kCli"], &["sh", "-c", script]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert_eq!(stdout(&out), "K=kCli G=gGlobal P=pProject\n", "{}", show(&out));
        let plan = plan_json(env, &["--env", "K=kCli"]);
        assert_eq!(origin_of(&plan, "K"), json!({"source": "cli"}));
        assert_eq!(
            origin_of(&plan, "G"),
            json!({"source": "global-hook", "name": "g"})
        );
        for value in ["kGlobal", "gGlobal", "kProject", "pProject", "kCli"] {
            assert!(
                !plan.to_string().contains(value),
                "{value} is in the plan: {plan}"
            );
        }
        assert_clean(env);
    });
}

fn rot13(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            'a'..='z' => (((c as u8 - b'a') + 13) % 26 + b'a') as char,
            'A'..='Z' => (((c as u8 - b'A') + 13) % 26 + b'A') as char,
            _ => c,
        })
        .collect()
}

fn sha256_line(value: &str) -> String {
    format!("{}  -\n", hex::encode(Sha256::digest(value.as_bytes())))
}

#[test]
fn secret_values_reach_the_agent_and_appear_nowhere_else() {
    each_mode(|env| {
        let cli_secret = format!("cliSentinel-{}", env.id());
        let hook_secret = format!("hookSentinel-{}", env.id());
        let file_secret = format!("fileSentinel-{}", env.id());
        let needles = [cli_secret.as_str(), hook_secret.as_str(), file_secret.as_str()];
        // Only files changed after this can hold the values.
        let marker = env.write_file("marker", "", 0o644);
        std::thread::sleep(Duration::from_millis(20));
        // Control: the search finds what is there.
        let control = env.write_file("control/file.bin", format!("\0x{hook_secret}y\n"), 0o600);
        let found = files_containing(&[env.root().to_path_buf()], &needles, Some(&marker));
        assert_eq!(
            found,
            std::slice::from_ref(&control),
            "the search itself does not work"
        );
        std::fs::remove_dir_all(control.parent().unwrap()).unwrap();
        let hook = install_hook(env, "secret");
        let args = [
            "HOOKTOK",
            &rot13(&hook_secret),
            "/workspace/secret.txt",
            &rot13(&file_secret),
        ];
        env.write_global_config(&decl("s", &hook, &args, ""));
        approve_hooks(env);
        // The agent proves it has the values by their hashes, and never prints them.
        let script = r#"for v in "$TOKEN" "$HOOKTOK" "$(cat /workspace/secret.txt)"; do
                printf %s "$v" | sha256sum; done
            grep -E '^[^ ]+ /run/ags ' /proc/mounts | cut -d' ' -f3,4 | cut -d, -f1
            stat -c '%a %u' /run/ags/env
            echo READY; while [ ! -e go ]; do sleep 0.1; done; echo done"#;
        let token = format!("TOKEN={cli_secret}");
        let args = launch_args(
            env,
            &["--tty=false", "--env", token.as_str()],
            &["sh", "-c", script],
        );
        let bg = Background::spawn(env, &args);
        bg.expect_stdout("READY", Duration::from_secs(120));

        let (id, _) = the_container(env);
        let inspect = api::call(env.mode(), "GET", &format!("/containers/{id}/json"), None);
        assert!(inspect.ok(), "{}", inspect.text());
        for n in needles {
            assert!(
                !inspect.text().contains(n),
                "{n} in the container's inspect: {}",
                inspect.text()
            );
        }
        let spec_env = inspect.json()["Config"]["Env"].clone();
        assert!(
            !spec_env.to_string().contains("TOKEN="),
            "staged keys in the spec env: {spec_env}"
        );
        let volumes = api::volumes_with_label(env.mode(), &env.label());
        assert_eq!(volumes.len(), 1, "one staging volume: {volumes:?}");
        let vol = api::call(env.mode(), "GET", &format!("/volumes/{}/json", volumes[0]), None);
        assert!(needles.iter().all(|n| !vol.text().contains(n)), "{}", vol.text());

        // While the agent runs, the values exist only in RAM: the staging volume's tmpfs (which a
        // rootful service mounts on the host, too).
        let during = files_containing(&podman_storage_dirs(env), &needles, Some(&marker));
        println!(
            "{}: files with a secret during the launch: {during:?}",
            env.mode()
        );
        for hit in during {
            let in_volume = hit.to_string_lossy().contains(&format!("/{}/_data/", volumes[0]));
            assert!(
                in_volume && fs_type(&hit) == "tmpfs",
                "{}: a secret is in {} ({})",
                env.mode(),
                hit.display(),
                fs_type(&hit)
            );
        }
        let stage_root = env.runtime_dir().join("ags");
        let own_stage = format!("stage-{}-", bg.pid());
        let staged: Vec<_> = std::fs::read_dir(&stage_root)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(&own_stage))
            // The agent hook record socket's directory (a socket, no files) lives on.
            .filter(|e| !e.file_name().to_string_lossy().ends_with("-hooks"))
            .collect();
        assert!(
            staged.is_empty(),
            "host copies of generated files remain during the launch"
        );
        let host_dirs: Vec<PathBuf> = vec![env.root().to_path_buf(), stage_root.clone()];
        let hits = files_containing(&host_dirs, &needles, None);
        assert!(
            hits.is_empty(),
            "secrets in the test's files during the launch: {hits:?}"
        );

        env.write_file("work/go", "", 0o644);
        let out = bg.wait();
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let expected: String = [&cli_secret, &hook_secret, &file_secret]
            .iter()
            .map(|v| sha256_line(v))
            .collect();
        // The staged values sit in a read-only tmpfs, in a file only the agent's user can read.
        let staging = format!("tmpfs ro\n400 {}\n", env.uid());
        assert_eq!(
            stdout(&out),
            format!("{expected}{staging}READY\ndone\n"),
            "{}",
            show(&out)
        );
        for n in needles {
            assert!(
                !stdout(&out).contains(n) && !stderr(&out).contains(n),
                "{}",
                show(&out)
            );
        }
        let log = std::fs::read_to_string(env.state_home().join("ags/hooks.jsonl")).expect("run log");
        assert!(log.contains("HOOKTOK"), "the run log names the key: {log}");

        let hits = files_containing(&podman_storage_dirs(env), &needles, Some(&marker));
        assert!(
            hits.is_empty(),
            "{}: secrets in Podman's storage after the launch: {hits:?}",
            env.mode()
        );
        let hits = files_containing(&host_dirs, &needles, None);
        assert!(
            hits.is_empty(),
            "secrets in the test's files after the launch: {hits:?}"
        );
        assert_clean(env);
    });
}

/// A shell loop that prints each file and tries to modify it in every way, one result line each.
const TAMPER: &str = r#"for f in "$@"; do
    cat "$f"; echo "<END>"
    r="$f"
    (echo x > "$f") 2>/dev/null && r="$r write:ok" || r="$r write:fail"
    (echo x >> "$f") 2>/dev/null && r="$r append:ok" || r="$r append:fail"
    rm -f "$f" 2>/dev/null && r="$r rm:ok" || r="$r rm:fail"
    t=$(mktemp) && echo new > "$t" || r="$r no-replacement"
    mv -f "$t" "$f" 2>/dev/null && r="$r mv-over:ok" || r="$r mv-over:fail"
    mv -f "$f" "$f.moved" 2>/dev/null && r="$r mv-away:ok" || r="$r mv-away:fail"
    chmod 666 "$f" 2>/dev/null && r="$r chmod:ok" || r="$r chmod:fail"
    echo "$r"; cat "$f"; echo "<END>"
done
grep -E '^[^ ]+ /tmp ' /proc/mounts | cut -d' ' -f3"#;

#[test]
fn generated_files_are_exact_and_cannot_be_modified() {
    each_mode(|env| {
        let content = "line one\n{\"k\": \"v\\\\x\"}\n\ttabbed 'quoted' $HOME `id`\nno final newline";
        let files = [
            ("/workspace/cfg/settings.json", content),
            ("/tmp/gen/info.txt", "tmp file\n"),
            ("/home/dev/notes.txt", "notes"),
        ];
        let response = json!({
            "version": 1,
            "files": files.iter().map(|(d, c)| json!({"destination": d, "content": c})).collect::<Vec<_>>(),
        });
        env.write_global_config(&respond_hook(env, "files", &response, None));
        approve_hooks(env);
        for (extra, tmp_fs) in [(&[][..], None), (&["--lockdown"][..], Some("tmpfs"))] {
            let mut cmd = vec!["sh", "-c", TAMPER, "tamper"];
            cmd.extend(files.iter().map(|(d, _)| *d));
            let out = run_agent(env, extra, &cmd);
            assert_eq!(out.status.code(), Some(0), "{extra:?}: {}", show(&out));
            let text = stdout(&out);
            let mut expected = String::new();
            for (dest, content) in files {
                let fails = "write:fail append:fail rm:fail mv-over:fail mv-away:fail chmod:fail";
                expected.push_str(&format!("{content}<END>\n{dest} {fails}\n{content}<END>\n"));
            }
            let (files_part, tmp_line) = text.split_at(expected.len().min(text.len()));
            assert_eq!(files_part, expected, "{extra:?}: {}", show(&out));
            if let Some(fs) = tmp_fs {
                assert_eq!(tmp_line.trim(), fs, "{extra:?}: /tmp: {}", show(&out));
            }
        }
        assert_clean(env);
    });
}

#[test]
fn hook_mounts_show_the_host_content_read_only_or_writable() {
    each_mode(|env| {
        let ro = env.mkdir("data-ro", 0o755);
        env.write_file("data-ro/file.txt", "ro content\n", 0o644);
        let rw = env.mkdir("data-rw", 0o755);
        env.write_file("data-rw/host.txt", "rw content\n", 0o644);
        let response = json!({"version": 1, "mounts": [
            {"source": ro, "destination": "/workspace/data", "mode": "ro"},
            {"source": rw, "destination": "/workspace/rw", "mode": "rw"},
        ]});
        env.write_global_config(&respond_hook(env, "m", &response, None));
        approve_hooks(env);
        let script = r#"cat /workspace/data/file.txt /workspace/rw/host.txt
            (: > /workspace/data/new) 2>/dev/null && echo ro-create:ok || echo ro-create:fail
            (echo x >> /workspace/data/file.txt) 2>/dev/null && echo ro-write:ok || echo ro-write:fail
            echo from-container > /workspace/rw/new && echo rw-create:ok
            echo more >> /workspace/rw/host.txt && echo rw-write:ok"#;
        let out = run_agent(env, &[], &["sh", "-c", script]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert_eq!(
            stdout(&out),
            "ro content\nrw content\nro-create:fail\nro-write:fail\nrw-create:ok\nrw-write:ok\n",
            "{}",
            show(&out)
        );
        assert_eq!(
            std::fs::read_to_string(ro.join("file.txt")).unwrap(),
            "ro content\n"
        );
        assert!(!ro.join("new").exists());
        assert_eq!(
            std::fs::read_to_string(rw.join("new")).unwrap(),
            "from-container\n"
        );
        assert_eq!(
            std::fs::read_to_string(rw.join("host.txt")).unwrap(),
            "rw content\nmore\n"
        );
        let meta = std::fs::metadata(rw.join("new")).unwrap();
        assert_eq!((meta.uid(), meta.gid()), (env.uid(), env.gid()));
        assert_clean(env);
    });
}

#[test]
fn lockdown_refuses_hook_mounts_before_creating_anything() {
    each_mode(|env| {
        let data = env.mkdir("data", 0o755);
        let marker = env.root().join("hook-ran");
        let response = json!({"version": 1, "env": {"L": "literal"},
            "mounts": [{"source": data, "destination": "/workspace/data", "mode": "ro"}]});
        env.write_global_config(&respond_hook(env, "m", &response, Some(&marker)));
        approve_hooks(env);
        let refusal = "--lockdown refuses 1 hook contribution(s): mount /workspace/data is a host bind mount from global hook `m`";
        let no_service = "no Podman API service answered";
        let nowhere = ["--url", "unix:///nonexistent.sock"];

        // Without a service the launch is bound to fail: it says so before any hook runs.
        for extra in [&nowhere[..], &["--lockdown", nowhere[0], nowhere[1]]] {
            let out = run_agent(env, extra, &["true"]);
            assert_eq!(out.status.code(), Some(125), "{}", show(&out));
            assert!(stderr(&out).contains(no_service), "{}", show(&out));
            assert!(
                !marker.exists(),
                "{extra:?}: a hook ran for a launch without a service"
            );
        }

        let since = now_secs();
        let out = run_agent(env, &["--lockdown"], &["true"]);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        assert!(stderr(&out).contains(refusal), "{}", show(&out));
        assert!(marker.exists(), "hooks run under --lockdown too");
        assert_eq!(
            container_events(env.mode(), &env.label(), since),
            Vec::<String>::new()
        );
        assert_clean(env);
    });
}

/// The launch `out` succeeded, the planted `sh` (which writes `ran`) did not run, and the hook
/// saw the clean `PATH`.
fn assert_not_run(env: &TestEnv, out: &std::process::Output, ran: &std::path::Path) {
    assert_eq!(out.status.code(), Some(0), "{}", show(out));
    assert!(!ran.exists(), "{}: the planted sh ran: {}", env.mode(), show(out));
    assert_eq!(stdout(out).trim(), common::CLEAN_PATH, "{}", show(out));
}

/// Declare and approve `envsh`: a hook with the docs' own `#!/usr/bin/env sh` line that answers
/// its `PATH` as `HOOK_PATH`.
fn envsh_hook(env: &TestEnv) {
    let hook = env.write_file(
        "hooks/envsh",
        "#!/usr/bin/env sh\ncat >/dev/null\necho \"{\\\"version\\\":1,\\\"env\\\":{\\\"HOOK_PATH\\\":\\\"$PATH\\\"}}\"\n",
        0o755,
    );
    env.write_global_config(&decl("envsh", &hook, &[], ""));
    approve_hooks(env);
}

/// Issue 22, finding 3: a hook with the docs' own `#!/usr/bin/env sh` line, while the workdir's
/// `bin/` (direnv's `PATH_add bin`) and a relative `bin` are first on `PATH` with an `sh` the
/// agent planted there: the hook runs the system `sh`, never the planted one, because hooks get
/// `PATH` without the directories the agent can write (and without relative entries).
#[test]
fn a_hook_never_runs_a_program_planted_on_an_agent_writable_path() {
    each_mode(|env| {
        let ran = env.root().join("planted-sh-ran");
        let planted = env.write_file(
            "work/bin/sh",
            format!(
                "#!/bin/sh\necho \"$0\" >> {}\nexec /bin/sh \"$@\"\n",
                ran.display()
            ),
            0o755,
        );
        envsh_hook(env);
        let work_bin = planted.parent().unwrap().display().to_string();
        let mut cmd = env.cmd(launch_args(
            env,
            &["--tty=false"],
            &["sh", "-c", "echo \"$HOOK_PATH\""],
        ));
        cmd.env("PATH", format!("bin:{work_bin}:{}", common::CLEAN_PATH));
        let out = common::run_command(cmd, None, common::RUN_TIMEOUT);
        assert_not_run(env, &out, &ran);
        assert_clean(env);
    });
}

/// Issue 22, finding 3, another launch's reach: a directory that a running launch mounts
/// read-write (its `--add-dir`) is on `PATH` with an `sh` planted there; the hooks of a second
/// launch (which does not mount it) still never run it: the read-write mounts of every running
/// `ags` container are removed from the hooks' `PATH` too.
#[test]
fn a_hook_never_runs_a_program_planted_in_a_running_launchs_mount() {
    each_mode(|env| {
        let shared = env.mkdir("shared", 0o755);
        let ran = env.root().join("planted-sh-ran");
        env.write_file(
            "shared/bin/sh",
            format!(
                "#!/bin/sh\necho \"$0\" >> {}\nexec /bin/sh \"$@\"\n",
                ran.display()
            ),
            0o755,
        );
        let script = "echo READY; while [ ! -e go ]; do sleep 0.1; done";
        let first = Background::spawn(
            env,
            &launch_args(
                env,
                &["--tty=false", "--add-dir", &shared.display().to_string()],
                &["sh", "-c", script],
            ),
        );
        first.expect_stdout("READY", Duration::from_secs(120));
        envsh_hook(env);
        let mut cmd = env.cmd(launch_args(
            env,
            &["--tty=false"],
            &["sh", "-c", "echo \"$HOOK_PATH\""],
        ));
        cmd.env("PATH", format!("{}/bin:{}", shared.display(), common::CLEAN_PATH));
        let out = common::run_command(cmd, None, common::RUN_TIMEOUT);
        env.write_file("work/go", "", 0o644);
        let done = first.wait();
        assert_not_run(env, &out, &ran);
        assert_eq!(done.status.code(), Some(0), "{}", show(&done));
        assert_clean(env);
    });
}

/// Issue 22, the session-9 attack: a launch ends, what its agent planted stays. A first launch's
/// agent plants `bin/sh` in its `--add-dir`, which is also on the user's `PATH`; the hooks of a
/// later launch elsewhere (which does not mount it, while nothing runs) never run it: every
/// launch's read-write directories are remembered (`workspace::written`). Once the user has
/// reviewed the directory, `ags gc --forget DIR` gives it back to `PATH`.
#[test]
fn a_hook_never_runs_a_program_planted_in_an_ended_launchs_mount() {
    each_mode(|env| {
        let shared = env.mkdir("shared", 0o755);
        let ran = env.root().join("planted-sh-ran");
        let plant = format!(
            "mkdir -p {s}/bin && printf '#!/bin/sh\\necho \"$0\" >> {r}\\nexec /bin/sh \"$@\"\\n' > {s}/bin/sh && chmod 755 {s}/bin/sh && echo PLANTED",
            s = shared.display(),
            r = ran.display()
        );
        let first = env.run(launch_args(
            env,
            &["--tty=false", "--add-dir", &shared.display().to_string()],
            &["sh", "-c", &plant],
        ));
        assert!(stdout(&first).contains("PLANTED"), "{}", show(&first));
        envsh_hook(env);
        let path = format!("{}/bin:{}", shared.display(), common::CLEAN_PATH);
        let second = || {
            let mut cmd = env.cmd(launch_args(
                env,
                &["--tty=false"],
                &["sh", "-c", "echo \"$HOOK_PATH\""],
            ));
            cmd.env("PATH", &path);
            common::run_command(cmd, None, common::RUN_TIMEOUT)
        };
        let out = second();
        assert_not_run(env, &out, &ran);
        // Reviewed and forgotten: back on PATH.
        let forgot = env.run(["gc", "--forget", &shared.display().to_string()]);
        assert!(stdout(&forgot).contains("forgot"), "{}", show(&forgot));
        let out = second();
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert_eq!(stdout(&out).trim(), path, "{}", show(&out));
        assert!(ran.exists(), "{}: forgetting changed nothing", env.mode());
        assert_clean(env);
    });
}
