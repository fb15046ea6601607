//! The files the programs git runs name (session-14 attack F2). A hook the user made may be a
//! link to a tracked script (`.git/hooks/pre-commit -> ../../scripts/pre-commit`) or a wrapper
//! that runs one (`exec ./tools/lint`); a config the user wrote may name a program by a path
//! in the worktree (`filter.tidy.clean = ./tools/clean.sh`, `alias.t = !sh tools/t.sh`). The
//! hook and the config stay as they were while the agent rewrites the script, which git runs
//! at the user's next commit or `git add`. Each such file inside the walked trees is a piece
//! too: compared by state, and aside when the launch changed it.
//!
//! What counts as naming a file: a hook's link target; a word of a hook's text that holds a
//! `/`; any word of a config value that git runs as a command. Words are taken relative to the
//! worktree's top, where git runs hooks and commands. A script that builds a path at run time
//! is not followed (docs/security.md).

use std::path::{Path, PathBuf};

use super::Walk;
use super::state::{Seen, observe};
use crate::config::git_config_text;

/// Largest hook text read for the paths it names.
const MAX_HOOK_BYTES: u64 = 1024 * 1024;

impl Walk<'_> {
    /// A configuration file — yours, unchanged or read-only to the launch — may name files the
    /// launch could change: an `include.path`/`includeIf.*.path` or a `core.hooksPath` inside the
    /// walked trees (a tracked `../.gitconfig`, husky's `.husky/_`). Those are compared too.
    pub(super) fn named_by(&mut self, path: &Path, bytes: &[u8], top: &Path, nesting: usize) {
        let base = path.parent().unwrap_or(Path::new("/"));
        for (key, value) in git_config_text::entries(&String::from_utf8_lossy(bytes)) {
            let include = key == "include.path" || (key.starts_with("includeif.") && key.ends_with(".path"));
            if include {
                if let Some(p) =
                    self.inside(expand_home(&value).map_or_else(|| base.join(&value), Into::into))
                {
                    self.config(&p, top, nesting + 1);
                }
            } else if key == "core.hookspath" {
                let named = expand_home(&value).map_or_else(|| top.join(&value), Into::into);
                if let Some(p) = self.inside(named) {
                    self.hooks(&p);
                    self.hook_programs(&p, top);
                }
            } else {
                self.command_programs(&key, &value, top);
            }
        }
    }

    /// `path` (its directory resolved, as the kernel does for git) when it lies in one of the
    /// walked trees.
    fn inside(&self, path: PathBuf) -> Option<PathBuf> {
        let real = path.parent()?.canonicalize().ok()?.join(path.file_name()?);
        self.roots.iter().any(|r| real.starts_with(r)).then_some(real)
    }

    /// The files the hooks in `hooks` link to or name, for a worktree whose top is `top`.
    pub(super) fn hook_programs(&mut self, hooks: &Path, top: &Path) {
        let Ok(entries) = std::fs::read_dir(hooks) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if name.ends_with(".sample") {
                continue;
            }
            if meta.file_type().is_symlink() {
                self.program(&path, &format!("hook {name} links to it"));
            } else if meta.is_file() && meta.len() <= MAX_HOOK_BYTES {
                let text = std::fs::read(&path).unwrap_or_default();
                let text = String::from_utf8_lossy(&text);
                for word in words(&text).filter(|w| w.contains('/')) {
                    self.program(&resolve(word, top), &format!("hook {name} names it"));
                }
            }
        }
    }

    /// The files the command `value` of config key `key` names, run from `top`.
    pub(super) fn command_programs(&mut self, key: &str, value: &str, top: &Path) {
        if !names_a_command(key, value) {
            return;
        }
        for word in words(value.strip_prefix('!').unwrap_or(value)) {
            self.program(&resolve(word, top), &format!("{key} names it"));
        }
    }

    /// `path` (links resolved) as a piece when it is a regular file inside the walked trees;
    /// aside when the launch changed it.
    fn program(&mut self, path: &Path, why: &str) {
        let Ok(real) = path.canonicalize() else {
            return;
        };
        if !self.roots.iter().any(|r| real.starts_with(r)) {
            return;
        }
        let Ok(meta) = std::fs::symlink_metadata(&real) else {
            return;
        };
        if meta.is_file() && self.changed(Seen::Piece, &real, observe(&real, &meta).0) {
            let what = format!("a program git runs ({why}) that the launch changed");
            self.report(real, what);
        }
    }
}

/// Whether git runs the value of `key` (lower-case section and name) as a command.
fn names_a_command(key: &str, value: &str) -> bool {
    let name = key.rsplit('.').next().unwrap_or(key);
    let section = key.split('.').next().unwrap_or(key);
    match section {
        "alias" => value.starts_with('!'),
        "core" => matches!(name, "fsmonitor" | "pager" | "editor" | "sshcommand" | "askpass"),
        "filter" => matches!(name, "clean" | "smudge" | "process"),
        "diff" => matches!(name, "textconv" | "command"),
        "merge" => name == "driver",
        "difftool" | "mergetool" => name == "cmd",
        "credential" => name == "helper",
        "gpg" => name == "program",
        "sequence" => name == "editor",
        "pager" | "interactive" => true,
        _ => false,
    }
}

/// The words of a shell text, split at blanks and shell punctuation, quotes dropped.
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| c.is_whitespace() || ";&|()<>=`$\"'".contains(c))
        .filter(|w| !w.is_empty() && *w != "." && *w != "..")
}

/// `word` as git would find the file: absolute, under home (`~/`), or from `top`.
fn resolve(word: &str, top: &Path) -> PathBuf {
    expand_home(word).unwrap_or_else(|| top.join(word))
}

/// `~/REST` with the home directory, as git expands configured paths.
fn expand_home(value: &str) -> Option<PathBuf> {
    let rest = value.strip_prefix("~/")?;
    Some(PathBuf::from(std::env::var_os("HOME")?).join(rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_known_by_their_keys() {
        assert!(names_a_command("filter.tidy.clean", "./t.sh"));
        assert!(names_a_command("alias.t", "!sh tools/t.sh"));
        assert!(!names_a_command("alias.co", "checkout"));
        assert!(names_a_command("diff.x.textconv", "x"));
        assert!(!names_a_command("user.name", "./t.sh"));
    }

    #[test]
    fn words_drop_quotes_and_shell_punctuation() {
        let w: Vec<_> = words("exec \"./tools/lint\" --config=./c.toml; cd .. && sh 'a b'").collect();
        assert_eq!(
            w,
            [
                "exec",
                "./tools/lint",
                "--config",
                "./c.toml",
                "cd",
                "sh",
                "a",
                "b"
            ]
        );
    }
}
