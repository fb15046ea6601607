//! The cost of the run receipt (issue 29), as ratios against baselines measured in the same run:
//!
//! - appending one egress-sized record with its chain link (`logfile::append_chained`: the
//!   head read and replaced under the lock) against appending it plain (`append_line`);
//! - `ags verify` of a launch with 10 000 records (spread over the three logs, each interleaved
//!   with as many records of another launch) against only reading and parsing those logs
//!   (`logfile::read_all`), and in milliseconds against the goal of 100 ms.
//!
//! Run: `cargo bench --bench receipt`. Medians of several rounds; the files are in a temporary
//! directory on the disk the state directory would be on (`$TMPDIR`, else /var/tmp).

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use ags::config::Paths;
use ags::logfile::{append_chained, append_line};
use ags::receipt;

const LAUNCH: &str = "ags-1-1700000000000000000";

fn record(n: usize, launch: &str) -> Vec<u8> {
    format!(
        "{{\"version\":1,\"time\":\"2026-12-07T14:00:00.000Z\",\"launch_id\":\"{launch}\",\"id\":\"{launch}.{n}\",\
         \"kind\":\"connect\",\"host\":\"api.example.com\",\"port\":443,\"decision\":\"allowed\",\
         \"reason\":\"listed: api.example.com (global config line 3)\",\"address\":\"192.0.2.1:443\",\
         \"bytes_up\":517,\"bytes_down\":3388,\"duration_ms\":96}}\n"
    )
    .into_bytes()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Per-record time of appending `n` records to a fresh log with `append`.
fn per_record(dir: &Path, n: usize, append: impl Fn(&Path, &[u8])) -> Duration {
    let log = dir.join(format!("state/ags/bench-{}.jsonl", rand_suffix()));
    let lines: Vec<Vec<u8>> = (0..n).map(|i| record(i, LAUNCH)).collect();
    let start = Instant::now();
    for l in &lines {
        append(&log, l);
    }
    let took = start.elapsed() / n as u32;
    let _ = std::fs::remove_file(&log);
    took
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

fn main() {
    let base = std::env::var_os("TMPDIR").unwrap_or_else(|| "/var/tmp".into());
    let dir = tempfile::tempdir_in(base).unwrap();
    let n = 5_000;
    ags::logfile::chain::open(&dir.path().join("state/ags"), LAUNCH).unwrap();
    let (mut plain, mut chained) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        plain.push(per_record(dir.path(), n, |p, l| append_line(p, l).unwrap()));
        chained.push(per_record(dir.path(), n, |p, l| {
            append_chained(p, LAUNCH, l).unwrap()
        }));
    }
    let (plain, chained) = (median(plain), median(chained));
    println!(
        "append one record: plain {:.1} µs, chained {:.1} µs: {:.2}× (+{:.1} µs a record)",
        plain.as_secs_f64() * 1e6,
        chained.as_secs_f64() * 1e6,
        chained.as_secs_f64() / plain.as_secs_f64(),
        (chained.as_secs_f64() - plain.as_secs_f64()) * 1e6
    );

    // A launch of 10 000 records over the three logs, interleaved with another launch's.
    let paths = Paths {
        home: dir.path().join("home"),
        config_home: dir.path().join("config"),
        state_home: dir.path().join("state-v"),
        cache_home: dir.path().join("cache"),
        runtime_dir: None,
    };
    let logs = receipt::logs(&paths);
    receipt::open(&paths, LAUNCH);
    receipt::open(&paths, "ags-2-2");
    for i in 0..10_000 {
        let log = &logs[i % 3].1;
        append_chained(log, LAUNCH, &record(i, LAUNCH)).unwrap();
        append_chained(log, "ags-2-2", &record(i, "ags-2-2")).unwrap();
    }
    let draft = receipt::Draft {
        launch_id: LAUNCH.into(),
        agent: "shell".into(),
        container_name: "c".into(),
        image: "i".into(),
        image_id: None,
        create: serde_json::json!({}),
        network: serde_json::json!({}),
        mounts: serde_json::json!([]),
        owner: (std::process::id(), 1),
    };
    draft.write(&paths).unwrap();
    let sealed = receipt::close(&paths, LAUNCH, Some(0), "launch")
        .unwrap()
        .unwrap();
    let (mut verify, mut read) = (Vec::new(), Vec::new());
    for _ in 0..7 {
        let start = Instant::now();
        let v = receipt::verify::verify(&sealed.path, LAUNCH, Some(&sealed.digest), &logs);
        verify.push(start.elapsed());
        assert!(v.findings.is_empty(), "{:?}", v.findings);
        assert_eq!(v.checked.iter().map(|c| c.1).sum::<u64>(), 10_003); // and the three closing records
        let start = Instant::now();
        for (_, log) in &logs {
            black_box(ags::logfile::read_all::<serde_json::Value>(log).unwrap());
        }
        read.push(start.elapsed());
    }
    let (verify, read) = (median(verify), median(read));
    println!(
        "verify a launch of 10 000 records (20 000 in the logs): {:.1} ms (goal < 100 ms); reading and parsing the logs alone {:.1} ms: {:.2}×",
        verify.as_secs_f64() * 1e3,
        read.as_secs_f64() * 1e3,
        verify.as_secs_f64() / read.as_secs_f64()
    );
}
