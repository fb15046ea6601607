//! The commits a launch made, read for the project files host tools run (session-10 attack
//! S10-1; docs/security.md, "Project files host tools run"). A protected file committed by the
//! agent and then removed from the index (`git rm --cached`) is in no file on disk and no index
//! entry, so neither check sees it; yet `git push` sends it, CI runs it, and a checkout writes
//! it. `git_inventory` records every git dir's refs before the launch and names those that
//! gained object names ([`MovedRefs`]); [`read`] lists the commits reachable from the new names
//! and from none of the old ones, and names every path of [`PROTECTED`] (at any depth: direnv
//! runs `sub/.envrc` too) each of them adds, changes or deletes. Named, never undone: the
//! history is the user's.
//!
//! Why the host's git: the commits' trees sit in loose objects and packs (deltas, zlib) that the
//! agent can repack at will; git reads them all, and its `rev-list` and `diff-tree` run no
//! program of the repository's. It runs only after the git check has moved aside every piece
//! that would (`git::quarantine`; never when one is left in place), from outside every
//! agent-writable directory (`host_programs`), with no system or global config, no replace
//! refs, no grafts, no commit-graph or multi-pack index, no lazy fetch, `core.fsmonitor` off
//! and `protocol.allow=never`, through the one
//! supervisor (`crate::process`) with a timeout and capped output. Decision 0006.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::process::{self, Ending, Io, Spawn, StderrSink};
use crate::workspace::git_inventory::MovedRefs;
use crate::workspace::protected::{Kind, PROTECTED};

/// Each git process's time limit.
const TIMEOUT: Duration = Duration::from_secs(60);
/// `rev-list` output accepted: about 120 000 SHA-1 names.
const LIST_CAP: usize = 5 * 1024 * 1024;
/// `diff-tree` output accepted.
const PATHS_CAP: usize = 64 * 1024 * 1024;

/// A protected path a commit of the launch touched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Touched {
    /// The git dir.
    pub git_dir: String,
    /// The commit's object name.
    pub commit: String,
    /// The path in the commit, `/`-separated.
    pub path: String,
    /// The host tool that runs it.
    pub tool: &'static str,
}

/// What [`read`] found.
#[derive(Debug, Default)]
pub struct Commits {
    /// Every protected path touched, in the order read.
    pub touched: Vec<Touched>,
    /// Git dirs whose commits were not read (in full), and why.
    pub unread: Vec<String>,
}

/// Read the commits behind `moved` with the host's `git` (or say why not: `git` is the
/// error of resolving it); paths in `allowed` (`[protect] allow`) are the agent's to change.
pub async fn read(git: Result<&Path, String>, moved: &[MovedRefs], allowed: &[&str]) -> Commits {
    let mut out = Commits::default();
    let mut seen = BTreeSet::new();
    for m in moved {
        let dir = m.git_dir.display().to_string();
        let result = match (&m.new, &git) {
            (Err(e), _) | (Ok(_), Err(e)) => Err(e.clone()),
            (Ok(new), Ok(git)) => commits_of(git, &m.git_dir, new, &m.old, &mut seen).await,
        };
        match result {
            Ok(found) => out.touched.extend(touched(&dir, &found, allowed)),
            Err(e) => out.unread.push(format!("{dir}: {e}")),
        }
    }
    out
}

/// Verify each pack of `packs` (`GIT_DIR/objects/pack/NAME.idx`) with `git verify-pack`:
/// every entry's content must hash to its name (session-12 attack N1, N2: a new pack shadowed
/// an object that was there). The packs that fail, and why.
pub async fn verify_packs(git: &Path, packs: &[std::path::PathBuf]) -> Vec<(std::path::PathBuf, String)> {
    let mut bad = Vec::new();
    for idx in packs {
        let git_dir = idx.ancestors().nth(3).unwrap_or(idx);
        let arg = idx.to_string_lossy();
        if let Err(e) = run_git(git, git_dir, &["verify-pack", &arg], Vec::new(), 64 * 1024).await {
            bad.push((idx.clone(), e));
        }
    }
    bad
}

