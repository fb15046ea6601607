//! Stage 2 (trust): approval hashes of hook declarations (every event) and the on-disk approval
//! store.
//!
//! Input: a [`HookDecl`] plus the entrypoint bytes read by [`super::entrypoint`]. Output: a
//! lowercase hex SHA-256 ([`approval_hash`]) and yes/no answers from [`TrustStore`]. I/O: the
//! store directory (`Paths::hook_trust_dir()`, normally `~/.local/state/ags-hook-trust/`), one
//! `0600` token file per approved hash. Removing a token revokes that approval.
//!
//! The store is refused, never repaired, when it is a symlink, has group/other permissions, is
//! owned by someone else, or lies inside the active project (a repository must not be able to
//! ship its own approvals). Each refusal says the exact command that fixes it.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::{HookDecl, HookEvent, HookScope, Paths};
use crate::fsutil::{self, PrivateDirError};

/// Domain label that starts every approval hash (bump the version when the format changes).
pub const APPROVAL_DOMAIN: &[u8] = b"ags-prepare-hook-approval-v1\0";

/// The SHA-256 approval hash (lowercase hex) of a declaration and its entrypoint bytes.
///
/// Exact input, where `field(b)` is the u64 big-endian byte length of `b` followed by `b`, and
/// `u64(n)` is `n` as 8 big-endian bytes:
///
/// ```text
/// "ags-prepare-hook-approval-v1\0"
/// field(event)                          "prepare", "started" or "finished"
/// field(name)                           UTF-8
/// field(executable)                     absolute declared path, raw OS bytes
/// u64(argc) field(arg_1) … field(arg_n) argv after the executable
/// u64(timeout_seconds)                  effective timeout (default filled in)
/// 0x00                                  global scope, or
/// 0x01 field(project_root)              project scope + canonical project root (raw OS bytes)
/// field(entrypoint bytes)
/// ```
///
/// Every variable-length item is framed, so no two different declarations share an input. The
/// event is bound: approving a program as a prepare hook never approves it as a finished hook.
/// Pure: touches no file (the project root is canonical already, see `config::load`).
pub fn approval_hash(decl: &HookDecl, entrypoint: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(APPROVAL_DOMAIN);
    let field = |h: &mut Sha256, b: &[u8]| {
        h.update((b.len() as u64).to_be_bytes());
        h.update(b);
    };
    field(&mut h, decl.event.as_str().as_bytes());
    field(&mut h, decl.name.as_bytes());
    field(&mut h, decl.executable.as_os_str().as_encoded_bytes());
    h.update((decl.args.len() as u64).to_be_bytes());
    for arg in &decl.args {
        field(&mut h, arg.as_bytes());
    }
    h.update(u64::from(decl.timeout_seconds).to_be_bytes());
    match &decl.scope {
        HookScope::Global => h.update([0u8]),
        HookScope::Project { root } => {
            h.update([1u8]);
            field(&mut h, root.as_os_str().as_encoded_bytes());
        }
    }
    field(&mut h, entrypoint);
    hex::encode(h.finalize())
}

/// What a token file records, for `ags hooks list` (never used to decide approval).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalRecord {
    /// The event (tokens written before lifecycle events existed lack it: `prepare`).
    #[serde(default = "prepare_event")]
    pub event: String,
    /// Hook name.
    pub name: String,
    /// Declared entrypoint path.
    pub executable: PathBuf,
    /// Declared arguments.
    pub args: Vec<String>,
    /// Effective timeout.
    pub timeout_seconds: u32,
    /// Canonical project root for project hooks; `None` for global hooks.
    pub project: Option<PathBuf>,
    /// The config file that declared the hook.
    pub config_path: PathBuf,
    /// When the approval was given (RFC 3339, UTC).
    pub approved_at: String,
    /// SHA-256 (hex) of the entrypoint bytes alone, so that a later re-approval prompt can say
    /// whether they changed (tokens written before it existed lack it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entrypoint_sha256: Option<String>,
}

impl ApprovalRecord {
    /// The record of approving `decl` now.
    pub fn new(decl: &HookDecl) -> Self {
        Self {
            event: decl.event.as_str().into(),
            name: decl.name.clone(),
            executable: decl.executable.clone(),
            args: decl.args.clone(),
            timeout_seconds: decl.timeout_seconds,
            project: project_of(&decl.scope).map(Path::to_path_buf),
            config_path: decl.config_path.clone(),
            approved_at: crate::time::rfc3339(std::time::SystemTime::now()),
            entrypoint_sha256: None,
        }
    }

