//! Approval store, approval flow and run log against a real temp state directory.

use crate::hook_support;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::time::{Duration, UNIX_EPOCH};

use ags::config::{HookScope, Paths};
use ags::hooks::approve::{ApprovalError, ensure_approved};
use ags::hooks::entrypoint::PreparedHook;
use ags::hooks::log::{Record, RunLog};
use ags::hooks::runner::{ExitInfo, HookReport, Outcome};
use ags::hooks::trust::{ApprovalRecord, TrustError, TrustStore};
use hook_support::{TestEnv, fixture_path};

#[test]
fn noninteractive_approval_lists_every_unapproved_hook_with_its_command() {
    let env = TestEnv::new();
    let global = PreparedHook::load(env.decl("global-one", "ok", &[], 30)).unwrap();
    let mut decl = env.decl("project-one", "ok", &["--x"], 30);
    decl.scope = HookScope::Project {
        root: env.workdir.clone(),
    };
    decl.config_path = env.workdir.join(".ags/config.toml");
    let project = PreparedHook::load(decl).unwrap();
    let approved = env.approved(env.decl("known", "ok", &[], 30));
    let hooks = [global.clone(), approved, project.clone()];
    let err = ensure_approved(
        &env.store,
        &hooks,
        false,
        std::path::Path::new("/nonexistent-workdir"),
    )
    .unwrap_err();
    let config = env.paths.global_config();
    let w = env.workdir.display();
    assert_eq!(
        err.to_string(),
        format!(
            "2 prepare hook(s) are new or changed and need approval on a terminal before anything runs:\n  \
             global-one (hash {}): approve with `ags hooks test global-one --config {}`\n  \
             project-one (hash {}): approve with `ags hooks test project-one --config {w}/.ags/config.toml --workdir {w}`\n\
             or rerun this command interactively (with a terminal) using the same config. \
             Note: `ags hooks test` EXECUTES the hook after approval. Without a terminal (CI), \
             `ags hooks approve NAME --hash HASH` records a hash you reviewed without running the hook.",
            global.hash,
            config.display(),
            project.hash,
        )
    );
    assert!(matches!(err, ApprovalError::Unapproved { ref hooks } if hooks.len() == 2));
    for h in &hooks {
        env.store.approve(&h.hash, &ApprovalRecord::new(&h.decl)).unwrap();
    }
    ensure_approved(
        &env.store,
        &hooks,
        false,
        std::path::Path::new("/nonexistent-workdir"),
    )
    .unwrap();
}

#[test]
fn changed_bytes_or_args_need_a_new_approval() {
    let env = TestEnv::new();
    let script = env.tmp.path().join("hook");
    std::fs::copy(fixture_path("ok"), &script).unwrap();
    let mut decl = env.decl("h", "ok", &[], 30);
    decl.executable = script.clone();
    let approved = env.approved(decl.clone());
    assert!(env.store.is_approved(&approved.hash).unwrap());

    std::fs::write(&script, "#!/bin/sh\nprintf '{\"version\":1}'\n").unwrap();
    let changed = PreparedHook::load(decl.clone()).unwrap();
    assert_ne!(changed.hash, approved.hash);
    assert!(!env.store.is_approved(&changed.hash).unwrap());

    let mut with_args = decl;
    with_args.args.push("--new".into());
    let changed_args = PreparedHook::load(with_args).unwrap();
    assert!(!env.store.is_approved(&changed_args.hash).unwrap());
    assert!(
        ensure_approved(
            &env.store,
            &[changed, changed_args],
            false,
            std::path::Path::new("/nonexistent-workdir")
        )
        .is_err()
    );
}

#[test]
fn symlinked_token_is_refused_not_ignored() {
    let env = TestEnv::new();
    let hook = PreparedHook::load(env.decl("h", "ok", &[], 30)).unwrap();
    let elsewhere = env.tmp.path().join("elsewhere");
    std::fs::write(&elsewhere, "").unwrap();
    let token = env.store.dir().join(&hook.hash);
    std::os::unix::fs::symlink(&elsewhere, &token).unwrap();
    let err = env.store.is_approved(&hook.hash).unwrap_err();
    assert!(matches!(err, TrustError::TokenSymlink { .. }));
    assert_eq!(
        err.to_string(),
        format!(
            "approval token {0} is a symbolic link; approvals must be real files: remove it with `rm {0}` and approve the hook again",
            token.display()
        )
    );
    assert!(
        ensure_approved(
            &env.store,
            &[hook],
            false,
            std::path::Path::new("/nonexistent-workdir")
        )
        .is_err()
    );
}

#[test]
fn loose_permissions_are_refused_with_the_fix() {
    let env = TestEnv::new();
    let hook = env.approved(env.decl("h", "ok", &[], 30));
    let token = env.store.dir().join(&hook.hash);
    assert_eq!(std::fs::metadata(&token).unwrap().mode() & 0o777, 0o600);
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o644)).unwrap();
    let err = env.store.is_approved(&hook.hash).unwrap_err().to_string();
    assert!(
        err.ends_with(&format!(
            "must be owner-only: run `chmod 600 {}`",
            token.display()
        )),
        "{err}"
    );

    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    if nix::unistd::geteuid().is_root() {
        // Only root can give a file away; elsewhere this part is skipped.
        std::os::unix::fs::chown(&token, Some(65534), None).unwrap();
        let err = env.store.is_approved(&hook.hash).unwrap_err().to_string();
        assert!(err.contains("is owned by uid 65534, not by you"), "{err}");
        assert!(
            err.contains(&format!("remove it with `rm {}`", token.display())),
            "{err}"
        );
    }

    let dir = env.store.dir().to_path_buf();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let err = TrustStore::open(&env.paths, None).unwrap_err().to_string();
    assert!(
        err.contains(&format!("run `chmod 700 {}`", dir.display())),
        "{err}"
    );
}

