//! Tests of the hook mount source checks against temporary trees with symlinks planted in them.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use super::*;
use crate::config::Paths;

/// A fake home: `home/.config`, `home/.local/state`, `home/.cache`, nothing of AGS created yet,
/// plus `data/` (outside every writable root) and `work/` (the launch's workdir).
struct Home {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Home {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for sub in ["home/.config", "home/.local/state", "home/.cache", "data", "work"] {
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

    fn rules_for(&self, paths: &Paths) -> Rules {
        let mut rules = Rules::new(paths.protected());
        rules.writable(WritableRoot {
            path: self.path("work"),
            owner: "this launch's workdir".into(),
            running: false,
        });
        rules
    }

    fn rules(&self) -> Rules {
        self.rules_for(&self.paths(&self.path("home/.config")))
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }
}

fn source(p: &Path) -> HostSource {
    HostSource::try_from(p.to_str().unwrap()).unwrap()
}

fn check(p: &Path, rules: &Rules) -> Result<PathBuf, String> {
    check_mount_source(&source(p), "h", rules).map_err(|e| e.to_string())
}

#[test]
fn existing_files_and_directories_pass_with_their_physical_path() {
    let h = Home::new();
    std::fs::write(h.path("data/file.txt"), "x").unwrap();
    assert_eq!(check(&h.path("data"), &h.rules()), Ok(h.path("data")));
    assert_eq!(
        check(&h.path("data/file.txt"), &h.rules()),
        Ok(h.path("data/file.txt"))
    );
}

#[test]
fn a_symlink_outside_the_system_layout_is_refused() {
    let h = Home::new();
    std::fs::write(h.path("data/file.txt"), "x").unwrap();
    symlink(h.path("data/file.txt"), h.path("link.txt")).unwrap();
    let err = check(&h.path("link.txt"), &h.rules()).unwrap_err();
    assert!(
        err.contains(&format!(
            "passes through the symlink {} -> {}",
            h.path("link.txt").display(),
            h.path("data/file.txt").display()
        )) && err.contains("make the hook answer the real path"),
        "{err}"
    );
}

#[test]
fn a_symlink_planted_in_the_workdir_is_refused_as_such() {
    let h = Home::new();
    symlink(h.path("home/.local"), h.path("work/data")).unwrap();
    let err = check(&h.path("work/data"), &h.rules()).unwrap_err();
    assert!(
        err.contains("which lies inside this launch's workdir") && err.contains("an agent can write there"),
        "{err}"
    );
}

#[test]
fn a_source_inside_a_read_write_mount_is_refused() {
    let h = Home::new();
    std::fs::create_dir(h.path("work/data")).unwrap();
    let err = check(&h.path("work/data"), &h.rules()).unwrap_err();
    assert!(
        err.contains("lies inside this launch's workdir") && err.contains("swap it for a symlink"),
        "{err}"
    );
    assert_eq!(check(&h.path("work"), &h.rules()), Ok(h.path("work")));
}

#[test]
fn a_source_inside_another_hooks_read_write_mount_is_refused() {
    let h = Home::new();
    std::fs::create_dir(h.path("data/inner")).unwrap();
    let mount = |src: &Path, dest: &str, mode| {
        let m = HookMount {
            source: source(src),
            destination: crate::hooks::policy::Destination::try_from(dest).unwrap(),
            mode,
        };
        let origin = Origin::GlobalHook {
            name: "g".into(),
            index: 0,
        };
        (m, origin)
    };
    let mounts = [
        mount(&h.path("data"), "/workspace/a", MountMode::Rw),
        mount(&h.path("data/inner"), "/workspace/b", MountMode::Ro),
    ];
    let err = check_mount_sources(&mounts, &h.rules()).unwrap_err().to_string();
    assert!(
        err.contains("lies inside the read-write mount of hook `g`"),
        "{err}"
    );
    let ro = [
        mount(&h.path("data"), "/workspace/a", MountMode::Ro),
        mounts[1].clone(),
    ];
    assert!(check_mount_sources(&ro, &h.rules()).is_ok());
}

#[test]
fn missing_source_is_refused() {
    let h = Home::new();
    let missing = h.path("data/nope");
    assert_eq!(
        check(&missing, &h.rules()),
        Err(format!(
            "mount source {m} of hook `h` does not exist; the hook must create it before answering",
            m = missing.display()
        ))
    );
    // Deeper: the first missing component is named too.
    let deeper = missing.join("deeper");
    assert_eq!(
        check(&deeper, &h.rules()),
        Err(format!(
            "mount source {} of hook `h` does not exist ({} is missing); the hook must create it before answering",
            deeper.display(),
            missing.display()
        ))
    );
}

#[test]
fn special_files_are_refused_by_type() {
    let h = Home::new();
    let sock = h.path("data/s.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    assert_eq!(
        check(&sock, &h.rules()),
        Err(format!(
            "mount source {} of hook `h` is a socket; only regular files and directories can be mounted",
            sock.display()
        ))
    );
    if Path::new("/dev/null").exists() {
        let err = check(Path::new("/dev/null"), &h.rules()).unwrap_err();
        assert!(err.contains("is a character device"), "{err}");
    }
}

#[test]
fn approval_store_inside_and_ancestor_are_refused() {
    let h = Home::new();
    let trust = h.path("home/.local/state/ags-hook-trust");
    std::fs::create_dir_all(trust.join("ags-hook-exec-1")).unwrap();
    let err = check(&trust, &h.rules()).unwrap_err();
    assert!(
        err.contains(&format!(
            "overlaps the hook approval store {t}: its real path {t} is that location",
            t = trust.display()
        )) && err.contains("the agent could approve its own hooks"),
        "{err}"
    );
    for (refused, relation) in [
        (trust.join("ags-hook-exec-1"), "is inside"),
        (h.path("home/.local"), "contains"),
    ] {
        let err = check(&refused, &h.rules()).unwrap_err();
        assert!(
            err.contains("overlaps the hook approval store")
                && err.contains(&format!("{relation} that location")),
            "{refused:?}: {err}"
        );
    }
    // An ancestor of the home directory is named by the home directory, the first rule.
    let err = check(&h.root, &h.rules()).unwrap_err();
    assert!(
        err.contains("overlaps the home directory") && err.contains("contains that location"),
        "{err}"
    );
}

#[test]
fn state_and_cache_directories_are_protected_before_they_exist() {
    let h = Home::new();
    let err = check(&h.path("home/.cache"), &h.rules()).unwrap_err();
    assert!(err.contains("overlaps the AGS cache directory"), "{err}");
    std::fs::create_dir_all(h.path("home/.local/state/ags")).unwrap();
    let err = check(&h.path("home/.local/state/ags"), &h.rules()).unwrap_err();
    assert!(err.contains("overlaps the AGS state directory"), "{err}");
}

#[test]
fn credential_directories_and_the_home_itself_are_refused() {
    let h = Home::new();
    for d in [".ssh", ".kube", ".config/containers", ".local/share/containers"] {
        std::fs::create_dir_all(h.path("home").join(d)).unwrap();
        let err = check(&h.path("home").join(d), &h.rules()).unwrap_err();
        assert!(err.contains("is that location"), "{d}: {err}");
    }
    let err = check(&h.path("home"), &h.rules()).unwrap_err();
    assert!(err.contains("overlaps the"), "{err}");
    std::fs::create_dir_all(h.path("home/src/p")).unwrap();
    assert!(check(&h.path("home/src/p"), &h.rules()).is_ok());
}

#[test]
fn overlay_trust_file_aliases_are_caught_before_it_exists() {
    let h = Home::new();
    std::fs::create_dir_all(h.path("real-config/ags")).unwrap();
    symlink(h.path("real-config"), h.path("home/cfg-link")).unwrap();
    let rules = h.rules_for(&h.paths(&h.path("home/cfg-link")));
    let trust_file = h.path("real-config/ags/trusted-repo-overlays.txt");
    for refused in ["real-config", "real-config/ags"] {
        let err = check(&h.path(refused), &rules).unwrap_err();
        assert!(
            err.contains(&format!(
                "the repository-overlay trust file {}",
                trust_file.display()
            )),
            "{refused}: {err}"
        );
    }
    std::fs::create_dir_all(h.path("real-config/other")).unwrap();
    assert!(check(&h.path("real-config/other"), &rules).is_ok());
}

#[test]
fn a_dangling_trust_file_symlink_protects_its_future_target() {
    let h = Home::new();
    std::fs::create_dir_all(h.path("home/.config/ags")).unwrap();
    std::fs::create_dir_all(h.path("dotfiles")).unwrap();
    symlink(
        h.path("dotfiles/ags/trusted-repo-overlays.txt"),
        h.path("home/.config/ags/trusted-repo-overlays.txt"),
    )
    .unwrap();
    let err = check(&h.path("dotfiles"), &h.rules()).unwrap_err();
    assert!(
        err.contains(&format!(
            "overlaps the repository-overlay trust file {}",
            h.path("dotfiles/ags/trusted-repo-overlays.txt").display()
        )),
        "{err}"
    );
}