    /// The record with the SHA-256 of the entrypoint bytes that were approved.
    pub fn with_entrypoint(mut self, entrypoint: &[u8]) -> Self {
        self.entrypoint_sha256 = Some(hex::encode(Sha256::digest(entrypoint)));
        self
    }
}

/// The project root of a project hook; `None` for a global hook.
pub fn project_of(scope: &HookScope) -> Option<&Path> {
    match scope {
        HookScope::Global => None,
        HookScope::Project { root } => Some(root),
    }
}

fn prepare_event() -> String {
    HookEvent::Prepare.as_str().into()
}

/// The approval store is unusable or a token is unsafe.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    /// The store directory failed a safety check (symlink, owner, mode) or cannot be created.
    #[error("hook approval store {}: {source}{fix}", dir.display())]
    Dir {
        /// The store directory.
        dir: PathBuf,
        /// What is wrong.
        source: PrivateDirError,
        /// The command that fixes it, when the check's own message does not say.
        fix: String,
    },
    /// The store lies inside the active project.
    #[error("hook approval store {} is inside the project {}; approvals must live outside the repository: set XDG_STATE_HOME to a directory outside it", dir.display(), project.display())]
    InsideProject {
        /// Canonical store directory.
        dir: PathBuf,
        /// Canonical project root.
        project: PathBuf,
    },
    /// A token is a symlink.
    #[error("approval token {} is a symbolic link; approvals must be real files: remove it with `rm {}` and approve the hook again", path.display(), path.display())]
    TokenSymlink {
        /// Token path.
        path: PathBuf,
    },
    /// A token is not a regular file.
    #[error("approval token {} is not a regular file; remove it with `rm -r {}` and approve the hook again", path.display(), path.display())]
    TokenNotFile {
        /// Token path.
        path: PathBuf,
    },
    /// A token is owned by another user.
    #[error("approval token {} is owned by uid {owner}, not by you (uid {uid}); remove it with `rm {}` and approve the hook again", path.display(), path.display())]
    TokenOwner {
        /// Token path.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// Our effective uid.
        uid: u32,
    },
    /// A token has group/other permissions.
    #[error("approval token {} has mode {mode:04o}; it must be owner-only: run `chmod 600 {}`", path.display(), path.display())]
    TokenMode {
        /// Token path.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// Not a lowercase hex SHA-256.
    #[error("{hash:?} is not an approval hash (64 lowercase hex digits)")]
    BadHash {
        /// The rejected string.
        hash: String,
    },
    /// Reading or writing the store failed.
    #[error("hook approval store {}: {source}", path.display())]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
}

type Result<T> = std::result::Result<T, TrustError>;

/// One listed approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalEntry {
    /// The approval hash (the token's file name).
    pub hash: String,
    /// The recorded declaration, when the token holds a readable record.
    pub record: Option<ApprovalRecord>,
}

/// The directory of approval tokens, checked on open.
#[derive(Debug, Clone)]
pub struct TrustStore {
    dir: PathBuf,
    /// Where execution copies go when one is usable (see `exec_copy::exec_root`).
    ram_roots: Vec<PathBuf>,
}

impl TrustStore {
    /// Open (creating it `0700` if missing) the store at `paths.hook_trust_dir()`. Refuses a
    /// symlinked, foreign-owned or group/other-accessible directory, and a store inside
    /// `project_root` (the active project, when there is one).
    pub fn open(paths: &Paths, project_root: Option<&Path>) -> Result<Self> {
        let dir = paths.hook_trust_dir();
        if let Some(project) = project_root {
            refuse_inside_project(&dir, project)?;
        }
        fsutil::ensure_private_dir(&dir).map_err(|source| TrustError::Dir {
            fix: dir_fix(&dir, &source),
            dir: dir.clone(),
            source,
        })?;
        Ok(Self {
            dir,
            ram_roots: paths.ram_root_candidates(),
        })
    }

    /// The store directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The RAM-backed directories preferred for execution copies (the store is the fallback).
    pub fn ram_roots(&self) -> &[PathBuf] {
        &self.ram_roots
    }

