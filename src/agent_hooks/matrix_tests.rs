use std::path::PathBuf;

use ags_agent_hook::matrix::{MATRIX, agent, doc, render_markdown};

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
        "docs/agent-hooks.md is out of date with crates/agent-hook/src/matrix.rs; regenerate it with \
         `AGS_BLESS=1 cargo test --lib agent_hooks::matrix_tests` and commit the result"
    );
}
