//! The prepare phase as one call: load entrypoints → approve every declaration → run → validate
//! each response → log → resolve by precedence → lockdown → check mount sources.
//!
//! This is the hook stage's entry point for `ags` launches, `ags plan` and `ags hooks test`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::entrypoint::PreparedHook;
use super::log::{Record, RunLog};
use super::mount_source::check_mount_sources;
use super::protocol::HookContext;
use super::resolve::{HookOutput, LaunchOverrides, Origin, Resolved, lockdown_check, resolve};
use super::runner::{Interrupt, RunSetup, run_hooks};
use super::trust::TrustStore;
use super::validate::{Contribution, parse_response};
use super::{HookError, approve, exec_copy};
use crate::config::{HookDecl, HookScope, Paths};
use crate::containment::{Rules, WritableRoot};

/// Inputs of one prepare phase.
#[derive(Debug)]
pub struct PrepareInput<'a> {
    /// Host paths (approval store, run log, protected locations).
    pub paths: &'a Paths,
    /// The declarations to run, global first, in declaration order.
    pub hooks: &'a [HookDecl],
    /// The context every hook receives.
    pub context: HookContext,
    /// Each hook's working directory: the context's workdir for a launch; for `ags hooks test`
    /// with a context file whose workdir does not exist on this host, the current directory.
    pub cwd: PathBuf,
    /// The canonical project on this host, which the approval store must lie outside (the
    /// context's project for a launch; a test context may name one that does not exist here).
    pub project: PathBuf,
    /// Whether an approval prompt may be shown on the controlling terminal.
    pub interactive: bool,
    /// Cancellation (SIGINT/SIGTERM/SIGHUP).
    pub interrupt: Interrupt,
    /// CLI values and plan mounts that hooks cannot override.
    pub overrides: LaunchOverrides,
    /// `--lockdown`: refuse surviving op references and host mounts.
    pub lockdown: bool,
    /// What mount sources are checked against: protected locations, and the workdir and
    /// `--add-dir`s as writable roots (the hooks' own read-write mounts are added here).
    pub containment: Rules,
}

/// The outcome of the phase.
#[derive(Debug, Default)]
pub struct Prepared {
    /// Merged contributions.
    pub resolved: Resolved,
    /// Canonical host sources of `resolved.mounts`, index for index.
    pub mount_sources: Vec<PathBuf>,
}

/// Stale execution copies older than this are removed at the start of a phase.
const STALE_EXEC_COPIES: Duration = Duration::from_secs(600);

/// Run the prepare phase.
pub async fn prepare(input: PrepareInput<'_>) -> Result<Prepared, HookError> {
    sweep_exec_dirs(input.paths);
    if input.hooks.is_empty() {
        let resolved = resolve(Vec::new(), &input.overrides)?;
        return Ok(Prepared {
            resolved,
            mount_sources: Vec::new(),
        });
    }
    let store = TrustStore::open(input.paths, Some(&input.project))?;
    let prepared = input
        .hooks
        .iter()
        .map(|d| PreparedHook::load(d.clone()))
        .collect::<Result<Vec<_>, _>>()?;
    approve::ensure_approved(&store, &prepared, input.interactive, &input.context.workdir)?;
    let contributions = execute(&input, store, prepared).await?;
    let outputs = contributions
        .into_iter()
        .zip(origins(input.hooks))
        .map(|(contribution, origin)| HookOutput { origin, contribution })
        .collect();
    let resolved = resolve(outputs, &input.overrides)?;
    if input.lockdown {
        lockdown_check(&resolved)?;
    }
    let mount_sources = check_mount_sources(&resolved.mounts, &input.containment).map_err(Box::new)?;
    Ok(Prepared {
        resolved,
        mount_sources,
    })
}

/// Remove execution directories of dead `ags` processes and kill the hooks they left running
/// (an `ags` killed by SIGKILL cannot): in the approval store and in the RAM-backed roots
/// (`exec_copy::exec_root`), each only when it passes the ownership checks, a RAM-backed root
/// also only when no other user can replace a directory on its way (otherwise the owner of the
/// runtime directory could make the sweep read its own `groups` file and kill what it names).
pub fn sweep_exec_dirs(paths: &Paths) {
    let ram = paths.ram_root_candidates().into_iter();
    let roots = [paths.hook_trust_dir()]
        .into_iter()
        .chain(ram.filter(|root| crate::fsutil::check_ancestors_private(root).is_ok()));
    for dir in roots {
        if crate::fsutil::check_private_dir(&dir).is_ok() {
            exec_copy::sweep_stale(&dir, STALE_EXEC_COPIES);
        }
    }
}

/// Run the approved hooks, validating each response, and log every execution.
async fn execute(
    input: &PrepareInput<'_>,
    store: TrustStore,
    prepared: Vec<PreparedHook>,
) -> Result<Vec<Contribution>, HookError> {
    let context = serde_json::to_vec(&input.context).expect("the context always serializes");
    let mut setup = RunSetup::new(store, input.cwd.clone(), Arc::from(context));
    setup.interrupt = input.interrupt.clone();
    setup
        .agent_writable
        .extend(input.containment.writable_roots().iter().cloned());
    setup.agent_writable.push(WritableRoot {
        path: input.project.clone(),
        owner: "the project directory".into(),
        running: false,
    });
    let decls: Vec<HookDecl> = prepared.iter().map(|p| p.decl.clone()).collect();
    let result = run_hooks(prepared, setup, |_, stdout| parse_response(stdout)).await;
    let launch_id = &input.context.launch_id;
    match result {
        Ok(runs) => {
            let records: Vec<Record> = runs
                .iter()
                .zip(&decls)
                .map(|(run, decl)| {
                    let (keys, dests) = names(&run.value);
                    let mut record = Record::new(launch_id, decl, &run.report, keys, dests);
                    record.response = Some(crate::hooks::log::response_digest(&run.value));
                    record
                })
                .collect();
            log(input.paths, &records);
            Ok(runs.into_iter().map(|r| r.value).collect())
        }
        Err(e) => {
            let records: Vec<Record> = e
                .reports()
                .iter()
                .zip(&decls)
                .map(|(report, decl)| Record::new(launch_id, decl, report, vec![], vec![]))
                .collect();
            log(input.paths, &records);
            Err(e.into())
        }
    }
}

/// A run log that cannot be written must not hide the launch's real outcome: warn and go on.
fn log(paths: &Paths, records: &[Record]) {
    if let Err(e) = RunLog::append_all(paths, records) {
        eprintln!(
            "{}",
            crate::text::escape_controls(&format!("ags: warning: hook run log: {e}"))
        );
    }
}

/// The env keys and destinations of a contribution (names only, for the run log).
fn names(c: &Contribution) -> (Vec<String>, Vec<String>) {
    let keys = c.env.iter().map(|(k, _)| k.as_str().to_string()).collect();
    let files = c
        .files
        .iter()
        .map(|f| f.destination.as_path().display().to_string());
    let mounts = c
        .mounts
        .iter()
        .map(|m| m.destination.as_path().display().to_string());
    (keys, files.chain(mounts).collect())
}

/// Precedence origins: each declaration's position within its scope.
fn origins(hooks: &[HookDecl]) -> Vec<Origin> {
    let (mut global, mut project) = (0, 0);
    hooks
        .iter()
        .map(|d| {
            let counter = match d.scope {
                HookScope::Global => &mut global,
                HookScope::Project { .. } => &mut project,
            };
            let origin = Origin::for_decl(d, *counter);
            *counter += 1;
            origin
        })
        .collect()
}
