use super::*;
use crate::workspace::protected::protection;

fn setup() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_path_buf();
    std::fs::create_dir_all(root.join(".github/workflows")).unwrap();
    std::fs::write(root.join(".github/workflows/ci.yml"), "on: push\n").unwrap();
    (tmp, root)
}

#[test]
fn nothing_changed_nothing_said() {
    let (_tmp, root) = setup();
    let p = protection(std::slice::from_ref(&root), &[]).unwrap();
    let before = inventory(&p);
    assert!(settle(&before).message().is_empty());
}

#[test]
fn a_file_created_where_none_was_is_moved_aside_and_named() {
    let (_tmp, root) = setup();
    let p = protection(std::slice::from_ref(&root), &[]).unwrap();
    let before = inventory(&p);
    std::fs::create_dir_all(root.join(".claude")).unwrap();
    std::fs::write(root.join(".claude/settings.json"), "{\"hooks\":{}}").unwrap();
    let settled = settle(&before);
    let msg = settled.message();
    assert_eq!(settled.changes.len(), 1, "{msg}");
    assert!(!root.join(".claude/settings.json").exists());
    assert!(root.join(".claude/settings.json.ags-quarantine").is_file());
    assert!(
        msg.contains("settings.json, which Claude Code runs on this host"),
        "{msg}"
    );
    assert!(msg.contains("mv "), "{msg}");
}

#[test]
fn a_directory_replaced_by_a_symbolic_link_is_moved_aside_not_followed() {
    let (tmp, root) = setup();
    let p = protection(std::slice::from_ref(&root), &[]).unwrap();
    let before = inventory(&p);
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(outside.join("workflows")).unwrap();
    std::fs::write(outside.join("workflows/evil.yml"), "x").unwrap();
    std::fs::rename(root.join(".github"), root.join("gh")).unwrap();
    std::os::unix::fs::symlink(&outside, root.join(".github")).unwrap();
    let msg = settle(&before).message();
    assert!(
        std::fs::symlink_metadata(root.join(".github.ags-quarantine"))
            .unwrap()
            .is_symlink()
    );
    assert!(!root.join(".github").exists());
    assert!(
        outside.join("workflows/evil.yml").exists(),
        "the target is left alone"
    );
    assert!(msg.contains(".github (not a directory)"), "{msg}");
    // Once, although two listed paths lie below it.
    assert_eq!(msg.matches("moved aside").count(), 1, "{msg}");
    assert!(!msg.contains("NOT MOVED"), "{msg}");
}

#[test]
fn an_allowed_change_is_named_and_left_in_place() {
    let (_tmp, root) = setup();
    let p = protection(std::slice::from_ref(&root), &[".github/workflows"]).unwrap();
    let before = inventory(&p);
    std::fs::write(root.join(".github/workflows/ci.yml"), "on: pull_request\n").unwrap();
    let msg = settle(&before).message();
    assert!(msg.contains("allowed by [protect] allow"), "{msg}");
    assert!(msg.contains(".github/workflows/ci.yml"), "{msg}");
    assert!(root.join(".github/workflows/ci.yml").is_file());
}

#[test]
fn a_mode_change_counts() {
    let (_tmp, root) = setup();
    let p = protection(std::slice::from_ref(&root), &[".github/workflows"]).unwrap();
    let before = inventory(&p);
    use std::os::unix::fs::PermissionsExt;
    let f = root.join(".github/workflows/ci.yml");
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(settle(&before).changes.len(), 1);
}