#[test]
fn store_symlink_is_refused() {
    let env = TestEnv::new();
    let real = env.tmp.path().join("real-store");
    std::fs::create_dir(&real).unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o700)).unwrap();
    let state = env.tmp.path().join("state2");
    std::fs::create_dir(&state).unwrap();
    std::os::unix::fs::symlink(&real, state.join("ags-hook-trust")).unwrap();
    let paths = Paths {
        state_home: state,
        ..env.paths.clone()
    };
    let err = TrustStore::open(&paths, None).unwrap_err().to_string();
    let link = paths.hook_trust_dir();
    assert!(err.contains("is a symbolic link"), "{err}");
    assert!(
        err.contains(&format!("(fix: `rm {}` removes only the link", link.display())),
        "{err}"
    );
}

#[test]
fn store_inside_the_project_is_refused() {
    let env = TestEnv::new();
    let paths = Paths {
        state_home: env.workdir.join("sub/.state"),
        ..env.paths.clone()
    };
    let err = TrustStore::open(&paths, Some(&env.workdir)).unwrap_err();
    assert!(matches!(err, TrustError::InsideProject { .. }));
    assert!(
        err.to_string()
            .contains("set XDG_STATE_HOME to a directory outside it"),
        "{err}"
    );
    assert!(
        !env.workdir.join("sub").exists(),
        "nothing is created inside the project"
    );
}

#[test]
fn list_and_revoke() {
    let env = TestEnv::new();
    let hook = env.approved(env.decl("h", "ok", &["a"], 30));
    let listed = env.store.list().unwrap();
    assert_eq!(listed.len(), 1);
    let record = listed[0].record.as_ref().unwrap();
    assert_eq!(
        (record.name.as_str(), record.args.as_slice()),
        ("h", &["a".to_string()][..])
    );
    assert!(env.store.revoke(&hook.hash).unwrap());
    assert!(!env.store.is_approved(&hook.hash).unwrap());
    assert!(!env.store.revoke(&hook.hash).unwrap());
    assert!(matches!(
        env.store.revoke("../x"),
        Err(TrustError::BadHash { .. })
    ));
}

fn report(name: &str, outcome: Outcome) -> HookReport {
    HookReport {
        name: name.into(),
        hash: "ab".repeat(32),
        started_at: Some(UNIX_EPOCH + Duration::from_secs(1_798_761_599)),
        duration: Duration::from_millis(42),
        outcome,
        exit: Some(ExitInfo::Code(0)),
        stdout_bytes: 13,
        stderr_bytes: 0,
    }
}

#[test]
fn run_log_appends_private_lines_reads_back_and_rotates() {
    let env = TestEnv::new();
    let decl = env.decl("svc", "ok", &[], 30);
    let rec = Record::new(
        "ags-1-2",
        &decl,
        &report("svc", Outcome::Ok),
        vec!["SERVICE_URL".into()],
        vec!["/tmp/x.json".into()],
    );
    ags::receipt::open(&env.paths, "ags-1-2");
    RunLog::append_all(&env.paths, std::slice::from_ref(&rec)).unwrap();
    let log = env.paths.hook_log();
    assert_eq!(std::fs::metadata(&log).unwrap().mode() & 0o777, 0o600);
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "{\"launch_id\":\"ags-1-2\",\"name\":\"svc\",\"scope\":\"global\",\"hash\":\"".to_string()
            + &"ab".repeat(32)
            + "\",\"started_at\":\"2026-12-31T23:59:59.000Z\",\"duration_ms\":42,\"outcome\":\"ok\",\
               \"exit_code\":0,\"stdout_bytes\":13,\"stderr_bytes\":0,\"keys\":[\"SERVICE_URL\"],\
               \"destinations\":[\"/tmp/x.json\"],\"chain\":{\"seq\":0,\"prev\":\""
            + ags::logfile::chain::GENESIS
            + "\"}}\n"
    );
    assert_eq!(
        rec.render(),
        "2026-12-31T23:59:59.000Z ags-1-2 svc [global] ok exit=0 42ms out=13B err=0B hash=abababababab \
         keys=[SERVICE_URL] destinations=[/tmp/x.json]"
    );

    // Past 10 MiB the log moves to hooks.jsonl.1; read_last spans both files.
    let file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    file.set_len(11 * 1024 * 1024).unwrap();
    let second = Record::new("ags-1-3", &decl, &report("svc", Outcome::Failed), vec![], vec![]);
    RunLog::append_all(&env.paths, std::slice::from_ref(&second)).unwrap();
    assert!(log.with_extension("jsonl.1").exists());
    assert_eq!(
        RunLog::read_last(&env.paths, 1).unwrap(),
        std::slice::from_ref(&second)
    );
    assert_eq!(
        RunLog::read_last(&env.paths, 5).unwrap(),
        [rec, second],
        "padding is skipped"
    );
}
