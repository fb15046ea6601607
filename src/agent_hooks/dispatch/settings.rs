//! Agent settings the agent can write that change what a shell tool runs after the hooks saw
//! the command, so the guard judged, and the record names, another one (session-13 attacks
//! M1, M2): claude's settings `env` (its state volume's `settings.json`, or the project's) with
//! `CLAUDE_ENV_FILE`, `BASH_ENV`, `PATH`, an exported function, a loader variable …; codex's
//! `[shell_environment_policy]` in its `config.toml`, whose `set` reaches every command. Read at
//! each `pre_tool` (the agents reload their settings): while one is there, the call is blocked
//! and the reason names it, so the user removes it.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::json;

/// Largest settings file read.
const MAX_BYTES: u64 = 1024 * 1024;

/// Environment names that change what a shell runs (exact), and prefixes. claude's
/// `CLAUDE_CODE_SHELL_PREFIX` is not among them: its managed settings pin it empty.
const NAMES: &[&str] = &[
    "PATH",
    "BASH_ENV",
    "ENV",
    "CLAUDE_ENV_FILE",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
    "PROMPT_COMMAND",
    "NODE_OPTIONS",
    "GLIBC_TUNABLES",
    "IFS",
    "CDPATH",
    "CLAUDE_CODE_SHELL",
];
const PREFIXES: &[&str] = &["LD_", "BASH_FUNC_", "DYLD_"];

/// What in `agent`'s settings (the home's and the project at `cwd`'s) would change the commands
/// its shell tool runs, when anything.
pub fn tampered(agent: &str, cwd: Option<&str>) -> Option<String> {
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
    let project = cwd.map(PathBuf::from);
    let dir =
        |var: &str, default: &str| std::env::var_os(var).map_or_else(|| home.join(default), PathBuf::from);
    let in_project = |rel: &str| project.as_ref().map(|p| p.join(rel));
    let mut found = Vec::new();
    match agent {
        "claude" => {
            let user = dir("CLAUDE_CONFIG_DIR", ".claude");
            let files = [
                Some(user.join("settings.json")),
                Some(user.join("settings.local.json")),
                in_project(".claude/settings.json"),
                in_project(".claude/settings.local.json"),
            ];
            for file in files.into_iter().flatten() {
                found.extend(claude_env(&file));
            }
        }
        "codex" => {
            let files = [
                Some(dir("CODEX_HOME", ".codex").join("config.toml")),
                in_project(".codex/config.toml"),
            ];
            for file in files.into_iter().flatten() {
                if read(&file)
                    .is_some_and(|t| String::from_utf8_lossy(&t).contains("shell_environment_policy"))
                {
                    found.push(format!("shell_environment_policy in {}", file.display()));
                }
            }
        }
        _ => {}
    }
    (!found.is_empty()).then(|| {
        format!(
            "ags agent hooks: {} would change what the shell runs after the hooks saw the command, so the tool call is blocked; remove it",
            found.join("; ")
        )
    })
}

/// The names of claude's settings file `file`'s `env` that change what a shell runs.
fn claude_env(file: &Path) -> Vec<String> {
    let Some(bytes) = read(file) else {
        return Vec::new();
    };
    let Ok(settings) = json::parse(&bytes) else {
        return Vec::new(); // claude does not take it either
    };
    let Some(json::Value::Object(env)) = settings.get("env") else {
        return Vec::new();
    };
    env.iter()
        .map(|(k, _)| k)
        .filter(|k| NAMES.contains(&k.as_str()) || PREFIXES.iter().any(|p| k.starts_with(p)))
        .map(|k| format!("env {k} in {}", file.display()))
        .collect()
}

/// At most [`MAX_BYTES`] of the regular file `path` (none: missing or unreadable).
fn read(path: &Path) -> Option<Vec<u8>> {
    let file = std::fs::File::open(path).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut out = Vec::new();
    file.take(MAX_BYTES).read_to_end(&mut out).ok()?;
    Some(out)
}
