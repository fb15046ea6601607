//! The agent hook record against real Podman (issue #14 item 4), rootful and rootless: a process
//! in the container (busybox, with the static `tests/support/unix_send.c`) writes to the
//! per-launch socket at `/run/ags-agent-hooks/sock/record.sock` — valid records, garbage, an
//! oversized line, a record carrying a staged sentinel secret — and tries to reach the log and
//! to replace the socket. On the host the log holds one stamped entry per line, the secret
//! scrubbed, the garbage and the oversized line as `invalid` entries; the container had no path
//! to the log; nothing of the launch is left behind, after a failed launch and after a SIGKILL
//! of `ags` either. `ags log` prints, filters and follows (no Podman needed for that part).
//!
//! Issue 23 items 3 and 6: a flood of garbage lines cannot spend the budget the valid records
//! need, and a launch whose record lacks events its agent sends (a silenced session) ends with
//! an `incomplete` entry in `ags log` and in the `--report`, saying what is missing.

use crate::common;

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use nix::sys::signal::Signal;
use serde_json::Value;

use common::launch::{Background, assert_clean, launch_args, run_agent, stdout};
use common::{TestEnv, each_mode, show, tool};

const SENTINEL: &str = "sentinel-AGENTLOG-7c1d9e";
const SOCKET: &str = "/run/ags-agent-hooks/sock/record.sock";

/// The static socket client, built into the work directory (mounted in the container).
fn build_sender(env: &TestEnv) -> PathBuf {
    let out_path = env.work_dir().join("unix_send");
    let source = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/unix_send.c");
    let out = Command::new(tool("cc"))
        .args(["-static", "-O2", "-o"])
        .arg(&out_path)
        .arg(source)
        .output()
        .expect("running cc");
    assert!(out.status.success(), "cc: {}", show(&out));
    env.give_tree(&out_path);
    out_path
}

fn log_path(env: &TestEnv) -> PathBuf {
    env.state_home().join("ags/agent-hooks.jsonl")
}

