//! Tests of the server over a real unix socket: valid, garbage, oversized, unterminated and
//! scrubbed lines, several connections, and the per-launch budget.

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

/// Serve a socket in `dir`, send `sends` (one connection each), stop, return the log.
fn exchange(dir: &Path, limit: u64, sends: Vec<Vec<u8>>) -> Vec<Value> {
    let log = dir.join("state/log.jsonl");
    let sock = dir.join("record.sock");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let listener = UnixListener::bind(&sock).unwrap();
        let sink = Sink::with_limit(
            log.clone(),
            "ags-9-9".into(),
            "codex".into(),
            Scrubber::new([SENTINEL]),
            limit,
        );
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(serve(listener, Arc::new(sink), stopped));
        for bytes in sends {
            let mut c = UnixStream::connect(&sock).await.unwrap();
            c.write_all(&bytes).await.unwrap();
            c.shutdown().await.unwrap();
            // The server closes its end once it has recorded everything: keeps the order.
            let _ = c.read(&mut [0u8; 1]).await;
        }
        stop.send(true).unwrap();
        task.await.unwrap();
    });
    read(&log)
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
        .map(|e| e["tool_input_summary"].as_str().unwrap_or("?").to_owned())
        .collect();
    summaries.sort();
    assert_eq!(summaries, ["last-0", "last-1", "last-2"]);
}
