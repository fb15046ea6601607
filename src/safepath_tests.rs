use std::os::unix::fs::symlink;

use super::*;

fn tmp() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    (dir, root)
}

#[test]
fn a_plain_directory_resolves_to_itself_without_links() {
    let (_d, root) = tmp();
    std::fs::create_dir(root.join("a")).unwrap();
    let r = resolve(&root.join("a"), Missing::Refuse).unwrap();
    assert_eq!(r.path, root.join("a"));
    assert!(r.links.is_empty());
    assert_eq!(r.found.unwrap().kind, Kind::Directory);
}

#[test]
fn every_symlink_is_reported_and_followed() {
    let (_d, root) = tmp();
    std::fs::create_dir_all(root.join("real/inner")).unwrap();
    std::fs::write(root.join("real/inner/f"), "x").unwrap();
    symlink(root.join("real"), root.join("abs")).unwrap();
    symlink("abs/inner", root.join("rel")).unwrap();
    let r = resolve(&root.join("rel/f"), Missing::Refuse).unwrap();
    assert_eq!(r.path, root.join("real/inner/f"));
    let at: Vec<_> = r.links.iter().map(|l| l.at.clone()).collect();
    assert_eq!(at, [root.join("rel"), root.join("abs")]);
    assert_eq!(r.found.unwrap().kind, Kind::File);
    assert!(!r.links[0].is_system_layout() || nix::unistd::geteuid().is_root());
}

#[test]
fn dot_dot_is_physical_after_a_symlink() {
    let (_d, root) = tmp();
    std::fs::create_dir_all(root.join("x/y")).unwrap();
    symlink(root.join("x/y"), root.join("l")).unwrap();
    let r = resolve(&root.join("l/.."), Missing::Refuse).unwrap();
    assert_eq!(r.path, root.join("x"));
}

#[test]
fn missing_paths_are_refused_or_appended() {
    let (_d, root) = tmp();
    assert!(matches!(
        resolve(&root.join("no/such"), Missing::Refuse),
        Err(ResolveError::NotFound(p)) if p == root.join("no")
    ));
    let r = resolve(&root.join("no/such"), Missing::Append).unwrap();
    assert_eq!((r.path, r.found), (root.join("no/such"), None));
}

#[test]
fn a_dangling_symlink_resolves_to_its_future_target() {
    let (_d, root) = tmp();
    std::fs::create_dir(root.join("elsewhere")).unwrap();
    symlink(root.join("elsewhere/later/trust.txt"), root.join("trust.txt")).unwrap();
    let r = resolve(&root.join("trust.txt"), Missing::Append).unwrap();
    assert_eq!(r.path, root.join("elsewhere/later/trust.txt"));
    assert_eq!(r.links.len(), 1);
}

#[test]
fn symlink_loops_and_relative_paths_fail() {
    let (_d, root) = tmp();
    symlink(root.join("b"), root.join("a")).unwrap();
    symlink(root.join("a"), root.join("b")).unwrap();
    assert!(matches!(
        resolve(&root.join("a"), Missing::Refuse),
        Err(ResolveError::TooManyLinks(_))
    ));
    assert!(matches!(
        resolve(Path::new("rel"), Missing::Refuse),
        Err(ResolveError::Relative(_))
    ));
}

#[test]
fn a_file_in_the_middle_is_not_a_directory() {
    let (_d, root) = tmp();
    std::fs::write(root.join("f"), "").unwrap();
    assert!(matches!(
        resolve(&root.join("f/x"), Missing::Refuse),
        Err(ResolveError::NotADirectory(_))
    ));
}
