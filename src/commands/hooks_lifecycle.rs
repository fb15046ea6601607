//! `ags hooks test` for `started` and `finished` hooks, and the context files `--context` accepts
//! for every event.

use crate::error::CommandError;
use std::path::{Path, PathBuf};

use crate::Error;
use crate::config::{Config, HookDecl, HookEvent};
use crate::events::session;
use crate::hooks::HookError;
use crate::hooks::events::{self, Ending, EventInput, FinishedContext, LaunchFacts, StartedContext};
use crate::hooks::protocol::HookContext;
use crate::hooks::runner::Interrupt;
use crate::hooks::trust::TrustStore;
use crate::launch::identity;
use crate::prompt;

/// A `--context` document of any event.
#[derive(Debug, Clone)]
pub(super) enum TestContext {
    /// A prepare context.
    Prepare(HookContext),
    /// A started context.
    Started(StartedContext),
    /// A finished context.
    Finished(FinishedContext),
}

impl TestContext {
    /// Read and strictly validate a context file; its `event` member says which kind it is.
    pub(super) fn read(path: &Path) -> Result<Self, Error> {
        let bytes = std::fs::read(path).map_err(CommandError::io(format!("--context {}", path.display())))?;
        let event = serde_json::from_slice::<serde_json::Value>(&bytes)
            .ok()
            .and_then(|v| v.get("event").and_then(|e| e.as_str()).map(String::from));
        Ok(match event.as_deref() {
            Some("started") => Self::Started(StartedContext::parse_strict(&bytes).map_err(HookError::from)?),
            Some("finished") => {
                Self::Finished(FinishedContext::parse_strict(&bytes).map_err(HookError::from)?)
            }
            _ => Self::Prepare(HookContext::parse_strict(&bytes).map_err(HookError::from)?),
        })
    }

    /// The context's workdir (it selects the project overlay).
    pub(super) fn workdir(&self) -> PathBuf {
        match self {
            Self::Prepare(c) => c.workdir.clone(),
            Self::Started(c) => c.workdir.clone(),
            Self::Finished(c) => c.workdir.clone(),
        }
    }

    /// The context's event.
    pub(super) fn event(&self) -> HookEvent {
        match self {
            Self::Prepare(_) => HookEvent::Prepare,
            Self::Started(_) => HookEvent::Started,
            Self::Finished(_) => HookEvent::Finished,
        }
    }
}

/// The container facts of a test run: no container exists, so they are marked as made up.
fn test_facts(config: &Config, agent: Option<String>) -> LaunchFacts {
    LaunchFacts {
        launch_id: identity::current().launch_id,
        project: config.project.clone(),
        workdir: config.workdir.clone(),
        agent: agent.unwrap_or_else(|| "shell".into()),
        container_id: "0".repeat(64),
        container_name: "ags-hooks-test".into(),
    }
}

/// The context `decl` gets: the `--context` file's, when it is for the hook's event, or one
/// made up from `facts`.
fn context_bytes(
    decl: &HookDecl,
    context: Option<TestContext>,
    facts: &LaunchFacts,
) -> Result<Vec<u8>, Error> {
    let bytes = match (decl.event, context) {
        (HookEvent::Started, Some(TestContext::Started(c))) => serde_json::to_vec(&c),
        (HookEvent::Finished, Some(TestContext::Finished(c))) => serde_json::to_vec(&c),
        (event, Some(other)) => {
            let rule = format!(
                "holds a {} context, but hook {} is a {event} hook",
                other.event(),
                decl.name
            );
            return Err(CommandError::invalid("--context", rule).into());
        }
        (HookEvent::Started, None) => serde_json::to_vec(&StartedContext::new(facts.clone())),
        (_, None) => {
            let ending = Ending {
                exit_code: Some(0),
                duration_ms: Some(0),
                recovered: false,
            };
            serde_json::to_vec(&FinishedContext::new(facts.clone(), ending))
        }
    };
    Ok(bytes.expect("contexts serialize"))
}

/// Approve (asking when possible) and run one started/finished hook with `context` or a made-up
/// one (no container: id of zeros, name `ags-hooks-test`; finished: exit 0 after 0 ms), in `cwd`.
pub(super) fn test(
    config: &Config,
    decl: HookDecl,
    context: Option<TestContext>,
    agent: Option<String>,
    cwd: PathBuf,
) -> Result<u8, Error> {
    let facts = test_facts(config, agent);
    let bytes = context_bytes(&decl, context, &facts)?;
    let store = TrustStore::open(&config.paths, Some(&config.project)).map_err(HookError::from)?;
    let hooks = events::load_approved(
        &store,
        std::slice::from_ref(&decl),
        prompt::has_terminal(),
        &config.workdir,
    )?;
    let rt = super::runtime()?;
    let report = rt.block_on(async {
        let input = session::event_input(&config.paths, store, decl.event, hooks, &facts, bytes, &[]);
        let input = EventInput {
            workdir: cwd,
            interrupt: Interrupt::on_signals().map_err(Error::Signals)?,
            ..input
        };
        Ok::<_, Error>(events::run_event(input).await)
    });
    super::finish(rt);
    let report = report?;
    if report.failures.is_empty() {
        println!(
            "{} hook {} ran and answered {{\"version\":1}}",
            decl.event, decl.name
        );
        return Ok(0);
    }
    for f in &report.failures {
        eprintln!("{}", crate::text::escape_controls(&format!("ags: {f}")));
    }
    Ok(crate::error::EXIT_AGS_FAILURE)
}
