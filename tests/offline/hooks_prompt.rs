//! The approval prompt on a real terminal (a pty): Ctrl-C or a SIGTERM aborts with nothing
//! approved, and a re-approval says what changed since the old approval. No Podman is needed: `ags plan` stops
//! before it.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::launch::decl;
use common::{TestEnv, show};

const PROMPT: &str = "[y/N]";
const WAIT: Duration = Duration::from_secs(60);

/// A hook that creates `marker` when it runs and answers `{"version":1}`.
fn marking_hook(env: &TestEnv, name: &str, marker: &Path) -> PathBuf {
    env.write_file(
        format!("hooks/{name}"),
        format!(
            "#!/bin/sh\ntouch {}\necho '{{\"version\":1}}'\n",
            marker.display()
        ),
        0o755,
    )
}

/// A hook `h` that creates `<root>/ran`, declared and not approved, and `ags plan` on a terminal
/// showing its approval question; and the marker's path.
fn approval_prompt(env: &TestEnv) -> (common::PtySession, PathBuf) {
    let marker = env.root().join("ran");
    let h = marking_hook(env, "h", &marker);
    env.write_global_config(&decl("h", &h, &[], ""));
    let s = env.spawn_pty(["plan"], 24, 80);
    assert!(s.wait_for(PROMPT, WAIT), "no prompt: {}", s.output());
    (s, marker)
}

/// Ctrl-C alone, no Enter after it: the prompt ends at once (it used to wait for a newline).
#[test]
fn ctrl_c_alone_ends_the_approval_prompt_at_once() {
    let env = TestEnv::without_podman();
    let (mut s, marker) = approval_prompt(&env);
    s.write(b"\x03");
    let status = s.wait(WAIT).expect("ags exits after a lone Ctrl-C");
    assert_eq!(status.code(), Some(130), "{}", s.output());
    assert!(!marker.exists(), "an interrupted approval must not run the hook");
}

#[test]
fn ctrl_c_at_the_approval_prompt_aborts_with_nothing_approved() {
    let env = TestEnv::without_podman();
    let (mut s, marker) = approval_prompt(&env);
    // Ctrl-C, then a `y` typed right after it: the old prompt swallowed the interrupt and
    // recorded the approval on the `y`.
    s.write(b"\x03y\n");
    let status = s.wait(WAIT).expect("ags exits after Ctrl-C");
    assert_eq!(status.code(), Some(130), "128 + SIGINT: {}", s.output());
    assert!(
        s.output().contains("interrupted at the approval prompt (Ctrl-C)"),
        "{}",
        s.output()
    );
    assert!(!marker.exists(), "an interrupted approval must not run the hook");
    let out = env.run(["plan"]);
    assert_eq!(
        out.status.code(),
        Some(125),
        "nothing was approved: {}",
        show(&out)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("need approval"),
        "{}",
        show(&out)
    );
    assert!(!marker.exists());
}

/// SIGTERM while the question is open, then a `y`: the old prompt swallowed the signal (the
/// launch's handler only records it) and recorded the approval on the `y`.
#[test]
fn sigterm_at_the_approval_prompt_aborts_with_nothing_approved() {
    let env = TestEnv::without_podman();
    let (mut s, marker) = approval_prompt(&env);
    let ags = common::launch::find_ags_pid(s.pid());
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(ags), nix::sys::signal::Signal::SIGTERM).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    // Typed after the signal (ignored when ags is gone already).
    let _ = s.try_write(b"y\n");
    let status = s.wait(WAIT).expect("ags exits after SIGTERM");
    let out = env.run(["plan"]);
    assert_eq!(
        out.status.code(),
        Some(125),
        "nothing was approved: {}",
        show(&out)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("need approval"),
        "{}",
        show(&out)
    );
    assert!(!marker.exists(), "an interrupted approval must not run the hook");
    assert_eq!(status.code(), Some(143), "128 + SIGTERM: {}", s.output());
    assert!(
        s.output()
            .contains("interrupted at the approval prompt (SIGTERM)"),
        "{}",
        s.output()
    );
}

