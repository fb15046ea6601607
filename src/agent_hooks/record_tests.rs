//! Tests of the record format: the contract's example parses, the limits and rules hold, errors
//! never quote a value, and a stamped entry round-trips through its flat JSON line.

use super::*;
use serde_json::json;

fn event() -> serde_json::Value {
    json!({
        "v": 1, "kind": "event", "agent": "claude", "event": "pre_tool",
        "native_event": "PreToolUse", "session_id": "s-1", "cwd": "/work",
        "tool": "Bash", "tool_input_summary": "git push --force", "handler": null,
        "outcome": "blocked", "exit_code": null, "duration_ms": 12,
        "decision": "block", "reason": "denied by [agent_guard] deny \"git push --force*\""
    })
}

fn parse(v: &serde_json::Value) -> Result<Record, RecordError> {
    parse_line(v.to_string().as_bytes())
}

#[test]
fn the_contract_example_parses_and_round_trips() {
    let r = parse(&event()).unwrap();
    assert_eq!(
        (r.kind, r.event, r.decision),
        (Kind::Event, Event::PreTool, Some(Decision::Block))
    );
    assert_eq!(r.tool_input_summary.as_deref(), Some("git push --force"));
    assert_eq!(r.handler, None);
    // What the dispatcher writes is what the host reads.
    let line = r.to_line();
    assert_eq!(line.last(), Some(&b'\n'));
    assert_eq!(parse_line(&line[..line.len() - 1]).unwrap(), r);
    // null and a missing member both mean none.
    let mut v = event();
    for k in [
        "session_id",
        "cwd",
        "tool",
        "tool_input_summary",
        "handler",
        "exit_code",
        "decision",
        "reason",
    ] {
        v.as_object_mut().unwrap().remove(k);
    }
    let r = parse(&v).unwrap();
    assert_eq!((r.tool, r.exit_code, r.decision), (None, None, None));
}

#[test]
fn a_handler_record_names_its_handler() {
    let mut v = event();
    v["kind"] = json!("handler");
    v["handler"] = json!("guard");
    v["exit_code"] = json!(-9);
    let r = parse(&v).unwrap();
    assert_eq!((r.handler.as_deref(), r.exit_code), (Some("guard"), Some(-9)));
    v["handler"] = json!(null);
    assert!(matches!(
        parse(&v),
        Err(RecordError::Handler { kind: "handler", .. })
    ));
    v["handler"] = json!("");
    assert_eq!(parse(&v), Err(RecordError::Empty { field: "handler" }));
    let mut e = event();
    e["handler"] = json!("lint");
    assert!(matches!(
        parse(&e),
        Err(RecordError::Handler { kind: "event", .. })
    ));
}

#[test]
fn strictness_and_limits() {
    let secret = "s3cr3t-value";
    let cases: Vec<(serde_json::Value, &str)> = vec![
        (json!({"v": 1}), "missing required field"),
        (
            {
                let mut v = event();
                v["extra"] = json!(secret);
                v
            },
            "unknown field",
        ),
        (
            {
                let mut v = event();
                v["v"] = json!(2);
                v
            },
            "version 1",
        ),
        (
            {
                let mut v = event();
                v["agent"] = json!(secret);
                v
            },
            "agent is not one of",
        ),
        (
            {
                let mut v = event();
                v["event"] = json!(secret);
                v
            },
            "event",
        ),
        (
            {
                let mut v = event();
                v["outcome"] = json!(secret);
                v
            },
            "an outcome: ok, failed",
        ),
        (
            {
                let mut v = event();
                v["outcome"] = json!("OK");
                v
            },
            "an outcome: ok, failed",
        ),
        (
            {
                let mut v = event();
                v["tool"] = json!(7);
                v
            },
            "string",
        ),
        (
            {
                let mut v = event();
                v["exit_code"] = json!(secret);
                v
            },
            "exit_code",
        ),
        (
            {
                let mut v = event();
                v["exit_code"] = json!(1u64 << 40);
                v
            },
            "exit_code",
        ),
        (
            {
                let mut v = event();
                v["decision"] = json!(secret);
                v
            },
            "decision",
        ),
        (
            {
                let mut v = event();
                v["native_event"] = json!("");
                v
            },
            "native_event is empty",
        ),
        (
            {
                let mut v = event();
                v["tool_input_summary"] = json!("x".repeat(MAX_SUMMARY_BYTES + 1));
                v
            },
            "tool_input_summary has 4097 bytes",
        ),
        (
            {
                let mut v = event();
                v["cwd"] = json!("x".repeat(MAX_TEXT_BYTES + 1));
                v
            },
            "cwd has",
        ),
        (
            {
                let mut v = event();
                v["session_id"] = json!("x".repeat(MAX_SESSION_ID_BYTES + 1));
                v
            },
            "session_id has",
        ),
        (json!([1, 2]), "found an array"),
    ];
    for (v, want) in cases {
        let err = parse(&v).expect_err(&v.to_string()).to_string();
        assert!(err.contains(want), "{v}: {err}");
        assert!(!err.contains(secret), "{err} quotes a value");
    }
    // Duplicate keys, trailing garbage and non-JSON are refused.
    for raw in [
        br#"{"v":1,"v":1}"#.as_slice(),
        format!("{} x", event()).as_bytes(),
        b"\xff\xfe garbage",
        b"",
    ] {
        assert!(matches!(parse_line(raw), Err(RecordError::Json(_))), "{raw:?}");
    }
    let long = vec![b' '; MAX_LINE_BYTES + 1];
    assert_eq!(
        parse_line(&long),
        Err(RecordError::LineTooLong {
            len: MAX_LINE_BYTES + 1
        })
    );
}

