//! Small things a new user meets first, through the real binary: `ags hooks list` with nothing
//! declared from anywhere, `ags hooks revoke` with the short hash `ags hooks log` prints, the
//! text plan's bare words. No Podman is needed.

use crate::common;

use common::launch::{approve_hooks, decl};
use common::{TestEnv, show};

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn hooks_list_without_declarations_works_from_home_and_tmp() {
    let env = TestEnv::without_podman();
    // The home directory outside Git is its own project, and the approval store lies inside
    // it: a launch there refuses the store, but listing nothing needs no store.
    for dir in [env.home(), std::path::PathBuf::from("/tmp")] {
        let mut cmd = env.cmd(["hooks", "list"]);
        cmd.current_dir(&dir);
        let out = common::run_command(cmd, None, common::RUN_TIMEOUT);
        assert_eq!(out.status.code(), Some(0), "{}: {}", dir.display(), show(&out));
        assert_eq!(stdout(&out), "no hooks declared\n", "{}", dir.display());
    }
}

#[test]
fn revoke_accepts_the_short_hash_of_the_log_and_refuses_an_ambiguous_one() {
    let env = TestEnv::without_podman();
    let h = env.write_file("hooks/h", "#!/bin/sh\necho '{\"version\":1}'\n", 0o755);
    env.write_global_config(&decl("h", &h, &[], ""));
    approve_hooks(&env);
    let out = env.run(["plan"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let log = stdout(&env.run(["hooks", "log"]));
    let short = log
        .split("hash=")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("no hash in the log: {log}"))
        .to_string();
    assert_eq!(short.len(), 12, "{log}");
    // Too short a start is refused.
    let out = env.run(["hooks", "revoke", &short[..3]]);
    assert_eq!(out.status.code(), Some(125), "{}", show(&out));
    let out = env.run(["hooks", "revoke", &short]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        stdout(&out).starts_with(&format!("revoked {short}")),
        "{}",
        show(&out)
    );
    assert_eq!(env.run(["plan"]).status.code(), Some(125), "approval is gone");
    // Two approvals whose hashes share a start: the start is ambiguous and refused.
    let store = common::launch::paths(&env).hook_trust_dir();
    for tail in ["0", "1"] {
        let hash = format!("{}a{tail}", "ab".repeat(31));
        env.write_file(store.join(&hash), "{}\n", 0o600);
    }
    let out = env.run(["hooks", "revoke", "ababab"]);
    assert_eq!(out.status.code(), Some(125), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("2 approvals start with ababab"), "{err}");
    assert_eq!(std::fs::read_dir(&store).unwrap().count(), 2, "nothing revoked");
    let out = env.run(["hooks", "revoke", &format!("{}a1", "ab".repeat(31))]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
}

#[test]
fn text_plan_prints_bare_words() {
    let env = TestEnv::without_podman();
    let out = env.run(["plan", "--no-hooks"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let text = stdout(&out);
    let line = |key: &str| {
        text.lines()
            .find(|l| l.starts_with(key))
            .unwrap_or_else(|| panic!("no {key} line: {text}"))
            .to_string()
    };
    for key in ["network", "user namespace"] {
        assert!(!line(key).contains('"'), "{}", line(key));
    }
    assert!(line("network").ends_with(" default"), "{text}");
}

#[test]
fn text_before_the_json_response_is_named_with_its_escaped_start_never_a_secret() {
    let env = TestEnv::without_podman();
    let secret = "tok_9f8e7d6c5b4a39281706";
    let h = env.write_file(
        "hooks/chatty",
        format!("#!/bin/sh\necho 'Starting services...'\necho 'token {secret}'\necho '{{\"version\":1}}'\n"),
        0o755,
    );
    env.write_global_config(&decl("chatty", &h, &[], ""));
    approve_hooks(&env);
    let out = env.run(["plan"]);
    assert_eq!(out.status.code(), Some(125), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("stdout starts with non-JSON text (52 bytes before the first `{`, starting \"Starting services...\\ntoken …\")"),
        "{err}"
    );
    assert!(err.contains("chatty"), "{err}");
    assert!(!err.contains(&secret[4..]), "a long run is hidden: {err}");
    let log = std::fs::read_to_string(common::launch::paths(&env).hook_log()).unwrap();
    assert!(!log.contains(&secret[4..]), "{log}");
}

#[test]
fn log_egress_says_when_it_is_empty() {
    let env = TestEnv::without_podman();
    let out = env.run(["log", "--egress"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(stdout(&out).starts_with("no egress records ("), "{}", show(&out));
    let out = env.run(["log", "--egress", "--launch", "ags-1-2"]);
    assert_eq!(
        stdout(&out),
        "no egress records of launch ags-1-2\n",
        "{}",
        show(&out)
    );
    let out = env.run(["log", "--egress", "--json"]);
    assert_eq!(stdout(&out), "", "{}", show(&out));
}

/// The full approval hash of the only declared hook, from `ags hooks list --json`.
fn full_hash(env: &TestEnv) -> String {
    let out = env.run(["hooks", "list", "--json"]);
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).expect("hooks list --json");
    rows[0]["hash"].as_str().expect("a hash").to_string()
}

#[test]
fn hooks_list_approve_and_revoke_work_from_home_and_root() {
    let env = TestEnv::without_podman();
    let h = env.write_file("hooks/h", "#!/bin/sh\necho '{\"version\":1}'\n", 0o755);
    env.write_global_config(&decl("h", &h, &[], ""));
    let hash = full_hash(&env);
    // Launching in ~ or / is refused (the approval store is inside), but these launch nothing.
    for dir in [env.home(), std::path::PathBuf::from("/")] {
        let run = |args: &[&str]| {
            let mut cmd = env.cmd(args);
            cmd.current_dir(&dir);
            common::run_command(cmd, None, common::RUN_TIMEOUT)
        };
        let out = run(&["hooks", "list"]);
        assert_eq!(out.status.code(), Some(0), "{}: {}", dir.display(), show(&out));
        assert!(stdout(&out).contains("NOT approved"), "{}", show(&out));
        // No line ends in a space (a hook without arguments).
        assert!(
            !stdout(&out).lines().any(|l| l.ends_with(' ')),
            "{:?}",
            stdout(&out)
        );
        let out = run(&["hooks", "approve", "h", "--hash", &hash]);
        assert_eq!(out.status.code(), Some(0), "{}: {}", dir.display(), show(&out));
        let out = run(&["hooks", "revoke", "h"]);
        assert_eq!(out.status.code(), Some(0), "{}: {}", dir.display(), show(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("XDG_STATE_HOME"), "{err}");
    }
}

#[test]
fn a_wrong_pinned_hash_is_answered_with_the_full_hash() {
    let env = TestEnv::without_podman();
    let h = env.write_file("hooks/h", "#!/bin/sh\necho '{\"version\":1}'\n", 0o755);
    env.write_global_config(&decl("h", &h, &[], ""));
    let hash = full_hash(&env);
    let out = env.run(["hooks", "approve", "h", "--hash", &"0".repeat(64)]);
    assert_eq!(out.status.code(), Some(125), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("(hash {hash})")), "{err}");
}

#[test]
fn a_launch_in_home_or_root_names_the_home_directory() {
    let env = TestEnv::without_podman();
    for dir in [env.home(), std::path::PathBuf::from("/")] {
        let mut cmd = env.cmd(["plan", "--no-hooks"]);
        cmd.current_dir(&dir);
        let out = common::run_command(cmd, None, common::RUN_TIMEOUT);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("overlaps the home directory"),
            "{}: {err}",
            dir.display()
        );
        assert!(!err.contains("hook approval store"), "{}: {err}", dir.display());
    }
}

#[test]
fn a_missing_mount_source_is_named_once_and_optional_is_suggested() {
    let env = TestEnv::without_podman();
    let missing = env.root().join("nope");
    env.write_global_config(&format!(
        "[[mount]]\nsource = \"{}\"\ntarget = \"/nope\"\n",
        missing.display()
    ));
    let out = env.run(["plan", "--no-hooks"]);
    assert_eq!(out.status.code(), Some(125), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches(&*missing.display().to_string()).count(), 1, "{err}");
    assert!(err.contains("set `optional = true` on that [[mount]]"), "{err}");
}

#[test]
fn kube_export_without_hooks_mentions_a_secret_only_when_it_prints_one() {
    let env = TestEnv::without_podman();
    let out = env.run(["plan", "--format", "kube", "--no-hooks"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(!stdout(&out).contains("\"Secret\""), "{}", show(&out));
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("Secret"),
        "{}",
        show(&out)
    );
    let out = env.run(["plan", "--format", "kube", "--no-hooks", "--env", "A=1"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(stdout(&out).contains("\"Secret\""), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the Secret holds only --env/--env-file/config values"),
        "{err}"
    );
}

#[test]
fn image_build_takes_ca_certs_from_the_global_config_and_an_overlay_cannot_set_them() {
    let env = TestEnv::without_podman();
    let pem = env.write_file(
        "corp.crt",
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
        0o644,
    );
    let missing = env.home().join("missing.crt");
    env.write_global_config(&format!("[image]\nca_certs = [{:?}, {:?}]\n", pem, missing));
    // The config's list is read before any service is asked: the missing file is named.
    let out = env.run(["image", "build", "--url", "unix:///nonexistent/podman.sock"]);
    assert_eq!(out.status.code(), Some(125), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("CA certificate {}", missing.display())),
        "{err}"
    );
    assert!(err.contains("[image] ca_certs"), "{err}");
    // A relative entry is refused with its key.
    env.write_global_config("[image]\nca_certs = [\"corp.crt\"]\n");
    let out = env.run(["image", "build", "--url", "unix:///nonexistent/podman.sock"]);
    assert_eq!(out.status.code(), Some(125), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("image.ca_certs[0]"),
        "{}",
        show(&out)
    );
    // The file being read is checked: a valid one gets as far as the service.
    env.write_global_config(&format!("[image]\nca_certs = [{pem:?}]\n"));
    let out = env.run(["image", "build", "--url", "unix:///nonexistent/podman.sock"]);
    assert_eq!(out.status.code(), Some(125), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("(--ca-cert or [image] ca_certs)"), "{}", show(&out));
    assert!(err.contains("no Podman API service answered"), "{}", show(&out));
    // A host that trusts extra CAs (these machines: the egress proxy's) hears of each one
    // that was not given, before the service is asked.
    let host_cas: Vec<_> = std::fs::read_dir("/usr/local/share/ca-certificates")
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    for ca in host_cas
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "crt"))
    {
        let warned = err.find(&ca.display().to_string());
        assert!(
            warned < err.find("no Podman API service"),
            "{ca:?} named first: {err}"
        );
        assert!(warned.is_some(), "{ca:?} named: {err}");
    }
}