/// The paths each new commit (not in `seen`) changed: `diff-tree` output, NUL-separated, a
/// commit's name before its paths (against each parent of a merge).
async fn commits_of(
    git: &Path,
    git_dir: &Path,
    new: &[String],
    old: &[String],
    seen: &mut BTreeSet<String>,
) -> Result<Vec<(String, String)>, String> {
    let mut stdin = String::new();
    new.iter().for_each(|o| stdin.push_str(&format!("{o}\n")));
    // Only full object names are excluded: a short one (a reflog message's hex run) resolves
    // through refs first, and a ref the agent named so would exclude its own commits
    // (session-13 attack J1).
    old.iter()
        .filter(|o| o.len() == 40 || o.len() == 64)
        .for_each(|o| stdin.push_str(&format!("^{o}\n")));
    // Old names the agent removed from the store are no reason to stop, nor names that name
    // nothing (a reflog message's hex runs, `refs`); `--ignore-missing` only counts before `--stdin`.
    let args = ["rev-list", "--ignore-missing", "--missing=allow-any", "--stdin"];
    let listed = run_git(git, git_dir, &args, stdin.into_bytes(), LIST_CAP).await?;
    let commits: Vec<String> = String::from_utf8_lossy(&listed)
        .lines()
        .filter(|l| seen.insert(l.to_string()))
        .map(str::to_string)
        .collect();
    if commits.is_empty() {
        return Ok(Vec::new());
    }
    let stdin = commits.iter().map(|c| format!("{c}\n")).collect::<String>();
    let args = [
        "diff-tree",
        "--stdin",
        "-r",
        "--root",
        "-m",
        "--name-only",
        "--no-renames",
        "-z",
    ];
    let paths = run_git(git, git_dir, &args, stdin.into_bytes(), PATHS_CAP).await?;
    let heads: BTreeSet<&str> = commits.iter().map(String::as_str).collect();
    let mut out = Vec::new();
    let mut current = String::new();
    for token in paths.split(|b| *b == 0).filter(|t| !t.is_empty()) {
        let token = String::from_utf8_lossy(token);
        match heads.contains(token.as_ref()) {
            true => current = token.into_owned(),
            false => out.push((current.clone(), token.into_owned())),
        }
    }
    Ok(out)
}

/// The `(commit, path)` pairs whose path is protected and not allowed.
fn touched(git_dir: &str, found: &[(String, String)], allowed: &[&str]) -> Vec<Touched> {
    let mut out: Vec<Touched> = Vec::new();
    for (commit, path) in found {
        let Some(tool) = who_runs(path, allowed) else {
            continue;
        };
        if !out.iter().any(|t| &t.commit == commit && &t.path == path) {
            out.push(Touched {
                git_dir: git_dir.into(),
                commit: commit.clone(),
                path: path.clone(),
                tool,
            });
        }
    }
    out
}

/// The tool that runs `path` when it is (or lies in) a protected path at any depth, not in
/// `allowed`, or is a directory on the way to one: a `.vscode` committed as a symbolic link (or
/// a gitlink) leads the checkout's `.vscode/tasks.json` to the agent's files (session-13
/// attack K1).
pub fn who_runs(path: &str, allowed: &[&str]) -> Option<&'static str> {
    let starts = std::iter::once(0).chain(path.match_indices('/').map(|(i, _)| i + 1));
    for start in starts {
        let rest = &path[start..];
        for e in PROTECTED.iter().filter(|e| !allowed.contains(&e.path)) {
            let within = e.kind == Kind::Dir && rest.strip_prefix(e.path).is_some_and(|r| r.starts_with('/'));
            let on_the_way = e.path.strip_prefix(rest).is_some_and(|r| r.starts_with('/'));
            if rest == e.path || within || on_the_way {
                return Some(e.tool);
            }
        }
    }
    None
}