#[test]
fn every_string_field_is_offered_for_scrubbing() {
    let mut v = event();
    v["kind"] = json!("handler");
    v["handler"] = json!("h");
    let mut r = parse(&v).unwrap();
    for s in r.strings_mut() {
        *s = "X".into();
    }
    let out = serde_json::to_value(&r).unwrap();
    for (k, val) in out.as_object().unwrap() {
        if val.is_string() && !["kind", "event", "outcome", "decision"].contains(&k.as_str()) {
            assert_eq!(val, "X", "{k} was not offered");
        }
    }
}

#[test]
fn entries_are_flat_lines_that_read_back() {
    let record = parse(&event()).unwrap();
    let entries = [
        Entry {
            call: None,
            time: "2026-12-01T00:00:00.000Z".into(),
            launch_id: "ags-1-2".into(),
            line: Line::Record(record),
        },
        Entry {
            call: None,
            time: "2026-12-01T00:00:01.000Z".into(),
            launch_id: "ags-1-2".into(),
            line: Line::Invalid(Invalid::new("not a record".into(), 7)),
        },
    ];
    for e in &entries {
        let text = serde_json::to_string(e).unwrap();
        let flat: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(flat["launch_id"], "ags-1-2", "{text}");
        assert!(flat["kind"].is_string() && flat.get("line").is_none(), "{text}");
        assert_eq!(&serde_json::from_str::<Entry>(&text).unwrap(), e, "{text}");
    }
    assert!(entries[0].record().is_some() && entries[1].record().is_none());
}

#[test]
fn truncate_keeps_character_boundaries() {
    assert_eq!(truncate("abc", 5), "abc");
    assert_eq!(truncate("aé", 2), "a");
    assert_eq!(truncate("aéb", 3), "aé");
}

/// The fenced blocks of `docs/agent-hooks.md` whose info string is `json TAG`.
fn doc_blocks(tag: &str) -> Vec<String> {
    let page = include_str!("../../docs/agent-hooks.md");
    let open = format!("```json {tag}");
    let mut out = Vec::new();
    let mut lines = page.lines();
    while let Some(line) = lines.next() {
        if line.trim() == open {
            let body: Vec<&str> = lines.by_ref().take_while(|l| l.trim() != "```").collect();
            out.push(body.iter().map(|l| l.trim()).collect::<Vec<_>>().join("\n"));
        }
    }
    out
}

#[test]
fn the_examples_of_the_docs_are_valid() {
    let records = doc_blocks("agent-hook-record");
    let entries = doc_blocks("agent-hook-log-entry");
    assert!(!records.is_empty() && !entries.is_empty());
    for line in records.iter().flat_map(|b| b.lines()) {
        parse_line(line.as_bytes()).unwrap_or_else(|e| panic!("{line}: {e}"));
    }
    let mut kinds = Vec::new();
    for line in entries.iter().flat_map(|b| b.lines()) {
        let e: Entry = serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}"));
        kinds.push(match &e.line {
            Line::Record(_) => "record",
            Line::Invalid(_) => "invalid",
            Line::Incomplete(_) => "incomplete",
            Line::Unguarded(_) => "unguarded",
        });
        if let Line::Invalid(i) = &e.line {
            // The error is what the host writes for that many bytes of garbage.
            let garbage = "garbage {";
            assert_eq!(i.bytes as usize, garbage.len());
            assert_eq!(i.error, parse_line(garbage.as_bytes()).unwrap_err().to_string());
        }
    }
    assert_eq!(kinds, ["record", "invalid", "incomplete", "unguarded"]);
}
