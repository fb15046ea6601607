//! The files the programs git runs name (session-14 attack F2). A hook the user made may be a
//! link to a tracked script (`.git/hooks/pre-commit -> ../../scripts/pre-commit`) or a wrapper
//! that runs one (`exec ./tools/lint`); a config the user wrote may name a program by a path
//! in the worktree (`filter.tidy.clean = ./tools/clean.sh`, `alias.t = !sh tools/t.sh`). The
//! hook and the config stay as they were while the agent rewrites the script, which git runs
//! at the user's next commit or `git add`. Each such file inside the walked trees is a piece
//! too: compared by state, and aside when the launch changed it.
//!
//! What counts as naming a file: a hook's link target; a word of a hook's text that holds a
//! `/`, or follows a command that runs or reads its argument (`.`, `source`, `sh`, …); any word
//! of a config value that git runs as a command. Words are taken relative to the worktree's
//! top (where git runs hooks and commands), to the script's own directory, and to each
//! directory a `cd` in the text names; a `*`, `?` or `[…]` in a word's last component stands
//! for every file of that directory it matches. A named file the launch left unchanged is read
//! in turn, to [`MAX_DEPTH`] levels, for the files it sources or runs (session-14 second
//! attacker's B). A path a script builds from variables at run time is not followed
//! (docs/security.md).

use std::path::{Path, PathBuf};

use super::Walk;
use super::state::{Seen, observe};
use crate::git::model::config_keys;

/// Largest hook text read for the paths it names.
const MAX_HOOK_BYTES: u64 = 1024 * 1024;
/// Links followed from a named path.
const MAX_LINKS: usize = 8;
/// Levels of scripts read for the files they name: hook → script → sourced file → …
pub(super) const MAX_DEPTH: usize = 4;
/// Directories a script's words are taken from, at most (the top, its own, its `cd`s): a text
/// the agent wrote in an earlier launch must not make the check slow.
const MAX_BASES: usize = 16;
/// Linked worktrees of one git dir whose tops are compared.
const MAX_WORKTREES: usize = 256;
/// Paths one script names, at most.
const MAX_NAMED: usize = 4096;
/// Commands whose next word is a file they run or read, so named without a `/` too.
const RUNNERS: &[&str] = &[
    ".", "source", "sh", "bash", "dash", "zsh", "exec", "node", "python", "python3", "perl", "ruby",
];

