//! `ags hooks test|list|revoke|log`: the subcommands that work with declarations, approvals and
//! the run log (`approve`, which needs no run: [`super::hooks_approve`]).

use crate::error::CommandError;
use std::path::PathBuf;

use serde::Serialize;

use super::hooks_lifecycle::TestContext;
use super::run::load_config;
use crate::Error;
use crate::cli::{EventArg, GlobalArgs, HookTestArgs, HooksCommand};
use crate::config::{Config, HookDecl, HookEvent, HookScope};
use crate::hooks::entrypoint::PreparedHook;
use crate::hooks::log::RunLog;
use crate::hooks::prepare::{self, PrepareInput};
use crate::hooks::protocol::HookContext;
use crate::hooks::resolve::LaunchOverrides;
use crate::hooks::runner::Interrupt;
use crate::hooks::summary::summarize_resolved;
use crate::hooks::trust::TrustStore;
use crate::launch::identity;
use crate::plan::STAGING_MOUNT;
use crate::prompt;

/// Run `test`, `list`, `revoke` or `log`.
pub fn run(global: &GlobalArgs, command: &HooksCommand) -> Result<u8, Error> {
    match command {
        HooksCommand::Test(args) => test(global, args),
        HooksCommand::List { workdir, json } => list(global, workdir.clone(), *json),
        HooksCommand::Revoke { target, workdir } => revoke(global, target, workdir.clone()),
        HooksCommand::Log { n, json } => log(*n, *json),
        _ => unreachable!("inert hook commands are handled by commands::hooks"),
    }
}

/// The event an `EventArg` names.
pub(super) fn event_of(arg: EventArg) -> HookEvent {
    match arg {
        EventArg::Prepare => HookEvent::Prepare,
        EventArg::Started => HookEvent::Started,
        EventArg::Finished => HookEvent::Finished,
    }
}

/// Execute one named hook after approval: a prepare hook prints a redacted summary of its
/// contribution, a started/finished hook whether it answered `{"version":1}`.
///
/// The configuration is resolved from `--workdir`, else the current directory — also with
/// `--context`, whose `workdir` is only what the hook is told (and its cwd when that directory
/// exists here).
fn test(global: &GlobalArgs, args: &HookTestArgs) -> Result<u8, Error> {
    eprintln!("ags: `ags hooks test` EXECUTES the hook on this host with your authority.");
    let context_file = match &args.context {
        Some(path) => Some(TestContext::read(path)?),
        None => None,
    };
    let config = load_config(global, args.workdir.clone())?;
    let event = args
        .event
        .map(event_of)
        .or(context_file.as_ref().map(TestContext::event));
    let decl = select_one(&config.all_hooks(), &args.name, event, args.hash.as_deref())?;
    let cwd = context_file
        .as_ref()
        .map_or_else(|| config.workdir.clone(), |c| hook_cwd(&c.workdir(), &config));
    let context = match context_file {
        None => None,
        Some(TestContext::Prepare(c)) if decl.event == HookEvent::Prepare => Some(c),
        Some(other) if decl.event == HookEvent::Prepare => {
            let rule = format!(
                "holds a {} context, but hook {} is a prepare hook",
                other.event(),
                decl.name
            );
            return Err(CommandError::invalid("--context", rule).into());
        }
        Some(other) => {
            return super::hooks_lifecycle::test(&config, decl, Some(other), args.agent.clone(), cwd);
        }
    };
    if decl.event != HookEvent::Prepare {
        return super::hooks_lifecycle::test(&config, decl, None, args.agent.clone(), cwd);
    }
    let context = context.unwrap_or_else(|| {
        let agent = args.agent.clone().unwrap_or_else(|| "shell".into());
        HookContext::new(
            identity::current().launch_id,
            config.project.clone(),
            config.workdir.clone(),
            agent,
        )
    });
    test_prepare(global, &config, decl, context, cwd)
}

/// Run prepare hook `decl` with `context` as a launch would (approval first) and print its
/// contribution, values redacted.
fn test_prepare(
    global: &GlobalArgs,
    config: &Config,
    decl: HookDecl,
    context: HookContext,
    cwd: PathBuf,
) -> Result<u8, Error> {
    let mut containment = super::host_paths::base_rules(config, super::chosen_url(global).as_deref());
    containment.writable(crate::containment::WritableRoot::new(
        context.workdir.clone(),
        "the workdir",
    ));
    let rt = super::runtime()?;
    let result = rt.block_on(async {
        let input = PrepareInput {
            paths: &config.paths,
            hooks: std::slice::from_ref(&decl),
            overrides: LaunchOverrides {
                fixed_destinations: vec![context.workdir.clone(), STAGING_MOUNT.into()],
                ..Default::default()
            },
            context,
            cwd,
            project: config.project.clone(),
            interactive: prompt::has_terminal(),
            interrupt: Interrupt::on_signals().map_err(Error::Signals)?,
            lockdown: false,
            containment,
        };
        Ok::<_, Error>(prepare::prepare(input).await?)
    });
    super::finish(rt);
    let prepared = result?;
    println!(
        "hook {} ran and its response is valid; contribution (values redacted):",
        decl.name
    );
    print!("{}", summarize_resolved(&prepared.resolved));
    Ok(0)
}

