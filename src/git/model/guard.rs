//! Which parts of a workspace's git repository are mounted read-only (`[sandbox] protect_git`,
//! on by default), so that the agent can commit but cannot change what git executes on the host.
//!
//! Git runs programs named in the repository's config (`core.fsmonitor`, `core.hooksPath`,
//! `core.pager`, aliases, filters, …) and the scripts in its hooks directory; it reads the config
//! from the *common* git dir, which a `commondir` file inside the git dir may point anywhere. For
//! the `.git` at the top of every read-write mount that keeps its host path (the workdir, a
//! read-write `--add-dir`), the launch therefore mounts:
//! - the git dir itself, read-write, as its own mount point: it cannot be renamed or removed
//!   (`EBUSY`), so the read-only mounts inside it cannot be side-stepped by
//!   `mv .git .git.old && mkdir .git`;
//! - `config`, `hooks/` and `commondir` read-only (`hooks/` and an empty `config` are created
//!   when missing, as git treats them like missing ones; a missing
//!   `commondir` is created containing `.`, which names the git dir itself — git reads it as
//!   "the common dir is this directory" — so that there is a file to mount);
//! - `config.worktree` read-only (created empty when missing: git reads it once the config
//!   enables `extensions.worktreeConfig`);
//! - `worktrees/` and each linked worktree entry in it pinned, and the entry's `commondir`,
//!   `config.worktree` and `gitdir` read-only: git on the host reads them when you work in that
//!   worktree (and `workspace::git_layout` trusts an entry a running launch holds so);
//! - `modules/` and each submodule's git dir in it (`modules/NAME/`, NAME may hold `/`, and
//!   their own `modules/` in turn) pinned, with their `config`, `hooks/`, `commondir`,
//!   `config.worktree` and linked worktree entries read-only as far as they exist (nothing is
//!   created in a submodule's git dir), and the checkout's `.git` file (named by the module's
//!   `core.worktree`) read-only: `git status` in the repository recurses into submodules. What
//!   the agent adds where nothing existed is found after the launch (`workspace::git_inventory`).
//!
//! Every guarded file must be a regular file, never a symbolic link (a bind mount would follow
//! it to a host file and show that file to the agent), and the `.git` files and `commondir`s
//! read are short regular files opened without blocking (not a FIFO or `/dev/zero`).
//!
//! For a linked worktree (`.git` is a file naming its git dir), the `.git` file is read-only,
//! its git dir's `commondir` and `config.worktree` are read-only when reachable from a mount, and
//! the common git dir (the git dir itself without `commondir`) gets the treatment above when it
//! lies inside a read-write mount.
//!
//! I/O: reads the workspace's `.git` entries. Creating the missing pieces happens in the launch
//! stage (`launch::lifecycle`), so `ags plan` changes nothing.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// One path of a repository guarded by a bind mount onto itself.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GitGuard {
    /// Host path (also the container path: the roots keep their host paths).
    pub path: PathBuf,
    /// Read-only (`config`, `hooks/`, …), or read-write to pin a directory in place.
    pub read_only: bool,
    /// What to create before the container when the path does not exist yet.
    pub create: Option<GitCreate>,
}

/// A piece created before the launch so there is something to mount.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GitCreate {
    /// An empty directory (`hooks/`), mode 0755.
    Dir,
    /// An empty file (`config`, which git treats like a missing one), mode 0644.
    EmptyFile,
    /// A `commondir` file containing `.` (the git dir itself), mode 0644.
    SelfCommonDir,
    /// A linked worktree entry's `commondir` as git writes it, `../..`, mode 0644.
    ParentCommonDir,
}

/// Why a repository cannot be guarded.
#[derive(Debug, thiserror::Error)]
#[error(
    "cannot protect the git repository at {}: {reason}; if you did not make it, an earlier launch may have: move it aside and look at it; otherwise fix it (setting `[sandbox] protect_git = false` in the global config lets the agent change what git runs on the host: docs/security.md)",
    path.display()
)]
pub struct GitGuardError {
    /// The offending path.
    pub path: PathBuf,
    /// What is wrong.
    pub reason: String,
}

