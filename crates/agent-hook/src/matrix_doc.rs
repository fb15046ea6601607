//! Rendering the hook matrix into the generated part of `docs/agent-hooks.md`.

use super::{Cell, Event, MATRIX, Mechanism};

/// Line opening the generated part of `docs/agent-hooks.md`.
pub const BEGIN: &str = "<!-- BEGIN GENERATED from crates/agent-hook/src/matrix.rs; regenerate: AGS_BLESS=1 cargo test --lib agent_hooks::matrix_tests -->";
/// Line closing it.
pub const END: &str = "<!-- END GENERATED -->";

/// The generated part of the page, from [`BEGIN`] to [`END`] (both included).
pub fn render_markdown() -> String {
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
