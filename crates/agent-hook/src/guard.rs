//! The built-in guard (`[agent_guard]`, docs/agent-hook-handlers.md): `deny` globs on the
//! shell commands of shell tools and `protect` path prefixes on the paths file-writing tools
//! write, checked on `pre_tool`.
//!
//! A deny pattern is matched against the whole command and against each simple command in it
//! (split at `;`, `&`, `|` and newlines, outside quotes), leading whitespace trimmed. It is a
//! tripwire for commands written plainly, not a sandbox: `eval`, variables or a script file get
//! past any pattern.

use crate::input::Normalised;

/// The guard of a launch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Guard {
    /// Shell command globs.
    pub deny: Vec<String>,
    /// Protected path prefixes.
    pub protect: Vec<String>,
}

/// What the guard says about one tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing to check (no shell command and no written path, or an empty guard).
    NotApplicable,
    /// Checked and allowed.
    Allow,
    /// Blocked, with the reason for the agent.
    Block(String),
}

impl Guard {
    /// Whether the guard has any rule.
    pub fn is_empty(&self) -> bool {
        self.deny.is_empty() && self.protect.is_empty()
    }

    /// Check one `pre_tool` call.
    pub fn check(&self, n: &Normalised) -> Verdict {
        if self.is_empty() {
            return Verdict::NotApplicable;
        }
        // Fail closed: a call the guard cannot see (an input cut at the size limit, not JSON) is
        // not let through.
        if let Some(e) = &n.input_error {
            return Verdict::Block(format!(
                "ags agent guard: {e}, so the guard cannot check this tool call; it is blocked"
            ));
        }
        if let Some(cmd) = n.shell_command().filter(|_| !self.deny.is_empty()) {
            let whole = cmd.trim().to_owned();
            let parts = std::iter::once(whole).chain(simple_commands(&cmd));
            for part in parts {
                if let Some(p) = self.deny.iter().find(|p| glob(p, &part)) {
                    return Verdict::Block(format!(
                        "ags agent guard: the command matches the deny pattern {p:?} ([agent_guard] deny); run something else or ask the user"
                    ));
                }
            }
            return Verdict::Allow;
        }
        let paths = n.write_paths();
        if paths.is_empty() || self.protect.is_empty() {
            return Verdict::NotApplicable;
        }
        for path in &paths {
            let abs = absolute(path, n.cwd.as_deref());
            if let Some(p) = self.protect.iter().find(|p| protects(p, &abs)) {
                return Verdict::Block(format!(
                    "ags agent guard: {path} is under the protected path {p:?} ([agent_guard] protect); leave it unchanged or ask the user"
                ));
            }
        }
        Verdict::Allow
    }
}

/// The simple commands of `cmd`: split at `;`, `&`, `|` and newlines outside quotes, trimmed,
/// empty ones dropped. Also drops a leading `(`, `{`, `!` or `then`/`do`-style keyword.
pub fn simple_commands(cmd: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let (mut single, mut double, mut escaped) = (false, false, false);
    for c in cmd.chars() {
        if escaped {
            escaped = false;
            cur.push(c);
            continue;
        }
        match c {
            '\\' if !single => {
                escaped = true;
                cur.push(c);
            }
            '\'' if !double => {
                single = !single;
                cur.push(c);
            }
            '"' if !single => {
                double = !double;
                cur.push(c);
            }
            ';' | '&' | '|' | '\n' | '(' | ')' | '{' | '}' | '`' if !single && !double => {
                out.push(std::mem::take(&mut cur));
            }
            c => cur.push(c),
        }
    }
    out.push(cur);
    out.into_iter()
        .map(|s| {
            let mut s = s.trim();
            for kw in ["!", "then ", "do ", "else ", "exec ", "command ", "sudo "] {
                s = s.strip_prefix(kw).unwrap_or(s).trim_start();
            }
            s.to_owned()
        })
        .filter(|s| !s.is_empty())
        .collect()
}

/// Glob match of the whole `text`: `*` any run of characters, `?` one character, everything
/// else literal.
pub fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// `path` made absolute against `cwd` and normalised lexically (`.` dropped, `..` applied).
pub fn absolute(path: &str, cwd: Option<&str>) -> String {
    let joined = if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("{}/{path}", cwd.unwrap_or("/"))
    };
    let mut parts: Vec<&str> = Vec::new();
    for c in joined.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    format!("/{}", parts.join("/"))
}

/// Whether the protect entry `prefix` covers the absolute, normalised `path`: an absolute entry
/// is a path prefix (whole components); a relative one matches its components anywhere in the
/// path (`.git/hooks` protects the hooks of every repository).
pub fn protects(prefix: &str, path: &str) -> bool {
    let want: Vec<&str> = prefix.split('/').filter(|c| !c.is_empty() && *c != ".").collect();
    let have: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    if want.is_empty() {
        return prefix.starts_with('/');
    }
    if prefix.starts_with('/') {
        return have.starts_with(&want);
    }
    have.windows(want.len()).any(|w| w == want.as_slice())
}
