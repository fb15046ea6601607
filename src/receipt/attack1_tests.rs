//! Attacks on the run receipt from the first independent review, each performed: what must hold.

use std::path::Path;

use super::tests::{L, draft, findings, launch, lines, mine, paths, put};
use super::verify::verify;
use super::*;
use crate::logfile::append_chained;
/// Attack 1: a record inserted with its launch id spelled with a JSON escape (`\u002d` for a
/// `-`). `verify` looks for the raw bytes of the id before parsing, so it never sees the line;
/// every reader (`ags log --launch`, the timeline, the egress log) parses it as the launch's.
#[test]
fn attack_a_record_inserted_with_an_escaped_launch_id_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let p = paths(dir.path());
    let sealed = launch(&p);
    let escaped = L.replacen('-', "\\u002d", 1);
    let forged = format!(
        "{{\"version\":1,\"time\":\"2026-12-07T14:02:11.342Z\",\"launch_id\":\"{escaped}\",\"id\":\"{escaped}.99\",\"kind\":\"connect\",\"host\":\"exfil.example\",\"port\":443,\"decision\":\"allowed\",\"reason\":\"allowed\",\"bytes_up\":50000000,\"bytes_down\":0,\"duration_ms\":1}}"
    );
    let log = p.egress_log();
    let mut all = lines(&log);
    all.insert(mine(&all)[2], forged);
    put(&log, &all);
    let rows = timeline::rows(&p, L).unwrap();
    assert!(
        rows.iter().any(|(r, _)| r.text.contains("exfil.example")),
        "the readers take the forged line as the launch's"
    );
    assert!(
        !findings(&p, &sealed, true).is_empty(),
        "a record the timeline shows as this launch's was inserted and went unnoticed"
    );
}

/// Attack 2: a record of the launch written after its receipt closed (an egress connection
/// still connecting when the proxy's 2 s stop grace ran out, its task detached, not aborted; or
/// `ags allow --launch` racing the launch's end). Nothing was tampered with, yet the writer
/// starts a new chain at 0 (the heads were forgotten) and `verify` reports tampering; the
/// head file is recreated and never removed again.
#[test]
fn attack_a_record_written_after_the_receipt_closed_leaves_the_launch_intact() {
    use crate::egress::log::{Decision, EgressLog};
    let dir = tempfile::tempdir().unwrap();
    let p = paths(dir.path());
    let sealed = launch(&p);
    let late = EgressLog::new(p.egress_log(), L.into());
    late.append(&late.record(
        "connect",
        "slow.example",
        443,
        Decision::Failed,
        "slow.example port 443: timed out".into(),
    ));
    let found = findings(&p, &sealed, true);
    assert!(
        found.is_empty(),
        "an untampered launch fails verification after a late record: {found:?}"
    );
    assert!(!p.state_dir().join("chains").join(L).exists());
}

/// Attack 3: two recoveries at once (two launches starting after a crash, or `ags gc` and a
/// launch). B reads the draft before A removes it and the heads after A forgot them: B's
/// `close` takes the missing heads for "nothing written" and overwrites A's receipt with
/// counts of 0.
#[test]
fn attack_a_racing_second_recovery_cannot_zero_the_receipt() {
    let dir = tempfile::tempdir().unwrap();
    let p = paths(dir.path());
    let mut d = draft();
    d.owner = (std::process::id(), 1); // a dead owner
    d.write(&p).unwrap();
    open(&p, L);
    for (_, log) in logs(&p) {
        for n in 0..3 {
            let line = format!("{{\"launch_id\":\"{L}\",\"n\":{n}}}\n");
            append_chained(&log, L, line.as_bytes()).unwrap();
        }
    }
    let draft_bytes = std::fs::read(draft_path(&p, L).unwrap()).unwrap();
    assert!(recover(&p).is_empty()); // A
    let receipt = path(&p, L).unwrap();
    assert!(verify(&receipt, L, None, &logs(&p)).findings.is_empty());
    // B had read the draft before A removed it; it reads the heads now.
    std::fs::write(draft_path(&p, L).unwrap(), &draft_bytes).unwrap();
    let _ = close(&p, L, None, "recovery");
    let v = verify(&receipt, L, None, &logs(&p));
    assert!(
        v.findings.is_empty(),
        "the second recovery rewrote the receipt: {:?}",
        v.findings
    );
}

/// Attack 4: the receipt of another launch copied over this one's. `verify` checks the chain
/// the body names (the other launch's), not the launch asked for, so `ags verify L` says intact
/// while every record of L was removed.
#[test]
fn attack_the_receipt_of_another_launch_does_not_vouch_for_this_one() {
    const M: &str = "ags-8-1";
    let dir = tempfile::tempdir().unwrap();
    let p = paths(dir.path());
    let sealed = launch(&p);
    let mut d = draft();
    d.launch_id = M.into();
    d.write(&p).unwrap();
    open(&p, M);
    let other = close(&p, M, Some(0), "launch").unwrap().unwrap();
    for (_, log) in logs(&p) {
        let mut all = lines(&log);
        for i in mine(&all).into_iter().rev() {
            all.remove(i);
        }
        put(&log, &all);
    }
    std::fs::copy(&other.path, &sealed.path).unwrap();
    let found = findings(&p, &sealed, false);
    assert!(
        !found.is_empty(),
        "every record of {L} removed, its receipt replaced by {M}'s: found nothing"
    );
}

