//! `ags hooks test` through the real binary: its host-code warning, that it runs only the named
//! hook, the redacted summary, `--context` (config from the current directory, a workdir that
//! does not exist here, no `--agent`/`--workdir` with it), the default agent, repeated names,
//! and the round trip from the no-terminal error to an approval on a terminal (a pty).

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::launch::{approve_hooks, decl, paths, trust_overlay, write_overlay};
use common::{TestEnv, show};
use serde_json::Value;

const SENTINEL: &str = "s3cr3t-hooks-test-value";
const WAIT: Duration = Duration::from_secs(60);

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A hook `name` that saves its stdin to `<root>/NAME.context`, its cwd to `<root>/NAME.cwd`,
/// and answers with an env value, a file and nothing else.
fn recording_hook(env: &TestEnv, name: &str) -> PathBuf {
    let root = env.root().display().to_string();
    env.write_file(
        format!("hooks/{name}"),
        format!(
            "#!/bin/sh\ncat > {root}/{name}.context\npwd > {root}/{name}.cwd\n\
             echo '{{\"version\":1,\"env\":{{\"TOKEN_{name}\":\"{SENTINEL}\"}},\"files\":[{{\"destination\":\"/tmp/{name}.json\",\"content\":\"{SENTINEL}\"}}]}}'\n"
        ),
        0o755,
    )
}

fn context_of(env: &TestEnv, name: &str) -> Value {
    let text = std::fs::read_to_string(env.root().join(format!("{name}.context")))
        .unwrap_or_else(|e| panic!("hook {name} did not run: {e}"));
    serde_json::from_str(&text).expect("the context is JSON")
}

fn cwd_of(env: &TestEnv, name: &str) -> PathBuf {
    let text = std::fs::read_to_string(env.root().join(format!("{name}.cwd"))).expect("cwd recorded");
    PathBuf::from(text.trim())
}

fn ran(env: &TestEnv, name: &str) -> bool {
    env.root().join(format!("{name}.context")).exists()
}

