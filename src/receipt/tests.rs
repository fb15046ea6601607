//! The receipt and `verify` against each way of tampering with the records or the receipt
//! (issue 29): each attack is performed on the files, and each must be found.

use std::path::{Path, PathBuf};

use super::verify::verify;
use super::*;
use crate::logfile::append_chained;

pub(super) const L: &str = "ags-7-1700000000000000000";

pub(super) fn paths(dir: &Path) -> Paths {
    Paths {
        home: dir.join("home"),
        config_home: dir.join("config"),
        state_home: dir.join("state"),
        cache_home: dir.join("cache"),
        runtime_dir: None,
    }
}

pub(super) fn draft() -> Draft {
    Draft {
        launch_id: L.into(),
        agent: "shell".into(),
        container_name: "ags-shell-x".into(),
        image: "localhost/x:latest".into(),
        image_id: Some("abc".into()),
        create: serde_json::json!({"image": "localhost/x:latest", "env": {"A": REDACTED}}),
        network: serde_json::json!({"mode": "allowlist"}),
        mounts: serde_json::json!([]),
        owner: (std::process::id(), 1),
    }
}

/// A closed launch: records in all three logs, interleaved with another launch's, and its
/// receipt. Returns the receipt.
pub(super) fn launch(p: &Paths) -> Sealed {
    draft().write(p).unwrap();
    open(p, L);
    open(p, "ags-8-1");
    for (i, (_, log)) in logs(p).iter().enumerate() {
        for n in 0..5 {
            let mine = format!("{{\"launch_id\":\"{L}\",\"n\":{n},\"log\":{i}}}\n");
            append_chained(log, L, mine.as_bytes()).unwrap();
            let other = format!("{{\"launch_id\":\"ags-8-1\",\"n\":{n}}}\n");
            append_chained(log, "ags-8-1", other.as_bytes()).unwrap();
        }
    }
    close(p, L, Some(0), "launch").unwrap().unwrap()
}

pub(super) fn findings(p: &Paths, sealed: &Sealed, kept: bool) -> Vec<String> {
    let digest = kept.then_some(sealed.digest.as_str());
    let v = verify(&sealed.path, L, digest, &logs(p));
    v.findings.iter().map(|f| f.to_string()).collect()
}

pub(super) fn lines(path: &PathBuf) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

pub(super) fn put(path: &PathBuf, lines: &[String]) {
    std::fs::write(path, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
}

/// The indices of the launch's lines in `log`.
pub(super) fn mine(all: &[String]) -> Vec<usize> {
    (0..all.len())
        .filter(|i| all[*i].contains(&format!("\"{L}\"")))
        .collect()
}

#[test]
fn an_untouched_launch_is_intact_and_its_heads_are_gone() {
    let dir = tempfile::tempdir().unwrap();
    let p = paths(dir.path());
    let sealed = launch(&p);
    assert_eq!(findings(&p, &sealed, true), Vec::<String>::new());
    let v = verify(&sealed.path, L, None, &logs(&p));
    // Five records and the closing one in each log.
    assert_eq!(v.checked.iter().map(|c| c.1).sum::<u64>(), 18);
    assert!(!p.state_dir().join("chains").join(L).exists());
    assert!(!dir_has_draft(&p));
}

fn dir_has_draft(p: &Paths) -> bool {
    std::fs::read_dir(dir(p))
        .unwrap()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().contains("draft"))
}

/// Run `attack` on each log in turn; verify must find something each time.
fn each_log(name: &str, attack: impl Fn(&mut Vec<String>)) {
    for which in 0..3 {
        let dir = tempfile::tempdir().unwrap();
        let p = paths(dir.path());
        let sealed = launch(&p);
        let log = logs(&p)[which].1.clone();
        let mut all = lines(&log);
        attack(&mut all);
        put(&log, &all);
        let found = findings(&p, &sealed, false);
        assert!(!found.is_empty(), "{name} in {} went unnoticed", log.display());
        assert!(
            found.iter().all(|f| f.contains(&log.display().to_string())),
            "{name}: {found:?}"
        );
    }
}

#[test]
fn an_edited_byte_of_a_record_is_found() {
    each_log("an edited record", |all| {
        let i = mine(all)[2];
        all[i] = all[i].replacen("\"n\":2", "\"n\":9", 1);
    });
    each_log("an edited last record", |all| {
        let m = mine(all);
        let i = m[m.len() - 2];
        all[i] = all[i].replacen("\"n\":4", "\"n\":8", 1);
    });
    // The closing record, whose only check is the receipt's closing digest.
    each_log("an edited closing record", |all| {
        let i = *mine(all).last().unwrap();
        all[i] = all[i].replacen("closed", "cloSed", 1);
    });
}

#[test]
fn a_removed_record_is_found_first_middle_or_last() {
    for k in [0, 2, 4, 5] {
        each_log("a removed record", |all| {
            all.remove(mine(all)[k]);
        });
    }
}

#[test]
fn a_truncated_log_is_found() {
    each_log("a truncated log", |all| {
        let i = mine(all)[3];
        all.truncate(i);
    });
    each_log("a torn last line", |all| {
        let i = *mine(all).last().unwrap();
        let half = all[i].len() / 2;
        all[i].truncate(half);
    });
}

#[test]
fn reordered_records_are_found() {
    each_log("swapped records", |all| {
        let m = mine(all);
        all.swap(m[1], m[3]);
    });
}

#[test]
fn an_inserted_record_is_found_linked_or_not() {
    each_log("an unlinked record", |all| {
        let i = mine(all)[2];
        all.insert(i, format!("{{\"launch_id\":\"{L}\",\"n\":7}}"));
    });
    // A copy of a real record (its link included) put in again.
    each_log("a duplicated record", |all| {
        let m = mine(all);
        let copy = all[m[1]].clone();
        all.insert(m[3], copy);
    });
}

