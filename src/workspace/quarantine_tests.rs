use super::*;

use std::os::unix::fs::PermissionsExt;

fn tmp() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().canonicalize().unwrap();
    (d, root)
}

#[test]
fn a_piece_moves_next_to_itself_and_never_replaces_anything() {
    let (_d, root) = tmp();
    std::fs::create_dir_all(root.join("a/b")).unwrap();
    std::fs::write(root.join("a/b/config"), "x").unwrap();
    let to = move_aside(&root, Path::new("a/b/config")).unwrap();
    assert_eq!(to, root.join("a/b/config.ags-quarantine"));
    std::fs::write(root.join("a/b/config"), "y").unwrap();
    let to = move_aside(&root, Path::new("a/b/config")).unwrap();
    assert_eq!(to, root.join("a/b/config.ags-quarantine-2"));
    assert_eq!(
        std::fs::read_to_string(root.join("a/b/config.ags-quarantine")).unwrap(),
        "x"
    );
}

#[test]
fn names_the_agent_took_are_passed_over_for_a_random_one() {
    let (_d, root) = tmp();
    std::fs::write(root.join("config"), "x").unwrap();
    for n in 1..=200 {
        let taken = match n {
            1 => "config.ags-quarantine".to_string(),
            n => format!("config.ags-quarantine-{n}"),
        };
        std::fs::create_dir(root.join(taken)).unwrap();
    }
    let to = move_aside(&root, Path::new("config")).unwrap();
    let name = to.file_name().unwrap().to_str().unwrap();
    let hex = name.strip_prefix("config.ags-quarantine-").unwrap();
    assert!(
        hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()),
        "{name}"
    );
    assert!(!root.join("config").exists());
}

#[test]
fn a_symbolic_link_on_the_way_stops_the_move() {
    let (_d, root) = tmp();
    std::fs::create_dir_all(root.join("real")).unwrap();
    std::fs::write(root.join("real/config"), "x").unwrap();
    std::os::unix::fs::symlink("real", root.join("link")).unwrap();
    let err = move_aside(&root, Path::new("link/config")).unwrap_err();
    assert!(err.why.contains("link is no longer a directory"), "{err}");
    assert!(root.join("real/config").exists());
}

#[test]
fn a_read_only_directory_of_ours_gets_its_mode_back() {
    let (_d, root) = tmp();
    std::fs::create_dir(root.join("ro")).unwrap();
    std::fs::write(root.join("ro/config"), "x").unwrap();
    std::fs::set_permissions(root.join("ro"), std::fs::Permissions::from_mode(0o555)).unwrap();
    let to = move_aside(&root, Path::new("ro/config")).unwrap();
    assert!(to.exists() && !root.join("ro/config").exists());
    let mode = std::fs::metadata(root.join("ro")).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o555);
    std::fs::set_permissions(root.join("ro"), std::fs::Permissions::from_mode(0o755)).unwrap();
}
