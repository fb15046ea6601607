//! The host's effective git identity (`[git] identity`, on by default): `user.name`,
//! `user.email` and, for SSH signing, `user.signingkey`, `gpg.format`, `commit.gpgsign` and
//! `tag.gpgsign`, read by parsing the host's git configuration files the way `git config --get`
//! in the workdir would (system, global, then the repository's own, with `include.path` and
//! `includeIf "gitdir:…"`/`"gitdir/i:…"`/`"onbranch:…"`; the last value wins). Nothing else of
//! the host's configuration reaches the agent: it can name host helpers and paths.
//!
//! Signing is forwarded only when it can work in the container: `gpg.format = ssh`, a public
//! key (a `key::` literal, a literal `ssh-…` key, or a `.pub` file whose one line is read here:
//! a private key file is never read) and the host's ssh-agent forwarded (`--ssh-agent`), which
//! holds the private key. Otherwise the signing settings are left out and [`GitIdentity::note`]
//! says why, so that `git commit` in the container does not fail on a missing `gpg`.
//!
//! The repository's own configuration (`config`, `config.worktree`) lies in the workspace, which
//! the agent can write: it is read without following a symbolic link and without its includes,
//! and only `user.name`, `user.email` and the two `*.gpgsign` switches are taken from it, so that
//! no value the agent wrote there makes `ags` read a host file (a `user.signingkey` path, an
//! `include.path`). Per-repository signing keys are not forwarded: set them in your global
//! configuration.
//!
//! I/O: reads the configuration files (regular files, at most [`MAX_FILE_BYTES`] each, opened
//! without blocking) and the repository's `HEAD` for `onbranch:`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::config_keys::lenient;

/// Largest configuration file read.
pub const MAX_FILE_BYTES: usize = 1024 * 1024;
/// `include.path` nesting limit (git's own is 10).
const MAX_INCLUDE_DEPTH: usize = 10;

/// What reaches the agent (shown in `ags plan --json`; nothing here is secret).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct GitIdentity {
    /// `user.name`.
    pub name: Option<String>,
    /// `user.email`.
    pub email: Option<String>,
    /// `user.signingkey` as forwarded (a public key, `key::…`).
    pub signing_key: Option<String>,
    /// `gpg.format` (only `ssh` is forwarded).
    pub gpg_format: Option<String>,
    /// `commit.gpgsign`.
    pub commit_gpgsign: Option<bool>,
    /// `tag.gpgsign`.
    pub tag_gpgsign: Option<bool>,
    /// Why the host's signing settings were left out, when they were.
    pub note: Option<String>,
}

impl GitIdentity {
    /// The configuration as `(key, value)` pairs, in a fixed order.
    pub fn config(&self) -> Vec<(&'static str, String)> {
        let b = |v: bool| if v { "true" } else { "false" }.to_string();
        [
            ("user.name", self.name.clone()),
            ("user.email", self.email.clone()),
            ("user.signingkey", self.signing_key.clone()),
            ("gpg.format", self.gpg_format.clone()),
            ("commit.gpgsign", self.commit_gpgsign.map(b)),
            ("tag.gpgsign", self.tag_gpgsign.map(b)),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect()
    }

    /// Whether there is anything to forward.
    pub fn is_empty(&self) -> bool {
        self.config().is_empty()
    }
}

/// Where to look: the workdir, the home directory and the environment variables git reads
/// (`GIT_CONFIG_NOSYSTEM`, `GIT_CONFIG_SYSTEM`, `GIT_CONFIG_GLOBAL`, `XDG_CONFIG_HOME`).
pub struct Lookup<'a> {
    /// The launch's workdir (the repository is found from here, like git does).
    pub workdir: &'a Path,
    /// The user's home directory.
    pub home: &'a Path,
    /// The environment.
    pub env: &'a dyn Fn(&str) -> Option<String>,
}

