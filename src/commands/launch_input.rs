//! The command line of a launch checked and resolved into [`RunSettings`] before any hook runs:
//! values that need nothing else first ([`check_args`]), then the host inputs the user names: the
//! environment from the host (`--env`, `--env-file`, passthrough, `[agent.NAME] env`) and the
//! user's bind mounts (`--add-dir PATH[:ro]`, `[[mount]]`). Mount sources obey the containment
//! rules (`crate::containment`); env values the rules of `plan::host_env`.

use crate::error::CommandError;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::git_host;
use crate::cli::{GlobalArgs, NetworkMode, RunArgs, TtyMode};
use crate::config::{self, AgentSettings, Config};
use crate::containment::{self, Role, Rules, WritableRoot};
use crate::hooks::policy::HostSource;
use crate::op::SecretSetName;
use crate::plan::RunSettings;
use crate::plan::{self, Origin, UserMount, host_env};
use crate::safepath::{self, Missing};
use crate::workspace::protected;
use crate::workspace::user_paths::{self, CheckedHostPath};
use crate::{Error, podman};

/// `--env`, `--env-file`, `[sandbox] env_passthrough` and `[agent.NAME] env`, resolved
/// (plan::host_env), and the env files as checked. Env files are checked against the writable
/// roots in `rules` (`workspace::user_paths`: no symlink an agent could have planted) and read
/// without following any symlink.
pub(super) fn host_env(
    args: &RunArgs,
    config: &Config,
    rules: &Rules,
) -> Result<(host_env::HostEnv, Vec<CheckedHostPath>), Error> {
    let mut checked = Vec::new();
    let mut files = Vec::new();
    for p in &args.env_files {
        let what = format!("--env-file {}", safepath::display(p));
        let file = user_paths::check_file(&what, p, rules.writable_roots())?;
        let text = file.read_small_text(host_env::MAX_ENV_FILE_BYTES)?;
        files.push((safepath::display(p), text));
        checked.push(file);
    }
    let no_agent_env = Default::default();
    let agent_env = config
        .user
        .agents
        .get(&args.agent)
        .map_or(&no_agent_env, |a| &a.env);
    let lookup = |key: &str| std::env::var_os(key);
    let env = host_env::resolve(&host_env::HostEnvInput {
        env_args: &args.env,
        env_files: &files,
        passthrough: &config.user.env_passthrough,
        agent_env,
        lookup: &lookup,
    })
    .map_err(plan::PlanError::from)?;
    Ok((env, checked))
}

/// The `[agent.NAME]` table of the launched agent (default: empty). Every table must name a
/// known agent, so a typo is an error rather than a setting silently never applied.
pub(super) fn agent_settings(args: &RunArgs, config: &Config) -> Result<AgentSettings, Error> {
    for name in config.user.agents.keys() {
        if crate::agents::find(name).is_none() {
            let input = format!(
                "config {}: [agent.{name}]",
                config.primary.as_deref().unwrap_or(Path::new("?")).display()
            );
            let rule = format!("unknown agent; known agents: {}", crate::agents::names());
            return Err(CommandError::invalid(input, rule).into());
        }
    }
    Ok(config.user.agents.get(&args.agent).cloned().unwrap_or_default())
}