/// Attack 5: `ags allow HOST --for 1h` (no `--launch`) records its grant under the launch id
/// `*`, which is not a launch id: `append_chained` refuses it, so a grant that opens a
/// destination to every launch is no longer in the egress log (before issue 29 it was).
#[test]
fn attack_a_grant_for_every_launch_is_still_recorded() {
    use crate::egress::log::{Decision, EgressLog, EgressRecord};
    let dir = tempfile::tempdir().unwrap();
    let p = paths(dir.path());
    let log = EgressLog::new(p.egress_log(), "*".into());
    log.append(&log.record(
        "grant",
        "exfil.example:443",
        0,
        Decision::Granted,
        "for 1h by user (uid 1000)".into(),
    ));
    let records: Vec<EgressRecord> = crate::logfile::read_all(&p.egress_log()).unwrap();
    assert!(
        records.iter().any(|r| r.decision == Decision::Granted),
        "the grant is not in the egress log"
    );
}

/// A valid host name of 253 bytes, distinct for each `i`.
fn long_host(i: usize) -> String {
    let label = "a".repeat(63);
    let mut h = format!("h{i:06}.{label}.{label}.{label}.");
    while h.len() < 253 {
        h.push('b');
    }
    h
}

/// Attack 6: the agent keeps 64 calls open (its hooks send `pre_tool` records and no
/// `post_tool`), then floods the proxy. Every egress record now carries the 64 call ids, and
/// the `dropped` summaries (written outside every budget, up to 1,028 of them) carry them too:
/// one launch writes more than the rotation size, so it can rotate the log twice and push the
/// records of other launches (and its own first ones) out of both files. The budgets were
/// sized to keep one launch below `ROTATE_BYTES` (egress/log.rs, logfile/mod.rs).
#[test]
fn attack_one_launch_stays_below_the_rotation_size_with_calls_open() {
    use crate::agent_hooks::calls::OpenCalls;
    use crate::egress::log::{Decision, EgressLog};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state/egress.jsonl");
    let calls = std::sync::Arc::new(OpenCalls::default());
    for _ in 0..100_000 {
        calls.open("Bash");
    }
    crate::logfile::chain::open(&dir.path().join("state"), "ags-123456-1765000000000000000").unwrap();
    let log = EgressLog::new(path.clone(), "ags-123456-1765000000000000000".into()).with_calls(Some(calls));
    for i in 0..6000 {
        let mut r = log.record("connect", &long_host(i), 443, Decision::Allowed, "ok".into());
        r.bytes_up = 1;
        log.append(&r);
    }
    for i in 0..2500 {
        log.append(&log.record("connect", &long_host(i), 443, Decision::Refused, "no".into()));
        log.append(&log.record("connect", &long_host(i), 443, Decision::Failed, "no".into()));
    }
    log.finish();
    let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    let total = size(&path) + size(&crate::logfile::rotated(&path));
    assert!(
        total < crate::logfile::ROTATE_BYTES,
        "one launch wrote {total} bytes, more than the rotation size {}",
        crate::logfile::ROTATE_BYTES
    );
}

/// Attack 7: the `dropped` summaries are stamped with the calls open when the launch ends.
/// The agent makes its upload outside any call (past the budget, so only the summary records
/// it), then opens a harmless call and never closes it: the summary of the upload names that
/// call, and the timeline shows the upload under it.
#[test]
fn attack_a_dropped_summary_names_no_call() {
    use crate::agent_hooks::calls::OpenCalls;
    use crate::egress::log::{Decision, EgressLog, EgressRecord};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state/egress.jsonl");
    let calls = std::sync::Arc::new(OpenCalls::default());
    let log = EgressLog::with_limits(path.clone(), "ags-d-1".into(), 0, 0).with_calls(Some(calls.clone()));
    let mut r = log.record("connect", "upload.example", 443, Decision::Allowed, "ok".into());
    r.bytes_up = 5_000_000;
    assert!(r.calls.is_empty(), "made outside any call");
    log.append(&r);
    calls.open("Read");
    log.finish();
    let all: Vec<EgressRecord> = crate::logfile::read_all(&path).unwrap();
    let summary = all
        .iter()
        .find(|r| r.host == "upload.example" && r.decision == Decision::Dropped)
        .unwrap();
    assert!(
        summary.calls.is_empty(),
        "the upload made outside every call is attributed to {:?}",
        summary.calls
    );
}
