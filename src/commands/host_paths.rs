//! The containment checks of a launch's host paths ([`crate::containment`]), orchestrated: what
//! is protected (config paths, the Podman endpoint in use, Podman's storage), which directories
//! an agent can write (this launch's read-write mounts, other live launches' ones), and when each
//! path is checked.
//!
//! - [`check_early`], before any hook runs: the workdir (a user error surfaces before anything
//!   executes). Its [`Rules`] then check the user's mounts (`launch_input::user_mounts`) and go
//!   to the hook stage, which checks the hook mount sources with them.
//! - [`check_late`], after connecting and right before the container is created: everything again,
//!   now also against the storage the service reports and the read-write mounts of other live
//!   `ags` containers; each path must still resolve to what was checked before.

use crate::error::CommandError;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::containment::{self, Class, Protected, Role, Rules, WritableRoot};
use crate::hooks::mount_source;
use crate::hooks::prepare::Prepared;
use crate::plan::{Origin, RunSettings, UserMount};
use crate::safepath::{self, Missing};
use crate::workspace::git_layout::RunningLaunch;
use crate::{Error, podman};

/// The path the user named as the workdir: `--workdir` (made absolute), else the shell's
/// logical `$PWD` when it is the current directory, else the current directory.
pub(super) fn named_workdir(arg: Option<&Path>) -> Option<PathBuf> {
    let cwd = std::env::current_dir().ok()?;
    if let Some(p) = arg {
        return Some(cwd.join(p));
    }
    let pwd = std::env::var_os("PWD")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute());
    let same = |p: &Path| match (std::fs::metadata(p), std::fs::metadata(&cwd)) {
        (Ok(a), Ok(b)) => (a.dev(), a.ino()) == (b.dev(), b.ino()),
        _ => false,
    };
    Some(pwd.filter(|p| same(p)).unwrap_or(cwd))
}

/// What is protected before Podman is contacted: the config paths, the system trees (for the
/// workdir and `--add-dir`s) and the socket directories of every endpoint candidate.
pub(super) fn base_rules(config: &Config, url: Option<&str>) -> Rules {
    let mut rules = Rules::new(config.paths.protected());
    rules.protect(containment::system_trees());
    rules.protect(socket_dirs(url));
    rules
}

/// The directory of each unix socket `ags` may talk to (as given and as resolved).
fn socket_dirs(url: Option<&str>) -> Vec<Protected> {
    let env = |k: &str| std::env::var(k).ok();
    let euid = nix::unistd::geteuid().as_raw();
    let candidates = podman::candidates(
        url,
        env("CONTAINER_HOST").as_deref(),
        env("XDG_RUNTIME_DIR").as_deref(),
        euid,
    );
    socket_dirs_of(&candidates)
}

/// [`socket_dirs`] for a given candidate list: the parent of every `unix://` socket, as named
/// and as its symlinks resolve (`/` itself is left to the other rules).
fn socket_dirs_of(candidates: &[podman::Candidate]) -> Vec<Protected> {
    let mut out = Vec::new();
    for c in candidates {
        let Ok(podman::Endpoint::Unix(socket)) = podman::Endpoint::parse(&c.url) else {
            continue;
        };
        let resolved = safepath::resolve(&socket, Missing::Append).map(|r| r.path).ok();
        for sock in [Some(socket), resolved].into_iter().flatten() {
            if let Some(dir) = sock.parent().filter(|d| *d != Path::new("/")) {
                out.push(Protected::overlap(
                    "Podman API socket directory",
                    dir,
                    Class::Podman,
                ));
            }
        }
    }
    out
}

/// Check the workdir and return the rules for the user's mounts and the hook stage, with the
/// workdir as a writable root (`launch_input::user_mounts` adds the read-write user mounts).
pub(super) fn check_early(config: &Config, named: Option<&Path>, url: Option<&str>) -> Result<Rules, Error> {
    let mut rules = base_rules(config, url);
    check_workdir(config, named.unwrap_or(&config.workdir), &rules, true)?;
    rules.writable(WritableRoot::new(config.workdir.clone(), "this launch's workdir"));
    Ok(rules)
}

