//! Tests of `check_mount_source` against temporary directory trees with symlink aliases.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use super::*;

/// A fake home: `home/.config`, `home/.local/state`, `home/.cache`, nothing of AGS created yet.
struct Home {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Home {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for sub in ["home/.config", "home/.local/state", "home/.cache", "data"] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        Self { _dir: dir, root }
    }

    fn paths(&self, config_home: &Path) -> Paths {
        let home = self.root.join("home");
        Paths {
            config_home: config_home.to_path_buf(),
            state_home: home.join(".local/state"),
            cache_home: home.join(".cache"),
            runtime_dir: None,
            home,
        }
    }

    fn protected(&self) -> ProtectedHostPaths {
        ProtectedHostPaths::from_paths(&self.paths(&self.root.join("home/.config")))
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }
}

fn source(p: &Path) -> HostSource {
    HostSource::try_from(p.to_str().unwrap()).unwrap()
}

fn check(p: &Path, protected: &ProtectedHostPaths) -> Result<PathBuf, String> {
    check_mount_source(&source(p), protected).map_err(|e| e.to_string())
}

#[test]
fn existing_files_and_directories_pass_with_canonical_path() {
    let h = Home::new();
    std::fs::write(h.path("data/file.txt"), "x").unwrap();
    symlink(h.path("data/file.txt"), h.path("link.txt")).unwrap();
    assert_eq!(check(&h.path("data"), &h.protected()), Ok(h.path("data")));
    assert_eq!(
        check(&h.path("link.txt"), &h.protected()),
        Ok(h.path("data/file.txt"))
    );
}

#[test]
fn missing_source_is_refused() {
    let h = Home::new();
    let missing = h.path("data/nope");
    assert_eq!(
        check(&missing, &h.protected()),
        Err(format!(
            "mount source {} does not exist; the hook must create it before answering",
            missing.display()
        ))
    );
    symlink(h.path("data/nope"), h.path("dangling")).unwrap();
    assert!(
        check(&h.path("dangling"), &h.protected())
            .unwrap_err()
            .contains("does not exist")
    );
}

#[test]
fn special_files_are_refused_by_type() {
    let h = Home::new();
    let sock = h.path("data/s.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    assert_eq!(
        check(&sock, &h.protected()),
        Err(format!(
            "mount source {} is a socket; only regular files and directories can be mounted",
            sock.display()
        ))
    );
    symlink(&sock, h.path("sock-link")).unwrap();
    assert!(
        check(&h.path("sock-link"), &h.protected())
            .unwrap_err()
            .contains("is a socket")
    );
    if Path::new("/dev/null").exists() {
        let err = check(Path::new("/dev/null"), &h.protected()).unwrap_err();
        assert!(err.contains("is a character device"), "{err}");
    }
}

#[test]
fn approval_store_inside_alias_and_ancestor_are_refused() {
    let h = Home::new();
    let trust = h.path("home/.local/state/ags-hook-trust");
    std::fs::create_dir_all(trust.join("ags-hook-exec-1")).unwrap();
    symlink(&trust, h.path("data/alias")).unwrap();
    assert_eq!(
        check(&trust, &h.protected()),
        Err(format!(
            "mount source {t} (canonical {t}) overlaps the hook approval store at {t}; hooks may not \
             expose AGS trust, state or cache storage, mount a different directory",
            t = trust.display()
        ))
    );
    for refused in [
        trust.join("ags-hook-exec-1"),
        h.path("data/alias"),
        h.path("home/.local"),
        h.root.clone(),
    ] {
        let err = check(&refused, &h.protected()).unwrap_err();
        assert!(
            err.contains("overlaps the hook approval store"),
            "{refused:?}: {err}"
        );
    }
}

#[test]
fn state_and_cache_directories_are_protected_before_they_exist() {
    let h = Home::new();
    let err = check(&h.path("home/.cache"), &h.protected()).unwrap_err();
    assert!(err.contains("overlaps the AGS cache directory at"), "{err}");
    std::fs::create_dir_all(h.path("home/.cache/ags/images")).unwrap();
    symlink(h.path("home/.cache/ags/images"), h.path("data/img")).unwrap();
    let err = check(&h.path("data/img"), &h.protected()).unwrap_err();
    assert!(err.contains("overlaps the AGS cache directory"), "{err}");
    std::fs::create_dir_all(h.path("home/.local/state/ags")).unwrap();
    let err = check(&h.path("home/.local/state/ags"), &h.protected()).unwrap_err();
    assert!(err.contains("overlaps the AGS state directory"), "{err}");
}

#[test]
fn overlay_trust_file_aliases_are_caught_before_it_exists() {
    let h = Home::new();
    std::fs::create_dir_all(h.path("real-config/ags")).unwrap();
    symlink(h.path("real-config"), h.path("home/cfg-link")).unwrap();
    let protected = ProtectedHostPaths::from_paths(&h.paths(&h.path("home/cfg-link")));
    let trust_file = h.path("real-config/ags/trusted-repo-overlays.txt");
    assert!(!trust_file.exists());
    for refused in ["real-config", "real-config/ags", "home/cfg-link/ags"] {
        let err = check(&h.path(refused), &protected).unwrap_err();
        assert!(
            err.contains(&format!(
                "overlaps the repository-overlay trust file at {}",
                trust_file.display()
            )),
            "{refused}: {err}"
        );
    }
    std::fs::create_dir_all(h.path("real-config/other")).unwrap();
    assert!(check(&h.path("real-config/other"), &protected).is_ok());
}

#[test]
fn resolution_through_nearest_existing_ancestor() {
    let h = Home::new();
    symlink(h.path("data"), h.path("d")).unwrap();
    assert_eq!(
        resolve_through_existing_ancestor(&h.path("d/x/y")),
        h.path("data/x/y")
    );
    assert_eq!(resolve_through_existing_ancestor(&h.path("d")), h.path("data"));
}