/// The guards for the `.git` at the top of each of `roots` (read-write mounts whose container
/// path is their host path). Roots without `.git` give none.
pub fn guards(roots: &[PathBuf]) -> Result<Vec<GitGuard>, GitGuardError> {
    let mut out: Vec<GitGuard> = Vec::new();
    for root in roots {
        let dot_git = root.join(".git");
        let Ok(meta) = std::fs::symlink_metadata(&dot_git) else {
            continue;
        };
        let fail = |reason: &str| GitGuardError {
            path: dot_git.clone(),
            reason: reason.into(),
        };
        if meta.file_type().is_symlink() {
            return Err(fail("it is a symbolic link, which the agent could replace"));
        } else if meta.is_dir() {
            guard_git_dir(&dot_git, Create::Missing, roots, &mut out)?;
        } else if meta.is_file() {
            out.push(read_only(&dot_git));
            let git_dir = linked_git_dir(&dot_git)?;
            let inside = |p: &Path| roots.iter().any(|r| p.starts_with(r));
            if inside(&git_dir) {
                guard_file(&git_dir.join("commondir"), None, &mut out)?;
                guard_file(
                    &git_dir.join("config.worktree"),
                    Some(GitCreate::EmptyFile),
                    &mut out,
                )?;
            }
            // Without a `commondir` the git dir is its own common dir (its `config` counts).
            let common = common_dir(&git_dir)?;
            if inside(&common) {
                guard_git_dir(&common, Create::Missing, roots, &mut out)?;
            }
        } else {
            return Err(fail("it is neither a directory nor a file"));
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out.dedup_by(|a, b| a.path == b.path);
    Ok(out)
}

pub(crate) fn read_only(path: &Path) -> GitGuard {
    GitGuard {
        path: path.into(),
        read_only: true,
        create: None,
    }
}

/// Whether a guard may create what is missing (only in the workdir's own repository, never in
/// a submodule's git dir or a repository outside the read-write mounts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Create {
    /// Create the missing pieces (`GitCreate`), so that there is something to mount.
    Missing,
    /// Guard what exists; what the agent adds is found after the launch (`workspace::git_inventory`).
    Nothing,
}

/// A git dir (not a worktree's): itself pinned, its executable configuration read-only, and
/// the same for the git dirs of its submodules.
pub(crate) fn guard_git_dir(
    dir: &Path,
    create: Create,
    roots: &[PathBuf],
    out: &mut Vec<GitGuard>,
) -> Result<(), GitGuardError> {
    let fail = |path: PathBuf, reason: String| GitGuardError { path, reason };
    out.push(pinned(dir));
    let made = |what: GitCreate| (create == Create::Missing).then_some(what);
    guard_file(&dir.join("config"), made(GitCreate::EmptyFile), out)?;
    let hooks = dir.join("hooks");
    match std::fs::symlink_metadata(&hooks) {
        Ok(m) if m.is_dir() => out.push(read_only(&hooks)),
        Ok(_) => return Err(fail(hooks, "it is not a directory".into())),
        Err(_) => out.extend(made(GitCreate::Dir).map(|c| GitGuard {
            create: Some(c),
            ..read_only(&hooks)
        })),
    }
    let commondir = dir.join("commondir");
    match std::fs::symlink_metadata(&commondir) {
        Ok(m) if m.is_file() && is_self_commondir(&commondir) => out.push(read_only(&commondir)),
        Ok(_) => {
            return Err(fail(
                commondir,
                "it points git at another directory's config (ags only ever writes `.`); remove it if you did not put it there".into(),
            ));
        }
        Err(_) => out.extend(made(GitCreate::SelfCommonDir).map(|c| GitGuard {
            create: Some(c),
            ..read_only(&commondir)
        })),
    }
    // Read when the (read-only) config enables `extensions.worktreeConfig`, which `git
    // sparse-checkout` does: a missing one would be the agent's to create.
    guard_file(&dir.join("config.worktree"), made(GitCreate::EmptyFile), out)?;
    guard_linked_worktrees(dir, create, out)?;
    guard_modules(&dir.join("modules"), roots, 0, out)
}

/// Deepest `modules/` nesting followed (a submodule's name may hold `/`, and submodules have
/// submodules).
const MAX_MODULE_DEPTH: usize = 32;

/// The git dirs of the submodules under `modules` (`modules/NAME/`, where NAME may hold `/`):
/// guarded like the repository's own but nothing created in them, and the `.git` file of each
/// checkout (named by the module's `core.worktree`) read-only when it lies in a read-write
/// mount. `git status` in the repository recurses into them.
fn guard_modules(
    modules: &Path,
    roots: &[PathBuf],
    depth: usize,
    out: &mut Vec<GitGuard>,
) -> Result<(), GitGuardError> {
    if depth > MAX_MODULE_DEPTH || !std::fs::symlink_metadata(modules).is_ok_and(|m| m.is_dir()) {
        return Ok(());
    }
    out.push(pinned(modules));
    let entries = std::fs::read_dir(modules).map_err(|e| GitGuardError {
        path: modules.into(),
        reason: format!("it cannot be listed ({e})"),
    })?;
    for entry in entries.flatten() {
        let path = entry.path();
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let has = |name: &str| std::fs::symlink_metadata(path.join(name)).is_ok();
        if !has("HEAD") {
            // `modules/a/` of a submodule named `a/b`.
            guard_modules(&path, roots, depth + 1, out)?;
            continue;
        }
        if !(has("objects") || has("commondir")) {
            // Not a git dir to git, nor to the check after a launch (`workspace::git_inventory`
            // uses the same rule): nothing to guard. Refusing it would let a half-made one an
            // agent left stop every later launch (session-18 attack A6); once it is completed,
            // the check judges it as new.
            continue;
        }
        guard_git_dir(&path, Create::Nothing, roots, out)?;
        if let Some(checkout) = module_checkout(&path) {
            let dot_git = checkout.join(".git");
            let plain = std::fs::symlink_metadata(&dot_git).is_ok_and(|m| m.is_file());
            if plain && roots.iter().any(|r| dot_git.starts_with(r)) {
                out.push(read_only(&dot_git));
            }
        }
    }
    Ok(())
}

/// The checkout of a submodule's git dir: its config's `core.worktree`, resolved.
pub(crate) fn module_checkout(git_dir: &Path) -> Option<PathBuf> {
    git_dir.join(core_worktree(git_dir)?).canonicalize().ok()
}

/// The last `core.worktree` of the config of `git_dir` (a short file: [`read_small`]).
pub(crate) fn core_worktree(git_dir: &Path) -> Option<String> {
    let text = read_small(&git_dir.join("config")).ok()?;
    let entries = super::config_keys::lenient(&String::from_utf8_lossy(&text));
    entries
        .into_iter()
        .rfind(|(k, _)| k == "core.worktree")
        .map(|(_, v)| v)
}

/// The metadata of the repository's linked worktrees (`worktrees/<name>/`), which git on the
/// host reads when you work in such a worktree elsewhere: `commondir` would send it to a config
/// the agent wrote, `config.worktree` is read like `config`, `gitdir` names the worktree's
/// checkout. `worktrees/` and each entry are pinned (not renameable), those three files
/// read-only; the rest (`HEAD`, `index`) stays writable. A missing `commondir` is created as git writes it (`../..`, only with
/// [`Create::Missing`]): without one git would read the entry's own `config`.
fn guard_linked_worktrees(dir: &Path, create: Create, out: &mut Vec<GitGuard>) -> Result<(), GitGuardError> {
    let made = |what: GitCreate| (create == Create::Missing).then_some(what);
    let worktrees = dir.join("worktrees");
    match std::fs::symlink_metadata(&worktrees) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(GitGuardError {
                path: worktrees,
                reason: "it is not a directory".into(),
            });
        }
        Err(_) => return Ok(()),
    }
    out.push(pinned(&worktrees));
    let entries = std::fs::read_dir(&worktrees).map_err(|e| GitGuardError {
        path: worktrees.clone(),
        reason: format!("it cannot be listed ({e})"),
    })?;
    for entry in entries.flatten() {
        let path = entry.path();
        if !std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        out.push(pinned(&path));
        // Which checkout the entry belongs to: read-only, so that no launch can make it name
        // another one (`workspace::git_layout` trusts an entry a running launch holds so).
        guard_file(&path.join("gitdir"), None, out)?;
        guard_file(&path.join("commondir"), made(GitCreate::ParentCommonDir), out)?;
        guard_file(&path.join("config.worktree"), made(GitCreate::EmptyFile), out)?;
    }
    Ok(())
}

