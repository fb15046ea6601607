//! What a host path must satisfy before `ags` hands it to Podman as a bind-mount source: the
//! workdir, every `--add-dir`, and every hook mount source (docs/security.md, "Mount sources").
//!
//! A leaf policy module (it uses only [`crate::safepath`]): the callers build the [`Rules`] — the
//! protected locations ([`Protected`], from `config::Paths`, the Podman endpoint and storage)
//! and the directories an agent can write ([`WritableRoot`]: this launch's read-write mounts
//! and those of other running launches) — and [`check`] answers with the physical path to mount
//! or a [`ContainmentError`] that names the input, the rule and what to do.
//!
//! The rules, in order:
//! 1. The path is resolved without trusting symlinks ([`crate::safepath::resolve`]). A symlink
//!    that lies inside a writable root is refused for every role (an agent could have planted
//!    it). A hook mount source may pass only through symlinks of the system's layout (root-owned
//!    link in a root-owned directory nobody else can write, e.g. `/home -> /var/home`; when `ags`
//!    runs as root, only in `/`, `/usr`, `/usr/local`, `/var`, `/etc`, `/opt`); the
//!    workdir and `--add-dir`s, which the user names, follow other symlinks (the caller tells
//!    the user when the real path differs).
//! 2. The entry exists and is a directory (workdir, `--add-dir`) or a directory or regular file
//!    (hook mounts).
//! 3. The physical path does not overlap a protected location (equal, inside or an ancestor;
//!    for the home directory and the top system directories: equal or an ancestor). Protected
//!    locations are compared both as configured and as they resolve, through symlinks that may
//!    still dangle ([`crate::safepath::Missing::Append`]).
//! 4. Time of check against time of use: Podman resolves the source again when it binds it, so
//!    a source strictly inside a directory that an agent can write right now could be swapped
//!    for a symlink in between. Hook mounts and `--add-dir`s strictly inside any writable root,
//!    and a workdir strictly inside another running launch's read-write mount, are refused.

use std::path::{Path, PathBuf};

use crate::safepath::{self, Kind, Missing, ResolveError};

mod error;
pub use error::ContainmentError;

/// What kind of location is protected (decides the explanation in errors).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// `ags`'s approval store, trust file, config, state, cache, staging.
    Ags,
    /// Podman's API socket, configuration or storage.
    Podman,
    /// A well-known credential directory.
    Credentials,
    /// The user's home directory.
    Home,
    /// A system directory (only for the workdir and `--add-dir`s).
    System,
}

impl Class {
    fn why(self) -> &'static str {
        match self {
            Class::Ags => "the agent could approve its own hooks or change what ags runs on the host",
            Class::Podman => "the agent could control Podman and through it the host",
            Class::Credentials => "it holds credentials the agent must not read or change",
            Class::Home => {
                "it holds your shell startup files, credentials and ags's approval store, which the agent \
                 must not read or change"
            }
            Class::System => "it is a system directory the agent must not read or change",
        }
    }
}

/// How a protected location is compared with a candidate path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guard {
    /// Refused when equal, inside, or an ancestor.
    Overlap,
    /// Refused when equal or an ancestor (what is inside may be mounted).
    SelfOrAncestor,
}

/// One protected host location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Protected {
    /// What it is, e.g. "hook approval store".
    pub label: String,
    /// The location as configured (may not exist yet).
    pub path: PathBuf,
    /// What kind of location.
    pub class: Class,
    /// How it is compared.
    pub guard: Guard,
}

impl Protected {
    /// An entry refused when overlapping.
    pub fn overlap(label: impl Into<String>, path: impl Into<PathBuf>, class: Class) -> Self {
        Self {
            label: label.into(),
            path: path.into(),
            class,
            guard: Guard::Overlap,
        }
    }

    /// An entry refused when equal or an ancestor.
    pub fn self_or_ancestor(label: impl Into<String>, path: impl Into<PathBuf>, class: Class) -> Self {
        Self {
            label: label.into(),
            path: path.into(),
            class,
            guard: Guard::SelfOrAncestor,
        }
    }
}

/// The system trees refused as a workdir or `--add-dir`: whole trees, then directories that are
/// refused only themselves (and their ancestors, which includes `/`).
pub fn system_trees() -> Vec<Protected> {
    let trees = [
        "/etc", "/usr", "/proc", "/sys", "/dev", "/boot", "/bin", "/sbin", "/lib", "/lib64",
    ];
    let tops = ["/var", "/run", "/tmp", "/var/tmp", "/home", "/root"];
    trees
        .iter()
        .map(|p| Protected::overlap("system directory", *p, Class::System))
        .chain(
            tops.iter()
                .map(|p| Protected::self_or_ancestor("system directory", *p, Class::System)),
        )
        .collect()
}

