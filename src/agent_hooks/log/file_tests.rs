//! Tests of the log file: private modes, rotation under the lock, filters, following across a
//! rotation, and rows that escape what the container wrote.

use std::os::unix::fs::PermissionsExt;

use super::*;
use crate::agent_hooks::Event;
use crate::agent_hooks::record::{Invalid, Kind, Outcome, Record};

fn entry(launch: &str, agent: &str, summary: &str) -> Entry {
    Entry {
        call: None,
        time: "2026-12-01T00:00:00.000Z".into(),
        launch_id: launch.into(),
        line: Line::Record(Record {
            v: 1,
            kind: Kind::Event,
            agent: agent.into(),
            event: Event::PreTool,
            native_event: "PreToolUse".into(),
            session_id: None,
            cwd: None,
            tool: Some("Bash".into()),
            tool_input_summary: Some(summary.into()),
            handler: None,
            outcome: Outcome::Ok,
            exit_code: None,
            duration_ms: 3,
            decision: None,
            reason: None,
        }),
    }
}

fn summaries(entries: &[Entry]) -> Vec<String> {
    entries
        .iter()
        .map(|e| {
            e.record()
                .and_then(|r| r.tool_input_summary.clone())
                .unwrap_or_default()
        })
        .collect()
}

#[test]
fn appends_privately_rotates_and_reads_back_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state/ags/agent-hooks.jsonl");
    for (i, agent) in ["claude", "codex", "claude"].iter().enumerate() {
        append(&path, &entry("ags-1", agent, &format!("c{i}"))).unwrap();
    }
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!((mode(&path), mode(path.parent().unwrap())), (0o600, 0o700));
    let all = Filter::default();
    assert_eq!(summaries(&read_last(&path, &all, 2).unwrap()), ["c1", "c2"]);
    // Past the limit the file moves to .1 (once) and reading spans both files.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .set_len(ROTATE_BYTES + 1)
        .unwrap();
    append(&path, &entry("ags-2", "gemini", "c3")).unwrap();
    append(&path, &entry("ags-2", "gemini", "c4")).unwrap();
    assert!(rotated(&path).exists());
    assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 2);
    assert_eq!(summaries(&read_last(&path, &all, 3).unwrap()), ["c2", "c3", "c4"]);
    let claude = Filter {
        agent: Some("claude".into()),
        launch: None,
    };
    assert_eq!(summaries(&read_last(&path, &claude, 10).unwrap()), ["c0", "c2"]);
    let launch2 = Filter {
        agent: None,
        launch: Some("ags-2".into()),
    };
    assert_eq!(summaries(&read_last(&path, &launch2, 10).unwrap()), ["c3", "c4"]);
}

#[test]
fn a_follower_sees_new_lines_across_a_rotation() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state/agent-hooks.jsonl");
    let mut f = Follower::from_end(&path).unwrap();
    assert!(f.poll().unwrap().is_empty());
    append(&path, &entry("a", "claude", "one")).unwrap();
    assert_eq!(summaries(&f.poll().unwrap()), ["one"]);
    append(&path, &entry("a", "claude", "two")).unwrap();
    // Rotated by someone else, with a line written to the old file after our last read.
    std::fs::rename(&path, rotated(&path)).unwrap();
    append(&path, &entry("a", "claude", "three")).unwrap();
    assert_eq!(summaries(&f.poll().unwrap()), ["two", "three"]);
    assert!(f.poll().unwrap().is_empty());
    // Starting from the end: what was there is not repeated.
    let mut g = Follower::from_end(&path).unwrap();
    append(&path, &entry("a", "claude", "four")).unwrap();
    assert_eq!(summaries(&g.poll().unwrap()), ["four"]);
}

#[test]
fn rows_escape_container_text() {
    let row = render(&entry("ags-1", "claude", "rm -rf /\n\x1b[2Jfake row"));
    assert!(row.contains("Bash rm -rf /\\n\\u{1b}[2Jfake row"), "{row}");
    assert!(row.contains("pre_tool") && row.contains(" ok "), "{row}");
    assert!(!row.contains('\n'));
    let invalid = Entry {
        line: Line::Invalid(Invalid::new("not a record: \x1b]0;x".into(), 9)),
        ..entry("ags-1", "claude", "")
    };
    let row = render(&invalid);
    assert!(
        row.contains("invalid") && row.contains("9 bytes: not a record: \\u{1b}]0;x"),
        "{row}"
    );
    assert!(header().starts_with("TIME"));
}
