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
/// Links followed from a named path.
const MAX_LINKS: usize = 8;

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
                for word in words(&uncommented(&text)).filter(|w| w.contains('/')) {
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

    /// `path` as named (its directory resolved, itself not followed) when it lies inside the
    /// walked trees, and each link on from it that does: each compared by state, aside when the
    /// launch changed it. A named script the agent replaced by a link (to a file in its state
    /// volume, outside the trees) is a change of the named path (session-14 attack A).
    fn program(&mut self, path: &Path, why: &str) {
        let mut next = self.inside(path.to_path_buf());
        for _ in 0..MAX_LINKS {
            let Some(named) = next.take() else {
                return;
            };
            let Ok(meta) = std::fs::symlink_metadata(&named) else {
                return;
            };
            if !meta.is_file() && !meta.file_type().is_symlink() {
                return;
            }
            self.program_piece(&named, &meta, why);
            if let Ok(target) = std::fs::read_link(&named) {
                let base = named.parent().unwrap_or(Path::new("/"));
                next = self.inside(base.join(target));
            }
        }
    }

    fn program_piece(&mut self, path: &Path, meta: &std::fs::Metadata, why: &str) {
        let now = observe(path, meta).0;
        if !self.changed(Seen::Piece, path, now.clone()) {
            return;
        }
        // Over the digest limit a file is never proven unchanged: the same file is named as
        // not compared rather than moved aside after every launch (session-14 attack D).
        let key = (Seen::Piece, path.to_path_buf());
        let same = self
            .before
            .and_then(|b| b.get(&key))
            .is_some_and(|b| b.same_file(&now));
        if now.unproven() && same && !self.full {
            let what = format!(
                "{}: a program git runs ({why}) too big to compare",
                path.display()
            );
            self.incomplete(what);
            return;
        }
        let what = format!("a program git runs ({why}) that the launch changed");
        self.report(path.into(), what);
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

/// A shell text without its comments (from a `#` that starts a word to the end of the line):
/// a path a comment mentions is not a program (session-14 attack C).
fn uncommented(text: &str) -> String {
    let line = |l: &str| {
        let cut = l
            .char_indices()
            .find(|&(i, c)| c == '#' && (i == 0 || l[..i].ends_with(char::is_whitespace)))
            .map_or(l.len(), |(i, _)| i);
        l[..cut].to_string()
    };
    text.lines().map(line).collect::<Vec<_>>().join("\n")
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
    fn comments_name_no_program() {
        let text = "#!/bin/sh\n# keep docs/usage.md in sync\nexec ./tools/lint # not ./x/y\necho a#b/c\n";
        let text = uncommented(text);
        let w: Vec<_> = words(&text).filter(|w| w.contains('/')).collect();
        assert_eq!(w, ["./tools/lint", "a#b/c"]);
    }

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
