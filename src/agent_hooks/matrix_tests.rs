use std::path::PathBuf;

use ags_agent_hook::Event;
use ags_agent_hook::matrix::{Cell, MATRIX, Mechanism, agent};

use crate::agents::AGENTS;

#[test]
fn every_agent_but_shell_has_a_row_and_rows_follow_the_agent_table() {
    let table: Vec<&str> = AGENTS.iter().map(|a| a.name).filter(|n| *n != "shell").collect();
    let rows: Vec<&str> = MATRIX.iter().map(|a| a.agent).collect();
    assert_eq!(rows, table);
    assert!(agent("shell").is_none());
}

/// `docs/agent-hooks.md` holds exactly [`render_markdown`] between its markers; with
/// `AGS_BLESS=1` the test rewrites that part.
#[test]
fn docs_page_is_generated_from_the_matrix() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/agent-hooks.md");
    let page = std::fs::read_to_string(&path).expect("docs/agent-hooks.md");
    let (Some(start), Some(end)) = (page.find(BEGIN), page.find(END)) else {
        panic!("docs/agent-hooks.md lacks the generated-part markers");
    };
    let end = end + END.len() + 1;
    let fresh = render_markdown();
    if std::env::var_os("AGS_BLESS").is_some_and(|v| v == "1") {
        let page = format!("{}{fresh}{}", &page[..start], &page[end.min(page.len())..]);
        std::fs::write(&path, page).expect("write docs/agent-hooks.md");
        return;
    }
    assert!(
        page[start..end.min(page.len())] == fresh,
        "docs/agent-hooks.md is out of date with crates/agent-hook/src/matrix.rs; regenerate it with \
         `AGS_BLESS=1 cargo test --lib agent_hooks::matrix_tests` and commit the result"
    );
}

// Rendering the hook matrix into the generated part of `docs/agent-hooks.md`.

/// Line opening the generated part of `docs/agent-hooks.md`.
const BEGIN: &str = "<!-- BEGIN GENERATED from crates/agent-hook/src/matrix.rs; regenerate: AGS_BLESS=1 cargo test --lib agent_hooks::matrix_tests -->";
/// Line closing it.
const END: &str = "<!-- END GENERATED -->";

/// The generated part of the page, from [`BEGIN`] to [`END`] (both included).
fn render_markdown() -> String {
    let mut out = format!("{BEGIN}\n\n");
    out.push_str("| event |");
    for a in MATRIX {
        out.push_str(&format!(" {} |", a.agent));
    }
    out.push_str("\n|---|");
    out.push_str(&"---|".repeat(MATRIX.len()));
    out.push('\n');
    for event in Event::ALL {
        out.push_str(&format!("| `{event}` |"));
        for a in MATRIX {
            let text = match a.cell(event) {
                Cell::Native { name, .. } => format!("`{name}`"),
                Cell::Empty { .. } => "—".to_string(),
            };
            out.push_str(&format!(" {text} |"));
        }
        out.push('\n');
    }
    out.push_str("\nA dash is an empty cell; every one has its reason below.\n");
    for a in MATRIX {
        out.push_str(&format!("\n### {}\n\n", a.agent));
        out.push_str(&format!("- Mechanism: {}.\n", mechanism(a.mechanism)));
        out.push_str(&format!("- Wiring: {}.\n", a.wiring));
        out.push_str(&format!("- Can the agent silence it? {}\n", a.silence));
        for (event, cell) in Event::ALL.into_iter().zip(a.cells) {
            match cell {
                Cell::Native { note: "", .. } => {}
                Cell::Native { name, note } => {
                    out.push_str(&format!("- `{event}` (`{name}`): {note}.\n"));
                }
                Cell::Empty { reason } => {
                    out.push_str(&format!("- `{event}`: empty: {reason}.\n"));
                }
            }
        }
    }
    out.push_str(&format!("\n{END}\n"));
    out
}

fn mechanism(m: Mechanism) -> &'static str {
    match m {
        Mechanism::Command => {
            "command hooks: the agent runs the dispatcher with its native hook JSON on stdin"
        }
        Mechanism::OpencodePlugin => {
            "an in-process plugin; the generated shim runs the dispatcher with `{\"input\", \"output\"}` on stdin"
        }
        Mechanism::PiExtension => {
            "an in-process extension; the generated extension runs the dispatcher with the event object on stdin"
        }
    }
}
