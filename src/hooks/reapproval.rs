//! Stage 2 (trust), prompt details: what a re-approval prompt says besides the declaration —
//! which earlier approval of the same hook exists, when it was given and what changed since
//! (declaration, entrypoint bytes, scope), and whether the entrypoint lives in the workdir that
//! the agent can write (so a change may be the agent's, not yours).
//!
//! Pure apart from reading the approval records ([`TrustStore::list`]); never decides approval.

use std::path::Path;

use sha2::{Digest, Sha256};

use super::entrypoint::PreparedHook;
use super::trust::{ApprovalRecord, TrustStore, project_of};

/// The most recent earlier approval of the hook `hook`: same event and name, declared in the
/// same config file or with the same scope (a same-named hook of another project is another
/// hook), if the store holds one.
pub fn previous(store: &TrustStore, hook: &PreparedHook) -> Option<ApprovalRecord> {
    let d = &hook.decl;
    let project = project_of(&d.scope);
    store
        .list()
        .ok()?
        .into_iter()
        .filter_map(|e| e.record)
        .filter(|r| r.event == d.event.as_str() && r.name == d.name)
        .filter(|r| r.config_path == d.config_path || r.project.as_deref() == project)
        .max_by(|a, b| a.approved_at.cmp(&b.approved_at))
}

/// Lines describing what changed between `old` and `hook` (values shown as the prompt shows
/// the declaration; the caller escapes them).
pub fn changes(old: &ApprovalRecord, hook: &PreparedHook) -> Vec<String> {
    let d = &hook.decl;
    let mut out = Vec::new();
    let old_scope = scope_text(old.project.as_deref());
    let new_scope = scope_text(project_of(&d.scope));
    if old_scope != new_scope {
        out.push(format!("scope: was {old_scope}"));
    }
    if old.executable != d.executable {
        out.push(format!("executable: was {}", old.executable.display()));
    }
    if old.args != d.args {
        out.push(format!("arguments: were {:?}", old.args));
    }
    if old.timeout_seconds != d.timeout_seconds {
        out.push(format!("timeout: was {} s", old.timeout_seconds));
    }
    let declaration_changed = !out.is_empty();
    match &old.entrypoint_sha256 {
        Some(sum) if *sum != hex::encode(Sha256::digest(&hook.entrypoint)) => {
            out.push("entrypoint bytes: changed (the file's content differs)".into());
        }
        Some(_) => {}
        // Same event, name, declaration and scope but another hash: only the bytes remain.
        None if !declaration_changed => {
            out.push("entrypoint bytes: changed (the file's content differs)".into());
        }
        None => out.push("entrypoint bytes: unknown (that approval did not record them)".into()),
    }
    if old.config_path != d.config_path {
        out.push(format!("declared in: was {}", old.config_path.display()));
    }
    out
}

/// `global (all projects)` or `project ROOT`, as the approval prompt shows a scope.
pub fn scope_text(project: Option<&Path>) -> String {
    match project {
        None => "global (all projects)".into(),
        Some(root) => format!("project {}", root.display()),
    }
}

/// Whether the canonical entrypoint of `hook` lies inside `workdir` (canonical), which the
/// agent's container mounts read-write.
pub fn inside_workdir(hook: &PreparedHook, workdir: &Path) -> bool {
    let exe = &hook.decl.executable;
    let exe = exe.canonicalize().unwrap_or_else(|_| exe.clone());
    exe.starts_with(workdir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{HookDecl, HookEvent, HookScope};

    fn hook(args: &[&str], bytes: &[u8], scope: HookScope) -> PreparedHook {
        PreparedHook {
            decl: HookDecl {
                event: HookEvent::Prepare,
                name: "svc".into(),
                executable: "/opt/hooks/svc".into(),
                args: args.iter().map(|a| a.to_string()).collect(),
                timeout_seconds: 30,
                scope,
                config_path: "/p/.ags/config.toml".into(),
            },
            entrypoint: bytes.to_vec().into(),
            hash: "ab".repeat(32),
        }
    }

    fn record(h: &PreparedHook) -> ApprovalRecord {
        ApprovalRecord::new(&h.decl).with_entrypoint(&h.entrypoint)
    }

    #[test]
    fn names_each_kind_of_change() {
        let project = HookScope::Project { root: "/p".into() };
        let old = hook(&["a"], b"v1", project.clone());
        assert_eq!(
            changes(&record(&old), &hook(&["a"], b"v2", project.clone())),
            ["entrypoint bytes: changed (the file's content differs)"]
        );
        assert_eq!(
            changes(&record(&old), &hook(&["b"], b"v1", project.clone())),
            ["arguments: were [\"a\"]"]
        );
        assert_eq!(
            changes(&record(&old), &hook(&["a"], b"v1", HookScope::Global)),
            ["scope: was project /p"]
        );
        // An old record without the bytes' sum: bytes are the only explanation left, unless
        // the declaration changed too.
        let mut legacy = record(&old);
        legacy.entrypoint_sha256 = None;
        assert_eq!(
            changes(&legacy, &hook(&["a"], b"v2", project.clone())),
            ["entrypoint bytes: changed (the file's content differs)"]
        );
        assert_eq!(
            changes(&legacy, &hook(&["b"], b"v2", project))[1],
            "entrypoint bytes: unknown (that approval did not record them)"
        );
    }

    #[test]
    fn entrypoints_inside_the_workdir_are_noticed() {
        let h = hook(&[], b"", HookScope::Global);
        assert!(inside_workdir(&h, Path::new("/opt")));
        assert!(!inside_workdir(&h, Path::new("/opt/hook")));
        assert!(!inside_workdir(&h, Path::new("/srv")));
    }

    #[test]
    fn previous_is_the_latest_of_the_same_file_or_scope_only() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().to_path_buf();
        let paths = crate::config::Paths {
            config_home: home.join(".config"),
            state_home: home.join(".local/state"),
            cache_home: home.join(".cache"),
            runtime_dir: None,
            home,
        };
        let store = TrustStore::open(&paths, None).unwrap();
        let project = HookScope::Project { root: "/p".into() };
        let current = hook(&["new"], b"v2", project);
        assert!(previous(&store, &current).is_none());
        let approve = |h: &PreparedHook, hash: &str, at: &str, config: &str| {
            let mut r = record(h);
            r.approved_at = at.into();
            r.config_path = config.into();
            store.approve(hash, &r).unwrap();
        };
        // A same-named hook of another project, from another file: another hook.
        let other = hook(&["x"], b"v1", HookScope::Project { root: "/q".into() });
        approve(
            &other,
            &"1".repeat(64),
            "2026-01-03T00:00:00.000Z",
            "/q/.ags/config.toml",
        );
        assert!(previous(&store, &current).is_none());
        let old = hook(&["old"], b"v1", HookScope::Project { root: "/p".into() });
        approve(
            &old,
            &"2".repeat(64),
            "2026-01-01T00:00:00.000Z",
            "/p/.ags/config.toml",
        );
        approve(
            &old,
            &"3".repeat(64),
            "2026-01-02T00:00:00.000Z",
            "/p/.ags/config.toml",
        );
        let found = previous(&store, &current).expect("an earlier approval");
        assert_eq!(found.approved_at, "2026-01-02T00:00:00.000Z");
    }
}
