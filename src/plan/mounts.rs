//! The plan's mounts: the agent's state, the workdir, the user's mounts (destinations checked),
//! git guards, hooks' mounts and generated files; equal or nested destinations refused.

use std::path::Path;

use super::PlanError;
use super::input::*;
use super::types::*;
use crate::agents;

/// Every mount of the launch, in order, checked: no user destination on a reserved path, no two
/// bind mounts at equal or nested destinations.
pub(super) fn build_mounts(
    input: &PlanInput<'_>,
    hook_mounts: &[PlanMount],
    files: &[PlanFile],
    staging: Option<&Staging>,
    extra: Vec<PlanMount>,
) -> Result<Vec<PlanMount>, PlanError> {
    let bind = |path: &Path, origin, read_only| PlanMount::bind(path, path.into(), read_only, origin);
    let mut mounts = vec![bind(&input.config.workdir, Origin::Default, false)];
    for m in &input.run.mounts {
        check_user_destination(m)?;
        mounts.push(PlanMount::bind(
            &m.destination,
            m.source.clone(),
            m.read_only,
            m.origin.clone(),
        ));
    }
    mounts.extend(state_mounts(input));
    mounts.extend(hook_mounts.iter().cloned());
    // Generated files: read-only binds of private host files, or for a remote service of their
    // copies in the staging volume. A bind mount point cannot be written, unlinked or replaced
    // from inside the container (docs/decisions/0002).
    mounts.extend(files.iter().enumerate().map(|(i, f)| PlanMount {
        destination: f.destination.clone(),
        kind: match (input.remote, staging) {
            (true, Some(s)) => MountKind::StagedFile {
                volume: s.volume.clone(),
                path: staged_file_path(i),
            },
            _ => MountKind::Bind {
                source: f.host_path.clone(),
            },
        },
        read_only: true,
        origin: f.origin.clone(),
    }));
    mounts.extend(extra);
    let ssh = input.run.ssh_agent.as_ref();
    let ssh = ssh.map(|s| crate::git::plan::ssh_plan(s, input.host_stage_dir));
    mounts.extend(ssh.iter().flat_map(crate::git::plan::ssh_mounts));
    check_overlaps(&mounts)?;
    // Nested inside the workdir (or an --add-dir) on purpose; Podman mounts parents first.
    let guards = input
        .run
        .git_guards
        .iter()
        .map(|g| bind(&g.path, Origin::Default, g.read_only));
    mounts.extend(guards);
    // The same for the protected project files (read-only, their directories pinned).
    let protected = input.run.protected.mounts.iter();
    mounts.extend(protected.map(|g| bind(&g.path, Origin::Default, g.read_only)));
    if input.run.lockdown {
        mounts.extend(lockdown_tmpfs(input.run.limits.tmpfs_size));
    }
    if let Some(s) = staging {
        mounts.push(PlanMount {
            destination: s.mount_point.clone(),
            kind: MountKind::Volume {
                name: s.volume.clone(),
            },
            read_only: true,
            origin: Origin::Default,
        });
    }
    Ok(mounts)
}

/// The agent's state volumes (kept across launches); none with `--lockdown`, which mounts no
/// agent configuration.
fn state_mounts(input: &PlanInput<'_>) -> Vec<PlanMount> {
    let Some(profile) = agents::find(&input.run.agent).filter(|_| !input.run.lockdown) else {
        return Vec::new();
    };
    let per_project = (!input.config.user.shared_state).then_some(input.config.workdir.as_path());
    let volume = |dir: &&str| PlanMount {
        destination: dir.into(),
        kind: MountKind::Volume {
            name: profile.state_volume(dir, per_project),
        },
        read_only: false,
        origin: Origin::Default,
    };
    profile.state.iter().map(volume).collect()
}

/// With `--lockdown`: private tmpfs over `/tmp`, `/var/tmp` and `/run`.
fn lockdown_tmpfs(size: u64) -> impl Iterator<Item = PlanMount> {
    let sizes = [
        ("/tmp", size),
        ("/var/tmp", size),
        ("/run", crate::limits::RUN_TMPFS_SIZE),
    ];
    sizes.into_iter().map(|(dest, size)| PlanMount {
        destination: dest.into(),
        kind: MountKind::Tmpfs { size },
        read_only: false,
        origin: Origin::Default,
    })
}

/// Container paths a user mount may not equal, enter or contain: the kernel's file systems and
/// `ags`'s staging mount. (Other plan mounts are caught by [`check_overlaps`].)
const RESERVED_DESTINATIONS: &[&str] = &["/proc", "/sys", "/dev", STAGING_MOUNT];

/// A user mount's destination: absolute, normalized, not `/` and clear of
/// [`RESERVED_DESTINATIONS`].
fn check_user_destination(m: &UserMount) -> Result<(), PlanError> {
    let bad = |rule| PlanError::BadMount {
        what: match m.origin {
            Origin::Cli => format!("--add-dir {}", m.source.display()),
            _ => format!("[[mount]] target {}", m.destination.display()),
        },
        rule,
    };
    let d = &m.destination;
    let text = d.to_string_lossy();
    if !d.is_absolute() {
        return Err(bad("the container path must be absolute"));
    }
    if d == Path::new("/") {
        return Err(bad("the container path must not be /"));
    }
    if text[1..]
        .split('/')
        .any(|s| s.is_empty() || s == "." || s == "..")
    {
        return Err(bad(
            "the container path must be normalized (no //, ., .. or trailing /)",
        ));
    }
    if RESERVED_DESTINATIONS
        .iter()
        .any(|r| d.starts_with(r) || Path::new(r).starts_with(d))
    {
        return Err(bad(
            "the container path must stay clear of /proc, /sys, /dev and /run/ags; choose another target",
        ));
    }
    Ok(())
}

/// Refuse equal or nested destinations among bind mounts (tmpfs system mounts are exempt, and
/// so are the agent hooks' mounts inside a state volume: the empty read-only tmpfs over a
/// plugin directory, the empty read-only file over a `.env`).
fn check_overlaps(mounts: &[PlanMount]) -> Result<(), PlanError> {
    let shadows = |inner: &PlanMount, outer: &PlanMount| {
        inner.origin == Origin::AgentHooks
            && matches!(outer.kind, MountKind::Volume { .. })
            && inner.destination != outer.destination
            && inner.destination.starts_with(&outer.destination)
    };
    for (i, a) in mounts.iter().enumerate() {
        for b in &mounts[i + 1..] {
            if shadows(a, b) || shadows(b, a) {
                continue;
            }
            if a.destination.starts_with(&b.destination) || b.destination.starts_with(&a.destination) {
                return Err(PlanError::MountOverlap {
                    a: a.destination.display().to_string(),
                    a_origin: a.origin.to_string(),
                    b: b.destination.display().to_string(),
                    b_origin: b.origin.to_string(),
                });
            }
        }
    }
    Ok(())
}
