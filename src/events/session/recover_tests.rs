use super::*;
use crate::events::spool::SPOOL_VERSION;

fn record(container_id: Option<&str>, started_unix_ms: Option<u64>) -> LaunchRecord {
    LaunchRecord {
        version: SPOOL_VERSION,
        launch_id: "ags-1-1".into(),
        owner: Owner {
            pid: 1,
            start_time: 1,
            host: "h".into(),
        },
        project: "/p".into(),
        workdir: "/p".into(),
        agent: "shell".into(),
        container_name: "ags-p-1".into(),
        container_id: container_id.map(String::from),
        started_unix_ms,
        hooks: vec![],
    }
}

fn event(stage: OciStage, unix_ms: u64) -> EventLine {
    EventLine {
        version: SPOOL_VERSION,
        launch_id: "ags-1-1".into(),
        container_id: "from-oci".into(),
        stage,
        time: String::new(),
        unix_ms,
        pid: None,
        exit_code: None,
        state: None,
    }
}

fn swept(state: &str, exit_code: i32, started_at: i64, exited_at: i64) -> SweptContainer {
    SweptContainer {
        id: "from-podman".into(),
        name: "ags-p-1".into(),
        launch_id: Some("ags-1-1".into()),
        state: state.into(),
        exit_code,
        started_at,
        exited_at,
    }
}

#[test]
fn never_started_launches_owe_nothing() {
    assert_eq!(Evidence::gather(&record(None, None), &[], None), None);
    let created = swept("created", 0, -62135596800, 0);
    assert_eq!(Evidence::gather(&record(None, None), &[], Some(&created)), None);
}

#[test]
fn the_exit_comes_from_the_swept_container_and_the_times_from_the_events() {
    let events = [
        event(OciStage::Poststart, 10_000),
        event(OciStage::Poststop, 13_500),
    ];
    let c = swept("exited", 3, 10, 14);
    let e = Evidence::gather(&record(None, None), &events, Some(&c)).unwrap();
    assert_eq!(e.container_id.as_deref(), Some("from-oci"));
    assert_eq!(
        e.ending,
        Ending {
            exit_code: Some(3),
            duration_ms: Some(3_500),
            recovered: true
        }
    );
}

#[test]
fn a_sweep_by_another_ags_is_read_from_its_record() {
    let mut swept_line = event(OciStage::Swept, 7_000);
    swept_line.exit_code = Some(9);
    swept_line.state = Some("exited".into());
    let e = Evidence::gather(&record(None, Some(2_000)), &[swept_line.clone()], None).unwrap();
    assert_eq!(
        e.ending,
        Ending {
            exit_code: Some(9),
            duration_ms: Some(5_000),
            recovered: true
        }
    );
    swept_line.state = Some("created".into());
    swept_line.exit_code = None;
    assert_eq!(Evidence::gather(&record(None, None), &[swept_line], None), None);
}

#[test]
fn without_oci_events_the_container_and_record_suffice() {
    let c = swept("exited", 137, 100, 105);
    let e = Evidence::gather(&record(Some("rec"), Some(100_250)), &[], Some(&c)).unwrap();
    assert_eq!(e.container_id.as_deref(), Some("rec"));
    assert_eq!(e.ending.exit_code, Some(137));
    assert_eq!(e.ending.duration_ms, Some(4_750));
    // Still running when it was swept: killed by the sweep, the exit status is unknown.
    let running = swept("running", 0, 100, 0);
    let e = Evidence::gather(&record(Some("rec"), None), &[], Some(&running)).unwrap();
    assert_eq!(
        e.ending,
        Ending {
            exit_code: None,
            duration_ms: None,
            recovered: true
        }
    );
    // The container is gone and nothing else is known, but the record says it started.
    let e = Evidence::gather(&record(Some("rec"), None), &[], None).unwrap();
    assert_eq!(e.ending.exit_code, None);
}
