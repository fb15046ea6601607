//! The host inputs of a launch that the user names, resolved before any hook runs: the
//! environment from the host (`--env`, `--env-file`, passthrough, `[agent.NAME] env`) and the
//! user's bind mounts (`--add-dir PATH[:ro]`, `[[mount]]`). Mount sources obey the rules of hook
//! mount sources (`hooks::mount_source`); env values the rules of `plan::host_env`.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::Error;
use crate::cli::RunArgs;
use crate::config::{Config, ConfigMount};
use crate::fsutil;
use crate::hooks::mount_source::{ProtectedHostPaths, check_mount_source};
use crate::hooks::policy::HostSource;
use crate::plan::{self, Origin, UserMount, host_env};

/// `--env`, `--env-file`, `[sandbox] env_passthrough` and `[agent.NAME] env`, resolved
/// (plan::host_env); env files are read here, without following a final symlink.
pub(super) fn host_env(args: &RunArgs, config: &Config) -> Result<host_env::HostEnv, Error> {
    let files = args
        .env_files
        .iter()
        .map(|p| {
            fsutil::read_small_text_nofollow(p, host_env::MAX_ENV_FILE_BYTES)
                .map(|text| (p.display().to_string(), text))
                .map_err(|e| Error::Usage(format!("--env-file {}: {e}", p.display())))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let no_agent_env = Default::default();
    let agent_env = config
        .user
        .agents
        .get(&args.agent)
        .map_or(&no_agent_env, |a| &a.env);
    let lookup = |key: &str| std::env::var_os(key);
    Ok(host_env::resolve(&host_env::HostEnvInput {
        env_args: &args.env,
        env_files: &files,
        passthrough: &config.user.env_passthrough,
        agent_env,
        lookup: &lookup,
    })
    .map_err(plan::PlanError::from)?)
}

/// `--add-dir PATH[:ro]` (mounted at its canonical path) and the global config's `[[mount]]`s
/// (at `target`, default the configured source path; skipped under `--lockdown`, and when
/// `optional` and missing). Every source is checked like a hook mount source.
pub(super) fn user_mounts(args: &RunArgs, config: &Config) -> Result<Vec<UserMount>, Error> {
    let protected = ProtectedHostPaths::from_paths(&config.paths);
    let mut out = Vec::new();
    for raw in &args.add_dirs {
        let (path, read_only) = split_mode(raw);
        let what = format!("--add-dir {}", path.display());
        let source = checked_source(&path, &what, &protected)?;
        if !source.is_dir() {
            return Err(Error::Usage(format!("{what}: not a directory; name a directory")));
        }
        out.push(UserMount {
            destination: source.clone(),
            source,
            read_only,
            origin: Origin::Cli,
        });
    }
    if args.lockdown {
        return Ok(out);
    }
    for m in &config.user.mounts {
        if let Some(mount) = config_mount(m, &protected)? {
            out.push(mount);
        }
    }
    Ok(out)
}

fn config_mount(m: &ConfigMount, protected: &ProtectedHostPaths) -> Result<Option<UserMount>, Error> {
    let what = format!("[[mount]] source {}", m.source.display());
    if m.optional
        && std::fs::symlink_metadata(&m.source).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
    {
        return Ok(None);
    }
    let source = checked_source(&m.source, &what, protected)?;
    Ok(Some(UserMount {
        destination: m.target.clone().unwrap_or_else(|| m.source.clone()),
        source,
        read_only: m.readonly,
        origin: Origin::Config,
    }))
}

/// `PATH:ro` → (PATH, true); `PATH:rw` and `PATH` → (PATH, false).
fn split_mode(raw: &Path) -> (PathBuf, bool) {
    let bytes = raw.as_os_str().as_bytes();
    for (suffix, ro) in [(&b":ro"[..], true), (&b":rw"[..], false)] {
        if let Some(path) = bytes.strip_suffix(suffix) {
            return (PathBuf::from(std::ffi::OsStr::from_bytes(path)), ro);
        }
    }
    (raw.to_path_buf(), false)
}

/// The canonical source after the hook mount-source rules (it exists, is a file or directory,
/// and does not expose `ags`'s or Podman's own storage).
fn checked_source(path: &Path, what: &str, protected: &ProtectedHostPaths) -> Result<PathBuf, Error> {
    let absolute = std::path::absolute(path).map_err(|e| Error::Usage(format!("{what}: {e}")))?;
    let canonical = absolute
        .canonicalize()
        .map_err(|e| Error::Usage(format!("{what}: {e}; name an existing path")))?;
    let text = canonical
        .to_str()
        .ok_or_else(|| Error::Usage(format!("{what}: the path is not UTF-8; rename it")))?;
    let source = HostSource::try_from(text).map_err(|e| Error::Usage(format!("{what}: the path {e}")))?;
    check_mount_source(&source, protected).map_err(|e| Error::Usage(format!("{what}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_dir_mode_suffix() {
        assert_eq!(split_mode(Path::new("/a:ro")), (PathBuf::from("/a"), true));
        assert_eq!(split_mode(Path::new("/a:rw")), (PathBuf::from("/a"), false));
        assert_eq!(split_mode(Path::new("rel")), (PathBuf::from("rel"), false));
    }
}
