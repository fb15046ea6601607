//! Issue 27, item 1: the Kubernetes export of a git project plays on Podman in every layout a
//! local launch supports (a plain repository, a subdirectory of one, a linked worktree, a
//! submodule's checkout, no repository) and keeps the same protection of git metadata: the
//! played agent writes its workdir, and cannot write the repository's `config`, its `hooks/`,
//! a `commondir` or a `config.worktree`. The host's git still works afterwards.

use crate::common;
use crate::kube_export::{Played, export_with, kind};

use std::path::{Path, PathBuf};

use common::git::git_ok;
use common::{Mode, TestEnv, api, each_mode};

/// What the agent writes; never found in a guarded file afterwards.
const MARK: &str = "AGENT-WROTE";

/// One layout: its name, the workdir, and the git pieces the agent must not write.
struct Layout {
    name: &'static str,
    workdir: PathBuf,
    guarded: Vec<PathBuf>,
}

/// A repository at `layouts/NAME` with one commit (made as the test's user).
fn repo(env: &TestEnv, root: &Path, name: &str) -> PathBuf {
    env.write_file(format!("layouts/{name}/README"), "hello\n", 0o644);
    let dir = root.join(name);
    git_ok(env, &dir, &["init", "-q", "-b", "main"]);
    git_ok(env, &dir, &["add", "README"]);
    git_ok(env, &dir, &["commit", "-q", "-m", "one"]);
    dir
}

/// The pieces of a git dir the guards cover.
fn pieces(git_dir: &Path) -> Vec<PathBuf> {
    ["config", "hooks/pre-commit", "commondir", "config.worktree"]
        .iter()
        .map(|p| git_dir.join(p))
        .collect()
}

fn layouts(env: &TestEnv) -> Vec<Layout> {
    let root = env.root().canonicalize().unwrap().join("layouts");
    let plain = repo(env, &root, "plain");
    let sub = repo(env, &root, "sub");
    env.write_file("layouts/sub/pkg/.keep", "", 0o644);
    let main = repo(env, &root, "main");
    let tree = root.join("tree");
    git_ok(
        env,
        &main,
        &["worktree", "add", "-q", "-b", "wt", tree.to_str().unwrap()],
    );
    let (lib, sup) = (repo(env, &root, "lib"), repo(env, &root, "super"));
    let add = ["-c", "protocol.file.allow=always", "submodule", "add", "-q"];
    git_ok(env, &sup, &[&add[..], &[lib.to_str().unwrap(), "lib"]].concat());
    git_ok(env, &sup, &["commit", "-q", "-m", "lib"]);
    env.write_file("layouts/none/.keep", "", 0o644);
    let none = root.join("none");
    // A worktree entry's own `config` and `hooks/` are not read while its `commondir` (guarded)
    // names the common dir; its `gitdir` names the checkout.
    let entry = main.join(".git/worktrees/tree");
    let mut wt: Vec<PathBuf> = ["commondir", "config.worktree", "gitdir"]
        .iter()
        .map(|p| entry.join(p))
        .collect();
    wt.extend(pieces(&main.join(".git")));
    let mut module = pieces(&sup.join(".git/modules/lib"));
    module.push(sup.join(".git/config"));
    vec![
        Layout {
            name: "plain",
            guarded: pieces(&plain.join(".git")),
            workdir: plain,
        },
        Layout {
            name: "subdirectory",
            guarded: pieces(&sub.join(".git")),
            workdir: sub.join("pkg"),
        },
        Layout {
            name: "worktree",
            guarded: wt,
            workdir: tree,
        },
        Layout {
            name: "submodule",
            guarded: module,
            workdir: sup.join("lib"),
        },
        Layout {
            name: "none",
            guarded: Vec::new(),
            workdir: none,
        },
    ]
}

/// The agent's script: write the workdir, then try each guarded piece.
fn probe(layout: &Layout) -> String {
    let mut s = "echo hi > new-by-agent.txt && echo wrote-work\n".to_string();
    for p in &layout.guarded {
        let p = p.display();
        s.push_str(&format!(
            "if (echo {MARK} >> '{p}') 2>/dev/null; then echo 'wrote:{p}'; else echo 'kept:{p}'; fi\n"
        ));
    }
    s.push_str("exit 0\n");
    s
}

