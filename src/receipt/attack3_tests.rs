//! Attacks on the run receipt, third independent review: each test asserts what must hold, so
//! it fails while the hole is open.

use super::tests::{L, draft, lines, paths, put};
use super::verify::verify;
use super::*;
use crate::egress::log::{Decision, EgressLog, EgressRecord};

/// Attack 1: a record of the launch written while `close` runs, after it read the egress
/// chain's head and before it forgot the heads (the window holds `hook_runs`, which parses the
/// whole hook log, and the receipt's atomic write). Such a record is legitimate (a proxy
/// connection task still running after the 2 s stop grace, e.g. one in its 15 s connect
/// timeout the agent timed to end then; an `ags allow --launch` racing the end), yet it is
/// chained (seq = the sealed count) and lands after the closing record: verify calls it "a
/// chained record after its chain's end: a copy" and the untampered launch fails.
#[test]
fn attack_a_record_racing_the_close_leaves_the_launch_intact() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    for round in 0..5 {
        let dir = tempfile::tempdir().unwrap();
        let p = paths(dir.path());
        draft().write(&p).unwrap();
        open(&p, L);
        // Other launches' hook runs: a hook log of a few MB widens the window (hook_runs).
        let other = format!(
            "{{\"launch_id\":\"ags-8-1\",\"name\":\"h\",\"scope\":\"global\",\"hash\":\"{}\",\"started_at\":\"2026-01-01T00:00:00Z\",\"duration_ms\":1,\"outcome\":\"ok\",\"stdout_bytes\":0,\"stderr_bytes\":0}}\n",
            "a".repeat(64)
        );
        std::fs::create_dir_all(p.state_dir()).unwrap();
        std::fs::write(p.hook_log(), other.repeat(20_000)).unwrap();
        let egress_log = p.egress_log();
        let log = EgressLog::new(egress_log.clone(), L.into());
        log.append(&log.record("connect", "a.example", 443, Decision::Allowed, "ok".into()));
        // The proxy's detached connection tasks, still ending while the receipt closes.
        let done = Arc::new(AtomicBool::new(false));
        let writer = {
            let (done, log) = (done.clone(), log);
            std::thread::spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    let r = log.record(
                        "connect",
                        "slow.example",
                        443,
                        Decision::Failed,
                        "timed out".into(),
                    );
                    log.append(&r);
                }
            })
        };
        std::thread::sleep(std::time::Duration::from_millis(5));
        let sealed = close(&p, L, Some(0), "launch").unwrap().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(5));
        done.store(true, Ordering::Relaxed);
        writer.join().unwrap();
        let v = verify(&sealed.path, L, Some(&sealed.digest), &logs(&p));
        assert!(
            v.findings.is_empty(),
            "round {round}: an untampered launch fails verification because a record raced its close: {:?}",
            v.findings
                .iter()
                .take(3)
                .map(|f| f.to_string())
                .collect::<Vec<_>>()
        );
    }
}

/// Attack 2: `ags explain ID` (and every reader that looks an egress record up by its id,
/// `L.N`) takes the last record with that id in the log, whatever its `launch_id`. A record
/// appended with the id of one of the launch's records but another launch id (`*`, which is
/// never chained, or any other) is no record of the launch to `verify`: not a finding, not even
/// a note. Yet `ags explain L.1` now shows the forged one (refused, another host) in place of
/// the sealed record.
#[test]
fn attack_a_record_with_the_launchs_record_id_cannot_replace_it_unnoticed() {
    let dir = tempfile::tempdir().unwrap();
    let p = paths(dir.path());
    draft().write(&p).unwrap();
    open(&p, L);
    let log = EgressLog::new(p.egress_log(), L.into());
    let mut r = log.record(
        "connect",
        "upload.example",
        443,
        Decision::Allowed,
        "allowed by user config".into(),
    );
    r.bytes_up = 50_000_000;
    log.append(&r);
    let id = r.id.clone();
    let sealed = close(&p, L, Some(0), "launch").unwrap().unwrap();
    let mut forged = r.clone();
    forged.launch_id = "*".into();
    forged.host = "harmless.example".into();
    forged.decision = Decision::Refused;
    forged.bytes_up = 0;
    let mut all = lines(&p.egress_log());
    all.push(serde_json::to_string(&forged).unwrap());
    put(&p.egress_log(), &all);
    let v = verify(&sealed.path, L, Some(&sealed.digest), &logs(&p));
    // What `ags explain L.0` shows (commands/explain.rs: the last record with that id).
    let records: Vec<EgressRecord> = crate::egress::log::read_last(&p.egress_log(), usize::MAX).unwrap();
    let shown = records.into_iter().rev().find(|r| r.id == id).unwrap(); // (explain now takes the launch's own)
    assert!(
        !v.findings.is_empty(),
        "`ags explain {id}` shows a forged record ({} {:?}) and verify says intact with no note",
        shown.host,
        shown.decision
    );
}

/// Attack 3 (probe): a line whose `launch_id` key appears twice, the id spelled with escapes
/// (so no raw id bytes), with a link. `verify`'s reader refuses duplicate keys and skips a
/// line without the raw id; a reader that took one of the two would show it as covered.
#[test]
fn attack_a_duplicated_launch_id_key_is_read_alike() {
    let esc = L.replacen('-', "\\u002d", 1);
    for (first, second) in [
        ("*", esc.as_str()),
        (esc.as_str(), "*"),
        (esc.as_str(), esc.as_str()),
    ] {
        let body = format!(
            "{{\"version\":1,\"time\":\"2026-01-01T00:00:01Z\",\"launch_id\":\"{first}\",\"launch_id\":\"{second}\",\"id\":\"x\",\"kind\":\"connect\",\"host\":\"exfil.example\",\"port\":443,\"decision\":\"allowed\",\"reason\":\"r\",\"bytes_up\":1,\"bytes_down\":0,\"duration_ms\":1,\"chain\":{{\"seq\":0,\"prev\":\"{}\"}}}}",
            crate::logfile::chain::GENESIS
        );
        let parsed: Vec<EgressRecord> = crate::logfile::parse_lines(body.as_bytes());
        let entry = body.replace("\"version\":1,", "").replace(
            "\"id\":\"x\",\"kind\":\"connect\",\"host\":\"exfil.example\",\"port\":443,\"decision\":\"allowed\",\"reason\":\"r\",\"bytes_up\":1,\"bytes_down\":0,",
            "\"v\":1,\"kind\":\"invalid\",\"error\":\"e\",\"bytes\":1,",
        ).replace("\"duration_ms\":1,", "");
        let entries: Vec<crate::agent_hooks::record::Entry> = crate::logfile::parse_lines(entry.as_bytes());
        let single = entry.replacen(&format!("\"launch_id\":\"{first}\","), "", 1);
        let one: Vec<crate::agent_hooks::record::Entry> = crate::logfile::parse_lines(single.as_bytes());
        assert_eq!(one.len(), 1, "the probe's entry parses with one key: {single}");
        assert!(
            parsed.iter().all(|r| r.launch_id != L) && entries.iter().all(|e| e.launch_id != L),
            "a reader takes a line with two launch ids as {L}'s: {entry}"
        );
    }
}