/// The identity to forward, given whether the ssh-agent is forwarded.
pub fn resolve(lookup: &Lookup<'_>, ssh_agent: bool) -> GitIdentity {
    let values = effective(lookup);
    let get = |k: &str| values.get(k).cloned().filter(|v| single_line(v));
    let mut id = GitIdentity {
        name: get("user.name"),
        email: get("user.email"),
        ..Default::default()
    };
    let wants_signing = ["commit.gpgsign", "tag.gpgsign"]
        .iter()
        .any(|k| get(k).as_deref().and_then(parse_bool) == Some(true));
    let format = get("gpg.format").map(|f| f.to_ascii_lowercase());
    let key = get("user.signingkey");
    if format.as_deref() == Some("ssh") {
        match key.as_deref().map(|k| public_key(k, lookup.home)) {
            Some(Ok(literal)) if ssh_agent => {
                id.signing_key = Some(literal);
                id.gpg_format = Some("ssh".into());
                id.commit_gpgsign = get("commit.gpgsign").as_deref().and_then(parse_bool);
                id.tag_gpgsign = get("tag.gpgsign").as_deref().and_then(parse_bool);
            }
            Some(Ok(_)) => {
                id.note = Some(
                    "SSH signing is not forwarded without the ssh-agent (--ssh-agent or [git] ssh_agent = true), which holds the key".into(),
                );
            }
            Some(Err(why)) => id.note = Some(format!("SSH signing is not forwarded: {why}")),
            None if wants_signing => {
                id.note = Some("SSH signing is not forwarded: user.signingkey is not set".into());
            }
            None => {}
        }
    } else if wants_signing {
        id.note = Some(format!(
            "commit signing with gpg.format = {} is not forwarded (only SSH signing through the forwarded ssh-agent is); commits in the container are unsigned",
            format.as_deref().unwrap_or("openpgp")
        ));
    }
    id
}

/// Why `user.signingkey` is not a public key that can be forwarded.
#[derive(Debug, thiserror::Error)]
enum SigningKeyError {
    #[error("user.signingkey is a key:: literal that is not a public key")]
    NotPublicLiteral,
    #[error("user.signingkey {0} is not an absolute path")]
    Relative(String),
    #[error("the public key {} cannot be read ({error})", path.display())]
    Unreadable { path: PathBuf, error: std::io::Error },
    #[error("{} does not hold one public key", .0.display())]
    NotOneKey(PathBuf),
}

/// `user.signingkey` as a public key literal git accepts (`key::…`).
fn public_key(value: &str, home: &Path) -> Result<String, SigningKeyError> {
    if let Some(rest) = value.strip_prefix("key::") {
        return is_public_key_line(rest)
            .then(|| value.to_string())
            .ok_or(SigningKeyError::NotPublicLiteral);
    }
    if is_public_key_line(value) {
        return Ok(format!("key::{value}"));
    }
    let path = match value.strip_prefix("~/") {
        Some(rest) => home.join(rest),
        None => PathBuf::from(value),
    };
    if !path.is_absolute() {
        return Err(SigningKeyError::Relative(value.into()));
    }
    // A private key file is never read: only `X.pub` (git's `-f X` finds the agent's key).
    let pub_path = match path.extension().is_some_and(|e| e == "pub") {
        true => path,
        false => PathBuf::from(format!("{}.pub", path.display())),
    };
    let text = crate::fsutil::read_small_text_nofollow(&pub_path, 16 * 1024).map_err(|e| {
        SigningKeyError::Unreadable {
            path: pub_path.clone(),
            error: e,
        }
    })?;
    let line = text.trim();
    if is_public_key_line(line) {
        Ok(format!("key::{line}"))
    } else {
        Err(SigningKeyError::NotOneKey(pub_path))
    }
}

fn is_public_key_line(s: &str) -> bool {
    let s = s.trim();
    single_line(s)
        && ["ssh-", "ecdsa-", "sk-ssh-", "sk-ecdsa-"]
            .iter()
            .any(|p| s.starts_with(p))
        && s.split_whitespace().count() >= 2
}

fn single_line(s: &str) -> bool {
    !s.is_empty() && !s.contains(['\0', '\n', '\r'])
}