impl Walk<'_> {
    /// A configuration file — yours, unchanged or read-only to the launch — may name files the
    /// launch could change: an `include.path`/`includeIf.*.path` or a `core.hooksPath` inside the
    /// walked trees (a tracked `../.gitconfig`, husky's `.husky/_`). Those are compared too.
    ///
    /// `tops`: every worktree the git dir serves (a relative path is taken from where git runs:
    /// the main worktree, each linked worktree, a submodule's checkout — session-18 attack A1).
    pub(super) fn named_by(&mut self, path: &Path, bytes: &[u8], tops: &[PathBuf], nesting: usize) {
        let base = path.parent().unwrap_or(Path::new("/"));
        for (key, value) in config_keys::lenient(&String::from_utf8_lossy(bytes)) {
            let include = key == "include.path" || (key.starts_with("includeif.") && key.ends_with(".path"));
            if include {
                if let Some(p) =
                    self.inside(expand_home(&value).map_or_else(|| base.join(&value), Into::into))
                {
                    self.config(&p, tops, nesting + 1);
                }
                continue;
            }
            for top in tops {
                if key == "core.hookspath" {
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
    }

    /// The tops of the worktrees git runs hooks and commands of the git dir `dir` in: the
    /// parent of a `.git`, the git dir itself otherwise; its `core.worktree` (a submodule's
    /// checkout); each linked worktree its `worktrees/*/gitdir` names; and every walked root
    /// (the launch's own checkout may be any of them). Read without following links at the
    /// last component, bounded like the rest of the walk.
    pub(super) fn tops(&self, dir: &Path) -> Vec<PathBuf> {
        let mut tops = vec![match dir.file_name() {
            Some(n) if n == ".git" => dir.parent().unwrap_or(dir).to_path_buf(),
            _ => dir.to_path_buf(),
        }];
        let small = |p: &Path| {
            use std::io::Read;
            let mut bytes = Vec::new();
            crate::fsutil::open_nonblocking(p, false)
                .ok()?
                .take(64 * 1024)
                .read_to_end(&mut bytes)
                .ok()?;
            Some(String::from_utf8_lossy(&bytes).trim_end().to_string())
        };
        if let Some(text) = small(&dir.join("config")) {
            let worktree = config_keys::lenient(&text)
                .into_iter()
                .rfind(|(k, _)| k == "core.worktree");
            if let Some((_, v)) = worktree {
                tops.push(crate::safepath::normalize(&dir.join(v)));
            }
        }
        // A worktree entry itself (`worktrees/NAME`: its `config.worktree` may set a hooks
        // path), and each entry of a repository's `worktrees/`: the checkout `gitdir` names.
        let linked = std::fs::read_dir(dir.join("worktrees"))
            .into_iter()
            .flatten()
            .flatten();
        let linked = linked.take(MAX_WORKTREES).map(|e| e.path());
        for wt in std::iter::once(dir.to_path_buf()).chain(linked) {
            if let Some(gitdir) = small(&wt.join("gitdir")) {
                let named = crate::safepath::normalize(&wt.join(gitdir));
                tops.extend(named.parent().map(Path::to_path_buf));
            }
        }
        tops.extend(self.roots.iter().cloned());
        tops.sort();
        tops.dedup();
        tops
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
                self.program(&path, &format!("hook {name} links to it"), top, 0);
            } else if meta.is_file() && !self.changed(Seen::Piece, &path, observe(&path, &meta).0) {
                // A changed hook is named itself; its new text names nothing to compare.
                self.script_programs(&path, top, &format!("hook {name} names it"), 1);
            }
        }
    }

    /// The files the command `value` of config key `key` names, run from `top`.
    pub(super) fn command_programs(&mut self, key: &str, value: &str, top: &Path) {
        if !names_a_command(key, value) {
            return;
        }
        for word in words(value.strip_prefix('!').unwrap_or(value)) {
            for path in expand(&resolve(word, top)) {
                self.program(&path, &format!("{key} names it"), top, 1);
            }
        }
    }

    /// The files the shell text of `script` (a hook, or a file one names) sources or runs,
    /// `depth` levels below the hook or config that named the first.
    fn script_programs(&mut self, script: &Path, top: &Path, why: &str, depth: usize) {
        let Ok(meta) = std::fs::metadata(script) else {
            return;
        };
        if !meta.is_file() || meta.len() > MAX_HOOK_BYTES {
            return;
        }
        let text = std::fs::read(script).unwrap_or_default();
        let dir = script.parent().unwrap_or(top);
        for path in named_paths(&String::from_utf8_lossy(&text), top, dir) {
            self.program(&path, why, top, depth);
        }
    }

    /// `path` as named (its directory resolved, itself not followed) when it lies inside the
    /// walked trees, and each link on from it that does: each compared by state, aside when the
    /// launch changed it. A named script the agent replaced by a link (to a file in its state
    /// volume, outside the trees) is a change of the named path (session-14 attack A). A file
    /// at the end that the launch left as it was is read for the files it names in turn.
    fn program(&mut self, path: &Path, why: &str, top: &Path, depth: usize) {
        if let Some(link) = self.link_on_the_way(path)
            && let Ok(meta) = std::fs::symlink_metadata(&link)
            && self.programs.insert(link.clone())
        {
            self.program_piece(&link, &meta, &format!("{why}; a directory on its way"));
        }
        let mut next = self.inside(path.to_path_buf());
        let mut unchanged = true;
        let mut end = None;
        for _ in 0..MAX_LINKS {
            let Some(named) = next.take() else {
                break;
            };
            if !self.programs.insert(named.clone()) {
                return;
            }
            let Ok(meta) = std::fs::symlink_metadata(&named) else {
                break;
            };
            if !meta.is_file() && !meta.file_type().is_symlink() {
                break;
            }
            unchanged &= self.program_piece(&named, &meta, why);
            match std::fs::read_link(&named) {
                Ok(target) => {
                    let base = named.parent().unwrap_or(Path::new("/"));
                    next = self.inside(base.join(target));
                }
                Err(_) => end = Some(named),
            }
        }
        if let Some(file) = end
            && unchanged
            && depth < MAX_DEPTH
        {
            let why = format!("{why}, through {}", file.display());
            self.script_programs(&file, top, &why, depth + 1);
        }
    }

    /// The first symbolic link on the way from a walked root to `path`, taken as written: a
    /// named script's directory replaced by a link leads out of the trees, where [`Self::inside`]
    /// finds nothing to compare (session-15 attack S15-G3). The link is a piece itself.
    fn link_on_the_way(&self, path: &Path) -> Option<PathBuf> {
        let lexical = crate::safepath::normalize(path);
        let root = self.roots.iter().find(|r| lexical.starts_with(r))?;
        let mut at = root.clone();
        for part in lexical.strip_prefix(root).ok()?.parent()?.components() {
            at.push(part);
            if std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
                return Some(at);
            }
        }
        None
    }

    /// Whether the piece at `path` is as the inventory holds it; named when not.
    fn program_piece(&mut self, path: &Path, meta: &std::fs::Metadata, why: &str) -> bool {
        let now = observe(path, meta).0;
        if !self.changed(Seen::Piece, path, now.clone()) {
            return true;
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
            return false;
        }
        let what = format!("a program git runs ({why}) that the launch changed");
        self.report(path.into(), what);
        false
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
        .filter(|w| !w.is_empty())
}

