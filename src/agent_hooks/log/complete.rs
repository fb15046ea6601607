//! Whether the record of a launch is complete (issue 23, item 6): an agent that silenced its
//! hooks, or the events of its session, leaves a record that looks normal unless something
//! notices what is missing. [`Completeness`] watches the valid event records of one launch as
//! the record server receives them (before any budget drops one) and, once the launch has
//! ended, names what is missing: a `session_start`, a `pre_tool` for each `post_tool` (matched
//! by tool name and count: the record has no tool-call id), and a `session_end` when the agent
//! exited on its own. Only the events the agent's row of the matrix wires are required.
//!
//! Pure: no I/O.

use std::collections::BTreeMap;

use crate::agent_hooks::Event;
use crate::agent_hooks::matrix;
use crate::agent_hooks::record::{Kind, Record};

/// The event records of one launch seen so far.
#[derive(Debug, Clone, Default)]
pub struct Completeness {
    /// Any valid record at all.
    any: bool,
    session_start: bool,
    session_end: bool,
    /// `pre_tool` events not yet matched by a `post_tool`, per tool.
    open_calls: BTreeMap<String, u64>,
    /// `post_tool` events without an earlier `pre_tool` of their tool, per tool.
    unmatched: BTreeMap<String, u64>,
}

/// Whether the agent exited on its own: an exit status below 125 (125–127 are `ags`'s and
/// Podman's own failures, 128 and above a death by a signal).
pub fn exited_normally(exit: Option<u8>) -> bool {
    exit.is_some_and(|c| c < 125)
}

impl Completeness {
    /// Take one valid record into account.
    pub fn observe(&mut self, r: &Record) {
        self.any = true;
        if r.kind != Kind::Event {
            return;
        }
        let tool = || r.tool.clone().unwrap_or_default();
        match r.event {
            Event::SessionStart => self.session_start = true,
            Event::SessionEnd => self.session_end = true,
            Event::PreTool => *self.open_calls.entry(tool()).or_default() += 1,
            Event::PostTool => match self.open_calls.get_mut(&tool()) {
                Some(n) if *n > 0 => *n -= 1,
                _ => *self.unmatched.entry(tool()).or_default() += 1,
            },
            _ => {}
        }
    }

    /// What the record of a launch of `agent` lacks, once the launch ended with `exit` (`None`:
    /// the agent's exit status is unknown). Empty when it is complete (or the agent has no
    /// hooks). A launch with no record at all is only judged when its agent ran to an exit
    /// status.
    pub fn missing(&self, agent: &str, exit: Option<u8>) -> Vec<String> {
        let Some(row) = matrix::agent(agent) else {
            return Vec::new();
        };
        let wired = |e: Event| row.wired().any(|(w, _)| w == e);
        let mut out = Vec::new();
        let judged = self.any || exit.is_some();
        if judged && wired(Event::SessionStart) && !self.session_start {
            out.push("no session_start record".to_string());
        }
        if wired(Event::PreTool) {
            for (tool, n) in &self.unmatched {
                let tool = match tool.is_empty() {
                    true => "no tool named".to_string(),
                    false => format!("tool {tool}"),
                };
                out.push(format!("{n} post_tool record(s) without a pre_tool ({tool})"));
            }
        }
        if wired(Event::SessionEnd) && exited_normally(exit) && !self.session_end {
            out.push(format!(
                "no session_end record although the agent exited on its own (status {})",
                exit.unwrap_or_default()
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent_hooks::record::{Outcome, RECORD_VERSION};

    fn rec(kind: Kind, event: Event, tool: Option<&str>) -> Record {
        Record {
            v: RECORD_VERSION,
            kind,
            agent: "claude".into(),
            event,
            native_event: "X".into(),
            session_id: None,
            cwd: None,
            tool: tool.map(String::from),
            tool_input_summary: None,
            handler: None,
            outcome: Outcome::Ok,
            exit_code: None,
            duration_ms: 0,
            decision: None,
            reason: None,
        }
    }

    fn seen(events: &[(Event, Option<&str>)]) -> Completeness {
        let mut c = Completeness::default();
        for (e, t) in events {
            c.observe(&rec(Kind::Event, *e, *t));
        }
        c
    }

    #[test]
    fn a_whole_session_is_complete() {
        let c = seen(&[
            (Event::SessionStart, None),
            (Event::PreTool, Some("Bash")),
            (Event::PreTool, Some("Bash")), // blocked: no post_tool
            (Event::PostTool, Some("Bash")),
            (Event::SessionEnd, None),
        ]);
        assert!(c.missing("claude", Some(0)).is_empty());
    }

    #[test]
    fn a_silenced_session_is_incomplete_with_what_is_missing() {
        let c = seen(&[
            (Event::PostTool, Some("Bash")),
            (Event::PreTool, Some("Read")),
            (Event::PostTool, Some("Bash")),
            (Event::PostTool, Some("Read")),
        ]);
        let m = c.missing("claude", Some(0));
        assert_eq!(m.len(), 3, "{m:?}");
        assert!(m[0].contains("session_start"));
        assert!(m[1].starts_with("2 post_tool") && m[1].contains("Bash"));
        assert!(m[2].contains("session_end") && m[2].contains("status 0"));
    }

    #[test]
    fn handler_records_do_not_count_as_events() {
        let mut c = Completeness::default();
        c.observe(&rec(Kind::Handler, Event::SessionStart, None));
        assert!(c.missing("claude", None)[0].contains("session_start"));
    }

    #[test]
    fn session_end_is_required_only_after_a_normal_exit_and_when_wired() {
        let c = seen(&[(Event::SessionStart, None)]);
        for exit in [None, Some(125), Some(130), Some(137)] {
            assert!(c.missing("claude", exit).is_empty(), "{exit:?}");
        }
        assert_eq!(c.missing("claude", Some(3)).len(), 1);
        // opencode wires no session_end event.
        assert!(c.missing("opencode", Some(0)).is_empty());
        // An agent without hooks is never judged.
        assert!(Completeness::default().missing("shell", Some(0)).is_empty());
    }

    #[test]
    fn a_launch_that_never_ran_is_not_judged() {
        assert!(Completeness::default().missing("claude", None).is_empty());
        assert!(!Completeness::default().missing("claude", Some(0)).is_empty());
    }
}