/// The hook's cwd for a `--context` file: its workdir when that is a directory on this host,
/// else (a context written on another machine, or for a checkout since removed) the current
/// directory, which is said on stderr.
fn hook_cwd(context_workdir: &std::path::Path, config: &Config) -> PathBuf {
    if context_workdir.is_dir() {
        return context_workdir.to_path_buf();
    }
    eprintln!(
        "ags: note: the context's workdir {} is not a directory on this host; the hook runs in {} instead",
        crate::text::escape_controls(&context_workdir.to_string_lossy()),
        config.workdir.display()
    );
    config.workdir.clone()
}

/// The single active declaration named `name` (of `event`, when given, else a prepare hook when
/// there is one; whose approval hash starts with `hash`, when given). Identical declarations
/// (same hash) count as one.
pub(super) fn select_one(
    hooks: &[HookDecl],
    name: &str,
    event: Option<HookEvent>,
    hash: Option<&str>,
) -> Result<HookDecl, Error> {
    if let Some(prefix) = hash {
        check_hash_prefix(prefix)?;
    }
    let mut named: Vec<&HookDecl> = hooks
        .iter()
        .filter(|h| h.name == name && event.is_none_or(|e| h.event == e))
        .collect();
    // Without --event a prepare hook wins over started/finished hooks of the same name (the
    // no-terminal error of a launch suggests `ags hooks test NAME` for prepare hooks).
    if event.is_none() && named.iter().any(|h| h.event == HookEvent::Prepare) {
        named.retain(|h| h.event == HookEvent::Prepare);
    }
    let hashed: Vec<(&HookDecl, Option<String>)> = named.iter().map(|d| (*d, hash_of(d))).collect();
    let mut matching: Vec<&(&HookDecl, Option<String>)> = hashed
        .iter()
        .filter(|(_, h)| hash.is_none_or(|p| h.as_deref().is_some_and(|h| h.starts_with(p))))
        .collect();
    matching.dedup_by(|a, b| a.1.is_some() && a.1 == b.1);
    match matching.as_slice() {
        [(one, _)] => Ok((*one).clone()),
        [] if !named.is_empty() => Err(CommandError::NoHashMatch {
            name: name.to_string(),
            prefix: hash.unwrap_or_default().to_string(),
            hashes: describe(&hashed, hash.is_some_and(crate::hooks::trust::is_hash)),
        }
        .into()),
        [] => {
            let names: Vec<String> = hooks
                .iter()
                .map(|h| format!("{} ({})", h.name, h.event))
                .collect();
            Err(CommandError::NoSuchHook {
                name: name.to_string(),
                event: event.map(|e| format!("{e} ")).unwrap_or_default(),
                declared: if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                },
            }
            .into())
        }
        many => Err(CommandError::AmbiguousHook {
            name: name.to_string(),
            count: many.len(),
            hooks: describe(
                &many.iter().map(|m| (m.0, m.1.clone())).collect::<Vec<_>>(),
                false,
            ),
        }
        .into()),
    }
}

/// A hash prefix must be lowercase hex.
fn check_hash_prefix(prefix: &str) -> Result<(), Error> {
    if prefix.is_empty()
        || prefix.len() > 64
        || !prefix.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        let rule = "expected an approval hash or its start (lowercase hex digits, as `ags hooks list` and `ags hooks log` print)";
        return Err(CommandError::invalid(format!("--hash {prefix:?}"), rule).into());
    }
    Ok(())
}

/// The approval hash of `d` from its entrypoint bytes (nothing is executed); `None` when the
/// entrypoint is unusable.
fn hash_of(d: &HookDecl) -> Option<String> {
    PreparedHook::load(d.clone()).ok().map(|p| p.hash)
}