#[test]
fn approval_through_another_repositorys_overlay_is_scoped_to_that_repository() {
    let env = TestEnv::without_podman();
    let marker = env.root().join("ran");
    let other = env.mkdir("other", 0o755);
    env.mkdir("other/.git", 0o755);
    let body = std::fs::read(marking_hook(&env, "h", &marker)).unwrap();
    env.write_file("other/.ags/h", body, 0o755);
    let overlay = env.write_file(
        "other/.ags/config.toml",
        decl("h", Path::new("./h"), &[], ""),
        0o644,
    );
    let overlay = overlay.to_str().unwrap();
    // Approve it on a terminal, naming the other repository's overlay with --config.
    let mut s = env.spawn_pty(["plan", "--config", overlay], 24, 120);
    assert!(s.wait_for(PROMPT, WAIT), "no prompt: {}", s.output());
    let other = other.canonicalize().unwrap();
    assert!(
        s.output().contains(&format!("project {}", other.display())),
        "the prompt names the repository's scope: {}",
        s.output()
    );
    s.write(b"y\n");
    assert_eq!(s.wait(WAIT).and_then(|st| st.code()), Some(0), "{}", s.output());
    let list = env.run(["hooks", "list", "--json", "--config", overlay]);
    let rows: serde_json::Value = serde_json::from_slice(&list.stdout).expect("list JSON");
    assert_eq!(
        rows[0]["scope"],
        format!("project {}", other.display()),
        "{}",
        show(&list)
    );
    assert_eq!(rows[0]["approved"], true);
    // The same declaration (same name, entrypoint, argv, timeout) as a global hook: that
    // approval must not carry over to every project.
    std::fs::remove_file(&marker).unwrap();
    let exe = other.join(".ags/h");
    env.write_global_config(&decl("h", &exe, &[], ""));
    let out = env.run(["plan"]);
    assert_eq!(out.status.code(), Some(125), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("need approval"),
        "{}",
        show(&out)
    );
    assert!(!marker.exists(), "the global declaration did not run");
}

/// Run `ags plan` on a terminal, answer the one prompt with `y`, and return what was shown.
fn approve_once(env: &TestEnv) -> String {
    let mut s = env.spawn_pty(["plan"], 24, 120);
    assert!(s.wait_for(PROMPT, WAIT), "no prompt: {}", s.output());
    s.write(b"y\n");
    assert_eq!(s.wait(WAIT).and_then(|st| st.code()), Some(0), "{}", s.output());
    s.output()
}

#[test]
fn reapproval_says_what_changed_and_when_the_old_approval_was_made() {
    let env = TestEnv::without_podman();
    let marker = env.root().join("ran");
    let h = marking_hook(&env, "h", &marker);
    env.write_global_config(&decl("h", &h, &["--one"], ""));
    let first = approve_once(&env);
    assert!(first.contains("New prepare hook: h"), "{first}");
    let record = std::fs::read_dir(common::launch::paths(&env).hook_trust_dir())
        .unwrap()
        .flatten()
        .find(|e| e.file_name().len() == 64)
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .expect("an approval token");
    let approved_at = serde_json::from_str::<serde_json::Value>(&record).unwrap()["approved_at"]
        .as_str()
        .unwrap()
        .to_string();
    // The entrypoint's bytes change.
    let mut bytes = std::fs::read(&h).unwrap();
    bytes.extend_from_slice(b"# edited\n");
    std::fs::write(&h, bytes).unwrap();
    let second = approve_once(&env);
    assert!(
        second.contains(&format!(
            "Changed prepare hook: h (approved before on {approved_at}"
        )),
        "{second}"
    );
    assert!(second.contains("* entrypoint bytes: changed"), "{second}");
    assert!(!second.contains("* arguments"), "{second}");
    // Then only the arguments.
    env.write_global_config(&decl("h", &h, &["--two"], ""));
    let third = approve_once(&env);
    assert!(third.contains("* arguments: were [\"--one\"]"), "{third}");
    assert!(!third.contains("* entrypoint bytes"), "{third}");
    assert!(!third.contains("WARNING"), "outside the workdir: {third}");
}

#[test]
fn prompt_warns_when_the_entrypoint_is_in_the_agent_writable_workdir() {
    let env = TestEnv::without_podman();
    let marker = env.root().join("ran");
    let body = std::fs::read(marking_hook(&env, "h", &marker)).unwrap();
    let inside = env.write_file("work/tools/h", body, 0o755);
    env.write_global_config(&decl("h", &inside, &[], ""));
    let shown = approve_once(&env);
    let work = env.work_dir().canonicalize().unwrap();
    assert!(
        shown.contains(&format!(
            "WARNING: the entrypoint is inside the workdir {}, which the agent can write",
            work.display()
        )),
        "{shown}"
    );
}