/// git's boolean spellings.
pub fn parse_bool(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "1" => Some(true),
        "false" | "no" | "off" | "0" | "" => Some(false),
        _ => None,
    }
}

/// The repository the workdir belongs to: its git dir and common dir.
struct Repo {
    git_dir: PathBuf,
    common_dir: PathBuf,
}

fn find_repo(workdir: &Path) -> Option<Repo> {
    let mut dir = Some(workdir);
    while let Some(d) = dir {
        let dot_git = d.join(".git");
        if let Ok(meta) = std::fs::symlink_metadata(&dot_git) {
            let git_dir = if meta.is_dir() {
                dot_git
            } else {
                super::guard::linked_git_dir(&dot_git).ok()?
            };
            let common_dir = super::guard::common_dir(&git_dir).ok()?;
            return Some(Repo { git_dir, common_dir });
        }
        dir = d.parent();
    }
    None
}

/// The effective values (lower-case keys; last one wins) of the keys this module reads.
fn effective(lookup: &Lookup<'_>) -> BTreeMap<String, String> {
    let env = lookup.env;
    let mut parser = Parser {
        home: lookup.home,
        repo: find_repo(lookup.workdir),
        values: BTreeMap::new(),
    };
    let nosystem = env("GIT_CONFIG_NOSYSTEM")
        .as_deref()
        .and_then(parse_bool)
        .unwrap_or(false);
    if !nosystem {
        let system = env("GIT_CONFIG_SYSTEM").unwrap_or_else(|| "/etc/gitconfig".into());
        parser.file(Path::new(&system), 0);
    }
    match env("GIT_CONFIG_GLOBAL") {
        Some(g) => parser.file(Path::new(&g), 0),
        None => {
            let xdg = env("XDG_CONFIG_HOME")
                .filter(|x| x.starts_with('/'))
                .map(PathBuf::from)
                .unwrap_or_else(|| lookup.home.join(".config"));
            parser.file(&xdg.join("git/config"), 0);
            parser.file(&lookup.home.join(".gitconfig"), 0);
        }
    }
    if let Some(repo) = &parser.repo {
        let (common, git_dir) = (repo.common_dir.clone(), repo.git_dir.clone());
        parser.repository_file(&common.join("config"));
        let worktree_config = parser
            .values
            .get("extensions.worktreeconfig")
            .and_then(|v| parse_bool(v))
            .unwrap_or(false);
        if worktree_config {
            parser.repository_file(&git_dir.join("config.worktree"));
        }
    }
    parser.values
}

/// The keys a repository's own configuration may set here. It lies in the workspace, which the
/// agent can write: its values reach only the container (never a path `ags` reads on the host,
/// such as a `user.signingkey` file or an `include.path`).
const REPOSITORY_KEYS: &[&str] = &[
    "user.name",
    "user.email",
    "commit.gpgsign",
    "tag.gpgsign",
    "extensions.worktreeconfig",
];

struct Parser<'a> {
    home: &'a Path,
    repo: Option<Repo>,
    values: BTreeMap<String, String>,
}

