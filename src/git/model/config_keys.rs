//! Which keys of a repository's git configuration file could make git run a program, judged
//! strictly: the file is parsed the way git's own parser (`config.c`) does, any line git would
//! refuse (or that this parser does not understand) makes the whole file suspect, and a key is
//! harmless only when it is on a short list of settings that never name a program
//! ([`harmless`]): what `git init`, `git clone`, `git submodule add` and `git worktree add`
//! write, and plain preferences. Everything else — `core.fsmonitor`, `core.hooksPath`,
//! `core.pager`, `include.path`, aliases, filters, diff and merge drivers, credential helpers,
//! `protocol.*.allow`, … — counts as running programs.
//!
//! Used on configuration the agent may have written (`workspace::git_inventory`); the user's own
//! configuration is never judged by it, only read by the same parser leniently ([`lenient`]).
//! Pure: text in, keys out.

/// One setting: its key (`section[.subsection].name`, section and name lower-cased, the
/// subsection as written) and its value as git decodes it (`None`: a key without `=`, true).
pub type Entry = (String, Option<Vec<u8>>);

/// Why a git configuration file cannot be read as git would: the line and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {what}")]
pub struct ConfigError {
    line: usize,
    what: &'static str,
}

/// The settings of a git configuration file, or why the file cannot be read as git would.
pub fn entries(text: &[u8]) -> Result<Vec<Entry>, ConfigError> {
    let mut out = Vec::new();
    Parser::new(text).run(&mut out)?;
    Ok(out)
}

/// The `(key, value)` settings of a git configuration file read leniently, for the host's own
/// configuration (`git::model::identity`) and for the paths a config names (a submodule's
/// `core.worktree`, includes, hooks): a line [`entries`] refuses is skipped (after a refused
/// section header, the keys up to the next header), a key without `=` is `"true"`.
pub(crate) fn lenient(text: &str) -> Vec<(String, String)> {
    let (mut parser, mut out) = (Parser::new(text.as_bytes()), Vec::new());
    while parser.run(&mut out).is_err() {
        // Skip the rest of the refused line, unless the refusal ended it.
        if parser.at > 0 && parser.bytes[parser.at - 1] != b'\n' {
            while parser.next().is_some_and(|c| c != b'\n') {}
        }
    }
    let text = |v: Vec<u8>| String::from_utf8_lossy(&v).into_owned();
    out.into_iter()
        .map(|(k, v)| (k, v.map_or_else(|| "true".into(), text)))
        .collect()
}

/// The keys of `text` that are not [`harmless`], or whose value makes git start a program
/// ([`runs_a_helper`]); every key could run a program when the file does not parse:
/// `["(unparsable: …)"]`.
pub fn risky_keys(text: &[u8]) -> Vec<String> {
    match entries(text) {
        Ok(entries) => {
            let mut out: Vec<String> = entries
                .into_iter()
                .filter_map(|(k, v)| {
                    if !harmless(&k) {
                        Some(k)
                    } else if is_url(&k) && v.as_deref().is_some_and(runs_a_helper) {
                        Some(format!("{k} (a URL git hands to a git-remote-* program)"))
                    } else {
                        None
                    }
                })
                .collect();
            out.dedup();
            out
        }
        Err(e) => vec![format!("(unparsable: {e})")],
    }
}

/// Keys whose value is a URL git fetches from or pushes to — a remote's name too: git takes a
/// name that no remote has for a URL (`branch.main.pushremote = /elsewhere/repo.git`).
pub fn is_url(key: &str) -> bool {
    let remote = key.starts_with("remote.") && (key.ends_with(".url") || key.ends_with(".pushurl"));
    let named = key.starts_with("branch.") && (key.ends_with(".remote") || key.ends_with(".pushremote"));
    remote || named || key == "remote.pushdefault" || (key.starts_with("submodule.") && key.ends_with(".url"))
}

