use std::os::unix::fs::PermissionsExt;

use super::*;

fn uid() -> u32 {
    nix::unistd::geteuid().as_raw()
}

const SSH: Wanted<'static> = Wanted {
    name: "ssh",
    key: "[ssh] path",
    install: "openssh-client",
};

fn program_in(dir: &Path, name: &str, dir_mode: u32, file_mode: u32) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(file_mode)).unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(dir_mode)).unwrap();
    p
}

fn root(path: &Path) -> WritableRoot {
    WritableRoot {
        path: path.into(),
        owner: "this launch's workdir".into(),
        running: false,
    }
}

fn path_of(dirs: &[&Path]) -> OsString {
    std::env::join_paths(dirs).unwrap()
}

#[test]
fn agent_writable_and_relative_entries_are_passed_over() {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().canonicalize().unwrap();
    let work = base.join("work");
    let planted = program_in(&work.join("bin"), "ssh", 0o755, 0o755);
    let good = program_in(&base.join("usr/bin"), "ssh", 0o755, 0o755);
    let writable = [root(&work)];
    let path = path_of(&[Path::new("rel"), &work.join("bin"), &base.join("usr/bin")]);
    let found = resolve(SSH, None, Some(&path), &writable, uid()).unwrap();
    assert_eq!(found.path(), good);
    assert_eq!(found.skipped().len(), 1, "{:?}", found.skipped());
    assert!(found.skipped()[0].contains(&planted.display().to_string()));
    // Only the planted one: not found, the planted one named.
    let path = path_of(&[&work.join("bin")]);
    let e = resolve(SSH, None, Some(&path), &writable, uid())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("not on PATH outside") && e.contains("[ssh] path"),
        "{e}"
    );
    assert!(e.contains(&planted.display().to_string()), "{e}");
    // Reached through a symlinked PATH entry outside the workspace.
    std::os::unix::fs::symlink(work.join("bin"), base.join("alias")).unwrap();
    let path = path_of(&[&base.join("alias"), &base.join("usr/bin")]);
    assert_eq!(
        resolve(SSH, None, Some(&path), &writable, uid()).unwrap().path(),
        good
    );
    // A symlink outside pointing into the workspace.
    std::fs::create_dir(base.join("links")).unwrap();
    std::os::unix::fs::symlink(&planted, base.join("links/ssh")).unwrap();
    let path = path_of(&[&base.join("links")]);
    let e = resolve(SSH, None, Some(&path), &writable, uid())
        .unwrap_err()
        .to_string();
    assert!(e.contains("which the agent can write"), "{e}");
}

#[test]
fn loose_modes_and_pins_are_refused() {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().canonicalize().unwrap();
    let work = base.join("work");
    let writable = [root(&work)];
    let loose = program_in(&base.join("loose"), "ssh", 0o755, 0o775);
    let e = resolve(
        SSH,
        None,
        Some(&path_of(&[&base.join("loose")])),
        &writable,
        uid(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("group or others"), "{e}");
    let _ = program_in(&base.join("loose-dir"), "ssh", 0o777, 0o755);
    let e = resolve(
        SSH,
        None,
        Some(&path_of(&[&base.join("loose-dir")])),
        &writable,
        uid(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("group or others"), "{e}");
    // Pinned: the same rules, the key named.
    let e = resolve(SSH, Some(&loose), None, &writable, uid())
        .unwrap_err()
        .to_string();
    assert!(e.contains("[ssh] path") && e.contains("group or others"), "{e}");
    let planted = program_in(&work.join("bin"), "ssh", 0o755, 0o755);
    let e = resolve(SSH, Some(&planted), None, &writable, uid())
        .unwrap_err()
        .to_string();
    assert!(e.contains("which the agent can write"), "{e}");
    let plain = program_in(&base.join("plain"), "ssh", 0o755, 0o644);
    let e = resolve(SSH, Some(&plain), None, &writable, uid())
        .unwrap_err()
        .to_string();
    assert!(e.contains("not an executable file"), "{e}");
    assert!(resolve(SSH, Some(Path::new("ssh")), None, &writable, uid()).is_err());
    let good = program_in(&base.join("good"), "ssh", 0o755, 0o755);
    assert_eq!(
        resolve(SSH, Some(&good), None, &writable, uid()).unwrap().path(),
        good
    );
    let e = resolve(SSH, None, None, &writable, uid())
        .unwrap_err()
        .to_string();
    assert!(e.contains("not on PATH"), "{e}");
}

#[test]
fn hooks_get_path_without_agent_writable_or_relative_entries() {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().canonicalize().unwrap();
    let work = base.join("work");
    std::fs::create_dir_all(work.join("bin")).unwrap();
    std::os::unix::fs::symlink(work.join("bin"), base.join("alias")).unwrap();
    let path = path_of(&[
        &work.join("bin"),
        Path::new("bin"),
        &base.join("alias"),
        Path::new("/usr/bin"),
        &work,
        Path::new("/bin"),
    ]);
    assert_eq!(hook_path(&path, &[root(&work)]), OsString::from("/usr/bin:/bin"));
    assert_eq!(hook_path(OsStr::new(""), &[root(&work)]), OsString::new());
}