/// `ags log --json ARGS…` parsed.
fn log_json(env: &TestEnv, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["log", "--json", "-n", "1000"];
    all.extend_from_slice(args);
    let out = env.run(&all);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

/// A shell function `rec SUMMARY` printing one valid record of the `shell` agent.
const REC: &str = r#"rec() { printf '{"v":1,"kind":"event","agent":"shell","event":"pre_tool","native_event":"manual","tool":"sh","tool_input_summary":"%s","outcome":"ok","duration_ms":1}\n' "$1"; }"#;

#[test]
fn records_from_the_container_are_stamped_scrubbed_and_out_of_its_reach() {
    each_mode(|env| {
        build_sender(env);
        let log = log_path(env);
        let script = [
            REC.to_string(),
            format!("S={SOCKET}"),
            "echo '## send'; { rec \"echo $AGS_SENTINEL\"; echo 'garbage {'; head -c 70000 /dev/zero | tr '\\0' x; echo; rec after-oversize; } | ./unix_send $S".into(),
            "echo '## second'; rec second | ./unix_send $S".into(),
            "echo '## reach'; ls -A /run/ags-agent-hooks/sock".into(),
            "touch /run/ags-agent-hooks/sock/planted 2>/dev/null; echo touch=$?".into(),
            "rm -f $S 2>/dev/null; echo rm=$?".into(),
            format!("cat {} >/dev/null 2>&1; echo cat-log=$?", log.display()),
            "find / -path /proc -prune -o -name 'agent-hooks.jsonl*' -print 2>/dev/null; echo find-done".into(),
        ]
        .join("\n");
        let env_arg = format!("AGS_SENTINEL={SENTINEL}");
        let out = run_agent(env, &["--env", &env_arg], &["sh", "-c", &script]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let text = stdout(&out);
        for want in [
            "SENT ",
            "record.sock\n",
            "touch=1\n",
            "rm=1\n",
            "cat-log=1\n",
            "find-done\n",
        ] {
            assert!(text.contains(want), "{want:?}: {}", show(&out));
        }
        assert!(
            !text.contains("agent-hooks.jsonl"),
            "the container found the log: {}",
            show(&out)
        );
        assert_eq!(text.matches("SENT ").count(), 2, "{}", show(&out));

        let entries = log_json(env, &[]);
        let kinds: Vec<&str> = entries
            .iter()
            .map(|e| e["kind"].as_str().unwrap_or("?"))
            .collect();
        assert_eq!(
            kinds,
            ["event", "invalid", "invalid", "event", "event"],
            "{entries:#?}"
        );
        let launch = entries[0]["launch_id"].as_str().unwrap().to_string();
        assert!(launch.starts_with("ags-"), "{launch}");
        assert!(
            entries
                .iter()
                .all(|e| e["launch_id"] == launch && e["time"].is_string())
        );
        let summaries: Vec<&str> = entries
            .iter()
            .filter_map(|e| e["tool_input_summary"].as_str())
            .collect();
        assert_eq!(summaries, ["echo <redacted>", "after-oversize", "second"]);
        assert!(
            entries[1]["error"].as_str().unwrap().contains("invalid JSON"),
            "{}",
            entries[1]
        );
        assert!(
            entries[2]["error"]
                .as_str()
                .unwrap()
                .contains("more than the limit"),
            "{}",
            entries[2]
        );
        assert_eq!(entries[2]["bytes"], 70000);
        // The sentinel is nowhere in the log; the log is the user's alone.
        let raw = std::fs::read_to_string(&log).unwrap();
        assert!(!raw.contains(SENTINEL));
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!((mode(&log), mode(log.parent().unwrap())), (0o600, 0o700));
        assert_eq!(std::fs::metadata(&log).unwrap().len() as usize, raw.len());
        // The human table.
        let out = env.run(["log", "--launch", &launch]);
        let table = stdout(&out);
        assert!(table.starts_with("TIME"), "{table}");
        assert!(
            table.contains("echo <redacted>") && table.contains("invalid"),
            "{table}"
        );
        assert_clean(env);
    });
}

#[test]
fn a_failed_launch_and_a_killed_ags_leave_no_socket_directory() {
    each_mode(|env| {
        // The agent command cannot be found: exit 127, everything removed.
        let out = run_agent(env, &[], &["/nonexistent/agent"]);
        assert_eq!(out.status.code(), Some(127), "{}", show(&out));
        assert_clean(env);
        // SIGKILL while the container runs: the next launch sweeps the directory.
        let args = launch_args(
            env,
            &["--tty=false"],
            &["sh", "-c", &format!("ls {SOCKET} && echo READY; sleep 600")],
        );
        let bg = Background::spawn(env, &args);
        bg.expect_stdout("READY", Duration::from_secs(120));
        let pid = bg.pid();
        let live: Vec<PathBuf> = std::fs::read_dir(env.runtime_dir().join("ags"))
            .expect("stage root")
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                let n = p.file_name().unwrap().to_string_lossy().into_owned();
                n.starts_with(&format!("stage-{pid}-")) && n.ends_with("-hooks")
            })
            .collect();
        assert_eq!(live.len(), 1, "{live:?}");
        assert_eq!(
            std::fs::metadata(&live[0]).unwrap().permissions().mode() & 0o777,
            0o700
        );
        bg.signal(Signal::SIGKILL);
        let out = bg.wait();
        assert_eq!(out.status.code(), None, "{}", show(&out));
        let out = run_agent(env, &[], &["true"]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert!(!live[0].exists(), "{} left", live[0].display());
        assert_clean(env);
    });
}

/// Write a log of three launches and two agents with the library, as launches would.
fn write_log(env: &TestEnv) -> PathBuf {
    let path = log_path(env);
    for (i, (launch, agent)) in [
        ("ags-1-1", "claude"),
        ("ags-2-2", "codex"),
        ("ags-1-1", "claude"),
        ("ags-3-3", "gemini"),
    ]
    .into_iter()
    .enumerate()
    {
        append(&path, launch, agent, &format!("cmd-{i}"));
    }
    path
}

fn append(path: &Path, launch: &str, agent: &str, summary: &str) {
    let line = format!(
        r#"{{"v":1,"kind":"event","agent":"{agent}","event":"post_tool","native_event":"PostToolUse","tool":"Bash","tool_input_summary":"{summary}","outcome":"ok","duration_ms":2}}"#
    );
    let record = ags::agent_hooks::record::parse_line(line.as_bytes()).expect("a valid record");
    let entry = ags::agent_hooks::record::Entry {
        call: None,
        time: "2026-12-01T12:00:00.000Z".into(),
        launch_id: launch.into(),
        line: ags::agent_hooks::record::Line::Record(record),
    };
    let mut bytes = serde_json::to_vec(&entry).expect("an entry serializes");
    bytes.push(b'\n');
    ags::logfile::append_chained(path, launch, &bytes).expect("append");
}

fn summaries(entries: &[Value]) -> Vec<String> {
    entries
        .iter()
        .map(|e| e["tool_input_summary"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn ags_log_filters_by_agent_and_launch_and_follows() {
    let env = TestEnv::without_podman();
    // No log yet: a header and nothing else.
    let out = env.run(["log"]);
    assert_eq!(
        (out.status.code(), stdout(&out).lines().count()),
        (Some(0), 1),
        "{}",
        show(&out)
    );
    let path = write_log(&env);
    assert_eq!(
        summaries(&log_json(&env, &[])),
        ["cmd-0", "cmd-1", "cmd-2", "cmd-3"]
    );
    assert_eq!(
        summaries(&log_json(&env, &["--agent", "claude"])),
        ["cmd-0", "cmd-2"]
    );
    assert_eq!(summaries(&log_json(&env, &["--launch", "ags-2-2"])), ["cmd-1"]);
    assert_eq!(
        summaries(&log_json(&env, &["--agent", "claude", "--launch", "ags-2-2"])),
        Vec::<String>::new()
    );
    let out = env.run(["log", "--json", "-n", "2"]);
    assert_eq!(stdout(&out).lines().count(), 2, "{}", show(&out));
    let out = env.run(["log", "-n", "1", "--agent", "gemini"]);
    let table = stdout(&out);
    assert_eq!(table.lines().count(), 2, "{table}");
    assert!(
        table.lines().nth(1).unwrap().contains("ags-3-3")
            && table.contains("post_tool")
            && table.contains("Bash cmd-3"),
        "{table}"
    );
    // Refusals name the input; --egress still works and refuses what does not apply to it.
    let out = env.run(["log", "--agent", "nope"]);
    assert_eq!(out.status.code(), Some(125), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--agent \"nope\": unknown agent"),
        "{}",
        show(&out)
    );
    let out = env.run(["log", "--egress", "-n", "5"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let out = env.run(["log", "--egress", "--follow"]);
    assert_eq!(out.status.code(), Some(125), "{}", show(&out));
    // --follow prints what is appended later (only what passes the filter). The last record
    // is printed after the follower is in place, so once it is read nothing can be missed.
    let mut child = env
        .cmd(["log", "--json", "--follow", "-n", "1", "--agent", "codex"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn ags log --follow");
    // A safety net, not an assertion: a follower that never prints must not hang the test. It
    // kills only while the child is not reaped (its pid cannot belong to another process yet).
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let reaped = std::sync::Arc::new(std::sync::Mutex::new(false));
    let net = std::sync::Arc::clone(&reaped);
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(120));
        let reaped = net.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if !*reaped {
            let _ = nix::sys::signal::kill(pid, Signal::SIGKILL);
        }
    });
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next =
        || -> Value { serde_json::from_str(&lines.next().expect("a line").expect("read")).unwrap() };
    assert_eq!(next()["tool_input_summary"], "cmd-1");
    append(&path, "ags-4-4", "claude", "not-shown");
    append(&path, "ags-4-4", "codex", "followed");
    let followed = next();
    let _ = child.kill();
    *reaped.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = true;
    let _ = child.wait();
    assert_eq!(followed["tool_input_summary"], "followed", "{followed}");
}

/// A fake `codex` (mounted over `/usr/sbin`, on the image's `PATH`) that silences its session: it floods the
/// record socket with two-byte garbage lines, then sends one `post_tool` record, without a
/// `session_start`, a `pre_tool` or a `session_end`, and exits 0.
const SILENCED_CODEX: &str = r#"#!/bin/sh
S=/run/ags-agent-hooks/sock/record.sock
yes x | head -n 80000 | ./unix_send $S
printf '{"v":1,"kind":"event","agent":"codex","event":"post_tool","native_event":"PostToolUse","tool":"Bash","tool_input_summary":"after-the-flood","outcome":"ok","duration_ms":1}\n' | ./unix_send $S
exit 0
"#;

#[test]
fn garbage_cannot_spend_the_records_budget_and_a_silenced_launch_is_marked_incomplete() {
    each_mode(|env| {
        build_sender(env);
        let bin = env.mkdir("fakebin", 0o755);
        env.write_file(bin.join("codex"), SILENCED_CODEX, 0o755);
        env.give_tree(&bin);
        env.write_global_config(&format!(
            "[[mount]]\nsource = \"{}\"\ntarget = \"/usr/sbin\"\nreadonly = true\n",
            bin.display()
        ));
        let report = env.home().join("report.json");
        let report_arg = report.display().to_string();
        let out = run_agent(env, &["--agent", "codex", "--report", &report_arg], &[]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let entries = log_json(env, &[]);
        let launch = entries[0]["launch_id"].as_str().unwrap().to_string();
        // The valid record after the flood was written.
        let after: Vec<&Value> = entries
            .iter()
            .filter(|e| e["tool_input_summary"] == "after-the-flood")
            .collect();
        assert_eq!(after.len(), 1, "{}: {}", env.mode(), show(&out));
        // The garbage past its budget was counted, and `ags log` says so and why.
        let dropped: Vec<&str> = entries
            .iter()
            .filter_map(|e| e["error"].as_str())
            .filter(|e| e.contains("were dropped"))
            .collect();
        assert_eq!(dropped.len(), 1, "{dropped:?}");
        assert!(dropped[0].contains("invalid lines"), "{}", dropped[0]);
        // The launch is marked incomplete, with what is missing.
        let last = entries.last().unwrap();
        assert_eq!(last["kind"], "incomplete", "{last}");
        let missing = last["missing"].to_string();
        for want in [
            "no session_start",
            "1 post_tool record(s) without a pre_tool (tool Bash)",
            "no session_end",
        ] {
            assert!(missing.contains(want), "{want}: {missing}");
        }
        let table = stdout(&env.run(["log", "--launch", &launch, "-n", "1"]));
        assert!(
            table.contains("incomplete")
                && table.contains("the record of this launch is incomplete: no session_start"),
            "{table}"
        );
        // The report says the same.
        let r: Value = serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
        let rec = &r["agent_hook_record"];
        assert_eq!(rec["incomplete"], last["missing"], "{r:#}");
        assert_eq!(rec["dropped"][0], dropped[0], "{r:#}");
        assert_clean(env);
    });
}