/// A directory an agent can write: a read-write mount of this launch or of a running one.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WritableRoot {
    /// Physical path.
    pub path: PathBuf,
    /// Whose mount it is, e.g. "this launch's workdir", "running ags container ags-x-1234".
    pub owner: String,
    /// True for another launch's mount (its agent may be running right now).
    pub running: bool,
}

impl WritableRoot {
    /// A directory of this launch (or of the command itself), not of a running one.
    pub fn new(path: impl Into<PathBuf>, owner: impl Into<String>) -> Self {
        let (path, owner) = (path.into(), owner.into());
        WritableRoot {
            path,
            owner,
            running: false,
        }
    }

    fn describe(&self) -> String {
        format!("{} {}", self.owner, safepath::display(&self.path))
    }
}

fn link_text(link: &safepath::Link) -> String {
    format!(
        "{} -> {}",
        safepath::display(&link.at),
        safepath::display(&link.target)
    )
}

/// What the checked path is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// The workdir.
    Workdir,
    /// An `--add-dir`.
    AddDir,
    /// A `[[mount]]` of the global config.
    ConfigMount,
    /// A hook's mount source.
    HookMount {
        /// The hook's name.
        hook: String,
    },
    /// Git data the workdir's checkout needs outside it (`workspace::git_layout`): a linked
    /// worktree's common git dir, a submodule's git dir, the repository around a subdirectory.
    GitDir,
}

impl Role {
    /// The input as messages name it, e.g. "--add-dir /x".
    pub fn describe(&self, named: &Path) -> String {
        let p = safepath::display(named);
        match self {
            Role::Workdir => format!("workdir {p}"),
            Role::AddDir => format!("--add-dir {p}"),
            Role::ConfigMount => format!("[[mount]] source {p}"),
            Role::HookMount { hook } => format!("mount source {p} of hook `{hook}`"),
            Role::GitDir => format!("the git repository data {p} that the workdir's checkout needs"),
        }
    }

    fn remedy(&self) -> &'static str {
        match self {
            Role::Workdir => {
                "run ags from a project directory (e.g. `cd ~/src/myproject && ags`) or pass --workdir"
            }
            Role::AddDir => "pass a project directory to --add-dir instead",
            Role::ConfigMount => "change that [[mount]] in the global config",
            Role::HookMount { .. } => "change the hook to mount a different directory",
            Role::GitDir => {
                "git in the container will not see that repository; launch from a directory whose git data is inside it, or set `[git] repository = false` to skip this"
            }
        }
    }
}

/// Everything [`check`] compares against.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    protected: Vec<(Protected, Vec<PathBuf>)>,
    writable: Vec<WritableRoot>,
}

impl Rules {
    /// Rules over `protected` (each also resolved through symlinks, dangling ones included).
    pub fn new(protected: impl IntoIterator<Item = Protected>) -> Self {
        let mut rules = Self::default();
        rules.protect(protected);
        rules
    }

    /// Protect more locations.
    pub fn protect(&mut self, more: impl IntoIterator<Item = Protected>) {
        for p in more {
            let mut forms = vec![p.path.clone()];
            if let Ok(r) = safepath::resolve(&p.path, Missing::Append)
                && r.path != p.path
            {
                forms.push(r.path);
            }
            self.protected.push((p, forms));
        }
    }

    /// Add a writable root.
    pub fn writable(&mut self, root: WritableRoot) {
        if !self.writable.contains(&root) {
            self.writable.push(root);
        }
    }

    /// The writable roots so far.
    pub fn writable_roots(&self) -> &[WritableRoot] {
        &self.writable
    }
}

/// A path that passed [`check`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// The physical path to mount.
    pub path: PathBuf,
    /// The symlinks followed to reach it that are not part of the system's layout,
    /// `(link, target)` (empty for most paths; `/home -> /var/home` is not listed).
    pub links: Vec<(PathBuf, PathBuf)>,
}

/// Check `named` for `role` against `rules` and return the physical path to mount.
pub fn check(named: &Path, role: &Role, rules: &Rules) -> Result<Checked, ContainmentError> {
    let what = role.describe(named);
    if named.to_str().is_none() {
        return Err(ContainmentError::NotUtf8 { what });
    }
    let res = safepath::resolve(named, Missing::Refuse).map_err(|e| match e {
        ResolveError::NotFound(p) => ContainmentError::Missing {
            what: what.clone(),
            missing: match p == named {
                true => String::new(),
                false => format!(" ({} is missing)", safepath::display(&p)),
            },
            remedy: match role {
                Role::HookMount { .. } => "the hook must create it before answering",
                Role::ConfigMount => {
                    "name an existing path, or set `optional = true` on that [[mount]] to skip it while the source is missing"
                }
                _ => "name an existing path",
            },
        },
        source => ContainmentError::Resolve {
            what: what.clone(),
            source,
        },
    })?;
    if res.path.to_str().is_none() {
        return Err(ContainmentError::NotUtf8 { what });
    }
    check_links(&what, role, &res, rules)?;
    check_kind(&what, role, res.found.map(|f| f.kind))?;
    check_protected(&what, role, &res.path, rules)?;
    check_inside_writable(&what, role, &res.path, rules)?;
    Ok(Checked {
        links: res
            .links
            .iter()
            .filter(|l| !is_system_link(l))
            .map(|l| (l.at.clone(), l.target.clone()))
            .collect(),
        path: res.path,
    })
}

