use std::collections::BTreeSet;

use crate::matrix::*;
use crate::*;

#[test]
fn native_names_are_unique_per_agent_and_round_trip() {
    for a in MATRIX {
        let names: BTreeSet<&str> = a.wired().map(|(_, n)| n).collect();
        assert_eq!(names.len(), a.wired().count(), "{}", a.agent);
        for (event, name) in a.wired() {
            assert_eq!(normalise(a.agent, name), Some(event), "{} {name}", a.agent);
            assert_eq!(native(a.agent, event), Some(name));
            // Safe on a command line and in a JSON/JS string without quoting.
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.'),
                "{name}"
            );
        }
        // Every agent has the events the end-to-end tests and the guard rely on.
        for e in [Event::SessionStart, Event::PreTool, Event::PostTool] {
            assert!(native(a.agent, e).is_some(), "{} {e}", a.agent);
        }
    }
    assert_eq!(normalise("claude", "PreToolUse"), Some(Event::PreTool));
    assert_eq!(normalise("gemini", "PreToolUse"), None);
    assert_eq!(normalise("opencode", "tool.execute.before"), Some(Event::PreTool));
    assert_eq!(normalise("pi", "tool_call"), Some(Event::PreTool));
    assert_eq!(normalise("codex", "Notification"), None);
    assert_eq!(normalise("shell", "PreToolUse"), None);
}

#[test]
fn empty_cells_and_rows_say_why() {
    for a in MATRIX {
        assert!(!a.wiring.is_empty() && !a.silence.is_empty(), "{}", a.agent);
        for cell in a.cells {
            if let Cell::Empty { reason } = cell {
                assert!(reason.len() > 20, "{}: {reason}", a.agent);
            }
        }
    }
}
