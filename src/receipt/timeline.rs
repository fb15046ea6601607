//! `ags log --launch ID`: one launch's records of the three host logs as one timeline, oldest
//! first: its hook runs, its agent hook records and its egress records, each egress record
//! made during exactly one tool call placed under that call's `pre_tool` record. Once the
//! launch has a receipt, a record it does not cover (written after it closed, or added since:
//! no chain link) is marked so, and never placed under a call.

use std::io;

use crate::agent_hooks::record::Entry;
use crate::config::Paths;
use crate::egress::log::EgressRecord;
use crate::hooks::log::Record;

/// One row: when, which log, the text (the log's own rendering, without its time), and the
/// call it opens (an agent hook record) or was made in (an egress record).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// RFC 3339 UTC.
    pub time: String,
    /// `hook`, `agent` or `egress`.
    pub log: &'static str,
    /// The rendering.
    pub text: String,
    /// The call.
    pub call: Option<String>,
    /// The raw record, for `--json`.
    pub json: String,
}

/// The header of the timeline.
pub fn header() -> String {
    format!("{:<24} {:<6} RECORD", "TIME", "LOG")
}

impl Row {
    /// The row as text (an egress record under its call indented).
    pub fn render(&self, under_call: bool) -> String {
        let mark = if under_call { "  └ " } else { "" };
        format!("{:<24} {:<6} {mark}{}", self.time, self.log, self.text)
    }
}

/// The launch's rows, oldest first, egress records of one call after that call's record; with
/// the (escaped) text, whether each sits under its call.
pub fn rows(paths: &Paths, launch: &str) -> io::Result<Vec<(Row, bool)>> {
    let sealed = super::path(paths, launch).is_some_and(|p| p.exists());
    let mut rows = Vec::new();
    let mut push = |linked: bool, mut row: Row| {
        if sealed && !linked {
            row.text.push_str("  [not covered by the receipt]");
            row.call = None;
        }
        rows.push(row);
    };
    let hooks: Vec<(Record, bool)> = crate::logfile::read_all_linked(&paths.hook_log())?;
    for (r, linked) in hooks.into_iter().filter(|(r, _)| r.launch_id == launch) {
        push(linked, row_of("hook", &r, &r.started_at, r.render(), None));
    }
    let entries: Vec<(Entry, bool)> = crate::logfile::read_all_linked(&paths.agent_hooks_log())?;
    for (e, linked) in entries.into_iter().filter(|(e, _)| e.launch_id == launch) {
        let text = crate::agent_hooks::log::file::render(&e);
        push(linked, row_of("agent", &e, &e.time, text, e.call.clone()));
    }
    let egress: Vec<(EgressRecord, bool)> = crate::logfile::read_all_linked(&paths.egress_log())?;
    for (r, linked) in egress.into_iter().filter(|(r, _)| r.launch_id == launch) {
        let call = (r.calls.len() == 1).then(|| r.calls[0].clone());
        let text = crate::egress::log::render(&r);
        push(linked, row_of("egress", &r, &r.time, text, call));
    }
    rows.sort_by(|a, b| a.time.cmp(&b.time));
    Ok(nest(rows))
}

/// The row of `record` from `log`: its rendered `text` without the time it starts with, and
/// its JSON.
fn row_of<T: serde::Serialize>(
    log: &'static str,
    record: &T,
    time: &str,
    text: String,
    call: Option<String>,
) -> Row {
    Row {
        time: time.to_string(),
        log,
        text: text
            .split_once(' ')
            .map(|(_, r)| r.trim_start().to_string())
            .unwrap_or(text),
        call,
        json: serde_json::to_string(record).unwrap_or_default(),
    }
}

/// Egress rows of a call moved after the agent row that opened it (the first agent row with
/// that call), in their order; the rest stay where time put them.
fn nest(rows: Vec<Row>) -> Vec<(Row, bool)> {
    let opener = |call: &str, rows: &[Row]| {
        rows.iter()
            .any(|r| r.log == "agent" && r.call.as_deref() == Some(call))
    };
    let (mut under, mut out): (Vec<Row>, Vec<(Row, bool)>) = (Vec::new(), Vec::new());
    let mut rest = Vec::new();
    for r in &rows {
        match (&r.call, r.log) {
            (Some(c), "egress") if opener(c, &rows) => under.push(r.clone()),
            _ => rest.push(r.clone()),
        }
    }
    let mut opened = std::collections::BTreeSet::new();
    for r in rest {
        let first = r.log == "agent" && r.call.as_ref().is_some_and(|c| opened.insert(c.clone()));
        let call = r.call.clone();
        out.push((r, false));
        if first {
            let call = call.unwrap_or_default();
            out.extend(
                under
                    .iter()
                    .filter(|u| u.call.as_deref() == Some(&call))
                    .map(|u| (u.clone(), true)),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(time: &str, log: &'static str, call: Option<&str>) -> Row {
        Row {
            time: time.into(),
            log,
            text: format!("{log}@{time}"),
            call: call.map(String::from),
            json: String::new(),
        }
    }

    #[test]
    fn egress_rows_of_a_call_sit_under_its_pre_tool() {
        let rows = vec![
            row("1", "hook", None),
            row("2", "agent", Some("c1")),
            row("3", "egress", None),
            row("4", "egress", Some("c1")),
            row("5", "agent", Some("c1")),
            row("6", "egress", Some("c9")),
        ];
        let got: Vec<(String, bool)> = nest(rows).into_iter().map(|(r, u)| (r.text, u)).collect();
        let want = [
            ("hook@1", false),
            ("agent@2", false),
            ("egress@4", true),
            ("egress@3", false),
            ("agent@5", false),
            ("egress@6", false),
        ];
        assert_eq!(got, want.map(|(t, u)| (t.to_string(), u)));
    }
}