fn check_links(
    what: &str,
    role: &Role,
    res: &safepath::Resolution,
    rules: &Rules,
) -> Result<(), ContainmentError> {
    for link in &res.links {
        if let Some(root) = rules.writable.iter().find(|r| link.at.starts_with(&r.path)) {
            return Err(ContainmentError::SymlinkInWritable {
                what: what.into(),
                link: link_text(link),
                inside: root.describe(),
                remedy: role.remedy(),
            });
        }
        if matches!(role, Role::HookMount { .. }) && !is_system_link(link) {
            return Err(ContainmentError::UntrustedSymlink {
                what: what.into(),
                link: link_text(link),
                real: safepath::display(&res.path),
            });
        }
    }
    Ok(())
}

/// Directories whose root-owned symlinks are tolerated even when `ags` runs as root (whose
/// agent, uid 0 without capabilities, can plant root-owned links in what it can write).
const SYSTEM_LINK_DIRS: &[&str] = &["/", "/usr", "/usr/local", "/var", "/etc", "/opt"];

/// A symlink of the system's layout: root-owned, in a root-owned directory nobody else can write;
/// as root, additionally in one of [`SYSTEM_LINK_DIRS`].
pub fn is_system_link(link: &safepath::Link) -> bool {
    link.is_system_layout()
        && (!rustix::process::geteuid().is_root()
            || link
                .at
                .parent()
                .is_some_and(|d| SYSTEM_LINK_DIRS.iter().any(|s| d == Path::new(s))))
}

fn check_kind(what: &str, role: &Role, kind: Option<Kind>) -> Result<(), ContainmentError> {
    let (ok, allowed) = match role {
        Role::HookMount { .. } | Role::ConfigMount => (
            matches!(kind, Some(Kind::Directory | Kind::File)),
            "regular files and directories",
        ),
        _ => (matches!(kind, Some(Kind::Directory)), "directories"),
    };
    if ok {
        return Ok(());
    }
    let kind = match kind {
        Some(Kind::File) => "regular file",
        Some(Kind::Special(s)) => s,
        _ => "missing entry",
    };
    Err(ContainmentError::WrongType {
        what: what.into(),
        kind,
        allowed,
    })
}

fn check_protected(what: &str, role: &Role, real: &Path, rules: &Rules) -> Result<(), ContainmentError> {
    let system_applies = matches!(role, Role::Workdir | Role::AddDir | Role::GitDir);
    for (p, forms) in &rules.protected {
        if p.class == Class::System && !system_applies {
            continue;
        }
        for form in forms {
            let relation = if real == form {
                "is"
            } else if form.starts_with(real) {
                "contains"
            } else if p.guard == Guard::Overlap && real.starts_with(form) {
                "is inside"
            } else {
                continue;
            };
            return Err(ContainmentError::Protected {
                what: what.into(),
                real: safepath::display(real),
                relation,
                protected: format!("{} {}", p.label, safepath::display(form)),
                why: p.class.why(),
                remedy: role.remedy(),
            });
        }
    }
    Ok(())
}

fn check_inside_writable(
    what: &str,
    role: &Role,
    real: &Path,
    rules: &Rules,
) -> Result<(), ContainmentError> {
    let applies = |r: &WritableRoot| match role {
        Role::Workdir => r.running,
        // Inside a running launch's mount: the git guards' race check (`guard_neighbours`)
        // accepts it only where that launch cannot rename anything on the way.
        Role::GitDir => false,
        _ => true,
    };
    let Some(root) = rules
        .writable
        .iter()
        .find(|r| applies(r) && real != r.path && real.starts_with(&r.path))
    else {
        return Ok(());
    };
    let remedy = match role {
        Role::Workdir => format!(
            "run this launch from {} or wait until that launch has ended",
            safepath::display(&root.path)
        ),
        Role::AddDir | Role::ConfigMount => {
            "name a directory outside every read-write mount of this and running launches".into()
        }
        Role::HookMount { .. } => {
            "change the hook to mount a directory outside the workdir, the --add-dirs and every read-write \
             mount of this and running launches"
                .into()
        }
        Role::GitDir => String::new(),
    };
    Err(ContainmentError::InsideWritable {
        what: what.into(),
        real: safepath::display(real),
        inside: root.describe(),
        remedy,
    })
}

#[cfg(test)]
mod tests;