/// Whether git runs a program of its own choosing for the URL `url`: `<helper>::<address>`
/// runs `git-remote-<helper>` (`ext::` runs any command), and a scheme git does not handle
/// itself (`foo://`) runs `git-remote-foo`, both looked up on `PATH`, which may hold a
/// directory of the workspace. Paths, `host:path` and the schemes git speaks itself do not.
pub fn runs_a_helper(url: &[u8]) -> bool {
    let text = String::from_utf8_lossy(url);
    let before_slash = text.split('/').next().unwrap_or("");
    if before_slash.contains("::") {
        return true;
    }
    let Some((scheme, _)) = text.split_once("://") else {
        return false;
    };
    let plain = scheme
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
    // Compared as git compares them: byte for byte (`HTTPS://` runs `git-remote-HTTPS`).
    let known = [
        "http", "https", "ftp", "ftps", "ssh", "git", "file", "git+ssh", "ssh+git",
    ];
    plain && !scheme.is_empty() && !known.contains(&scheme)
}

/// The names of `core.*` that run no program.
const CORE_KEYS: &[&str] = &[
    "repositoryformatversion",
    "filemode",
    "bare",
    "logallrefupdates",
    "ignorecase",
    "precomposeunicode",
    "symlinks",
    "worktree",
    "sparsecheckout",
    "sparsecheckoutcone",
    "autocrlf",
    "eol",
    "safecrlf",
    "quotepath",
    "untrackedcache",
    "splitindex",
    "commitgraph",
    "multipackindex",
    "abbrev",
    "compression",
    "loosecompression",
    "bigfilethreshold",
    "checkstat",
    "trustctime",
    "protecthfs",
    "protectntfs",
];
/// The names of `index.*` that run no program.
const INDEX_KEYS: &[&str] = &[
    "recordendofindexentries",
    "recordoffsettable",
    "sparse",
    "threads",
    "version",
    "skiphash",
];
/// The names of `gc.*` that run no program.
const GC_KEYS: &[&str] = &[
    "aggressivedepth",
    "aggressivewindow",
    "auto",
    "autopacklimit",
    "autodetach",
    "bigpackthreshold",
    "writecommitgraph",
    "logexpiry",
    "packrefs",
    "cruftpacks",
    "prunepackedobjects",
    "pruneexpire",
    "worktreepruneexpire",
    "reflogexpire",
    "reflogexpireunreachable",
    "rerereresolved",
    "rerereunresolved",
];
/// The names of `pack.*` that run no program.
const PACK_KEYS: &[&str] = &[
    "window",
    "depth",
    "windowmemory",
    "compression",
    "threads",
    "indexversion",
    "packsizelimit",
    "usebitmaps",
    "usesparse",
    "writebitmaps",
    "writebitmaphashcache",
    "writereverseindex",
    "readreverseindex",
    "allowpackreuse",
    "deltacachesize",
    "deltacachelimit",
];
/// The names of `status.*` that run no program.
const STATUS_KEYS: &[&str] = &[
    "relativepaths",
    "short",
    "branch",
    "aheadbehind",
    "displaycommentprefix",
    "renamelimit",
    "renames",
    "showstash",
    "showuntrackedfiles",
    "submodulesummary",
];
/// The names of `remote.<name>.*` that run no program.
const REMOTE_KEYS: &[&str] = &[
    "url",
    "pushurl",
    "fetch",
    "push",
    "tagopt",
    "prune",
    "prunetags",
    "mirror",
    "skipdefaultupdate",
    "skipfetchall",
    "followremotehead",
];
/// The names of `branch.<name>.*` that run no program.
const BRANCH_KEYS: &[&str] = &["remote", "merge", "rebase", "pushremote", "description"];
/// The names of `submodule.<name>.*` that run no program.
const SUBMODULE_KEYS: &[&str] = &[
    "url",
    "active",
    "branch",
    "fetchrecursesubmodules",
    "ignore",
    "shallow",
];

