//! Tests of the server over a real unix socket: valid, garbage, oversized, unterminated and
//! scrubbed lines, several connections, the per-launch budgets (garbage apart from records), and
//! the incomplete verdict at the end.

use std::path::Path;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;

const SENTINEL: &str = "sentinel-SECRET-4711";

fn record(summary: &str) -> String {
    json!({
        "v": 1, "kind": "event", "agent": "codex", "event": "pre_tool",
        "native_event": "PreToolUse", "tool": "Bash", "tool_input_summary": summary,
        "outcome": "ok", "duration_ms": 1
    })
    .to_string()
}

fn read(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Serve a socket in `dir`, send `sends` (one connection each), stop, return the log without
/// the end's `incomplete` verdict.
fn exchange(dir: &Path, limit: u64, sends: Vec<Vec<u8>>) -> Vec<Value> {
    let mut log = exchange_with(dir, [limit, MAX_INVALID_BYTES], None, sends).0;
    log.retain(|e| e["kind"] != "incomplete");
    log
}

/// The same with budgets `limits` and the agent's `exit`; the whole log and the summary.
fn exchange_with(
    dir: &Path,
    limits: [u64; 2],
    exit: Option<u8>,
    sends: Vec<Vec<u8>>,
) -> (Vec<Value>, RecordSummary) {
    let log = dir.join("state/log.jsonl");
    let sock = dir.join("record.sock");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let summary = rt.block_on(async {
        let listener = UnixListener::bind(&sock).unwrap();
        let sink = Arc::new(Sink::with_limits(
            log.clone(),
            "ags-9-9".into(),
            "codex".into(),
            Scrubber::new([SENTINEL]),
            limits,
        ));
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(serve(listener, sink.clone(), stopped));
        for bytes in sends {
            let mut c = UnixStream::connect(&sock).await.unwrap();
            c.write_all(&bytes).await.unwrap();
            c.shutdown().await.unwrap();
            // The server closes its end once it has recorded everything: keeps the order.
            let _ = c.read(&mut [0u8; 1]).await;
        }
        sink.set_exit(exit);
        stop.send(true).unwrap();
        task.await.unwrap();
        sink.summary()
    });
    (read(&log), summary)
}

#[test]
fn every_line_becomes_one_entry_and_nothing_stops_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let oversized = format!("{}\n", "x".repeat(MAX_LINE_BYTES + 10));
    let sends = vec![
        format!("{}\n{}\n", record("ls"), record(&format!("echo {SENTINEL}"))).into_bytes(),
        b"garbage\n\n   \n\xff\xfe\n".to_vec(),
        oversized.into_bytes(),
        // Another agent's name, then an unterminated last line.
        format!("{}\n{}", record("x").replace("codex", "claude"), record("tail")).into_bytes(),
    ];
    let log = exchange(dir.path(), MAX_LAUNCH_BYTES, sends);
    let kinds: Vec<&str> = log.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "event", "event", "invalid", "invalid", "invalid", "invalid", "event"
        ],
        "{log:#?}"
    );
    assert!(
        log.iter()
            .all(|e| e["launch_id"] == "ags-9-9" && e["time"].is_string())
    );
    assert_eq!(log[0]["tool_input_summary"], "ls");
    assert_eq!(log[1]["tool_input_summary"], "echo <redacted>");
    assert!(
        log[2]["error"].as_str().unwrap().contains("invalid JSON"),
        "{}",
        log[2]
    );
    assert!(
        log[4]["error"].as_str().unwrap().contains("more than the limit"),
        "{}",
        log[4]
    );
    assert_eq!(log[4]["bytes"], MAX_LINE_BYTES + 10);
    assert!(
        log[5]["error"]
            .as_str()
            .unwrap()
            .contains("this launch's agent, codex"),
        "{}",
        log[5]
    );
    assert_eq!(log[6]["tool_input_summary"], "tail");
    let text = std::fs::read_to_string(dir.path().join("state/log.jsonl")).unwrap();
    assert!(!text.contains(SENTINEL) && !text.contains("garbage"));
}

#[test]
fn a_secret_in_an_invalid_line_is_scrubbed_from_the_error() {
    let dir = tempfile::tempdir().unwrap();
    // The unknown key is named in the error's JSON path.
    let line = record("ls").replace("\"v\":1", &format!("\"v\":1,\"{SENTINEL}\":1"));
    let log = exchange(
        dir.path(),
        MAX_LAUNCH_BYTES,
        vec![format!("{line}\n").into_bytes()],
    );
    assert_eq!(log.len(), 1);
    let error = log[0]["error"].as_str().unwrap();
    assert!(
        error.contains("unknown field") && error.contains("<redacted>"),
        "{error}"
    );
}