    /// Whether a valid token for `hash` exists. A missing token is `Ok(false)`; an unsafe one
    /// (symlink, not a file, foreign owner, loose mode) is an error, never silently ignored.
    pub fn is_approved(&self, hash: &str) -> Result<bool> {
        let path = self.token_path(hash)?;
        match fs::symlink_metadata(&path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(TrustError::Io { path, source }),
            Ok(meta) => check_token(&path, &meta).map(|()| true),
        }
    }

    /// Record an approval of `hash` (atomic write, mode 0600).
    pub fn approve(&self, hash: &str, record: &ApprovalRecord) -> Result<()> {
        let path = self.token_path(hash)?;
        let mut json = serde_json::to_vec_pretty(record).expect("an approval record serializes");
        json.push(b'\n');
        fsutil::atomic_write(&path, &json, 0o600).map_err(|source| TrustError::Io { path, source })
    }

    /// Remove the approval of `hash`; `Ok(false)` when there was none.
    pub fn revoke(&self, hash: &str) -> Result<bool> {
        let path = self.token_path(hash)?;
        match fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(TrustError::Io { path, source }),
        }
    }

    /// Every approval in the store, sorted by hash. Unsafe tokens are errors.
    pub fn list(&self) -> Result<Vec<ApprovalEntry>> {
        let io_err = |source| TrustError::Io {
            path: self.dir.clone(),
            source,
        };
        let mut out = Vec::new();
        for entry in fs::read_dir(&self.dir).map_err(io_err)? {
            let entry = entry.map_err(io_err)?;
            let Some(hash) = entry
                .file_name()
                .to_str()
                .filter(|n| is_hash(n))
                .map(String::from)
            else {
                continue; // execution copies, temp files of atomic writes
            };
            let path = entry.path();
            let meta = fs::symlink_metadata(&path).map_err(|source| TrustError::Io {
                path: path.clone(),
                source,
            })?;
            check_token(&path, &meta)?;
            let record = fs::read(&path).ok().and_then(|b| serde_json::from_slice(&b).ok());
            out.push(ApprovalEntry { hash, record });
        }
        out.sort_by(|a, b| a.hash.cmp(&b.hash));
        Ok(out)
    }

    fn token_path(&self, hash: &str) -> Result<PathBuf> {
        if !is_hash(hash) {
            return Err(TrustError::BadHash { hash: hash.into() });
        }
        Ok(self.dir.join(hash))
    }
}

/// The exact command for store-directory problems whose message does not already carry one
/// (a wrong mode says `chmod 700 …` itself).
fn dir_fix(dir: &Path, err: &PrivateDirError) -> String {
    let d = dir.display();
    match err {
        PrivateDirError::Symlink(_) => {
            format!(" (fix: `rm {d}` removes only the link; ags then creates a private directory there)")
        }
        PrivateDirError::NotDir(_) | PrivateDirError::NotFile(_) => format!(" (fix: `mv {d} {d}.old`)"),
        PrivateDirError::Owner { .. } => {
            format!(
                " (fix: `mv {d} {d}.old` and let ags create a new one; its approvals must be given again)"
            )
        }
        PrivateDirError::Mode { .. } | PrivateDirError::Io { .. } => String::new(),
    }
}