/// Whether git never runs a program because of `key` (lower-case section and name).
pub fn harmless(key: &str) -> bool {
    let Some((section, rest)) = key.split_once('.') else {
        return false;
    };
    let (sub, name) = match rest.rsplit_once('.') {
        Some((sub, name)) => (Some(sub), name),
        None => (None, rest),
    };
    match (section, sub) {
        ("core", None) => CORE_KEYS.contains(&name),
        // Not `partialclone`: git then fetches from the promisor remote on its own (a plain
        // `git status` does), reaching whatever URL the agent chose from the host.
        // Nor `refstorage`: a ref store the check cannot read (reftable) hides replace refs
        // and new tips from it (session-18 attack C5).
        ("extensions", None) => !matches!(name, "partialclone" | "refstorage"),
        ("user", None) => matches!(name, "name" | "email"),
        ("init", None) => name == "defaultbranch",
        // Whole sections only where every name picks a message or a colour; elsewhere names
        // one by one, so a name git adds later counts as running programs until listed here
        // (`gc.recentObjectsHook` is a command `git gc --auto` runs: session-14 attack F1).
        ("advice" | "color", None) => true,
        ("index", None) => INDEX_KEYS.contains(&name),
        ("gc", None) => GC_KEYS.contains(&name),
        ("pack", None) => PACK_KEYS.contains(&name),
        ("status", None) => STATUS_KEYS.contains(&name),
        ("feature", None) => matches!(name, "experimental" | "manyfiles"),
        ("clone", None) => matches!(name, "defaultremotename" | "rejectshallow" | "filtersubmodules"),
        ("lfs", None) => name == "repositoryformatversion",
        ("pull", None) => matches!(name, "rebase" | "ff"),
        ("push", None) => matches!(name, "default" | "autosetupremote"),
        ("fetch", None) => matches!(name, "prune" | "prunetags" | "writecommitgraph"),
        ("rerere", None) => matches!(name, "enabled" | "autoupdate"),
        ("submodule", None) => matches!(name, "active" | "recurse"),
        ("remote", Some(_)) => REMOTE_KEYS.contains(&name),
        ("branch", Some(_)) => BRANCH_KEYS.contains(&name),
        // Not `update`: `!command` there runs at `git submodule update`.
        ("submodule", Some(_)) => SUBMODULE_KEYS.contains(&name),
        _ => false,
    }
}

struct Parser<'a> {
    bytes: &'a [u8],
    at: usize,
    line: usize,
    section: Option<String>,
}

impl<'a> Parser<'a> {
    fn new(text: &'a [u8]) -> Self {
        Parser {
            bytes: text.strip_prefix(b"\xef\xbb\xbf").unwrap_or(text),
            at: 0,
            line: 1,
            section: None,
        }
    }

    /// The next character, `\r\n` read as `\n`; `None` at the end.
    fn next(&mut self) -> Option<u8> {
        let c = *self.bytes.get(self.at)?;
        self.at += 1;
        if c == b'\r' && self.bytes.get(self.at) == Some(&b'\n') {
            self.at += 1;
            return Some(b'\n');
        }
        if c == b'\n' {
            self.line += 1;
        }
        Some(c)
    }

    fn fail<T>(&self, what: &'static str) -> Result<T, ConfigError> {
        Err(ConfigError {
            line: self.line,
            what,
        })
    }

    /// The settings from here to the end into `out`, or the first refusal.
    fn run(&mut self, out: &mut Vec<Entry>) -> Result<(), ConfigError> {
        let mut comment = false;
        while let Some(c) = self.next() {
            match c {
                b'\n' => comment = false,
                _ if comment || is_space(c) => {}
                b'#' | b';' => comment = true,
                b'[' => {
                    self.section = None;
                    self.section = Some(self.header()?);
                }
                c if c.is_ascii_alphabetic() => {
                    if self.section.is_none() {
                        return self.fail("a key before any [section]");
                    }
                    let (name, value) = self.key(c)?;
                    let sec = self.section.as_deref().unwrap_or_default();
                    out.push((format!("{sec}.{name}"), value));
                }
                _ => return self.fail("not a key, a section or a comment"),
            }
        }
        Ok(())
    }