/// For an export, where no check runs after the agent (`workspace::git_inventory` finds what a
/// local launch's agent added): `guards` plus a guard creating each missing piece of every
/// guarded git dir (`config`, `hooks/`, `commondir`, `config.worktree`) and linked worktree
/// entry (`commondir`, `config.worktree`), as the workdir's own repository gets them.
pub fn with_missing(guards: Vec<GitGuard>) -> Vec<GitGuard> {
    const GIT_DIR: [(&str, GitCreate); 4] = [
        ("config", GitCreate::EmptyFile),
        ("hooks", GitCreate::Dir),
        ("commondir", GitCreate::SelfCommonDir),
        ("config.worktree", GitCreate::EmptyFile),
    ];
    const ENTRY: [(&str, GitCreate); 2] = [
        ("commondir", GitCreate::ParentCommonDir),
        ("config.worktree", GitCreate::EmptyFile),
    ];
    let mut out = guards.clone();
    for dir in guards.iter().filter(|g| !g.read_only).map(|g| &g.path) {
        let pieces: &[(&str, GitCreate)] = match () {
            _ if entry_common(dir).is_some() => &ENTRY,
            _ if std::fs::symlink_metadata(dir.join("HEAD")).is_ok() => &GIT_DIR,
            _ => continue,
        };
        for (name, what) in pieces {
            let path = dir.join(name);
            if std::fs::symlink_metadata(&path).is_err() && !out.iter().any(|o| o.path == path) {
                out.push(GitGuard {
                    create: Some(*what),
                    ..read_only(&path)
                });
            }
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// The common dir of the linked worktree entry `dir` (`COMMON/worktrees/NAME`, by its place).
pub(crate) fn entry_common(dir: &Path) -> Option<&Path> {
    let worktrees = dir
        .parent()
        .filter(|p| p.file_name().is_some_and(|n| n == "worktrees"));
    worktrees.and_then(Path::parent)
}

/// A git dir or worktree entry pinned as its own (read-write) mount point.
pub(crate) fn pinned(path: &Path) -> GitGuard {
    GitGuard {
        path: path.into(),
        read_only: false,
        create: None,
    }
}

/// `path` read-only: a regular file as it is, created with `create` when missing (left
/// unguarded without); anything else (a symbolic link the runtime would follow to a host
/// file, a FIFO) refused.
pub(crate) fn guard_file(
    path: &Path,
    create: Option<GitCreate>,
    out: &mut Vec<GitGuard>,
) -> Result<(), GitGuardError> {
    if is_plain_file(path)? {
        out.push(read_only(path));
    } else if let Some(create) = create {
        out.push(GitGuard {
            create: Some(create),
            ..read_only(path)
        });
    }
    Ok(())
}

/// Whether `path` is a regular file (not through a symbolic link); `false` when it is missing,
/// an error when it is something else: a bind mount of a symbolic link would mount its target.
pub(crate) fn is_plain_file(path: &Path) -> Result<bool, GitGuardError> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_file() => Ok(true),
        Ok(_) => Err(GitGuardError {
            path: path.into(),
            reason: "it is not a regular file (a symbolic link, a FIFO or a directory); remove it if you did not put it there".into(),
        }),
        Err(_) => Ok(false),
    }
}

/// Whether `path` holds `.` (a line), the content ags creates.
pub fn is_self_commondir(path: &Path) -> bool {
    read_small(path).is_ok_and(|b| trim_line_ends(&b) == b".")
}

/// Longest `.git` file or `commondir` read (git's own are one short line).
const MAX_POINTER_BYTES: u64 = 4096;

/// The bytes of a small regular file, never following a symbolic link and never blocking: the
/// agent can make these a FIFO or a link to `/dev/zero` (`crate::fsutil::read_bounded`).
pub(crate) fn read_small(path: &Path) -> std::io::Result<Vec<u8>> {
    crate::fsutil::read_bounded(path, MAX_POINTER_BYTES, false)
}

/// The git dir named by a `.git` file (`gitdir: PATH`, relative to the file's directory).
pub(crate) fn linked_git_dir(file: &Path) -> Result<PathBuf, GitGuardError> {
    let fail = |reason: &str| GitGuardError {
        path: file.into(),
        reason: reason.into(),
    };
    let bytes =
        read_small(file).map_err(|e| fail(&format!("it cannot be read as a short text file ({e})")))?;
    let named = gitfile_path(&bytes).ok_or_else(|| fail("it does not start with `gitdir: PATH`"))?;
    let base = file.parent().unwrap_or(Path::new("/"));
    base.join(named).canonicalize().map_err(|e| {
        let named = named.to_string_lossy();
        fail(&format!("its git dir {named} cannot be resolved ({e})"))
    })
}

/// The path a `.git` file names, read as git reads it (`read_gitfile_gently`): `gitdir: ` with
/// one space, then everything up to the end but trailing `\n`/`\r` (spaces kept), any bytes.
pub(crate) fn gitfile_path(bytes: &[u8]) -> Option<&std::ffi::OsStr> {
    let named = trim_line_ends(bytes.strip_prefix(b"gitdir: ")?);
    (!named.is_empty()).then(|| std::ffi::OsStr::from_bytes(named))
}

/// `bytes` without the `\n` and `\r` at its end, as git trims `.git` files and `commondir`.
pub(crate) fn trim_line_ends(mut bytes: &[u8]) -> &[u8] {
    while let [rest @ .., b'\n' | b'\r'] = bytes {
        bytes = rest;
    }
    bytes
}

/// The common dir of `git_dir`: what its `commondir` names (relative to it), else itself.
pub(crate) fn common_dir(git_dir: &Path) -> Result<PathBuf, GitGuardError> {
    let file = git_dir.join("commondir");
    let bytes = match read_small(&file) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(git_dir.into()),
        Err(e) => {
            return Err(GitGuardError {
                path: file,
                reason: format!("it cannot be read as a short text file ({e})"),
            });
        }
    };
    // As git reads it (`get_common_dir_noenv`): only line ends trimmed, any bytes.
    let named = std::ffi::OsStr::from_bytes(trim_line_ends(&bytes));
    git_dir.join(named).canonicalize().map_err(|e| GitGuardError {
        path: file,
        reason: format!("the common dir it names cannot be resolved ({e})"),
    })
}

#[cfg(test)]
#[path = "guard_tests.rs"]
mod tests;