/// Right before the container is created: check everything again with what the service knows.
/// Returns the directories an agent can write (for the `--report` check after the launch).
pub(super) async fn check_late(
    client: &podman::Client,
    config: &Config,
    settings: &RunSettings,
    prepared: &Prepared,
    url: Option<&str>,
) -> Result<Vec<WritableRoot>, Error> {
    let (mut rules, neighbours) = late_rules(client, config, settings, prepared, url).await?;
    let roots = super::git_host::git_roots(config, &settings.mounts);
    recheck_git(config, settings, &roots, &rules, &neighbours)?;
    check_workdir(config, &config.workdir, &rules, false)?;
    add_own_roots(&mut rules, &config.workdir, &settings.mounts);
    // The git data mounted outside the workdir (`workspace::git_layout`): still acceptable, and
    // its read-write parts are the agent's to write.
    for top in crate::workspace::git_layout::tops(&settings.git_guards, &roots) {
        let checked = containment::check(&top.path, &Role::GitDir, &rules)?;
        unchanged(&Role::GitDir.describe(&top.path), &top.path, &checked.path)?;
    }
    for g in settings.git_guards.iter().filter(|g| !g.read_only) {
        rules.writable(WritableRoot::new(g.path.clone(), "this launch's git dir"));
    }
    for m in &settings.mounts {
        let role = match m.origin {
            Origin::Cli => Role::AddDir,
            _ => Role::ConfigMount,
        };
        let checked = containment::check(&m.source, &role, &rules)?;
        unchanged(&role.describe(&m.source), &m.source, &checked.path)?;
    }
    let sources = mount_source::check_mount_sources(&prepared.resolved.mounts, &rules)
        .map_err(|e| Error::Hooks(Box::new(e).into()))?;
    for (before, now) in prepared.mount_sources.iter().zip(&sources) {
        unchanged("hook mount source", before, now)?;
    }
    // The env files were read before the other launches' mounts were known: nothing of them
    // has reached a container yet, so a planted link there still stops the launch.
    for file in &settings.env_files {
        file.recheck(rules.writable_roots())?;
    }
    Ok(rules.writable_roots().to_vec())
}

/// The rules of [`check_late`]: the base ones, Podman's storage when more than the workdir is
/// mounted, and the read-write mounts of the running `ags` containers (returned too).
async fn late_rules(
    client: &podman::Client,
    config: &Config,
    settings: &RunSettings,
    prepared: &Prepared,
    url: Option<&str>,
) -> Result<(Rules, Vec<podman::Neighbour>), Error> {
    let mut rules = base_rules(config, url);
    if !settings.mounts.is_empty() || !prepared.mount_sources.is_empty() {
        // `GET /info` is slow (~150 ms): asked only when more than the workdir is mounted. The
        // default storage locations are protected either way.
        if let Ok(dirs) = client.storage_dirs().await {
            rules.protect(
                dirs.into_iter()
                    .map(|d| Protected::overlap("Podman storage", d, Class::Podman)),
            );
        }
    }
    let neighbours = client.live_neighbours().await?;
    for n in &neighbours {
        for (source, _, _) in n.binds.iter().filter(|(_, _, rw)| *rw) {
            rules.writable(WritableRoot {
                path: source.clone(),
                owner: format!("running ags container {}", n.container),
                running: true,
            });
        }
    }
    Ok((rules, neighbours))
}

