//! One dispatcher invocation, from the agent's input to the answer and the records: normalise,
//! check the guard (`pre_tool`), run the matching handlers in order, decide.
//!
//! The guard runs first; once the guard or a handler blocks, the remaining handlers are not run
//! (recorded as `skipped`). A handler failure blocks only with `on_failure = "block"` on
//! `pre_tool`. When the handlers file cannot be read, a `pre_tool` call is blocked (the guard
//! cannot be checked: fail closed) and every other event is allowed.

use std::time::Instant;

use crate::Event;
use crate::answer::{self, Answer};
use crate::guard::Verdict;
use crate::handlers::Handlers;
use crate::input::{self, Normalised};
use crate::run::{self, Outcome};
use crate::send::{self, Record};
use crate::settings;

/// What one invocation produces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dispatched {
    /// The answer to the agent.
    pub answer: Answer,
    /// The record lines for the host (the event record first).
    pub records: Vec<String>,
    /// The block reason, if the call was blocked.
    pub blocked: Option<String>,
    /// Whether the answer lets a tool call run (a `pre_tool` not blocked): it is given only
    /// once the records are delivered (session-12 attack F7).
    pub allows_call: bool,
}

/// Dispatch `agent`'s `native` event with `input` against `handlers` (or the error reading
/// them). `cwd` is the dispatcher's working directory.
pub fn dispatch(
    agent: &str,
    native: &str,
    input: &[u8],
    handlers: &Result<Handlers, String>,
    cwd: Option<String>,
) -> Dispatched {
    let start = Instant::now();
    let n = input::normalise(agent, native, input, cwd);
    let can_block = n.event == Some(Event::PreTool);
    let mut lines = Vec::new();
    let mut blocked: Option<String> = None;
    let mut problem: Option<String> = n.input_error.clone();
    match handlers {
        Err(e) => {
            let why = format!("ags agent hooks: cannot read the handlers file ({e})");
            if can_block {
                blocked = Some(format!(
                    "{why}; the guard cannot be checked, so the tool call is blocked"
                ));
            }
            problem = Some(why);
        }
        Ok(h) => {
            if can_block {
                guard(&n, h, &mut lines, &mut blocked);
            }
            // Settings that change what the shell runs after this check (session-13 M1, M2).
            if can_block && blocked.is_none() {
                blocked = settings::tampered(agent, n.cwd.as_deref(), &h.settings);
            }
            run_handlers(&n, h, can_block, &mut lines, &mut blocked);
        }
    }
    let outcome = match (&blocked, &problem) {
        (Some(_), _) => "blocked",
        (None, Some(_)) => "failed",
        (None, None) => "ok",
    };
    let event = send::line(
        &n,
        &Record {
            kind: "event",
            handler: None,
            outcome,
            exit_code: None,
            duration_ms: u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX),
            decision: can_block.then_some(if blocked.is_some() { "block" } else { "allow" }),
            reason: blocked.as_deref().or(problem.as_deref()),
        },
    );
    lines.insert(0, event);
    Dispatched {
        answer: answer::answer(agent, blocked.as_deref()),
        records: lines,
        allows_call: can_block && blocked.is_none(),
        blocked,
    }
}

/// Run the handlers that match the event, in order; once one (or the guard) blocked, the rest
/// are recorded as skipped. A handler declared with `on_failure = "block"` blocks when it fails.
fn run_handlers(
    n: &Normalised,
    h: &Handlers,
    can_block: bool,
    lines: &mut Vec<String>,
    blocked: &mut Option<String>,
) {
    let payload = n.to_handler_json();
    for handler in h.handlers.iter().filter(|h| h.matches(n)) {
        if blocked.is_some() {
            let skipped = run::Run {
                outcome: Outcome::Skipped,
                exit_code: None,
                duration_ms: 0,
                block: false,
                reason: Some("an earlier handler or the guard blocked".into()),
            };
            let record = handler_record(&handler.name, &skipped, None);
            lines.push(send::line(n, &record));
            continue;
        }
        let r = run::run(handler, &payload, n.cwd.as_deref(), can_block);
        let decision = can_block.then_some(if r.block { "block" } else { "allow" });
        lines.push(send::line(n, &handler_record(&handler.name, &r, decision)));
        if r.block {
            *blocked = r.reason.clone();
        } else if can_block && handler.block_on_failure && r.outcome.is_failure() {
            *blocked = Some(format!(
                "ags agent hook {}: {} ({}), and it is declared with on_failure = \"block\"",
                handler.name,
                r.outcome.as_str(),
                r.reason.as_deref().unwrap_or("no reason")
            ));
        }
    }
}

/// The record of one handler run.
fn handler_record<'a>(name: &'a str, r: &'a run::Run, decision: Option<&'static str>) -> Record<'a> {
    Record {
        kind: "handler",
        handler: Some(name),
        outcome: r.outcome.as_str(),
        exit_code: r.exit_code,
        duration_ms: r.duration_ms,
        decision,
        reason: r.reason.as_deref(),
    }
}

/// The guard's check of a `pre_tool` call, recorded when it applies.
fn guard(n: &Normalised, h: &Handlers, lines: &mut Vec<String>, blocked: &mut Option<String>) {
    let start = Instant::now();
    let verdict = h.guard.check(n);
    let (outcome, reason) = match &verdict {
        Verdict::NotApplicable => return,
        Verdict::Allow => ("ok", None),
        Verdict::Block(r) => ("blocked", Some(r.as_str())),
    };
    lines.push(send::line(
        n,
        &Record {
            kind: "handler",
            handler: Some("guard"),
            outcome,
            exit_code: None,
            duration_ms: u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX),
            decision: Some(if reason.is_some() { "block" } else { "allow" }),
            reason,
        },
    ));
    if let Verdict::Block(r) = verdict {
        *blocked = Some(r);
    }
}