    /// After `[`: `name]`, `name "sub"]` or the old `name.sub]`.
    fn header(&mut self) -> Result<String, ConfigError> {
        let mut name = String::new();
        loop {
            match self.next() {
                Some(b']') if !name.is_empty() => return Ok(name),
                Some(c) if is_space(c) && !name.is_empty() => return self.subsection(name),
                Some(c) if c.is_ascii_alphanumeric() || c == b'-' || c == b'.' => {
                    name.push(c.to_ascii_lowercase() as char);
                }
                _ => return self.fail("a malformed section header"),
            }
        }
    }

    fn subsection(&mut self, mut name: String) -> Result<String, ConfigError> {
        let mut c = self.next();
        while c.is_some_and(is_space) {
            c = self.next();
        }
        if c != Some(b'"') {
            return self.fail("a malformed subsection");
        }
        let mut sub = Vec::new();
        loop {
            match self.next() {
                None | Some(b'\n') => return self.fail("an unterminated subsection"),
                Some(b'"') => break,
                Some(b'\\') => match self.next() {
                    None | Some(b'\n') => return self.fail("an unterminated subsection"),
                    Some(c) => sub.push(c),
                },
                Some(c) => sub.push(c),
            }
        }
        if self.next() != Some(b']') {
            return self.fail("a malformed subsection");
        }
        name.push('.');
        name.push_str(&String::from_utf8_lossy(&sub));
        Ok(name)
    }

    /// A key starting with `first`, and its value.
    fn key(&mut self, first: u8) -> Result<(String, Option<Vec<u8>>), ConfigError> {
        let mut name = String::from(first.to_ascii_lowercase() as char);
        let mut c = self.next();
        while let Some(k) = c.filter(|k| k.is_ascii_alphanumeric() || *k == b'-') {
            name.push(k.to_ascii_lowercase() as char);
            c = self.next();
        }
        while matches!(c, Some(b' ' | b'\t')) {
            c = self.next();
        }
        match c {
            None | Some(b'\n') => Ok((name, None)),
            Some(b'=') => Ok((name, Some(self.value()?))),
            Some(_) => self.fail("a key followed by something other than `=`"),
        }
    }

    /// A value as git parses it (`parse_value` in `config.c`): leading blanks dropped, blanks
    /// inside kept as spaces, trailing ones dropped, quotes removed, the escapes git knows
    /// decoded, a backslash at the end of a line continuing it; a newline inside quotes is an
    /// error.
    fn value(&mut self) -> Result<Vec<u8>, ConfigError> {
        let (mut quoted, mut comment, mut space) = (false, false, 0);
        let mut out = Vec::new();
        loop {
            let Some(c) = self.next() else {
                return match quoted {
                    true => self.fail("an unterminated quote"),
                    false => Ok(out),
                };
            };
            match c {
                b'\n' if quoted => return self.fail("an unterminated quote"),
                b'\n' => return Ok(out),
                _ if comment => continue,
                _ if is_space(c) && !quoted => {
                    space += usize::from(!out.is_empty());
                    continue;
                }
                b'#' | b';' if !quoted => {
                    comment = true;
                    continue;
                }
                _ => {}
            }
            out.extend(std::iter::repeat_n(b' ', std::mem::take(&mut space)));
            match c {
                b'\\' => match self.next() {
                    Some(b'\n') => {}
                    Some(b't') => out.push(b'\t'),
                    Some(b'b') => out.push(8),
                    Some(b'n') => out.push(b'\n'),
                    Some(e @ (b'\\' | b'"')) => out.push(e),
                    _ => return self.fail("an unknown escape in a value"),
                },
                b'"' => quoted = !quoted,
                c => out.push(c),
            }
        }
    }
}

/// git's `isspace`: space, tab, newline, carriage return.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

#[cfg(test)]
#[path = "config_keys_tests.rs"]
mod tests;