impl Parser<'_> {
    fn file(&mut self, path: &Path, depth: usize) {
        if depth > MAX_INCLUDE_DEPTH {
            return;
        }
        let Ok(text) = read_config(path) else { return };
        let dir = path.parent().unwrap_or(Path::new("/")).to_path_buf();
        for (key, value) in lenient(&text) {
            let include = key == "include.path"
                || key
                    .strip_prefix("includeif.")
                    .and_then(|rest| rest.strip_suffix(".path"))
                    .is_some_and(|cond| self.condition(cond, &dir));
            if include {
                if let Some(target) = self.include_path(&value, &dir) {
                    self.file(&target, depth + 1);
                }
            } else {
                self.values.insert(key, value);
            }
        }
    }

    /// A configuration file of the repository (agent-writable): read without following a
    /// symbolic link, no includes, only [`REPOSITORY_KEYS`].
    fn repository_file(&mut self, path: &Path) {
        let Ok(text) = crate::fsutil::read_small_text_nofollow(path, MAX_FILE_BYTES) else {
            return;
        };
        for (key, value) in lenient(&text) {
            if REPOSITORY_KEYS.contains(&key.as_str()) {
                self.values.insert(key, value);
            }
        }
    }

    fn include_path(&self, value: &str, dir: &Path) -> Option<PathBuf> {
        if value.is_empty() {
            return None;
        }
        Some(match value.strip_prefix("~/") {
            Some(rest) => self.home.join(rest),
            None => dir.join(value),
        })
    }

    /// An `includeIf` condition (the subsection, original case kept in `cond`).
    fn condition(&self, cond: &str, dir: &Path) -> bool {
        let Some(repo) = &self.repo else { return false };
        if let Some(p) = cond.strip_prefix("gitdir:") {
            return self.gitdir_matches(p, dir, &repo.git_dir, false);
        }
        if let Some(p) = cond.strip_prefix("gitdir/i:") {
            return self.gitdir_matches(p, dir, &repo.git_dir, true);
        }
        if let Some(p) = cond.strip_prefix("onbranch:") {
            let head =
                crate::fsutil::read_small_text_nofollow(&repo.git_dir.join("HEAD"), 4096).unwrap_or_default();
            let Some(branch) = head.trim().strip_prefix("ref: refs/heads/") else {
                return false;
            };
            let pattern = if p.ends_with('/') {
                format!("{p}**")
            } else {
                p.to_string()
            };
            return wildmatch(pattern.as_bytes(), branch.as_bytes());
        }
        false
    }

    fn gitdir_matches(&self, pattern: &str, dir: &Path, git_dir: &Path, fold: bool) -> bool {
        let mut p = if let Some(rest) = pattern.strip_prefix("~/") {
            format!("{}/{rest}", self.home.display())
        } else if let Some(rest) = pattern.strip_prefix("./") {
            format!("{}/{rest}", dir.display())
        } else if pattern.starts_with('/') {
            pattern.to_string()
        } else {
            format!("**/{pattern}")
        };
        if p.ends_with('/') {
            p.push_str("**");
        }
        let canonical = git_dir.canonicalize().unwrap_or_else(|_| git_dir.into());
        [git_dir, canonical.as_path()].iter().any(|g| {
            let g = g.display().to_string();
            match fold {
                true => wildmatch(p.to_lowercase().as_bytes(), g.to_lowercase().as_bytes()),
                false => wildmatch(p.as_bytes(), g.as_bytes()),
            }
        })
    }
}

fn read_config(path: &Path) -> std::io::Result<String> {
    crate::fsutil::read_small_text_nofollow(path, MAX_FILE_BYTES).or_else(|e| {
        // The user's own files may be symlinks (dotfile managers): followed, but still
        // checked to be small regular files.
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => {
                let real = path.canonicalize()?;
                crate::fsutil::read_small_text_nofollow(&real, MAX_FILE_BYTES)
            }
            _ => Err(e),
        }
    })
}

/// `*` (no `/`), `**` (anything, `/` included), `?`, else literal bytes.
pub(crate) fn wildmatch(p: &[u8], s: &[u8]) -> bool {
    match p.first() {
        None => s.is_empty(),
        Some(b'*') if p.get(1) == Some(&b'*') => {
            let rest = &p[2..];
            // `**/` also matches no directory at all.
            if rest.first() == Some(&b'/') && wildmatch(&rest[1..], s) {
                return true;
            }
            (0..=s.len()).any(|i| wildmatch(rest, &s[i..]))
        }
        Some(b'*') => {
            let rest = &p[1..];
            for i in 0..=s.len() {
                if wildmatch(rest, &s[i..]) {
                    return true;
                }
                if s.get(i) == Some(&b'/') {
                    break;
                }
            }
            false
        }
        Some(b'?') => s.first().is_some_and(|&c| c != b'/') && wildmatch(&p[1..], &s[1..]),
        Some(&c) => s.first() == Some(&c) && wildmatch(&p[1..], &s[1..]),
    }
}

#[cfg(test)]
#[path = "identity_tests.rs"]
mod tests;
