//! An operation git left in progress in a git dir — `rebase-merge/`, `rebase-apply/`,
//! `sequencer/` — and what it runs when you continue it (`git rebase --continue`,
//! `git cherry-pick --continue`, which `git status` tells you to type): the `exec` lines of its
//! todo list run a shell command each, and a merge strategy other than git's own runs a
//! `git-merge-<name>` program found on `PATH`. Pure: bytes in, a verdict out.

/// The files of such a directory that can run something.
pub(super) const FILES: &[&str] = &["git-rebase-todo", "todo", "strategy", "opts"];

/// The directories.
pub(super) const DIRS: &[&str] = &["rebase-merge", "rebase-apply", "sequencer"];

/// The strategies git carries itself (`resolve` and `octopus` in its own exec path).
const OWN_STRATEGIES: &[&str] = &["ort", "recursive", "resolve", "octopus", "ours", "subtree"];

/// What the file `name` of an operation in progress would run, when anything.
pub(super) fn judge(name: &str, bytes: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(bytes);
    match name {
        "git-rebase-todo" | "todo" => text
            .lines()
            .map(str::trim_start)
            .find(|l| matches!(l.split_whitespace().next(), Some("exec" | "x")))
            .map(|_| "a todo list with exec lines, run by `git rebase --continue`".to_string()),
        "strategy" => foreign_strategy(text.trim()),
        "opts" => match crate::config::git_config_keys::entries(bytes) {
            Ok(entries) => entries
                .iter()
                .filter(|(k, _)| k == "options.strategy")
                .find_map(|(_, v)| foreign_strategy(String::from_utf8_lossy(v.as_deref()?).trim())),
            Err(e) => Some(format!("sequencer options git may read otherwise ({e})")),
        },
        _ => None,
    }
}

fn foreign_strategy(name: &str) -> Option<String> {
    (!name.is_empty() && !OWN_STRATEGIES.contains(&name))
        .then(|| "a merge strategy that runs a git-merge-* program when you continue".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_lines_and_foreign_strategies_are_found() {
        assert!(judge("git-rebase-todo", b"pick 123 x\n  exec touch /tmp/p\n").is_some());
        assert!(judge("todo", b"pick 1 a\nx make\n").is_some());
        assert!(judge("git-rebase-todo", b"pick 123 exec\n# exec x\n").is_none());
        assert!(judge("strategy", b"evil\n").is_some());
        assert!(judge("strategy", b"ort\n").is_none());
        assert!(judge("opts", b"[options]\n\tstrategy = evil\n").is_some());
        assert!(judge("opts", b"[options]\n\tstrategy = recursive\n\tsignoff = true\n").is_none());
    }
}