/// The git data outside the read-write mounts (`workspace::git_layout`) proven again now that the
/// running launches' read-write mounts are known; no running launch mounts this launch's git
/// guards or protected files read-write.
fn recheck_git(
    config: &Config,
    settings: &RunSettings,
    roots: &[PathBuf],
    rules: &Rules,
    neighbours: &[podman::Neighbour],
) -> Result<(), Error> {
    let running: Vec<RunningLaunch> = neighbours
        .iter()
        .map(|n| RunningLaunch {
            container: n.container.clone(),
            binds: n.binds.clone(),
        })
        .collect();
    super::git_host::recheck(
        config,
        roots,
        &settings.git_guards,
        rules,
        &running,
        settings.lockdown,
    )?;
    super::guard_neighbours::check(&settings.git_guards, neighbours)
        .map_err(crate::config::ConfigError::from)?;
    // The protected project files' mounts are bound the same way.
    super::guard_neighbours::check(&settings.protected.mounts, neighbours).map_err(|e| {
        crate::workspace::protected::ProtectedError::Neighbour {
            path: e.path,
            reason: e.reason,
        }
    })?;
    Ok(())
}

fn check_workdir(config: &Config, named: &Path, rules: &Rules, note: bool) -> Result<(), Error> {
    let checked = containment::check(named, &Role::Workdir, rules)?;
    unchanged("workdir", &config.workdir, &checked.path)?;
    if note && !checked.links.is_empty() {
        note_links(&format!("workdir {}", safepath::display(named)), &checked);
    }
    Ok(())
}

fn add_own_roots(rules: &mut Rules, workdir: &Path, mounts: &[UserMount]) {
    rules.writable(WritableRoot::new(workdir, "this launch's workdir"));
    for m in mounts.iter().filter(|m| !m.read_only) {
        let owner = match m.origin {
            Origin::Cli => "this launch's --add-dir",
            _ => "this launch's [[mount]]",
        };
        rules.writable(WritableRoot::new(m.source.clone(), owner));
    }
}

/// The writable roots assumed when a launch failed before its own were known (for the
/// `--report` check): the workdir as named (`--workdir` or the current directory), resolved.
pub(super) fn fallback_writable(workdir: Option<&Path>) -> Vec<WritableRoot> {
    named_workdir(workdir)
        .and_then(|p| safepath::resolve(&p, Missing::Refuse).ok())
        .map(|r| WritableRoot::new(r.path, "the workdir"))
        .into_iter()
        .collect()
}

/// Tell the user that the directory the container gets is not the path they named.
pub(super) fn note_links(what: &str, checked: &containment::Checked) {
    let links: Vec<String> = checked
        .links
        .iter()
        .map(|(l, t)| format!("{} -> {}", safepath::display(l), safepath::display(t)))
        .collect();
    eprintln!(
        "ags: note: {what} is reached through the symlink {}; the container gets the real directory {}",
        links.join(", "),
        safepath::display(&checked.path)
    );
}

fn unchanged(what: &str, before: &Path, now: &Path) -> Result<(), Error> {
    if before == now {
        return Ok(());
    }
    Err(CommandError::PathChanged {
        what: what.to_string(),
        before: safepath::display(before).to_string(),
        now: safepath::display(now).to_string(),
    }
    .into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(url: &str) -> podman::Candidate {
        podman::Candidate {
            url: url.into(),
            source: podman::CandidateSource::Explicit,
        }
    }

    #[test]
    fn the_directory_of_the_socket_in_use_is_protected_as_named_and_resolved() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("real")).unwrap();
        std::os::unix::fs::symlink(root.join("real/podman.sock"), root.join("podman.sock")).unwrap();
        let url = format!("unix://{}/podman.sock", root.display());
        let dirs: Vec<PathBuf> = socket_dirs_of(&[candidate(&url), candidate("tcp://host:1")])
            .into_iter()
            .map(|p| p.path)
            .collect();
        assert_eq!(dirs, [root.clone(), root.join("real")]);
        let rules = Rules::new(socket_dirs_of(&[candidate(&url)]));
        let hook = Role::HookMount { hook: "h".into() };
        let err = containment::check(&root.join("real"), &hook, &rules)
            .unwrap_err()
            .to_string();
        assert!(err.contains("overlaps the Podman API socket directory"), "{err}");
    }
}