/// `--add-dir PATH[:ro]` (mounted at its physical path) and the global config's `[[mount]]`s
/// (at `target`, default the configured source path; skipped under `--lockdown`, and when
/// `optional` and missing). Every source is checked with `rules` (crate::containment), which
/// already hold the workdir; the read-write ones are added to `rules` as writable roots first,
/// so no source may sit inside another read-write mount of the launch.
pub(super) fn user_mounts(
    args: &RunArgs,
    config: &Config,
    rules: &mut Rules,
) -> Result<Vec<UserMount>, Error> {
    let mut wanted = Vec::new();
    for raw in &args.add_dirs {
        let (path, read_only) = split_mode(raw);
        let path =
            std::path::absolute(&path).map_err(CommandError::io(format!("--add-dir {}", path.display())))?;
        wanted.push((path, read_only, Role::AddDir, None, Origin::Cli));
    }
    if !args.lockdown {
        for m in &config.user.mounts {
            let missing =
                std::fs::symlink_metadata(&m.source).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound);
            if m.optional && missing {
                continue;
            }
            let target = Some(m.target.clone().unwrap_or_else(|| m.source.clone()));
            wanted.push((
                m.source.clone(),
                m.readonly,
                Role::ConfigMount,
                target,
                Origin::Config,
            ));
        }
    }
    for (path, read_only, role, _, _) in &wanted {
        if !read_only && let Ok(r) = safepath::resolve(path, Missing::Append) {
            let owner = match role {
                Role::AddDir => "this launch's --add-dir",
                _ => "this launch's [[mount]]",
            };
            rules.writable(WritableRoot::new(r.path, owner));
        }
    }
    let mut out = Vec::new();
    for (path, read_only, role, target, origin) in wanted {
        let source = checked_source(&path, &role, rules)?;
        out.push(UserMount {
            destination: target.unwrap_or_else(|| source.clone()),
            source,
            read_only,
            origin,
        });
    }
    Ok(out)
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

/// The physical source after the containment rules (it exists, has the right type, exposes no
/// protected location, passes through no symlink an agent could have planted) and the static
/// rules of hook mount sources (Podman's API must carry it unchanged).
pub(super) fn checked_source(path: &Path, role: &Role, rules: &Rules) -> Result<PathBuf, Error> {
    let checked = containment::check(path, role, rules)?;
    if !checked.links.is_empty() {
        super::host_paths::note_links(&role.describe(path), &checked);
    }
    let text = checked.path.to_str().unwrap_or_default();
    HostSource::try_from(text)
        .map_err(|e| CommandError::invalid(role.describe(path), format!("the path {e}")))?;
    Ok(checked.path)
}

/// Check the values of the command line that need nothing else (agent, labels, name, ports,
/// image syntax, URL, workdir): before the configuration (and its overlay trust prompt), the
/// hooks, `op` and Podman, so a typo costs nothing. `--env`, `--env-file` and `--add-dir` are
/// checked by [`settings`], still before any hook runs.
pub(super) fn check_args(global: &GlobalArgs, args: &RunArgs) -> Result<(), Error> {
    if let Some(url) = &global.url {
        podman::Endpoint::parse_from(url, "--url")?;
    }
    if let Some(dir) = &args.workdir
        && !dir.is_dir()
    {
        return Err(CommandError::invalid(
            format!("--workdir {}", dir.display()),
            "not an existing directory",
        )
        .into());
    }
    plan::check::find_agent(&args.agent)?;
    for label in &args.labels {
        plan::check::parse_label(label)?;
    }
    if let Some(name) = &args.name {
        plan::check::check_name(name)?;
    }
    for p in &args.publish {
        plan::check::parse_publish(p)?;
    }
    if let Some(image) = &args.image {
        plan::check::check_image_ref(image)?;
    }
    allow_entries(&args.allow)?;
    Ok(())
}

/// Parse the `--allow` entries.
pub(super) fn allow_entries(raw: &[String]) -> Result<Vec<config::AllowEntry>, Error> {
    raw.iter()
        .map(|r| {
            config::AllowEntry::parse(r).map_err(|rule| {
                CommandError::invalid(
                    format!("--allow {r:?}"),
                    format!("{rule}; write it as in [network] allow (docs/network.md)"),
                )
                .into()
            })
        })
        .collect()
}