#[test]
fn ctrl_c_at_the_overlay_trust_prompt_aborts_with_nothing_trusted() {
    let env = TestEnv::without_podman();
    let marker = env.root().join("ran");
    let h = marking_hook(&env, "h", &marker);
    common::launch::write_overlay(&env, &decl("h", &h, &[], ""));
    let mut s = env.spawn_pty(["plan"], 24, 120);
    assert!(s.wait_for("Trust overlays of", WAIT), "no prompt: {}", s.output());
    s.write(b"\x03y\n");
    let status = s.wait(WAIT).expect("ags exits after Ctrl-C");
    assert_eq!(status.code(), Some(130), "{}", s.output());
    assert!(s.output().contains("was not trusted"), "{}", s.output());
    let trust_file = common::launch::paths(&env).overlay_trust_file();
    let trusted = std::fs::read_to_string(&trust_file).unwrap_or_default();
    assert!(trusted.trim().is_empty(), "nothing recorded: {trusted}");
    assert!(!marker.exists());
}

#[test]
fn input_typed_before_the_prompt_does_not_answer_it() {
    let env = TestEnv::without_podman();
    let marker = env.root().join("ran");
    let h = marking_hook(&env, "h", &marker);
    env.write_global_config(&decl("h", &h, &[], ""));
    // Typed ahead: in the terminal's input before `ags` starts, as a user's keys typed while a
    // slow command ran (deterministic: waiting in the line discipline, not still on its way).
    let mut s = env.spawn_pty_typed_ahead(common::ags_bin(), ["plan"], 24, 120, b"y\n");
    assert!(s.wait_for(PROMPT, WAIT), "no prompt: {}", s.output());
    s.write(b"n\n");
    let status = s.wait(WAIT).expect("ags exits");
    assert_eq!(
        status.code(),
        Some(125),
        "the typed-ahead y was discarded: {}",
        s.output()
    );
    assert!(!marker.exists());
}

/// The overlay trust question shows what the overlay sets, env values by their names only and
/// terminal controls escaped; a no trusts nothing.
#[test]
fn the_overlay_trust_prompt_shows_what_the_overlay_sets() {
    let env = TestEnv::without_podman();
    let marker = env.root().join("ran");
    let h = marking_hook(&env, "h", &marker);
    let overlay = format!(
        "{}\n[network]\nmode = \"none\"\ndeny = [\"evil\\u001b]0;x\\u0007.example\"]\n\
         [agent.claude.env]\nAPI_TOKEN = \"s3cret-value\"\n",
        decl("h", &h, &["--fast"], "")
    );
    common::launch::write_overlay(&env, &overlay);
    let mut s = env.spawn_pty(["plan"], 24, 200);
    assert!(s.wait_for("Trust overlays of", WAIT), "no prompt: {}", s.output());
    s.write(b"n\n");
    let status = s.wait(WAIT).expect("ags exits after a no");
    assert_eq!(status.code(), Some(125), "{}", s.output());
    let shown = s.output();
    let question = &shown[..shown.find("Trust overlays of").unwrap()];
    for line in [
        "It sets:\r\n",
        "  agent.claude.env: names API_TOKEN (values not shown)\r\n",
        "  network.deny = [\"evil\\u{1b}]0;x\\u{7}.example\"]\r\n",
        "  network.mode = \"none\"\r\n",
        &format!(
            "  [[prepare_hook]] args = [\"--fast\"], executable = {:?}, name = \"h\"\r\n",
            h.display().to_string()
        ),
    ] {
        assert!(question.contains(line), "{line:?} not in the prompt: {question}");
    }
    assert!(!shown.contains("s3cret"), "an env value was shown: {shown}");
    assert!(
        !shown.contains('\x1b'),
        "a control reached the terminal: {shown:?}"
    );
    let trust_file = common::launch::paths(&env).overlay_trust_file();
    assert!(!trust_file.exists(), "a no records nothing");
    assert!(!marker.exists());
}
