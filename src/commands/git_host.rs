//! The host's git setup a launch hands to the agent, resolved before any hook runs: the git
//! identity (`git::model::identity`, `[git] identity`) and the forwarded ssh-agent
//! (`--ssh-agent`, `[git] ssh_agent`): its socket and a known_hosts file, both checked here
//! (docs/security.md, "Git identity and the ssh-agent"); and the git guards with the git data
//! the checkout needs outside the workdir (`[git] repository`): proven by `workspace::git_layout`
//! (again at the late check, with the running launches' read-write mounts) and checked by the
//! containment rules.

use crate::error::CommandError;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use crate::Error;
use crate::cli::RunArgs;
use crate::config as cfg;
use crate::config::Config;
use crate::containment::{self, Role, Rules, WritableRoot};
use crate::git::model::guard::GitGuard;
use crate::git::model::identity::{self, GitIdentity, Lookup};
use crate::git::plan::SshAgent;
use crate::plan::UserMount;
use crate::safepath::{self, Missing};
use crate::workspace::git_layout::{self, GitLayoutError, RunningLaunch};

/// The read-write mounts that keep their host path (the workdir, `--add-dir`s): where the
/// git guards go and where planted git configuration is looked for after the launch.
pub(super) fn git_roots(config: &Config, mounts: &[UserMount]) -> Vec<PathBuf> {
    std::iter::once(config.workdir.clone())
        .chain(
            mounts
                .iter()
                .filter(|m| !m.read_only && m.source == m.destination)
                .map(|m| m.source.clone()),
        )
        .collect()
}

/// The git guards of a launch (`[sandbox] protect_git`): those of the repositories at the top
/// of `roots`, and (`[git] repository`) the git data their checkouts need outside them
/// ([`outside`]); the read-write parts of the latter are added to `rules` as writable.
pub(super) fn guards(
    config: &Config,
    roots: &[PathBuf],
    rules: &mut Rules,
    lockdown: bool,
) -> Result<Vec<GitGuard>, Error> {
    if !config.user.protect_git {
        return Ok(Vec::new());
    }
    let mut out = crate::git::model::guard::guards(roots).map_err(cfg::ConfigError::from)?;
    let outside = outside(config, roots, rules, &[], lockdown);
    for (root, why) in &outside.left_out {
        note_unseen(root, why);
    }
    for g in outside.guards.iter().filter(|g| !g.read_only) {
        rules.writable(WritableRoot::new(g.path.clone(), "this launch's git dir"));
    }
    out.extend(outside.guards);
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out.dedup_by(|a, b| a.path == b.path);
    Ok(out)
}

/// The git data mounted outside a launch's read-write mounts, and the checkouts left without.
#[derive(Debug, Default)]
pub(super) struct Outside {
    /// The guards of every [`git_layout::TrustedGitLayout`] the containment rules accept.
    pub guards: Vec<GitGuard>,
    /// `(root, why)` for each checkout whose git data outside is not mounted.
    pub left_out: Vec<(PathBuf, String)>,
}

/// The git data `roots`' checkouts need outside them (`[git] repository`): each layout proven by
/// `workspace::git_layout` against the directories `rules` hold as agent-writable (and what the
/// `running` launches hold fixed in theirs), then accepted by the containment rules
/// (`Role::GitDir`); under `--lockdown`, none. Reads only.
pub(super) fn outside(
    config: &Config,
    roots: &[PathBuf],
    rules: &Rules,
    running: &[RunningLaunch],
    lockdown: bool,
) -> Outside {
    let mut out = Outside::default();
    if !config.user.protect_git || !config.user.git.repository {
        return out;
    }
    let writable = rules.writable_roots().to_vec();
    let mut rules = rules.clone();
    for root in roots {
        let extra = match git_layout::prove(root, roots, &writable, running) {
            Ok(layout) => layout.into_guards(),
            Err(e) => {
                out.left_out.push((root.clone(), e.to_string()));
                continue;
            }
        };
        if extra.is_empty() {
            continue;
        }
        let tops = git_layout::tops(&extra, roots);
        if lockdown {
            let shown: Vec<String> = tops.iter().map(|t| safepath::display(&t.path)).collect();
            out.left_out.push((
                root.clone(),
                format!(
                    "--lockdown mounts nothing outside the workdir and the --add-dirs, so not {}",
                    shown.join(", ")
                ),
            ));
            continue;
        }
        let refused = tops
            .iter()
            .find_map(|t| containment::check(&t.path, &Role::GitDir, &rules).err());
        if let Some(e) = refused {
            out.left_out.push((root.clone(), e.to_string()));
            continue;
        }
        for g in extra.iter().filter(|g| !g.read_only) {
            rules.writable(WritableRoot::new(g.path.clone(), "this launch's git dir"));
        }
        out.guards.extend(extra);
    }
    out
}

