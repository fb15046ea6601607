use std::collections::BTreeSet;
use std::path::PathBuf;

use super::matrix::doc;
use super::matrix::*;
use super::*;
use crate::agents::AGENTS;

#[test]
fn every_agent_but_shell_has_a_row_and_rows_follow_the_agent_table() {
    let table: Vec<&str> = AGENTS.iter().map(|a| a.name).filter(|n| *n != "shell").collect();
    let rows: Vec<&str> = MATRIX.iter().map(|a| a.agent).collect();
    assert_eq!(rows, table);
    assert!(agent("shell").is_none());
}

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

/// `docs/agent-hooks.md` holds exactly [`render_markdown`] between its markers; with
/// `AGS_BLESS=1` the test rewrites that part.
#[test]
fn docs_page_is_generated_from_the_matrix() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/agent-hooks.md");
    let page = std::fs::read_to_string(&path).expect("docs/agent-hooks.md");
    let (Some(start), Some(end)) = (page.find(doc::BEGIN), page.find(doc::END)) else {
        panic!("docs/agent-hooks.md lacks the generated-part markers");
    };
    let end = end + doc::END.len() + 1;
    let fresh = render_markdown();
    if std::env::var_os("AGS_BLESS").is_some_and(|v| v == "1") {
        let page = format!("{}{fresh}{}", &page[..start], &page[end.min(page.len())..]);
        std::fs::write(&path, page).expect("write docs/agent-hooks.md");
        return;
    }
    assert!(
        page[start..end.min(page.len())] == fresh,
        "docs/agent-hooks.md is out of date with src/agent_hooks/matrix.rs; regenerate it with \
         `AGS_BLESS=1 cargo test --lib agent_hooks::matrix` and commit the result"
    );
}