/// Resolve the launch options: terminal detection, the user's mounts (checked with `rules`,
/// which then hold the read-write ones) and the environment from the host (`launch_input`).
pub(super) fn settings(
    args: &RunArgs,
    config: &Config,
    rules: &mut Rules,
    terminals: bool,
) -> Result<RunSettings, Error> {
    secret_set_names(&args.op_secret_sets)?;
    let mounts = user_mounts(args, config, rules)?;
    // After the mounts: their read-write ones are writable roots for the env files' check.
    let (host_env, env_files) = host_env(args, config, rules)?;
    let roots = git_host::git_roots(config, &mounts);
    let git_guards = git_host::guards(config, &roots, rules, args.lockdown)?;
    let primary = config.primary.clone().unwrap_or_default();
    let allowed = protected::check_allow(&primary, &config.user.protect_allow)?;
    let protected = protected::protection(&roots, &allowed)?;
    let agent = agent_settings(args, config)?;
    let ssh_agent = git_host::ssh_agent(args, config, rules)?;
    let git_identity = git_host::identity(config, ssh_agent.is_some());
    let settings = RunSettings {
        agent: args.agent.clone(),
        command: args.command.clone(),
        tty: match args.tty {
            TtyMode::Auto => terminals,
            TtyMode::True => true,
            TtyMode::False => false,
        },
        term: Some(host_term()),
        image: args.image.clone(),
        env: host_env.cli,
        env_files,
        config_env: host_env.config,
        mounts,
        git_guards,
        protected,
        git_identity,
        ssh_agent,
        labels: args.labels.clone(),
        op_secret_sets: args.op_secret_sets.clone(),
        expect_plan: expect_plan(args.expect_plan.as_deref())?,
        lockdown: args.lockdown,
        network: args.network.map(network_mode),
        allow: allow_entries(&args.allow)?,
        skip_permissions: args.yolo || agent.skip_permissions,
        agent_args: agent.args,
        name: args.name.clone(),
        timeout: args.timeout,
        publish: args.publish.clone(),
        no_init: args.no_init,
        limits: crate::limits::LimitSettings {
            memory: args.memory.unwrap_or(config.user.limits.memory),
            cpus: args.cpus.or(config.user.limits.cpus),
            ..config.user.limits
        },
        // Always on where the agent has wiring (docs/agent-hook-handlers.md): the dispatcher
        // and the handlers file are mounted with it, and no config switch turns recording off.
        // Every launch serves the record socket (`shell` included).
        agent_hooks: true,
    };
    // Refused before any hook or `op` runs (the plan checks again).
    plan::check_agent_hook_args(&settings)?;
    Ok(settings)
}

/// `--expect-plan`: `sha256:` (optional) and 64 hex digits.
fn expect_plan(raw: Option<&str>) -> Result<Option<String>, Error> {
    let Some(raw) = raw else { return Ok(None) };
    let hex = raw.strip_prefix("sha256:").unwrap_or(raw);
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(CommandError::invalid(
            format!("--expect-plan {}", crate::text::escape_line(raw)),
            "a plan digest is sha256: and 64 hex digits, as `ags plan` prints it",
        )
        .into());
    }
    Ok(Some(raw.to_ascii_lowercase()))
}

/// `TERM` for the container: the host's, or `xterm`.
fn host_term() -> String {
    std::env::var("TERM")
        .ok()
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| "xterm".into())
}

/// `--network MODE` as the config's network mode.
pub(super) fn network_mode(mode: NetworkMode) -> config::Network {
    match mode {
        NetworkMode::Open => config::Network::Open,
        NetworkMode::Allowlist => config::Network::Allowlist,
        NetworkMode::None => config::Network::None,
    }
}

/// Parse `--op-secret-set VAULT/ITEM` values (checked before anything runs).
pub(super) fn secret_set_names(sets: &[String]) -> Result<Vec<SecretSetName>, Error> {
    sets.iter()
        .map(|s| SecretSetName::try_from(s.as_str()).map_err(Error::from))
        .collect()
}

/// `--expect-plan`: the plan must have the pinned digest.
pub(super) fn check_pinned(
    settings: &crate::plan::RunSettings,
    plan: &crate::plan::LaunchPlan,
    identity: &crate::plan::LaunchIdentity,
) -> Result<(), Error> {
    let Some(want) = &settings.expect_plan else {
        return Ok(());
    };
    let got = crate::plan::digest::digest(plan, identity);
    match crate::plan::digest::matches(want, &got) {
        true => Ok(()),
        false => Err(crate::launch::LaunchError::PlanDrifted {
            want: want.clone(),
            got,
        }
        .into()),
    }
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