/// `word` as git would find the file: absolute, under home (`~/`), or from `top`.
fn resolve(word: &str, top: &Path) -> PathBuf {
    expand_home(word).unwrap_or_else(|| top.join(word))
}

/// The paths a script's `text` names: each word that holds a `/` or follows one of
/// [`RUNNERS`], from `top`, from the script's directory `dir` (`"$(dirname "$0")/x"` leaves
/// the word `/x`) and from each directory a `cd` or `pushd` names; globs expanded.
fn named_paths(text: &str, top: &Path, dir: &Path) -> Vec<PathBuf> {
    let text = uncommented(text);
    let words: Vec<&str> = words(&text).collect();
    let mut bases = vec![top.to_path_buf(), dir.to_path_buf()];
    for pair in words.windows(2) {
        if (pair[0] == "cd" || pair[0] == "pushd") && bases.len() < MAX_BASES {
            bases.push(resolve(pair[1], top));
        }
    }
    let mut out = Vec::new();
    for (i, word) in words.iter().enumerate() {
        if out.len() >= MAX_NAMED {
            break;
        }
        let runs = i > 0 && RUNNERS.contains(&words[i - 1]);
        if !word.contains('/') && !runs {
            continue;
        }
        for base in &bases {
            let path = expand_home(word).unwrap_or_else(|| base.join(word.trim_start_matches('/')));
            out.extend(expand(&path));
        }
        if word.starts_with('/') {
            out.extend(expand(Path::new(word)));
        }
    }
    out
}

/// `path` itself, or with a `*`, `?` or `[…]` in its last component every entry of its
/// directory that matches (a class counts as any one character: more is compared, not less).
fn expand(path: &Path) -> Vec<PathBuf> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
        return vec![path.to_path_buf()];
    };
    if !name.contains(['*', '?', '[']) {
        return vec![path.to_path_buf()];
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| matches(name.as_bytes(), n.as_bytes()))
        })
        .map(|e| e.path())
        .collect()
}

/// Whether `name` matches the shell pattern `pat` (`*`, `?`, a `[…]` class as any one byte),
/// in time linear in both (a star backtracks only to the last star).
fn matches(pat: &[u8], name: &[u8]) -> bool {
    #[derive(PartialEq)]
    enum Tok {
        Star,
        One,
        Byte(u8),
    }
    let mut toks = Vec::new();
    let mut i = 0;
    while i < pat.len() {
        toks.push(match pat[i] {
            b'*' => Tok::Star,
            b'?' => Tok::One,
            b'[' => {
                i += pat[i..].iter().position(|&c| c == b']').unwrap_or(0);
                Tok::One
            }
            c => Tok::Byte(c),
        });
        i += 1;
    }
    let (mut p, mut n, mut star, mut mark) = (0, 0, None, 0);
    while n < name.len() {
        if p < toks.len() && (toks[p] == Tok::One || toks[p] == Tok::Byte(name[n])) {
            p += 1;
            n += 1;
        } else if p < toks.len() && toks[p] == Tok::Star {
            star = Some(p);
            mark = n;
            p += 1;
        } else if let Some(s) = star {
            p = s + 1;
            mark += 1;
            n = mark;
        } else {
            return false;
        }
    }
    toks[p..].iter().all(|t| *t == Tok::Star)
}

/// `~/REST` with the home directory, as git expands configured paths.
fn expand_home(value: &str) -> Option<PathBuf> {
    let rest = value.strip_prefix("~/")?;
    Some(PathBuf::from(std::env::var_os("HOME")?).join(rest))
}

#[cfg(test)]
#[path = "programs_tests.rs"]
mod tests;