#[test]
fn runs_only_the_named_hook_with_a_warning_and_a_redacted_summary() {
    let env = TestEnv::without_podman();
    let (a, b) = (recording_hook(&env, "a"), recording_hook(&env, "b"));
    env.write_global_config(&[decl("a", &a, &[], ""), decl("b", &b, &[], "")].join("\n"));
    approve_hooks(&env);
    let out = env.run(["hooks", "test", "a"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        stderr(&out).contains("EXECUTES the hook on this host"),
        "host-code warning: {}",
        show(&out)
    );
    assert!(ran(&env, "a") && !ran(&env, "b"), "only the named hook runs");
    let summary = stdout(&out);
    assert!(
        summary.contains("TOKEN_a") && summary.contains("/tmp/a.json"),
        "keys and destinations: {summary}"
    );
    assert!(
        !summary.contains(SENTINEL) && !stderr(&out).contains(SENTINEL),
        "values are redacted: {}",
        show(&out)
    );
}

#[test]
fn default_context_is_the_current_directory_and_agent_shell() {
    let env = TestEnv::without_podman();
    let a = recording_hook(&env, "a");
    env.write_global_config(&decl("a", &a, &[], ""));
    approve_hooks(&env);
    let out = env.run(["hooks", "test", "a"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let work = env.work_dir().canonicalize().unwrap();
    let ctx = context_of(&env, "a");
    assert_eq!(ctx["agent"], "shell", "{ctx}");
    assert_eq!(ctx["event"], "prepare", "{ctx}");
    assert_eq!(ctx["workdir"], work.to_str().unwrap(), "{ctx}");
    assert_eq!(cwd_of(&env, "a"), work);
    let out = env.run(["hooks", "test", "a", "--agent", "pi"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(context_of(&env, "a")["agent"], "pi");
}

#[test]
fn context_cannot_be_combined_with_agent_or_workdir() {
    let env = TestEnv::without_podman();
    let a = recording_hook(&env, "a");
    env.write_global_config(&decl("a", &a, &[], ""));
    approve_hooks(&env);
    let ctx = env.write_file("ctx.json", "{}", 0o644);
    let ctx = ctx.to_str().unwrap();
    let work = env.work_dir();
    for extra in [["--agent", "pi"], ["--workdir", work.to_str().unwrap()]] {
        let mut args = vec!["hooks", "test", "a", "--context", ctx];
        args.extend(extra);
        let out = env.run(&args);
        assert_eq!(out.status.code(), Some(125), "{extra:?}: {}", show(&out));
        assert!(
            stderr(&out).contains("cannot be used with"),
            "{extra:?}: {}",
            show(&out)
        );
        assert!(!ran(&env, "a"), "{extra:?}: nothing runs");
    }
}

/// A repository at the work directory whose trusted overlay declares hook `p`.
fn project_with_hook(env: &TestEnv) {
    let p = recording_hook(env, "p");
    write_overlay(env, &decl("p", &p, &[], ""));
    trust_overlay(env);
    approve_hooks(env);
}

fn context_file(env: &TestEnv, workdir: &Path) -> PathBuf {
    let ctx = serde_json::json!({
        "version": 1,
        "event": "prepare",
        "launch_id": "ags-test-context-1",
        "project": workdir,
        "workdir": workdir,
        "agent": "codex",
    });
    env.write_file("ctx.json", ctx.to_string(), 0o644)
}

#[test]
fn context_finds_the_config_from_the_current_directory_not_its_workdir() {
    let env = TestEnv::without_podman();
    project_with_hook(&env);
    // The context names another existing directory (no overlay there): the hook runs there,
    // but it is still found through the current directory's overlay.
    let elsewhere = env.mkdir("elsewhere", 0o755).canonicalize().unwrap();
    let ctx = context_file(&env, &elsewhere);
    let out = env.run(["hooks", "test", "p", "--context", ctx.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let seen = context_of(&env, "p");
    assert_eq!(seen["workdir"], elsewhere.to_str().unwrap(), "passed as given");
    assert_eq!(seen["agent"], "codex");
    assert_eq!(seen["launch_id"], "ags-test-context-1");
    assert_eq!(cwd_of(&env, "p"), elsewhere, "cwd is the context's workdir");
}

#[test]
fn context_whose_workdir_does_not_exist_here_runs_in_the_current_directory() {
    let env = TestEnv::without_podman();
    project_with_hook(&env);
    let gone = Path::new("/nonexistent/ags-elsewhere/checkout");
    let ctx = context_file(&env, gone);
    let out = env.run(["hooks", "test", "p", "--context", ctx.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(context_of(&env, "p")["workdir"], gone.to_str().unwrap());
    assert_eq!(cwd_of(&env, "p"), env.work_dir().canonicalize().unwrap());
    assert!(
        stderr(&out).contains("is not a directory on this host"),
        "{}",
        show(&out)
    );
}

/// The `approve with `…`` commands of a no-terminal error, as argument lists without `ags`.
fn suggested_commands(err: &str) -> Vec<Vec<String>> {
    err.lines()
        .filter_map(|l| l.split("approve with `").nth(1))
        .map(|rest| rest.trim_end_matches('`'))
        .map(|cmd| {
            let words: Vec<String> = cmd.split_whitespace().map(String::from).collect();
            assert_eq!(words[0], "ags", "{cmd}");
            words[1..].to_vec()
        })
        .collect()
}

/// Run `args` on a terminal and answer every approval prompt with `y`.
fn approve_on_a_terminal(env: &TestEnv, args: &[String]) {
    let mut s = env.spawn_pty(args, 24, 200);
    assert!(
        s.wait_for("[y/N]", WAIT),
        "no prompt for {args:?}: {}",
        s.output()
    );
    s.write(b"y\n");
    let status = s.wait(WAIT).expect("ags exits");
    assert_eq!(status.code(), Some(0), "{args:?}: {}", s.output());
}

#[test]
fn the_command_of_the_no_terminal_error_approves_each_hook_even_with_repeated_names() {
    let env = TestEnv::without_podman();
    let g = recording_hook(&env, "g");
    // Three declarations of one name (two global with different arguments, one in the
    // project): a launch allows repeated names.
    env.write_global_config(&[decl("dup", &g, &["1"], ""), decl("dup", &g, &["2"], "")].join("\n"));
    let p = recording_hook(&env, "p");
    write_overlay(
        &env,
        &[decl("dup", &p, &[], ""), decl("solo", &p, &[], "")].join("\n"),
    );
    trust_overlay(&env);
    let out = env.run(["plan"]);
    assert_eq!(out.status.code(), Some(125), "{}", show(&out));
    let commands = suggested_commands(&stderr(&out));
    assert_eq!(commands.len(), 4, "{}", show(&out));
    let dup: Vec<_> = commands.iter().filter(|c| c[2] == "dup").collect();
    assert!(
        dup.iter().all(|c| c.contains(&"--hash".to_string())),
        "repeated names are told apart by hash: {commands:?}"
    );
    assert!(
        !commands
            .iter()
            .any(|c| c[2] == "solo" && c.contains(&"--hash".to_string()))
    );
    // Without the hash the name alone is ambiguous, and the error says how to pick.
    let out = env.run(["hooks", "test", "dup"]);
    assert_eq!(out.status.code(), Some(125), "{}", show(&out));
    assert!(stderr(&out).contains("--hash"), "{}", show(&out));
    for c in &commands {
        approve_on_a_terminal(&env, c);
    }
    let out = env.run(["plan", "--json"]);
    assert_eq!(out.status.code(), Some(0), "all approved now: {}", show(&out));
    // A hash prefix shared by no declaration, and one that is not hex, are refused.
    for bad in ["0000000000000000", "XYZ"] {
        let out = env.run(["hooks", "test", "dup", "--hash", bad]);
        assert_eq!(out.status.code(), Some(125), "{bad}: {}", show(&out));
    }
    let log = std::fs::read_to_string(paths(&env).hook_log()).expect("run log");
    assert!(!log.contains(SENTINEL));
}

#[test]
fn mount_sources_with_a_trailing_or_doubled_slash_are_normalised() {
    let env = TestEnv::without_podman();
    let data = env.mkdir("data", 0o755).canonicalize().unwrap();
    let other = env.mkdir("other", 0o755).canonicalize().unwrap();
    let doubled = other.to_str().unwrap().replacen('/', "//", 2);
    let response = serde_json::json!({"version": 1, "mounts": [
        {"source": format!("{}/", data.display()), "destination": "/workspace/data", "mode": "ro"},
        {"source": format!("{doubled}/./"), "destination": "/workspace/other", "mode": "rw"},
    ]});
    env.write_global_config(&common::launch::respond_hook(&env, "m", &response, None));
    approve_hooks(&env);
    let out = env.run(["hooks", "test", "m"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let summary = stdout(&out);
    for (dest, src) in [("/workspace/data", &data), ("/workspace/other", &other)] {
        assert!(
            summary
                .lines()
                .any(|l| l.contains(dest) && l.contains(&format!("from host {}  ", src.display()))),
            "{dest} from {}: {summary}",
            src.display()
        );
    }
    let bad = serde_json::json!({"version": 1, "mounts": [
        {"source": format!("{}/../data", data.display()), "destination": "/workspace/data", "mode": "ro"},
    ]});
    env.write_global_config(&common::launch::respond_hook(&env, "m", &bad, None));
    approve_hooks(&env);
    let out = env.run(["hooks", "test", "m"]);
    assert_eq!(out.status.code(), Some(125), "`..` stays refused: {}", show(&out));
    assert!(stderr(&out).contains("`..`"), "{}", show(&out));
}

#[test]
fn a_prepare_hook_wins_over_a_lifecycle_hook_of_the_same_name_without_event() {
    let env = TestEnv::without_podman();
    let p = recording_hook(&env, "p");
    let f = env.write_file(
        "hooks/f",
        format!(
            "#!/bin/sh\ncat > {}/f.context\necho '{{\"version\":1}}'\n",
            env.root().display()
        ),
        0o755,
    );
    let finished = format!(
        "[[finished_hook]]\nname = \"same\"\nexecutable = {:?}\n",
        f.display().to_string()
    );
    env.write_global_config(&[decl("same", &p, &[], ""), finished].join("\n"));
    // Approve both on a terminal, as the no-terminal error suggests (prepare: no --event).
    approve_on_a_terminal(&env, &["hooks".into(), "test".into(), "same".into()]);
    assert!(ran(&env, "p") && !ran(&env, "f"), "the prepare hook ran");
    let args: Vec<String> = ["hooks", "test", "same", "--event", "finished"]
        .map(String::from)
        .into();
    approve_on_a_terminal(&env, &args);
    assert!(ran(&env, "f"), "--event picks the finished hook");
}