/// At the late check, with the read-write mounts of the `running` launches in `rules`: every
/// git dir mounted outside `roots` (in `guards`) must still be proven, or the launch is refused.
pub(super) fn recheck(
    config: &Config,
    roots: &[PathBuf],
    guards: &[GitGuard],
    rules: &Rules,
    running: &[RunningLaunch],
    lockdown: bool,
) -> Result<(), GitLayoutError> {
    let now = outside(config, roots, rules, running, lockdown);
    let proven = git_layout::tops(&now.guards, roots);
    for top in git_layout::tops(guards, roots) {
        if proven.iter().any(|p| p.path == top.path) {
            continue;
        }
        let whys: Vec<&str> = now.left_out.iter().map(|(_, why)| why.as_str()).collect();
        let why = match whys.is_empty() {
            true => {
                "what the `.git` files lead to changed while the launch was prepared; launch again".into()
            }
            false => whys.join("; "),
        };
        return Err(GitLayoutError::NoLongerProven {
            path: top.path.clone(),
            why,
        });
    }
    Ok(())
}

fn note_unseen(root: &Path, why: &str) {
    eprintln!(
        "ags: note: git in the container will not see the repository of {}: {}",
        safepath::display(root),
        crate::text::escape_line(why)
    );
}

/// The trees walked for planted git configuration after the launch: `roots` and the
/// read-write git dirs mounted outside them.
pub(super) fn scan_roots(roots: &[PathBuf], guards: &[GitGuard]) -> Vec<PathBuf> {
    let outside = guards
        .iter()
        .filter(|g| !g.read_only && !roots.iter().any(|r| g.path.starts_with(r)))
        .map(|g| g.path.clone());
    let mut all: Vec<PathBuf> = roots.iter().cloned().chain(outside).collect();
    all.sort();
    // A pinned directory inside another one is walked with it.
    let mut out: Vec<PathBuf> = Vec::new();
    for p in all {
        if !out.iter().any(|o| p.starts_with(o)) {
            out.push(p);
        }
    }
    out
}

/// The identity to give the agent: `None` with `[git] identity = false` or when the host has
/// none.
pub(super) fn identity(config: &Config, ssh_agent: bool) -> Option<GitIdentity> {
    if !config.user.git.identity {
        return None;
    }
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let id = identity::resolve(
        &Lookup {
            workdir: &config.workdir,
            home: &config.paths.home,
            env: &env,
        },
        ssh_agent,
    );
    (!id.is_empty() || id.note.is_some()).then_some(id)
}

/// The ssh-agent to forward, when asked for (`--ssh-agent` or `[git] ssh_agent = true`).
pub(super) fn ssh_agent(args: &RunArgs, config: &Config, rules: &Rules) -> Result<Option<SshAgent>, Error> {
    if !(args.ssh_agent || config.user.git.ssh_agent) {
        return Ok(None);
    }
    let fail = |what: &str| CommandError::invalid("--ssh-agent", what);
    let named = std::env::var_os("SSH_AUTH_SOCK")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| {
            fail("SSH_AUTH_SOCK is not set, so there is no ssh-agent to forward; start one (`eval \"$(ssh-agent)\"`), add your key with `ssh-add`, and run ags again")
        })?;
    let socket = checked(&named, "SSH_AUTH_SOCK", rules, |meta| {
        if !meta.file_type().is_socket() {
            return Err("it is not a socket".into());
        }
        let uid = nix::unistd::getuid().as_raw();
        if meta.uid() != uid {
            return Err(format!(
                "the socket belongs to uid {}, not to you (uid {uid}); only your own agent is forwarded",
                meta.uid()
            ));
        }
        Ok(())
    })
    .map_err(|e| fail(&e))?;
    let known_hosts = match &config.user.git.known_hosts {
        Some(path) => Some(path.clone()),
        None => Some(config.paths.home.join(".ssh/known_hosts")).filter(|p| p.exists()),
    };
    let known_hosts = known_hosts
        .map(|path| {
            checked(&path, "known_hosts", rules, |meta| match meta.is_file() {
                true => Ok(()),
                false => Err("it is not a regular file".into()),
            })
            .map_err(|e| CommandError::invalid("[git] known_hosts", e))
        })
        .transpose()?;
    let keys = config.user.git.ssh_keys.clone();
    Ok(Some(SshAgent {
        socket,
        known_hosts,
        keys,
    }))
}

/// `path` resolved physically and checked with `kind`: it must exist, be valid UTF-8, and
/// neither lie inside nor pass through a symlink inside a directory the agent can write (it
/// could swap it for a link to another host file between this check and the mount).
fn checked(
    path: &Path,
    what: &str,
    rules: &Rules,
    kind: impl Fn(&std::fs::Metadata) -> Result<(), String>,
) -> Result<PathBuf, String> {
    let shown = safepath::display(path);
    let res = safepath::resolve(path, Missing::Refuse).map_err(|e| format!("{what} {shown}: {e}"))?;
    let real = res
        .path
        .to_str()
        .map(PathBuf::from)
        .ok_or_else(|| format!("{what} {shown} is not valid UTF-8"))?;
    let writable = |p: &Path| rules.writable_roots().iter().find(|w| p.starts_with(&w.path));
    let links = res.links.iter().map(|l| l.at.as_path());
    for p in links.chain(std::iter::once(real.as_path())) {
        if let Some(w) = writable(p) {
            return Err(format!(
                "{what} {shown} is (or passes through) {}, inside {} ({}), which the agent can write; use one outside the launch's read-write mounts",
                safepath::display(p),
                safepath::display(&w.path),
                w.owner
            ));
        }
    }
    let meta = std::fs::symlink_metadata(&real).map_err(|e| format!("{what} {shown}: {e}"))?;
    kind(&meta).map_err(|why| format!("{what} {shown}: {why}"))?;
    Ok(real)
}
