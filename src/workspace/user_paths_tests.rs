use std::os::unix::fs::symlink;

use super::*;

fn root(path: &Path) -> Vec<WritableRoot> {
    vec![WritableRoot {
        path: path.canonicalize().unwrap(),
        owner: "this launch's workdir".into(),
        running: false,
    }]
}

/// A workdir `w` with `config/dev.env`, and a sibling project `s` with its own `config/dev.env`.
fn layout() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().canonicalize().unwrap();
    let (w, s) = (base.join("w"), base.join("s"));
    for d in [&w, &s] {
        std::fs::create_dir_all(d.join("config")).unwrap();
    }
    std::fs::write(w.join("config/dev.env"), "A=mine\n").unwrap();
    std::fs::write(s.join("config/dev.env"), "A=secret\n").unwrap();
    (t, w, s)
}

#[test]
fn a_regular_file_in_the_workdir_is_read() {
    let (_t, w, _) = layout();
    let c = check_file("--env-file x", &w.join("config/dev.env"), &root(&w)).unwrap();
    assert_eq!(c.read_small_text(100).unwrap(), "A=mine\n");
    c.recheck(&root(&w)).unwrap();
}

#[test]
fn a_planted_directory_link_in_the_workdir_is_refused() {
    let (_t, w, s) = layout();
    std::fs::remove_dir_all(w.join("config")).unwrap();
    symlink(s.join("config"), w.join("config")).unwrap();
    let err = check_file("--env-file config/dev.env", &w.join("config/dev.env"), &root(&w)).unwrap_err();
    assert!(matches!(err, UserPathError::PlantedLink { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains(&format!(
            "{} -> {}",
            w.join("config").display(),
            s.join("config").display()
        )),
        "{msg}"
    );
    // Without writable roots (nothing known to be the agent's) the user's own link is followed.
    assert!(check_file("--env-file x", &w.join("config/dev.env"), &[]).is_ok());
}

#[test]
fn a_link_outside_that_leads_into_a_writable_root_is_refused() {
    let (t, w, _) = layout();
    let alias = t.path().join("alias");
    symlink(&w, &alias).unwrap();
    let err = check_file("--env-file x", &alias.join("config/dev.env"), &root(&w)).unwrap_err();
    assert!(matches!(err, UserPathError::LinkIntoWritable { .. }), "{err}");
    assert!(
        err.to_string()
            .contains(&w.join("config/dev.env").display().to_string())
    );
}

#[test]
fn a_directory_swapped_for_a_link_after_the_check_is_not_followed() {
    let (_t, w, s) = layout();
    let c = check_file("--env-file x", &w.join("config/dev.env"), &root(&w)).unwrap();
    std::fs::rename(w.join("config"), w.join("old")).unwrap();
    symlink(s.join("config"), w.join("config")).unwrap();
    let err = c.read_small_text(100).unwrap_err();
    assert!(matches!(err, UserPathError::Changed { .. }), "{err}");
    assert!(c.recheck(&root(&w)).is_err());
}

#[test]
fn a_file_replaced_after_the_check_is_refused() {
    let (_t, w, _) = layout();
    let c = check_file("--env-file x", &w.join("config/dev.env"), &root(&w)).unwrap();
    // Renamed away (kept, so its inode is not reused) and replaced by another file.
    std::fs::rename(w.join("config/dev.env"), w.join("config/old.env")).unwrap();
    std::fs::write(w.join("config/dev.env"), "A=other\n").unwrap();
    assert!(matches!(
        c.read_small_text(100),
        Err(UserPathError::Changed { .. })
    ));
}

#[test]
fn special_files_and_directories_are_refused() {
    let (_t, w, _) = layout();
    assert!(matches!(
        check_file("--env-file x", &w.join("config"), &root(&w)),
        Err(UserPathError::WrongKind { .. })
    ));
    nix::unistd::mkfifo(&w.join("fifo"), nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    assert!(matches!(
        check_file("--env-file x", &w.join("fifo"), &root(&w)),
        Err(UserPathError::WrongKind { .. })
    ));
}

#[test]
fn a_report_is_written_atomically_and_never_through_a_planted_link() {
    let (_t, w, s) = layout();
    std::fs::create_dir(w.join("out")).unwrap();
    let c = check_new_file("--report out/x.json", &w.join("out/x.json"), &root(&w)).unwrap();
    c.write_atomic(b"{}\n", 0o644).unwrap();
    assert_eq!(std::fs::read(w.join("out/x.json")).unwrap(), b"{}\n");
    assert_eq!(
        std::fs::read_dir(w.join("out")).unwrap().count(),
        1,
        "no temporary file left"
    );
    // Swapped after the check: nothing is written in the link's target.
    std::fs::rename(w.join("out"), w.join("old")).unwrap();
    symlink(s.join("config"), w.join("out")).unwrap();
    assert!(matches!(
        c.write_atomic(b"x", 0o644),
        Err(UserPathError::Changed { .. })
    ));
    // Planted before the check: refused.
    let err = check_new_file("--report out/x.json", &w.join("out/x.json"), &root(&w)).unwrap_err();
    assert!(matches!(err, UserPathError::PlantedLink { .. }), "{err}");
    assert!(!s.join("config/x.json").exists());
    assert!(matches!(
        check_new_file("--report w", &w.join("old"), &root(&w)),
        Err(UserPathError::WrongKind { .. })
    ));
}
