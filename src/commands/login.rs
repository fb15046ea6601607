//! `ags login import AGENT`: copy the host's login of an agent (its `login_file` in the agent
//! table, or `--from FILE`) into the state volume that `ags --agent AGENT` in this workdir
//! mounts (docs/agents.md, "Credentials"). The volume is the launch's own: the plan of a launch
//! of AGENT in the workdir is built (no hook runs) and names it, with its labels, the image and
//! the agent's user. The file is read here (a regular file of at most 1 MiB, owned by you) and
//! written through the Podman API (`launch::login`): it never passes through a command line, a
//! log or a temporary file, and the host's agent directory is never mounted.

use crate::error::CommandError;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::cli::{GlobalArgs, LoginArgs, LoginCommand, LoginImportArgs, RunArgs, TtyMode};
use crate::config::Config;
use crate::containment::WritableRoot;
use crate::launch::identity;
use crate::plan::{HookLayer, LaunchPlan, StateVolume};
use crate::safepath::ResolveError;
use crate::secret::Secret;
use crate::workspace::user_paths::{self, UserPathError};
use crate::{Error, agents, podman};

/// Largest login file imported.
const MAX_LOGIN_BYTES: usize = 1024 * 1024;

/// `ags login …`.
pub fn login(global: &GlobalArgs, args: &LoginArgs) -> Result<u8, Error> {
    match &args.command {
        LoginCommand::Import(a) => import(global, a),
    }
}

fn import(global: &GlobalArgs, args: &LoginImportArgs) -> Result<u8, Error> {
    let (profile, login_file) = login_profile(&args.agent)?;
    let run = RunArgs {
        agent: args.agent.clone(),
        workdir: args.workdir.clone(),
        image: args.image.clone(),
        tty: TtyMode::False,
        ..RunArgs::default()
    };
    super::launch_input::check_args(global, &run)?;
    let config = super::run::load_config(global, run.workdir.clone())?;
    let named = super::host_paths::named_workdir(run.workdir.as_deref());
    let service_url = super::chosen_url(global);
    let mut rules = super::host_paths::check_early(&config, named.as_deref(), service_url.as_deref())?;
    let settings = super::launch_input::settings(&run, &config, &mut rules, false)?;
    let source = args
        .from
        .clone()
        .unwrap_or_else(|| config.paths.home.join(login_file));
    let content = read_login(&source, rules.writable_roots())?;
    let in_container = Path::new(agents::CONTAINER_HOME).join(login_file);
    let (dir, name) = state_dir_of(profile, &in_container)?;
    let identity = identity::current();
    let rt = super::runtime()?;
    let result = rt.block_on(async {
        let client = podman::connect(&super::target_for(global, Some(&config), Vec::new())).await?;
        let image = settings.image.as_deref().unwrap_or(&config.image);
        crate::launch::lifecycle::preflight(&client, image, None).await?;
        let service = super::run::service_facts(&client).await?;
        let plan = super::run::build_plan(&config, &settings, &identity, service, &HookLayer::default())?;
        let volume = state_volume(&plan, &config, profile, &dir, &args.agent)?;
        let bytes = content.expose().as_bytes();
        let wrote =
            crate::launch::login::import(&client, &plan, volume, &dir, &name, bytes, profile.login_settings)
                .await?;
        Ok::<_, Error>((volume.name.clone(), wrote))
    });
    super::finish(rt);
    let (volume, wrote) = result?;
    eprintln!(
        "ags: imported {} into volume {volume} ({}) for {} in {}; `ags --agent {}` there uses it",
        crate::safepath::display(&source),
        in_container.display(),
        args.agent,
        crate::safepath::display(&config.workdir),
        args.agent
    );
    settings_note(profile, &dir, wrote, &args.agent);
    Ok(0)
}

/// The agent's profile and the login file it keeps in its home.
fn login_profile(agent: &str) -> Result<(&'static agents::AgentProfile, &'static str), Error> {
    let profile = crate::plan::check::find_agent(agent)?;
    let Some(login_file) = profile.login_file else {
        let rule = "this agent keeps no login file ags knows; give it an API key instead (docs/agents.md, \"Credentials\")";
        return Err(CommandError::invalid(format!("ags login import {agent}"), rule).into());
    };
    Ok((profile, login_file))
}

/// The state volume of the launch's `plan` that holds the agent's directory `dir`.
fn state_volume<'p>(
    plan: &'p LaunchPlan,
    config: &Config,
    profile: &agents::AgentProfile,
    dir: &Path,
    agent: &str,
) -> Result<&'p StateVolume, Error> {
    let per_project = (!config.user.shared_state).then_some(config.workdir.as_path());
    let volume_name = profile.state_volume(&dir.to_string_lossy(), per_project);
    plan.state_volumes
        .iter()
        .find(|v| v.name == volume_name)
        .ok_or_else(|| {
            let rule = format!("its launch mounts no state volume {volume_name}");
            CommandError::invalid(format!("ags login import {agent}"), rule).into()
        })
}

/// The host login file: a regular file (a symbolic link is followed: dotfile managers make
/// them, but not one an agent could have planted: `workspace::user_paths` with the launch's
/// writable roots) owned by you, at most 1 MiB of text.
fn read_login(path: &Path, writable: &[WritableRoot]) -> Result<Secret, Error> {
    let what = format!("login file {}", crate::safepath::display(path));
    let checked = user_paths::check_file(&what, path, writable).map_err(|e| match e {
        UserPathError::Resolve {
            source: ResolveError::NotFound(_),
            ..
        } => {
            let rule =
                "does not exist; log in with the agent on this host first, or name the file with --from";
            Error::from(CommandError::invalid(what.clone(), rule))
        }
        e => e.into(),
    })?;
    let meta = std::fs::symlink_metadata(checked.physical()).map_err(CommandError::io(what.clone()))?;
    let uid = nix::unistd::getuid().as_raw();
    if meta.uid() != uid {
        let rule = format!("belongs to uid {}, not to you (uid {uid})", meta.uid());
        return Err(CommandError::invalid(what, rule).into());
    }
    Ok(Secret::new(checked.read_small_text(MAX_LOGIN_BYTES)?))
}

/// The agent's state directory holding `file` (a container path), and the file's name in it.
fn state_dir_of(profile: &agents::AgentProfile, file: &Path) -> Result<(PathBuf, String), Error> {
    let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match profile.state.iter().any(|s| Path::new(s) == dir) && !name.is_empty() {
        true => Ok((dir, name)),
        false => {
            let input = format!("the login file {} of {}", file.display(), profile.name);
            Err(CommandError::invalid(input, "not directly in one of its state directories").into())
        }
    }
}

/// What happened to the agent's settings file beside the login (`login_settings`).
fn settings_note(profile: &agents::AgentProfile, dir: &Path, wrote: bool, agent: &str) {
    let Some((file, text)) = profile.login_settings else {
        return;
    };
    let path = dir.join(file);
    match wrote {
        true => eprintln!(
            "ags: wrote {} ({text}) beside it: the volume had none",
            path.display()
        ),
        false => eprintln!(
            "ags: left {} in the volume as it is; if {agent} asks how to log in, its settings need {text}",
            path.display()
        ),
    }
}