/// 64 lowercase hex digits.
pub fn is_hash(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn check_token(path: &Path, meta: &fs::Metadata) -> Result<()> {
    if meta.file_type().is_symlink() {
        return Err(TrustError::TokenSymlink { path: path.into() });
    }
    if !meta.is_file() {
        return Err(TrustError::TokenNotFile { path: path.into() });
    }
    match fsutil::exposure(meta) {
        None => Ok(()),
        Some(fsutil::Exposure::Owner { owner, uid }) => Err(TrustError::TokenOwner {
            path: path.into(),
            owner,
            uid,
        }),
        Some(fsutil::Exposure::Mode(mode)) => Err(TrustError::TokenMode {
            path: path.into(),
            mode,
        }),
    }
}

/// Compare canonical forms, before creating anything: the store's nearest existing ancestor is
/// canonicalized and the missing tail appended.
fn refuse_inside_project(dir: &Path, project: &Path) -> Result<()> {
    let project = project.canonicalize().map_err(|source| TrustError::Io {
        path: project.into(),
        source,
    })?;
    let canon = canonicalize_existing_prefix(dir).map_err(|source| TrustError::Io {
        path: dir.into(),
        source,
    })?;
    if canon.starts_with(&project) {
        return Err(TrustError::InsideProject { dir: canon, project });
    }
    Ok(())
}

fn canonicalize_existing_prefix(path: &Path) -> io::Result<PathBuf> {
    let mut missing = Vec::new();
    let mut cur = path;
    loop {
        match cur.canonicalize() {
            Ok(mut canon) => {
                canon.extend(missing.iter().rev());
                return Ok(canon);
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => match (cur.parent(), cur.file_name()) {
                (Some(parent), Some(name)) => {
                    missing.push(name.to_owned());
                    cur = parent;
                }
                _ => return Err(e),
            },
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decl() -> HookDecl {
        HookDecl {
            event: HookEvent::Prepare,
            name: "svc".into(),
            executable: "/opt/hooks/prepare".into(),
            args: vec!["--a".into(), "b".into()],
            timeout_seconds: 30,
            scope: HookScope::Global,
            config_path: "/home/u/.config/ags/config.toml".into(),
        }
    }

    #[test]
    fn hash_is_lowercase_hex_and_stable() {
        let h = approval_hash(&decl(), b"#!/bin/sh\n");
        assert!(is_hash(&h), "{h}");
        assert_eq!(h, approval_hash(&decl(), b"#!/bin/sh\n"));
    }

    #[test]
    fn hash_binds_every_field() {
        let base = approval_hash(&decl(), b"x");
        let mut changed = Vec::new();
        changed.push(approval_hash(&decl(), b"y"));
        let mut d = decl();
        d.name = "svc2".into();
        changed.push(approval_hash(&d, b"x"));
        let mut d = decl();
        d.executable = "/opt/hooks/other".into();
        changed.push(approval_hash(&d, b"x"));
        let mut d = decl();
        d.args = vec!["--a b".into()];
        changed.push(approval_hash(&d, b"x"));
        let mut d = decl();
        d.args = vec!["--a".into(), "b".into(), String::new()];
        changed.push(approval_hash(&d, b"x"));
        let mut d = decl();
        d.timeout_seconds = 31;
        changed.push(approval_hash(&d, b"x"));
        let mut d = decl();
        d.scope = HookScope::Project { root: "/p".into() };
        changed.push(approval_hash(&d, b"x"));
        d.scope = HookScope::Project { root: "/q".into() };
        changed.push(approval_hash(&d, b"x"));
        for event in [HookEvent::Started, HookEvent::Finished] {
            let mut d = decl();
            d.event = event;
            changed.push(approval_hash(&d, b"x"));
        }
        for (i, h) in changed.iter().enumerate() {
            assert_ne!(&base, h, "change {i} kept the hash");
        }
        let mut all = changed.clone();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), changed.len());
    }

    #[test]
    fn prepare_hash_is_unchanged_by_the_event_field() {
        // The hash input of prepare hooks predates lifecycle events: existing approvals stay valid.
        let mut h = Sha256::new();
        h.update(APPROVAL_DOMAIN);
        let field = |h: &mut Sha256, b: &[u8]| {
            h.update((b.len() as u64).to_be_bytes());
            h.update(b);
        };
        field(&mut h, b"prepare");
        field(&mut h, b"svc");
        field(&mut h, b"/opt/hooks/prepare");
        h.update(2u64.to_be_bytes());
        field(&mut h, b"--a");
        field(&mut h, b"b");
        h.update(30u64.to_be_bytes());
        h.update([0u8]);
        field(&mut h, b"x");
        assert_eq!(approval_hash(&decl(), b"x"), hex::encode(h.finalize()));
    }

    #[test]
    fn config_path_is_not_bound() {
        let mut d = decl();
        d.config_path = "/elsewhere.toml".into();
        assert_eq!(approval_hash(&d, b"x"), approval_hash(&decl(), b"x"));
    }

    #[test]
    fn existing_prefix_canonicalization_appends_missing_tail() {
        let dir = tempfile::tempdir().unwrap();
        let canon = dir.path().canonicalize().unwrap();
        let got = canonicalize_existing_prefix(&dir.path().join("a/b")).unwrap();
        assert_eq!(got, canon.join("a/b"));
    }
}
