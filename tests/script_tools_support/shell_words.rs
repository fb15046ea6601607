//! The external commands a bash script calls, found by a small lexer: the first word of every
//! simple command (after assignments and redirections) in the script, in command and process
//! substitutions (also inside double quotes, `${…}` and array literals), and the commands that
//! wrappers such as `sudo`, `env`, `exec`, `setsid`, `timeout`, `xargs` or `as_user` run, and the
//! string given to `sh -c` / `bash -c`. Other quoted text is data (awk and jq programs);
//! here-document bodies and arithmetic are skipped; functions the script defines are not commands.
//! Not a shell parser: it only needs to be right for the way this repository writes scripts, and
//! the unit tests in tests/offline/script_tools.rs pin that down.

use super::lexer::{Tok, lex};
use std::collections::BTreeSet;

/// Bash keywords and builtins: never external commands.
const BUILTINS: &[&str] = &[
    "!",
    ".",
    ":",
    "[",
    "[[",
    "]]",
    "alias",
    "bg",
    "bind",
    "break",
    "builtin",
    "caller",
    "case",
    "cd",
    "command",
    "compgen",
    "complete",
    "continue",
    "declare",
    "dirs",
    "disown",
    "do",
    "done",
    "echo",
    "elif",
    "else",
    "enable",
    "esac",
    "eval",
    "exec",
    "exit",
    "export",
    "false",
    "fc",
    "fg",
    "fi",
    "for",
    "function",
    "getopts",
    "hash",
    "help",
    "history",
    "if",
    "in",
    "jobs",
    "kill",
    "let",
    "local",
    "logout",
    "mapfile",
    "popd",
    "printf",
    "pushd",
    "pwd",
    "read",
    "readarray",
    "readonly",
    "return",
    "select",
    "set",
    "shift",
    "shopt",
    "source",
    "suspend",
    "test",
    "then",
    "time",
    "times",
    "trap",
    "true",
    "type",
    "typeset",
    "ulimit",
    "umask",
    "unalias",
    "unset",
    "until",
    "wait",
    "while",
    "{",
    "}",
];

/// Words after which the next word starts a command.
const PREFIX_KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "do", "while", "until", "!", "{", "}", "fi", "done", "time",
];

/// Commands that run the command after their options (and after N more words).
fn wrapper(word: &str) -> Option<usize> {
    match word {
        "sudo" | "exec" | "nohup" | "setsid" | "xargs" | "env" | "setpriv" | "command" => Some(0),
        "priv" => Some(0),    // scripts/setup-podman: root directly or through sudo
        "timeout" => Some(1), // the duration
        "as_user" => Some(1), // scripts/lib.sh: the user
        _ => None,
    }
}

/// Every external command `script` calls, less the functions it defines itself.
pub fn command_words(script: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    scan(script, &mut found);
    let defined = defined_functions(script);
    found.retain(|w| !defined.contains(w) && !BUILTINS.contains(&w.as_str()));
    found
}

/// The names of the functions `script` defines (`name() {`, `function name`).
pub fn defined_functions(script: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in script.lines() {
        let t = line.trim_start();
        let t = t.strip_prefix("function ").unwrap_or(t);
        if let Some(i) = t.find("()") {
            let name = t[..i].trim();
            if !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-".contains(c))
            {
                names.insert(name.to_string());
            }
        }
    }
    names
}

fn scan(code: &str, found: &mut BTreeSet<String>) {
    let mut nested = Vec::new();
    let toks = lex(code, &mut nested);
    walk(&toks, found, &mut nested);
    for inner in nested {
        scan(&inner, found);
    }
}

