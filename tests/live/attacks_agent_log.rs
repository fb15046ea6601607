//! Issue #14 item 4: getting a staged secret into the agent hook log on the host unscrubbed,
//! from inside the container (busybox, with the static `tests/support/unix_send.c`), against
//! real Podman, rootful and rootless. The scrubber replaced whole values only, so a value cut
//! short passed: the dispatcher cuts a command summary at 4 KiB (a long command ending inside a
//! token), and an error entry names an unknown key cut at 64 bytes and quoted with `{:?}` (a
//! value holding `"` came out escaped). Each leaked part of a value before the fix.

use crate::common;

use std::path::PathBuf;
use std::process::Command;

use common::launch::{assert_clean, run_agent, stdout};
use common::{TestEnv, each_mode, show, tool};

const SOCKET: &str = "/run/ags-agent-hooks/sock/record.sock";
/// Long (cut at 64 bytes in an error path, plain characters only).
const LONG: &str = "sentinelLONG0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
/// With a quote (escaped when an error message quotes it).
const QUOTED: &str = "sentinel\"QUOTED-5e6f";

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

/// `rec SUMMARY [EXTRA_JSON_MEMBERS]`: one record of the `shell` agent.
const REC: &str = r#"rec() { printf '{"v":1,"kind":"event","agent":"shell","event":"pre_tool","native_event":"manual","tool":"sh","tool_input_summary":"%s","outcome":"ok","duration_ms":1%s}\n' "$1" "$2"; }"#;

#[test]
fn staged_values_cut_short_or_quoted_do_not_reach_the_log() {
    each_mode(|env| {
        build_sender(env);
        let script = [
            REC.to_string(),
            // A summary as the dispatcher cuts it: the command ends inside the token.
            r#"cut=$(printf %.30s "$AGS_LONG")"#.into(),
            // The quoted value as a JSON key: `"` escaped for JSON.
            r#"q=$(printf %s "$AGS_QUOTED" | sed 's/"/\\"/g')"#.into(),
            format!(
                r#"{{ rec "curl -H key:$cut"; rec x ",\"$AGS_LONG\":1"; rec y ",\"$q\":1"; }} | ./unix_send {SOCKET}"#
            ),
        ]
        .join("\n");
        let long = format!("AGS_LONG={LONG}");
        let quoted = format!("AGS_QUOTED={QUOTED}");
        let out = run_agent(env, &["--env", &long, "--env", &quoted], &["sh", "-c", &script]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert!(stdout(&out).contains("SENT "), "{}", show(&out));
        let log = env.state_home().join("ags/agent-hooks.jsonl");
        let raw = std::fs::read_to_string(&log).unwrap();
        // The entries, without the receipt's closing record.
        let raw: String = raw
            .lines()
            .filter(|l| !l.contains("\"receipt\":\"closed\""))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(raw.lines().count(), 3, "{raw}");
        // What `ags log` shows: the strings of each entry, decoded.
        let shown: Vec<String> = raw
            .lines()
            .flat_map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                let map = v.as_object().unwrap().clone();
                map.into_iter().filter_map(|(_, v)| v.as_str().map(str::to_owned))
            })
            .collect();
        let shown = shown.join("\n");
        for (name, value) in [("long", LONG), ("quoted", QUOTED)] {
            let part = &value[..12];
            let escaped = format!("{part:?}");
            let escaped = escaped.trim_matches('"');
            assert!(
                !raw.contains(part) && !shown.contains(part) && !shown.contains(escaped),
                "{}: part of the {name} value is in the log: {raw}",
                env.mode()
            );
        }
        assert_eq!(raw.matches("<redacted>").count(), 3, "{raw}");
        assert_clean(env);
    });
}
