use super::*;

fn paths(home: &Path) -> Paths {
    Paths {
        home: home.into(),
        config_home: home.join(".config"),
        state_home: home.join(".local/state"),
        cache_home: home.join(".cache"),
        runtime_dir: None,
    }
}

fn root(p: &str, running: bool) -> WritableRoot {
    WritableRoot {
        path: p.into(),
        owner: "x".into(),
        running,
    }
}

#[test]
fn own_roots_are_remembered_once_and_forgotten_on_request() {
    let t = tempfile::tempdir().unwrap();
    let p = paths(t.path());
    assert!(remembered(&p).is_empty());
    record(
        &p,
        &[root("/w", false), root("/other", true), root("/a b", false)],
    )
    .unwrap();
    record(&p, &[root("/w", false)]).unwrap();
    assert_eq!(remembered(&p), [PathBuf::from("/a b"), PathBuf::from("/w")]);
    let text = std::fs::read_to_string(file(&p)).unwrap();
    assert_eq!(text, "/w\n/a b\n");
    assert_eq!(roots(&p)[0].owner, OWNER);
    assert!(forget(&p, Path::new("/w")).unwrap());
    assert!(!forget(&p, Path::new("/w")).unwrap());
    assert_eq!(remembered(&p), [PathBuf::from("/a b")]);
}

#[test]
fn a_name_with_a_newline_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let p = paths(t.path());
    let err = record(&p, &[root("/x\n/etc", false)]).unwrap_err();
    assert!(err.to_string().contains("newline"), "{err}");
    assert!(remembered(&p).is_empty());
}
