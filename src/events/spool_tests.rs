use std::os::unix::fs::PermissionsExt;

use super::*;

fn paths(root: &Path) -> Paths {
    Paths {
        home: root.join("home"),
        config_home: root.join("config"),
        state_home: root.join("state"),
        cache_home: root.join("cache"),
        runtime_dir: None,
    }
}

fn record(id: &str, pid: u32, start: u64) -> LaunchRecord {
    LaunchRecord {
        version: SPOOL_VERSION,
        launch_id: id.into(),
        owner: Owner {
            pid,
            start_time: start,
            host: "h".into(),
        },
        project: "/p".into(),
        workdir: "/p".into(),
        agent: "shell".into(),
        container_name: "ags-p-1".into(),
        container_id: None,
        started_unix_ms: None,
        hooks: vec![],
    }
}

fn line(id: &str, stage: OciStage) -> EventLine {
    EventLine {
        version: SPOOL_VERSION,
        launch_id: id.into(),
        container_id: "c".into(),
        stage,
        time: "2026-01-01T00:00:00.000Z".into(),
        unix_ms: 1,
        pid: None,
        exit_code: None,
        state: None,
    }
}

#[test]
fn opening_creates_private_directories() {
    let tmp = tempfile::tempdir().unwrap();
    let p = paths(tmp.path());
    Spool::open(&p).unwrap();
    for d in [p.state_dir(), p.spool_dir()] {
        assert_eq!(
            fs::metadata(&d).unwrap().permissions().mode() & 0o777,
            0o700,
            "{}",
            d.display()
        );
    }
}

#[test]
fn pending_records_are_claimed_once() {
    let tmp = tempfile::tempdir().unwrap();
    let spool = Spool::open(&paths(tmp.path())).unwrap();
    spool.write_record(&record("ags-1-1", 1, 10)).unwrap();
    spool.write_record(&record("ags-2-2", 2, 20)).unwrap();
    let alive = |pid: u32, _| pid == 2;
    let pending = spool.pending("h", alive);
    assert_eq!(pending.len(), 1, "the live owner's record is not pending");
    assert_eq!(pending[0].record.launch_id, "ags-1-1");
    assert!(spool.pending("other-host", alive).is_empty());
    let me = Owner {
        pid: 7,
        start_time: 70,
        host: "h".into(),
    };
    let claimed = spool.claim(pending[0].clone(), &me).unwrap().expect("claimed");
    assert!(
        spool.claim(pending[0].clone(), &me).unwrap().is_none(),
        "taken already"
    );
    // A live claimer keeps it; a dead one gives it up to the next recovery.
    assert!(spool.pending("h", |pid, _| pid == 7 || pid == 2).is_empty());
    let again = spool.pending("h", |pid, _| pid == 2);
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].record.launch_id, "ags-1-1");
    spool.complete(claimed).unwrap();
    assert!(
        spool
            .pending("h", |_, _| false)
            .iter()
            .all(|p| p.record.launch_id == "ags-2-2")
    );
}

#[test]
fn events_append_and_are_swept_with_their_launch() {
    let tmp = tempfile::tempdir().unwrap();
    let spool = Spool::open(&paths(tmp.path())).unwrap();
    let path = events_path(&spool.dir, "ags-1-1").unwrap();
    append_event(&path, &line("ags-1-1", OciStage::Poststart)).unwrap();
    append_event(&path, &line("ags-1-1", OciStage::Poststop)).unwrap();
    fs::write(&path, [fs::read(&path).unwrap(), b"{\"torn".to_vec()].concat()).unwrap();
    let stages: Vec<OciStage> = spool.events("ags-1-1").iter().map(|e| e.stage).collect();
    assert_eq!(stages, [OciStage::Poststart, OciStage::Poststop]);
    assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    // With a record the events stay; without one they go once the pid is gone.
    spool.write_record(&record("ags-1-1", 1, 10)).unwrap();
    assert!(spool.sweep_events(|_| false).is_empty());
    spool.forget("ags-1-1").unwrap();
    assert!(!path.exists());
    append_event(&path, &line("ags-1-1", OciStage::Poststop)).unwrap();
    assert!(spool.sweep_events(|_| true).is_empty(), "pid alive, file fresh");
    assert_eq!(spool.sweep_events(|_| false), [path]);
}

#[test]
fn symlinked_event_files_and_bad_ids_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let spool = Spool::open(&paths(tmp.path())).unwrap();
    let target = tmp.path().join("elsewhere");
    fs::write(&target, "").unwrap();
    let path = events_path(&spool.dir, "ags-9-9").unwrap();
    std::os::unix::fs::symlink(&target, &path).unwrap();
    assert!(append_event(&path, &line("ags-9-9", OciStage::Poststart)).is_err());
    assert_eq!(fs::read(&target).unwrap(), b"");
    for bad in ["", "../x", "a.b", "a/b", &"x".repeat(129)] {
        assert!(events_path(&spool.dir, bad).is_err(), "{bad:?}");
    }
}

#[test]
fn recorded_hooks_give_back_finished_declarations() {
    let decl = HookDecl {
        event: HookEvent::Prepare,
        name: "n".into(),
        executable: "/x".into(),
        args: vec!["a".into()],
        timeout_seconds: 5,
        scope: HookScope::Project { root: "/p".into() },
        config_path: "/p/.ags/config.toml".into(),
    };
    let back = RecordedHook::new(&decl, "h").decl();
    assert_eq!(back.event, HookEvent::Finished);
    assert_eq!(
        HookDecl {
            event: HookEvent::Prepare,
            ..back
        },
        decl
    );
}
