use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::time::Duration;

use super::*;

struct World {
    _tmp: tempfile::TempDir,
    spool: PathBuf,
    stage: PathBuf,
}

fn world() -> World {
    let tmp = tempfile::tempdir().unwrap();
    let spool = tmp.path().join("spool");
    fs::DirBuilder::new().mode(0o700).create(&spool).unwrap();
    let stage = tmp.path().join("run/stage-1-2-abcd");
    fs::create_dir_all(stage.join("files")).unwrap();
    fs::write(stage.join("files/0"), "x").unwrap();
    World {
        _tmp: tmp,
        spool,
        stage,
    }
}

fn state(w: &World, extra: &str) -> Vec<u8> {
    format!(
        r#"{{"ociVersion":"1.0.2-dev","id":"abc","status":"created","pid":42,"bundle":"/b",
           "annotations":{{"io.ags.launch":"ags-1-2","io.ags.spool":"{}","io.ags.stage":"{}"{extra}}}}}"#,
        w.spool.display(),
        w.stage.display()
    )
    .into_bytes()
}

fn at(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms)
}

#[test]
fn records_both_stages_and_removes_staging_leftovers() {
    let w = world();
    let first = run("poststart", &state(&w, ""), at(1_000)).unwrap();
    assert_eq!(first.events_file, w.spool.join("ags-1-2.events.jsonl"));
    assert_eq!(first.stage_removed.as_deref(), Some(w.stage.as_path()));
    assert!(!w.stage.exists());
    let second = run("poststop", &state(&w, ""), at(2_500)).unwrap();
    assert_eq!(second.stage_removed, None, "already gone");
    let text = fs::read_to_string(&first.events_file).unwrap();
    assert_eq!(
        text,
        "{\"version\":1,\"launch_id\":\"ags-1-2\",\"container_id\":\"abc\",\"stage\":\"poststart\",\
         \"time\":\"1970-01-01T00:00:01.000Z\",\"unix_ms\":1000,\"pid\":42}\n\
         {\"version\":1,\"launch_id\":\"ags-1-2\",\"container_id\":\"abc\",\"stage\":\"poststop\",\
         \"time\":\"1970-01-01T00:00:02.500Z\",\"unix_ms\":2500}\n"
    );
    assert_eq!(
        fs::metadata(&first.events_file).unwrap().permissions().mode() & 0o777,
        0o600
    );
}

#[test]
fn refusals_name_the_problem() {
    let w = world();
    let err = |stage: &str, doc: Vec<u8>| run(stage, &doc, at(0)).unwrap_err().to_string();
    assert!(err("prestart", state(&w, "")).starts_with("unknown stage \"prestart\""));
    assert!(err("poststop", b"{".to_vec()).starts_with("the OCI state on stdin is not usable"));
    let foreign = br#"{"id":"x","annotations":{"other":"1"}}"#.to_vec();
    assert!(run("poststop", &foreign, at(0)).unwrap_err().is_not_ours());
    let doc = String::from_utf8(state(&w, "")).unwrap();
    assert_eq!(
        err("poststop", doc.replace("ags-1-2", "../x").into_bytes()),
        "annotation io.ags.launch: must be 1 to 128 of A-Z a-z 0-9 _ -"
    );
    let sneaky = doc.replace(
        &w.spool.display().to_string(),
        &format!("{}/../x", w.spool.display()),
    );
    assert_eq!(
        err("poststop", sneaky.into_bytes()),
        "annotation io.ags.spool: must be an absolute, normalized path"
    );
    let not_stage = doc.replace("stage-1-2-abcd", "home");
    assert_eq!(
        err("poststop", not_stage.into_bytes()),
        "annotation io.ags.stage: must name a `stage-…` directory"
    );
    fs::set_permissions(&w.spool, fs::Permissions::from_mode(0o777)).unwrap();
    assert!(err("poststop", state(&w, "")).contains("mode 0777 lets others write"));
    assert!(w.stage.exists(), "nothing is removed when the spool is refused");
}

#[test]
fn a_symlinked_spool_is_refused() {
    let w = world();
    let link = w.spool.with_file_name("link");
    std::os::unix::fs::symlink(&w.spool, &link).unwrap();
    let doc = String::from_utf8(state(&w, "")).unwrap().replace(
        &format!("\"{}\"", w.spool.display()),
        &format!("\"{}\"", link.display()),
    );
    let e = run("poststart", doc.as_bytes(), at(0)).unwrap_err().to_string();
    assert!(e.contains("symbolic links are refused"), "{e}");
}
