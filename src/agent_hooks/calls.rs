//! The tool calls open in one launch (issue 29), shared by the launch's agent hook record (which
//! opens a call at an allowed `pre_tool` and closes it at its `post_tool`) and its egress log
//! (which stamps each connection with the calls open when it was made).
//!
//! The host numbers the calls (`c1`, `c2`, …, in the order their `pre_tool` records arrived):
//! the agents' own call ids are not in every agent's hook input. A `post_tool` closes the
//! oldest open call of the same tool. What this can attribute, and what it cannot: a
//! connection made while exactly one call is open is that call's, whichever process made it
//! (the agent itself included); with several open (an agent running tools in parallel) the
//! connection names them all; with none, none. The records come from hooks the agent runs, so
//! an agent that forges or withholds them can misattribute its own requests: the link is what
//! its hooks said, not proof (docs/receipts.md).

use std::sync::Mutex;

/// The open calls of one launch.
#[derive(Debug, Default)]
pub struct OpenCalls {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    next: u64,
    open: Vec<(String, String)>,
}

/// At most this many calls are held open (a flood of `pre_tool` records without `post_tool`
/// cannot grow the host's memory; the oldest go first).
pub const MAX_OPEN: usize = 64;

impl OpenCalls {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A call of `tool` begins: its id.
    pub fn open(&self, tool: &str) -> String {
        let mut s = self.state();
        s.next += 1;
        let id = format!("c{}", s.next);
        if s.open.len() >= MAX_OPEN {
            s.open.remove(0);
        }
        s.open.push((id.clone(), tool.to_owned()));
        id
    }

    /// A call of `tool` ended: the id of the oldest open one, which is closed.
    pub fn close(&self, tool: &str) -> Option<String> {
        let mut s = self.state();
        let at = s.open.iter().position(|(_, t)| t == tool)?;
        Some(s.open.remove(at).0)
    }

    /// The ids of the calls open now, oldest first.
    pub fn current(&self) -> Vec<String> {
        self.state().open.iter().map(|(id, _)| id.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_open_close_by_tool_and_are_bounded() {
        let c = OpenCalls::default();
        assert!(c.current().is_empty());
        let a = c.open("Bash");
        let b = c.open("WebFetch");
        assert_eq!(c.current(), [a.clone(), b.clone()]);
        assert_eq!(c.close("Bash"), Some(a));
        assert_eq!(c.close("Bash"), None);
        assert_eq!(c.current(), [b]);
        for _ in 0..200 {
            c.open("Bash");
        }
        assert_eq!(c.current().len(), MAX_OPEN);
    }
}
