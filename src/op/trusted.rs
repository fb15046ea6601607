//! Which `op` may run. `ags` runs the 1Password CLI with its complete environment (tokens,
//! session variables), so the file must be one the agent cannot have written or swapped: a
//! `bin/op` in the workspace that a `PATH_add bin` put first on `PATH` would otherwise get the
//! credentials. The rules, for the named path and for what it resolves to (symlinks followed):
//! outside every directory the agent can write (the launch's read-write mounts), a regular
//! executable file owned by root or the user, and neither the file nor its directory writable
//! by group or others.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Where `op` comes from and where it may not.
#[derive(Debug, Clone, Default)]
pub struct OpPolicy {
    /// `[op] path` of the global config; `None`: the first `op` on `PATH`.
    pub configured: Option<PathBuf>,
    /// Host directories the agent can write (sources of the launch's read-write mounts).
    pub agent_writable: Vec<PathBuf>,
}

/// Check `program` under `policy` for a process running as `uid`; returns the canonical path
/// to run, or why it may not run.
pub(super) fn check(program: &Path, policy: &OpPolicy, uid: u32) -> Result<PathBuf, String> {
    if !program.is_absolute() {
        return Err("the path is not absolute".into());
    }
    let canonical = std::fs::canonicalize(program).map_err(|e| format!("it cannot be resolved ({e})"))?;
    let writable: Vec<PathBuf> = policy
        .agent_writable
        .iter()
        .map(|w| std::fs::canonicalize(w).unwrap_or_else(|_| w.clone()))
        .collect();
    for path in [program, canonical.as_path()] {
        if let Some(w) = writable.iter().find(|w| path.starts_with(w)) {
            return Err(format!(
                "{} lies inside {}, which the agent can write",
                path.display(),
                w.display()
            ));
        }
    }
    let meta = std::fs::metadata(&canonical).map_err(|e| format!("cannot stat it ({e})"))?;
    if !meta.is_file() || meta.mode() & 0o111 == 0 {
        return Err(format!("{} is not an executable file", canonical.display()));
    }
    safe_owner_and_mode(&canonical, &meta, uid)?;
    for file in [program, canonical.as_path()] {
        let dir = file.parent().unwrap_or(Path::new("/"));
        let meta = std::fs::metadata(dir).map_err(|e| format!("cannot stat {} ({e})", dir.display()))?;
        safe_owner_and_mode(dir, &meta, uid)?;
    }
    Ok(canonical)
}

fn safe_owner_and_mode(path: &Path, meta: &std::fs::Metadata, uid: u32) -> Result<(), String> {
    if meta.mode() & 0o022 != 0 {
        return Err(format!(
            "{} is writable by group or others (mode {:o})",
            path.display(),
            meta.mode() & 0o7777
        ));
    }
    if meta.uid() != 0 && meta.uid() != uid {
        return Err(format!(
            "{} is owned by uid {}, neither root nor you",
            path.display(),
            meta.uid()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn uid() -> u32 {
        nix::unistd::geteuid().as_raw()
    }

    fn op_in(dir: &Path, dir_mode: u32, file_mode: u32) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        let op = dir.join("op");
        std::fs::write(&op, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&op, std::fs::Permissions::from_mode(file_mode)).unwrap();
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(dir_mode)).unwrap();
        op
    }

    #[test]
    fn refuses_agent_writable_and_loose_permissions() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        let good = op_in(&root.join("bin"), 0o755, 0o755);
        let work = root.join("work");
        let policy = OpPolicy {
            configured: None,
            agent_writable: vec![work.clone()],
        };
        assert_eq!(check(&good, &policy, uid()).unwrap(), good);
        let planted = op_in(&work.join("bin"), 0o755, 0o755);
        let e = check(&planted, &policy, uid()).unwrap_err();
        assert!(e.contains("which the agent can write"), "{e}");
        // A symlink outside pointing into the workspace, and one inside pointing outside.
        std::os::unix::fs::symlink(&planted, root.join("bin/op-link")).unwrap();
        assert!(check(&root.join("bin/op-link"), &policy, uid()).is_err());
        std::os::unix::fs::symlink(&good, work.join("op-link")).unwrap();
        assert!(check(&work.join("op-link"), &policy, uid()).is_err());
        let loose = op_in(&root.join("loose"), 0o755, 0o775);
        assert!(
            check(&loose, &policy, uid())
                .unwrap_err()
                .contains("group or others")
        );
        let loose_dir = op_in(&root.join("loose-dir"), 0o777, 0o755);
        assert!(
            check(&loose_dir, &policy, uid())
                .unwrap_err()
                .contains("group or others")
        );
        let plain = op_in(&root.join("plain"), 0o755, 0o644);
        assert!(
            check(&plain, &policy, uid())
                .unwrap_err()
                .contains("not an executable file")
        );
        assert!(check(Path::new("op"), &policy, uid()).is_err());
        assert!(check(&root.join("missing/op"), &policy, uid()).is_err());
    }
}