/// Run `git --git-dir=GIT_DIR ARGS` hardened (see the module doc): its stdout.
async fn run_git(
    git: &Path,
    git_dir: &Path,
    args: &[&str],
    stdin: Vec<u8>,
    cap: usize,
) -> Result<Vec<u8>, String> {
    // No commit-graph nor multi-pack index: the commits themselves, not what a cache or a
    // graft says about them (session-12 attack F2: a forged commit-graph made a new commit
    // look old).
    let config = [
        "core.fsmonitor=false",
        "protocol.allow=never",
        "safe.directory=*",
        "core.commitGraph=false",
        "core.multiPackIndex=false",
    ];
    let mut argv: Vec<OsString> = vec!["--no-replace-objects".into()];
    for c in config {
        argv.extend(["-c".into(), c.into()]);
    }
    let mut dir = OsString::from("--git-dir=");
    dir.push(git_dir);
    argv.push(dir);
    argv.extend(args.iter().map(OsString::from));
    let env = [
        ("GIT_CONFIG_NOSYSTEM", "1"),
        ("GIT_CONFIG_GLOBAL", "/dev/null"),
        ("GIT_NO_REPLACE_OBJECTS", "1"),
        ("GIT_GRAFT_FILE", "/dev/null"),
        ("GIT_NO_LAZY_FETCH", "1"),
        ("GIT_TERMINAL_PROMPT", "0"),
        ("GIT_OPTIONAL_LOCKS", "0"),
        ("LC_ALL", "C"),
    ];
    let spec = Spawn {
        program: git.to_path_buf(),
        args: argv,
        cwd: Some("/".into()),
        env: env.iter().map(|(k, v)| (k.into(), v.into())).collect(),
    };
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink: StderrSink = {
        let lines = lines.clone();
        Arc::new(move |line: &str| {
            let mut l = lines.lock().unwrap_or_else(PoisonError::into_inner);
            if l.len() < 5 {
                l.push(line.strip_prefix("[git] ").unwrap_or(line).to_owned());
            }
        })
    };
    let io = Io {
        stdin: stdin.into(),
        stdout_cap: cap,
        stderr_name: "git".into(),
        stderr_cap: 16 * 1024,
        stderr_sink: sink,
        timeout: TIMEOUT,
        drain_grace: Duration::from_millis(200),
    };
    let done = process::run(spec, &io, std::future::pending::<()>())
        .await
        .map_err(|e| format!("{} could not start: {e}", git.display()))?;
    let stderr = lines.lock().unwrap_or_else(PoisonError::into_inner).join("; ");
    match done.ending {
        Ending::Timeout => return Err(format!("git {} took over {} s", args[0], TIMEOUT.as_secs())),
        // The exit can be seen before the last read that overflows: the cut output is never
        // taken for the whole.
        _ if done.stdout.overflow => return Err(format!("git {} printed over {cap} bytes", args[0])),
        Ending::Overflow => return Err(format!("git {} printed over {cap} bytes", args[0])),
        Ending::Exited | Ending::Aborted(()) => {}
    }
    match done.status {
        Ok(s) if s.success() && done.stdout.error.is_none() => Ok(done.stdout.bytes),
        Ok(s) => Err(format!("git {} failed ({s}): {stderr}", args[0])),
        Err(e) => Err(format!("git {}: {e}", args[0])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protected_paths_match_at_any_depth_unless_allowed() {
        assert!(who_runs(".envrc", &[]).is_some());
        assert!(who_runs("sub/dir/.envrc", &[]).is_some());
        assert!(who_runs(".github/workflows/ci.yml", &[]).is_some());
        assert!(who_runs("x.envrc", &[]).is_none());
        assert!(who_runs("src/main.rs", &[]).is_none());
        assert!(who_runs(".github/workflowsx/a", &[]).is_none());
        assert!(who_runs(".envrc", &[".envrc"]).is_none());
        // A directory on the way to a protected path: a link or gitlink there leads it away (K1).
        assert!(who_runs(".vscode", &[]).is_some());
        assert!(who_runs("sub/.claude", &[]).is_some());
        assert!(who_runs(".github", &[]).is_some());
        assert!(who_runs(".vscodex", &[]).is_none());
    }

    use crate::workspace::git_inventory::test_git::git;

    /// Only the commits reachable from the new names and none of the old are read, with the
    /// repository's own `core.fsmonitor` never run; an old name the agent removed is no error.
    #[test]
    fn new_commits_are_read_without_running_the_repository_config() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path();
        git(dir, &["init", "-q"]);
        std::fs::write(dir.join(".envrc"), "old\n").unwrap();
        git(dir, &["add", ".envrc"]);
        git(dir, &["commit", "-qm", "old"]);
        let old = git(dir, &["rev-parse", "HEAD"]);
        std::fs::create_dir_all(dir.join(".vscode")).unwrap();
        std::fs::write(dir.join(".vscode/tasks.json"), "{}").unwrap();
        std::fs::write(dir.join("main.rs"), "").unwrap();
        git(dir, &["add", "-A"]);
        git(dir, &["commit", "-qm", "new"]);
        let new = git(dir, &["rev-parse", "HEAD"]);
        let ran = dir.join("ran");
        let config = format!("[core]\n\tfsmonitor = touch {}\n", ran.display());
        std::fs::OpenOptions::new()
            .append(true)
            .open(dir.join(".git/config"))
            .and_then(|mut f| std::io::Write::write_all(&mut f, config.as_bytes()))
            .unwrap();
        let moved = MovedRefs {
            git_dir: dir.join(".git"),
            new: Ok(vec![new.clone()]),
            old: vec![old, "0".repeat(40)],
        };
        let (git, rt) = host_git();
        let found = rt.block_on(read(Ok(git.path()), &[moved], &[]));
        assert!(found.unread.is_empty(), "{:?}", found.unread);
        let paths: Vec<(&str, &str)> = found
            .touched
            .iter()
            .map(|t| (t.commit.as_str(), t.path.as_str()))
            .collect();
        assert_eq!(paths, [(new.as_str(), ".vscode/tasks.json")]);
        assert!(!ran.exists(), "core.fsmonitor ran");
    }

    /// The host's git, resolved as a launch resolves it, and a runtime to run it from.
    fn host_git() -> (
        crate::workspace::host_programs::HostProgram,
        tokio::runtime::Runtime,
    ) {
        let git = crate::workspace::host_programs::resolve(
            crate::workspace::host_programs::Wanted {
                name: "git",
                key: "k",
                install: "i",
            },
            None,
            std::env::var_os("PATH").as_deref(),
            &[],
            nix::unistd::getuid().as_raw(),
        )
        .unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        (git, rt)
    }

    /// Git's output past the cap is refused even when git exits before the cap is noticed: a
    /// commit list cut at the cap would leave the commits after the cut unchecked (review of
    /// session 26). `git version` prints its 19 bytes and exits at once.
    #[test]
    fn output_past_the_cap_is_refused_however_fast_git_exits() {
        let (git, rt) = host_git();
        let dir = tempfile::tempdir().unwrap();
        for _ in 0..20 {
            let got = rt.block_on(run_git(git.path(), dir.path(), &["version"], Vec::new(), 4));
            let err = got.expect_err("19 bytes passed a cap of 4");
            assert!(err.contains("printed over 4 bytes"), "{err}");
        }
    }
}