/// Collects the command words of `toks`; `sh -c` strings go to `nested`.
fn walk(toks: &[Tok], found: &mut BTreeSet<String>, nested: &mut Vec<String>) {
    let mut cases: Vec<bool> = Vec::new(); // per open case: whether a pattern comes next
    let mut i = 0;
    let mut at_start = true;
    while i < toks.len() {
        let word = match &toks[i] {
            Tok::Sep(s) => {
                if *s == ";;"
                    && let Some(p) = cases.last_mut()
                {
                    *p = true;
                }
                at_start = true;
                i += 1;
                continue;
            }
            Tok::Word(w) => w.as_str(),
        };
        if !at_start {
            i += 1;
            continue;
        }
        if word == "esac" {
            cases.pop();
            i += 1;
            continue;
        }
        if cases.last() == Some(&true) {
            // A case clause's pattern, up to its `)`.
            while i < toks.len() && toks[i] != Tok::Sep(")") {
                i += 1;
            }
            *cases.last_mut().expect("an open case") = false;
            i += 1;
            continue;
        }
        match word {
            "case" => {
                while i < toks.len() && toks[i] != Tok::Word("in".into()) {
                    i += 1;
                }
                cases.push(true);
                i += 1;
            }
            "for" | "select" => {
                // `for NAME in WORDS`, `for ((…))`: no command before the separator.
                while i < toks.len() && !matches!(toks[i], Tok::Sep(";" | "\n")) {
                    i += 1;
                }
            }
            "[[" => {
                while i < toks.len() && toks[i] != Tok::Word("]]".into()) {
                    i += 1;
                }
                i += 1;
                at_start = false;
            }
            w if PREFIX_KEYWORDS.contains(&w) => i += 1,
            w if is_assignment(w) || is_redirection(w) => {
                i += if w
                    .trim_start_matches(|c: char| c.is_ascii_digit() || "<>&".contains(c))
                    .is_empty()
                    && is_redirection(w)
                {
                    2
                } else {
                    1
                };
            }
            _ => {
                i = command_at(toks, i, found, nested);
                at_start = false;
            }
        }
    }
}

fn is_assignment(w: &str) -> bool {
    let Some(eq) = w.find('=') else { return false };
    let name = w[..eq].trim_end_matches('+');
    let name = name.split('[').next().unwrap_or(name);
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_redirection(w: &str) -> bool {
    w.trim_start_matches(|c: char| c.is_ascii_digit())
        .starts_with(['<', '>', '&'])
}

/// Records the command at `toks[i]`, and through wrappers the command they run; returns the
/// index of the separator ending the simple command.
fn command_at(toks: &[Tok], mut i: usize, found: &mut BTreeSet<String>, nested: &mut Vec<String>) -> usize {
    let mut wrapped = false; // after a wrapper: skip its options and assignments
    let mut skip = 0; // words a wrapper takes before the command
    let mut shell = false; // after sh/bash: the string after -c is code
    while let Some(Tok::Word(w)) = toks.get(i) {
        i += 1;
        if shell {
            if let Some(code) = w.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')) {
                nested.push(code.to_string());
            }
            continue;
        }
        if wrapped && (w.starts_with('-') || is_assignment(w)) {
            continue;
        }
        if skip > 0 {
            skip -= 1;
            continue;
        }
        if is_redirection(w) {
            continue;
        }
        if is_array_expansion(w) {
            wrapped = true; // "${sudo_cmd[@]}" cmd …: a prefix of words
            continue;
        }
        let Some(name) = command_name(w) else { break };
        if let Some(n) = wrapper(&name) {
            if !matches!(name.as_str(), "exec" | "priv" | "as_user" | "command") {
                found.insert(name);
            }
            wrapped = true;
            skip = n;
            continue;
        }
        shell = matches!(name.as_str(), "sh" | "bash");
        found.insert(name);
        if !shell {
            break;
        }
    }
    while let Some(Tok::Word(_)) = toks.get(i) {
        i += 1;
    }
    i
}

/// `"${NAME[@]}"`: an array used as the first words of a command.
fn is_array_expansion(w: &str) -> bool {
    let w = w.trim_matches('"');
    w.starts_with("${") && w.ends_with("[@]}") && !w[2..w.len() - 4].contains(['$', '{', '}'])
}

/// The command a plain word names (an absolute path's last part); None for expansions, quoted
/// words, relative paths and options.
fn command_name(w: &str) -> Option<String> {
    if w.is_empty() || w.contains(['$', '\'', '"', '`', '\\', '*', '?']) || w.starts_with("./") {
        return None;
    }
    let name = if w.starts_with('/') {
        w.rsplit('/').next()?
    } else {
        w
    };
    let ok = !name.is_empty()
        && !name.starts_with('-')
        && !name.chars().all(|c| c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._+-[".contains(c))
        && (!w.contains('/') || w.starts_with('/'));
    ok.then(|| name.to_string())
}
