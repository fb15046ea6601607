//! Agent settings the agent can write that change what a shell tool runs after the hooks saw
//! the command, so the guard judged, and the record names, another one (session-13 attacks
//! M1, M2): claude's settings `env` (its state volume's `settings.json`, or the project's),
//! whose variables reach every command; codex's `[shell_environment_policy]` in its
//! `config.toml`, whose `set` does the same. Read at each `pre_tool` (the agents reload their
//! settings): while one is there, the call is blocked and the reason names it, so the user
//! removes it.
//!
//! Fails closed (session-15 attacks N1, N2): a settings file that cannot be read whole, is
//! over [`MAX_BYTES`], or is not strict JSON (a duplicate key: the agent's own parser takes
//! the last) blocks; claude's `env` may hold only names of [`CLAUDE_ENV_ALLOWED`] (a list of
//! names to refuse kept missing some: `SHELL`); codex's file is searched after its `\x`, `\u`
//! and `\U` escapes are decoded (a quoted key `"shell_environment\u005Fpolicy"` is the same key). The
//! files come from the handlers file (the plan knows the state directory and the workdir),
//! not from this process's environment, which the settings `env` itself sets
//! (`CLAUDE_CONFIG_DIR` pointed the check elsewhere).

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::json;

/// Largest settings file read; a larger one blocks.
const MAX_BYTES: u64 = 1024 * 1024;

/// The `env` names claude's settings may set while a guard decides: claude's own and its
/// providers' settings, which change how claude talks and what it shows, not what a shell
/// command runs. Prefixes end in `_`.
const CLAUDE_ENV_ALLOWED: &[&str] = &[
    "ANTHROPIC_",
    "CLAUDE_CODE_",
    "DISABLE_",
    "ENABLE_",
    "MCP_",
    "OTEL_",
    "MAX_",
    "BASH_MAX_",
    "BASH_DEFAULT_TIMEOUT_MS",
    "VERTEX_REGION_",
    "CLOUD_ML_REGION",
    "USE_BUILTIN_RIPGREP",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
];

/// Names under an allowed prefix that still change the shell that runs commands.
/// `CLAUDE_CODE_SHELL_PREFIX` is not among them: the managed settings pin it empty.
const CLAUDE_ENV_REFUSED: &[&str] = &["CLAUDE_CODE_SHELL", "CLAUDE_CODE_GIT_BASH_PATH"];

/// What in `agent`'s settings would change the commands its shell tool runs, when anything:
/// the files `listed` in the handlers file, and those this process's environment and `cwd`
/// point at.
pub fn tampered(agent: &str, cwd: Option<&str>, listed: &[String]) -> Option<String> {
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
    let dir =
        |var: &str, default: &str| std::env::var_os(var).map_or_else(|| home.join(default), PathBuf::from);
    let project = |rel: &str| cwd.map(|p| Path::new(p).join(rel));
    let mut files: Vec<PathBuf> = listed.iter().map(PathBuf::from).collect();
    let check: fn(&Path, &[u8]) -> Vec<String> = match agent {
        "claude" => {
            let user = dir("CLAUDE_CONFIG_DIR", ".claude");
            files.extend([user.join("settings.json"), user.join("settings.local.json")]);
            files.extend(project(".claude/settings.json"));
            files.extend(project(".claude/settings.local.json"));
            claude_env
        }
        "codex" => {
            files.push(dir("CODEX_HOME", ".codex").join("config.toml"));
            files.extend(project(".codex/config.toml"));
            codex_policy
        }
        _ => return None,
    };
    files.sort();
    files.dedup();
    let found: Vec<String> = files
        .iter()
        .flat_map(|file| match read(file) {
            Ok(None) => Vec::new(),
            Ok(Some(bytes)) => check(file, &bytes),
            Err(e) => vec![format!("{} cannot be checked ({e})", file.display())],
        })
        .collect();
    (!found.is_empty()).then(|| {
        format!(
            "ags agent hooks: {} would change what the shell runs after the hooks saw the command, so the tool call is blocked; remove it",
            found.join("; ")
        )
    })
}