#[test]
fn past_the_budget_records_are_counted_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let lines: String = (0..20)
        .map(|i| format!("{}\n", record(&format!("cmd {i}"))))
        .collect();
    let log = exchange(dir.path(), 2000, vec![lines.into_bytes()]);
    let written = log.iter().filter(|e| e["kind"] == "event").count();
    assert!((1..20).contains(&written), "{log:#?}");
    let size = std::fs::metadata(dir.path().join("state/log.jsonl"))
        .unwrap()
        .len();
    assert!(size - log.last().unwrap().to_string().len() as u64 <= 2000 + 1);
    let last = log.last().unwrap();
    assert_eq!(last["kind"], "invalid");
    let error = last["error"].as_str().unwrap();
    assert!(
        error.starts_with(&format!("{} records (", 20 - written)),
        "{error}"
    );
}

#[test]
fn connections_queued_when_the_launch_stops_are_still_read() {
    let dir = tempfile::tempdir().unwrap();
    let (log, sock) = (dir.path().join("state/log.jsonl"), dir.path().join("record.sock"));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let listener = UnixListener::bind(&sock).unwrap();
        // Sent (and closed) before the server runs: queued, not yet accepted.
        for i in 0..3 {
            let mut c = UnixStream::connect(&sock).await.unwrap();
            c.write_all(format!("{}\n", record(&format!("last-{i}"))).as_bytes())
                .await
                .unwrap();
            c.shutdown().await.unwrap();
        }
        let sink = Sink::new(
            log.clone(),
            "ags-9-9".into(),
            "codex".into(),
            Scrubber::new([SENTINEL]),
        );
        // The launch already ended: the stop is there before the first accept.
        let (_stop, stopped) = watch::channel(true);
        serve(listener, Arc::new(sink), stopped).await;
    });
    let mut summaries: Vec<String> = read(&log)
        .iter()
        .filter(|e| e["kind"] == "event")
        .map(|e| e["tool_input_summary"].as_str().unwrap_or("?").to_owned())
        .collect();
    summaries.sort();
    assert_eq!(summaries, ["last-0", "last-1", "last-2"]);
}

fn event(event: &str, native: &str, tool: Option<&str>) -> String {
    json!({
        "v": 1, "kind": "event", "agent": "codex", "event": event,
        "native_event": native, "tool": tool, "outcome": "ok", "duration_ms": 1
    })
    .to_string()
}

#[test]
fn a_flood_of_garbage_cannot_spend_the_budget_of_records() {
    let dir = tempfile::tempdir().unwrap();
    // Two-byte lines, each an invalid entry of ~150 bytes: far past the invalid lines' budget.
    let garbage = b"x\n".repeat(20_000);
    let valid = format!("{}\n", record("after the flood")).into_bytes();
    let (log, summary) = exchange_with(dir.path(), [100_000, 50_000], None, vec![garbage, valid]);
    let after: Vec<&Value> = log
        .iter()
        .filter(|e| e["tool_input_summary"] == "after the flood")
        .collect();
    assert_eq!(after.len(), 1, "the valid record after the flood is written");
    let size = std::fs::metadata(dir.path().join("state/log.jsonl"))
        .unwrap()
        .len();
    assert!(size < 100_000 + 50_000 + 4096, "{size}");
    assert_eq!(summary.dropped.len(), 1, "{summary:?}");
    let note = &summary.dropped[0];
    assert!(
        note.contains("invalid lines") && note.contains("were dropped"),
        "{note}"
    );
    // The note is in the log, where `ags log` shows it.
    assert!(log.iter().any(|e| e["error"] == note.as_str()), "{log:#?}");
}

#[test]
fn a_silenced_session_ends_with_an_incomplete_entry() {
    let dir = tempfile::tempdir().unwrap();
    let sends = vec![format!("{}\n", event("post_tool", "PostToolUse", Some("Bash"))).into_bytes()];
    let (log, summary) = exchange_with(dir.path(), [100_000, 50_000], Some(0), sends);
    let last = log.last().unwrap();
    assert_eq!(last["kind"], "incomplete", "{log:#?}");
    assert_eq!(last["agent"], "codex");
    let missing: Vec<&str> = last["missing"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    assert_eq!(missing, summary.incomplete);
    assert_eq!(missing.len(), 3, "{missing:?}");
    // `ags log` reads it back and shows it.
    let entries = crate::agent_hooks::log::file::read_all(&dir.path().join("state/log.jsonl")).unwrap();
    let row = crate::agent_hooks::log::file::render(entries.last().unwrap());
    assert!(
        row.contains("incomplete") && row.contains("no session_start"),
        "{row}"
    );

    // A whole session is not marked.
    let dir = tempfile::tempdir().unwrap();
    let sends = vec![
        format!(
            "{}\n{}\n{}\n{}\n",
            event("session_start", "SessionStart", None),
            event("pre_tool", "PreToolUse", Some("Bash")),
            event("post_tool", "PostToolUse", Some("Bash")),
            event("session_end", "SessionEnd", None),
        )
        .into_bytes(),
    ];
    let (log, summary) = exchange_with(dir.path(), [100_000, 50_000], Some(0), sends);
    assert!(summary.incomplete.is_empty() && summary.dropped.is_empty());
    assert!(log.iter().all(|e| e["kind"] == "event"), "{log:#?}");
}