/// `config as event (hash 0123456789ab)` for each candidate; the whole hash when `full` (a
/// pinned approval needs all 64 digits, so the refusal of a wrong pin shows them).
fn describe(candidates: &[(&HookDecl, Option<String>)], full: bool) -> String {
    candidates
        .iter()
        .map(|(d, h)| {
            let shown = if full { 64 } else { 12 };
            let hash = h
                .as_deref()
                .map_or("unusable entrypoint", |h| &h[..shown.min(h.len())]);
            format!("{} as {} (hash {hash})", d.config_path.display(), d.event)
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// One row of `ags hooks list`.
#[derive(Debug, Serialize)]
struct ListRow {
    event: HookEvent,
    name: String,
    scope: String,
    executable: PathBuf,
    args: Vec<String>,
    timeout_seconds: u32,
    config: PathBuf,
    hash: Option<String>,
    approved: bool,
    problem: Option<String>,
}

fn list(global: &GlobalArgs, workdir: Option<PathBuf>, json: bool) -> Result<u8, Error> {
    let config = load_config(global, workdir)?;
    let decls = config.all_hooks();
    // Without declarations there is nothing to look up: the approval store is not opened, so
    // listing works anywhere (also where a launch would refuse the store, e.g. in ~ outside Git).
    let rows: Vec<ListRow> = if decls.is_empty() {
        Vec::new()
    } else {
        let store = TrustStore::open(&config.paths, None).map_err(crate::hooks::HookError::from)?;
        decls.iter().map(|d| list_row(&store, d)).collect()
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&rows).expect("rows serialize"));
        return Ok(0);
    }
    if rows.is_empty() {
        println!("no hooks declared");
    }
    for r in &rows {
        let state = match (&r.problem, r.approved) {
            (Some(p), _) => format!("unusable: {p}"),
            (None, true) => "approved".into(),
            (None, false) => "NOT approved".into(),
        };
        println!("{}  [{} {}]  {}", r.name, r.event, r.scope, state);
        let command = std::iter::once(r.executable.display().to_string())
            .chain(r.args.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ");
        println!("  executable: {command}");
        println!("  config:     {}", r.config.display());
        if let Some(h) = &r.hash {
            println!("  hash:       {h}");
        }
    }
    Ok(0)
}

/// Hash the declaration from its entrypoint bytes (nothing is executed) and look it up.
fn list_row(store: &TrustStore, d: &HookDecl) -> ListRow {
    let (hash, problem) = match PreparedHook::load(d.clone()) {
        Ok(p) => (Some(p.hash), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let approved = match &hash {
        Some(h) => store.is_approved(h).unwrap_or(false),
        None => false,
    };
    ListRow {
        event: d.event,
        name: d.name.clone(),
        scope: match &d.scope {
            HookScope::Global => "global".into(),
            HookScope::Project { root } => format!("project {}", root.display()),
        },
        executable: d.executable.clone(),
        args: d.args.clone(),
        timeout_seconds: d.timeout_seconds,
        config: d.config_path.clone(),
        hash,
        approved,
        problem,
    }
}

/// Shortest hash prefix `revoke` accepts (`ags hooks log` prints 12 digits).
const MIN_REVOKE_PREFIX: usize = 6;

/// Revoke by hook name (every active declaration of that name), by full hash, or by a unique
/// hash prefix such as the 12 digits `ags hooks log` prints. A name wins over a prefix.
fn revoke(global: &GlobalArgs, target: &str, workdir: Option<PathBuf>) -> Result<u8, Error> {
    let config = load_config(global, workdir)?;
    let store = TrustStore::open(&config.paths, None).map_err(crate::hooks::HookError::from)?;
    let named: Vec<HookDecl> = config
        .all_hooks()
        .into_iter()
        .filter(|d| d.name == target)
        .collect();
    let hashes: Vec<String> = if crate::hooks::trust::is_hash(target) {
        vec![target.to_string()]
    } else if !named.is_empty() {
        named.iter().filter_map(|d| list_row(&store, d).hash).collect()
    } else {
        vec![approval_by_prefix(&store, target)?]
    };
    let mut revoked = 0;
    for h in &hashes {
        if store.revoke(h).map_err(crate::hooks::HookError::from)? {
            println!("revoked {h}");
            revoked += 1;
        }
    }
    if revoked == 0 {
        println!("nothing to revoke: {target} has no approval");
    }
    Ok(0)
}

/// The one approval whose hash starts with `prefix`; an ambiguous or unknown prefix is refused.
fn approval_by_prefix(store: &TrustStore, prefix: &str) -> Result<String, Error> {
    let hex = prefix.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if !hex || prefix.len() < MIN_REVOKE_PREFIX {
        return Err(CommandError::NotARevokeTarget {
            target: prefix.to_string(),
            min: MIN_REVOKE_PREFIX,
        }
        .into());
    }
    let entries = store.list().map_err(crate::hooks::HookError::from)?;
    let matching: Vec<&str> = entries
        .iter()
        .map(|e| e.hash.as_str())
        .filter(|h| h.starts_with(prefix))
        .collect();
    match matching.as_slice() {
        [one] => Ok((*one).to_string()),
        [] => Err(CommandError::NoApproval(prefix.to_string()).into()),
        many => Err(CommandError::AmbiguousApproval {
            prefix: prefix.to_string(),
            hashes: many.iter().map(|h| h.to_string()).collect(),
        }
        .into()),
    }
}

fn log(n: usize, json: bool) -> Result<u8, Error> {
    let paths = crate::config::Paths::from_env()?;
    let records = RunLog::read_last(&paths, n).map_err(crate::hooks::HookError::from)?;
    for r in &records {
        if json {
            println!("{}", serde_json::to_string(r).expect("records serialize"));
        } else {
            println!("{}", r.render());
        }
    }
    Ok(0)
}