/// The names of claude's settings file `file`'s `env` that are not [`CLAUDE_ENV_ALLOWED`];
/// the file itself when it is not strict JSON.
fn claude_env(file: &Path, bytes: &[u8]) -> Vec<String> {
    let settings = match json::parse(bytes) {
        Ok(s) => s,
        Err(e) => return vec![format!("{} cannot be checked ({e})", file.display())],
    };
    let Some(json::Value::Object(env)) = settings.get("env") else {
        return Vec::new();
    };
    env.iter()
        .map(|(k, _)| k)
        .filter(|k| !claude_env_allowed(k))
        .map(|k| format!("env {k} in {}", file.display()))
        .collect()
}

fn claude_env_allowed(name: &str) -> bool {
    let listed = CLAUDE_ENV_ALLOWED.iter().any(|a| match a.ends_with('_') {
        true => name.starts_with(a),
        false => name == *a,
    });
    listed && !CLAUDE_ENV_REFUSED.contains(&name)
}

/// codex's `shell_environment_policy` anywhere in `file`, its key spelled with escapes or not.
fn codex_policy(file: &Path, bytes: &[u8]) -> Vec<String> {
    let text = unescape(&String::from_utf8_lossy(bytes));
    match text.contains("shell_environment_policy") {
        true => vec![format!("shell_environment_policy in {}", file.display())],
        false => Vec::new(),
    }
}

/// `text` with each `\xXX`, `\uXXXX` and `\UXXXXXXXX` (TOML's escapes that can spell a
/// letter; `\x` is TOML 1.1's, which codex reads: session-15 attack S15-A1) decoded wherever it
/// stands.
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let digits = match after.chars().next() {
            Some('x') => 2,
            Some('u') => 4,
            Some('U') => 8,
            _ => 0,
        };
        let code = after
            .get(1..1 + digits)
            .filter(|_| digits > 0)
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .and_then(char::from_u32);
        match code {
            Some(c) => {
                out.push(c);
                rest = &after[1 + digits..];
            }
            None => {
                out.push('\\');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The regular file `path` whole (`None`: missing); an error when it is something else, cannot
/// be read, or is over [`MAX_BYTES`].
fn read(path: &Path) -> Result<Option<Vec<u8>>, String> {
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    let mut out = Vec::new();
    file.take(MAX_BYTES + 1)
        .read_to_end(&mut out)
        .map_err(|e| e.to_string())?;
    match out.len() as u64 > MAX_BYTES {
        true => Err(format!("over {MAX_BYTES} bytes")),
        false => Ok(Some(out)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_listed_env_names_pass() {
        for ok in [
            "ANTHROPIC_MODEL",
            "CLAUDE_CODE_USE_BEDROCK",
            "DISABLE_TELEMETRY",
            "HTTPS_PROXY",
        ] {
            assert!(claude_env_allowed(ok), "{ok}");
        }
        for bad in [
            "SHELL",
            "BASH_ENV",
            "CLAUDE_CONFIG_DIR",
            "CLAUDE_CODE_SHELL",
            "HOME",
            "PATH",
        ] {
            assert!(!claude_env_allowed(bad), "{bad}");
        }
    }

    #[test]
    fn a_settings_file_that_cannot_be_checked_blocks() {
        let dir = std::env::temp_dir().join(format!("ags-settings-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("settings.json");
        let listed = [file.display().to_string()];
        let cases: [(&[u8], &str); 3] = [
            (br#"{"env":{"BASH_ENV":"x","BASH_ENV":"x"}}"#, "cannot be checked"),
            (br#"{"env":{"SHELL":"/x"}}"#, "env SHELL"),
            (&[b' '; 1024 * 1024 + 1], "over"),
        ];
        for (bytes, want) in cases {
            std::fs::write(&file, bytes).unwrap();
            let why = tampered("claude", None, &listed).unwrap_or_default();
            assert!(why.contains(want), "{want}: {why}");
        }
        std::fs::write(&file, br#"{"env":{"ANTHROPIC_MODEL":"m"}}"#).unwrap();
        assert_eq!(tampered("claude", None, &listed), None);
        std::fs::write(
            &file,
            b"[\"shell_environment\\u005Fpolicy\"]\nset = { A = \"b\" }\n",
        )
        .unwrap();
        assert!(tampered("codex", None, &listed).is_some());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn escapes_are_decoded() {
        assert_eq!(unescape(r"a\u005Fb\U0000005Fc\x5Fd\n\u00"), r"a_b_c_d\n\u00");
    }
}
