//! The git attacks' harness (`tests/attacks_git_*.rs`): a repository in the workdir, host git
//! run cleanly on it, and the agent's script run in the git image (git and perl, as an
//! attacker would use them).

use std::path::Path;
use std::process::Output;

use super::launch::stdout;
use super::{CLEAN_PATH, TestEnv, run_command, show, tool};

/// The image with git and perl.
pub const IMAGE: &str = "localhost/ags-git:latest";

/// Host git in `dir` (a clean PATH, a test identity): its stdout, trimmed; it must succeed.
pub fn git_ok(env: &TestEnv, dir: &Path, args: &[&str]) -> String {
    let d = dir.display().to_string();
    let mut all = vec!["-C", &d, "-c", "user.name=Test", "-c", "user.email=t@example.com"];
    all.extend_from_slice(args);
    let mut cmd = env.command(tool("git"), all);
    cmd.env("PATH", CLEAN_PATH);
    let out = run_command(cmd, None, super::RUN_TIMEOUT);
    assert!(out.status.success(), "git {args:?}: {}", show(&out));
    stdout(&out).trim().to_string()
}

/// Whether this mode's service has the git image (a missing one fails under `scripts/test`).
pub fn has_image(env: &TestEnv) -> bool {
    if super::api::image_exists(&env.mode().socket(), IMAGE).unwrap_or(false) {
        return true;
    }
    assert!(
        std::env::var_os("AGS_TEST_GIT_IMAGE").is_none(),
        "{IMAGE} is missing"
    );
    eprintln!("SKIP {}: no {IMAGE}", env.mode());
    false
}

/// A repository in the workdir with one commit (`README`) and the forging `scripts` copied in.
pub fn repository(env: &TestEnv, scripts: &[&str]) -> std::path::PathBuf {
    let work = env.work_dir().canonicalize().unwrap();
    env.write_file("work/README", "hello\n", 0o644);
    git_ok(env, &work, &["init", "-q", "-b", "main"]);
    git_ok(env, &work, &["add", "README"]);
    git_ok(env, &work, &["commit", "-q", "-m", "one"]);
    for s in scripts {
        let from = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/support/forge")
            .join(s);
        env.write_file(format!("work/{s}"), std::fs::read(from).unwrap(), 0o644);
    }
    work
}

/// Run `script` as the agent in the git image; it must print PLANTED and exit 0.
pub fn agent(env: &TestEnv, script: &str) -> Output {
    agent_in(env, &env.work_dir(), script)
}

/// [`agent`] with `workdir` as the launch's workdir.
pub fn agent_in(env: &TestEnv, workdir: &Path, script: &str) -> Output {
    let script = format!(
        "git config --global --add safe.directory '*' && git config --global user.name a && git config --global user.email a@x\nset -e\n{script}\necho PLANTED"
    );
    let (label, dir) = (env.label(), workdir.display().to_string());
    let out = env.run([
        "--tty=false",
        "--image",
        IMAGE,
        "--label",
        &label,
        "--workdir",
        &dir,
        "--",
        "sh",
        "-c",
        &script,
    ]);
    assert!(stdout(&out).contains("PLANTED"), "{}", show(&out));
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    out
}