#[test]
fn the_export_of_each_git_layout_plays_and_keeps_git_metadata_read_only() {
    each_mode(|env| {
        let _turn = common::keep_id_turn(env);
        // Rootless Podman before 4.9 ignores the keep-id annotation: the played agent's uid then
        // owns nothing, so only what must hold everywhere (it plays, nothing guarded changes) is
        // checked there.
        let writes = env.mode() == Mode::Rootful || api::podman_major(env.mode()) >= 5;
        for layout in layouts(env) {
            let workdir = layout.workdir.to_str().unwrap().to_string();
            let script = probe(&layout);
            let (docs, body, _) = export_with(env, &["--workdir", &workdir], &["sh", "-c", &script]);
            assert!(kind(&docs, "Pod").is_some(), "{}: {docs:?}", layout.name);
            let played = Played::start(env.mode(), &body, &docs);
            let (code, out) = played.finish();
            drop(played);
            let what = format!("{} {}: {out}", env.mode(), layout.name);
            assert_eq!(code, 0, "{what}");
            // Judged on the host: a write the container's own file system took is harmless.
            if writes {
                assert!(out.contains("wrote-work"), "the workdir is the agent's: {what}");
            }
            for p in &layout.guarded {
                let text = std::fs::read_to_string(p).unwrap_or_default();
                assert!(!text.contains(MARK), "{}: {what}", p.display());
            }
            if layout.name != "none" {
                git_ok(env, &layout.workdir, &["status", "--short"]);
                git_ok(env, &layout.workdir, &["log", "--oneline", "-1"]);
            }
        }
        env.assert_no_leftovers();
    });
}

/// The check a launch makes after its agent, around a played Pod (`ags unit-check`, as the
/// export's notice says): the Pod's agent plants a submodule's git dir with `core.fsmonitor`
/// and its `.git` file, and a `.envrc`; the check after moves them aside.
#[test]
fn the_check_around_a_played_pod_moves_aside_what_its_agent_planted() {
    each_mode(|env| {
        let _turn = common::keep_id_turn(env);
        if env.mode() == Mode::Rootless && api::podman_major(env.mode()) < 5 {
            // Rootless 4.3 ignores the keep-id annotation: the agent's uid owns nothing there.
            eprintln!("SKIP {}: the played agent cannot write the workdir", env.mode());
            return;
        }
        let work = common::git::repository(env, &[]);
        let plant = "mkdir -p .git/modules/sub/objects .git/modules/sub/refs sub \
            && printf 'ref: refs/heads/main\\n' > .git/modules/sub/HEAD \
            && printf '[core]\\n\\tfsmonitor = touch /tmp/planted\\n' > .git/modules/sub/config \
            && echo 'gitdir: ../.git/modules/sub' > sub/.git && echo 'touch /tmp/planted' > .envrc";
        let w = work.to_str().unwrap();
        let (docs, body, stderr) = export_with(env, &["--workdir", w], &["sh", "-c", plant]);
        let record = stderr
            .split("unit-check before ")
            .nth(1)
            .and_then(|rest| rest.split('`').next())
            .unwrap_or_else(|| panic!("no check notice: {stderr}"))
            .to_string();
        let out = env.run(["unit-check", "before", &record]);
        assert_eq!(out.status.code(), Some(0), "{}", common::show(&out));
        let played = Played::start(env.mode(), &body, &docs);
        let (code, out) = played.finish();
        drop(played);
        assert_eq!(code, 0, "{}: {out}", env.mode());
        assert!(work.join(".envrc").exists(), "the agent planted nothing: {out}");
        let out = env.run(["unit-check", "after", &record]);
        assert_eq!(out.status.code(), Some(0), "{}", common::show(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(".envrc") && err.contains(".git/modules/sub"),
            "{err}"
        );
        assert!(
            !work.join(".envrc").exists() && !work.join(".git/modules/sub").exists(),
            "{err}"
        );
        git_ok(env, &work, &["status", "--short"]);
        env.assert_no_leftovers();
    });
}