#[test]
fn a_consistent_forgery_of_the_whole_chain_is_found_by_the_receipt() {
    each_log("a forged chain", |all| {
        // Rewrite every record of the launch with a new content and a correct chain.
        let mut prev = chain::GENESIS.to_string();
        for (seq, i) in mine(all).into_iter().enumerate() {
            let body = format!("{{\"launch_id\":\"{L}\",\"n\":{seq},\"forged\":true}}");
            let line = format!(
                "{},\"chain\":{{\"seq\":{seq},\"prev\":\"{prev}\"}}}}",
                &body[..body.len() - 1]
            );
            prev = chain::digest(line.as_bytes());
            all[i] = line;
        }
    });
}

#[test]
fn a_changed_receipt_is_found_and_a_rewritten_one_by_the_kept_digest() {
    let dir = tempfile::tempdir().unwrap();
    let p = paths(dir.path());
    let sealed = launch(&p);
    let original = std::fs::read_to_string(&sealed.path).unwrap();
    // A byte of the body changed, the seal left.
    std::fs::write(&sealed.path, original.replacen("\"shell\"", "\"sheLL\"", 1)).unwrap();
    assert!(findings(&p, &sealed, false).iter().any(|f| f.contains("seal")));
    // Cut after the body.
    std::fs::write(&sealed.path, original.lines().next().unwrap()).unwrap();
    assert!(findings(&p, &sealed, false).iter().any(|f| f.contains("seal")));
    // Rewritten consistently (the image changed, the seal recomputed): only the kept digest tells.
    let body = original
        .lines()
        .next()
        .unwrap()
        .replacen("localhost/x:latest", "localhost/y:latest", 1);
    let forged = format!("{body}\n{{\"seal\":\"{}\"}}\n", chain::digest(body.as_bytes()));
    std::fs::write(&sealed.path, forged).unwrap();
    assert!(findings(&p, &sealed, false).is_empty());
    assert!(
        findings(&p, &sealed, true)
            .iter()
            .any(|f| f.contains("not sha256:"))
    );
    // Removed.
    std::fs::remove_file(&sealed.path).unwrap();
    assert!(!findings(&p, &sealed, true).is_empty());
}

#[test]
fn a_crashed_launch_is_closed_by_recovery_and_a_live_one_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let p = paths(dir.path());
    let mut d = draft();
    d.owner = (
        std::process::id(),
        crate::procfs::process_start_time(std::process::id()).unwrap(),
    );
    d.write(&p).unwrap();
    open(&p, L);
    append_chained(
        &p.egress_log(),
        L,
        format!("{{\"launch_id\":\"{L}\"}}\n").as_bytes(),
    )
    .unwrap();
    assert!(recover(&p).is_empty());
    assert!(!path(&p, L).unwrap().exists(), "the owner is alive");
    d.owner = (std::process::id(), 1); // the same pid, another start: a dead owner
    d.write(&p).unwrap();
    assert!(recover(&p).is_empty());
    let receipt = path(&p, L).unwrap();
    let v = verify(&receipt, L, None, &logs(&p));
    assert!(v.findings.is_empty(), "{:?}", v.findings);
    assert_eq!(v.checked[2], ("egress".to_string(), 2));
    let text = std::fs::read_to_string(&receipt).unwrap();
    let body: Body = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(body.closed_by, "recovery");
}

#[test]
fn ids_that_are_not_launch_ids_name_no_file() {
    let p = paths(Path::new("/nonexistent"));
    for bad in ["", "../x", ".hidden", "a/b", "a b"] {
        assert!(path(&p, bad).is_none(), "{bad:?}");
    }
}

#[test]
fn heads_without_a_receipt_to_come_are_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let p = paths(dir.path());
    let chains = p.state_dir().join("chains");
    let mine = format!("ags-{}-1", std::process::id());
    for launch in ["ags-999999999-1", mine.as_str()] {
        let line = format!("{{\"launch_id\":\"{launch}\"}}\n");
        open(&p, launch);
        append_chained(&p.hook_log(), launch, line.as_bytes()).unwrap();
    }
    // A forgotten chain's directory a crash left half removed goes too.
    let gone = chains.join(format!("{}ags-999999998-1", crate::logfile::chain::GONE));
    std::fs::create_dir_all(&gone).unwrap();
    std::fs::write(gone.join("hooks.jsonl"), "{}").unwrap();
    // One that is a symlink goes as a link: what it points at stays.
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("keep"), "x").unwrap();
    let linked = chains.join(format!("{}ags-999999997-1", crate::logfile::chain::GONE));
    std::os::unix::fs::symlink(&elsewhere, &linked).unwrap();
    // A killed `ags` without a draft (a plan, a refused launch): its pid is gone.
    assert!(recover(&p).is_empty());
    assert!(!chains.join("ags-999999999-1").exists() && !gone.exists());
    assert!(linked.symlink_metadata().is_err() && elsewhere.join("keep").exists());
    assert!(chains.join(&mine).exists(), "its process is alive");
    // The process itself drops its own at its end (`ags plan`, a refused launch)…
    abandon(&p, &mine);
    assert!(!chains.join(&mine).exists());
    // …but not a launch's whose draft waits for its receipt.
    draft().write(&p).unwrap();
    open(&p, L);
    append_chained(
        &p.hook_log(),
        L,
        format!("{{\"launch_id\":\"{L}\"}}\n").as_bytes(),
    )
    .unwrap();
    abandon(&p, L);
    assert!(chains.join(L).exists());
}
