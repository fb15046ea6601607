//! What a project overlay sets, as the overlay trust prompt shows it: one line per key, or per
//! entry of an array of tables (`[[prepare_hook]] name = "h", executable = "hooks/h"`), so the
//! user can decide without opening the file. The overlay is written where the agent can write:
//! the lines are escaped ([`crate::text::escape_line`]) and bounded (at most [`MAX_LINES`] of
//! at most [`MAX_LINE_CHARS`] characters, then how many more there are). The values of an
//! `env` table are never shown, only its names (`agent.NAME.env` holds values the agent gets).

use toml::{Table, Value};

/// How many entries the summary shows.
pub const MAX_LINES: usize = 20;
/// How many characters of one entry are shown.
pub const MAX_LINE_CHARS: usize = 160;

/// The summary of the overlay `text` (already parsed as a valid config): `It sets:` and the
/// entries, each on its own line indented by two spaces, ending with a newline.
pub fn summary(text: &str) -> String {
    let table: Table = match toml::from_str(text) {
        Ok(t) => t,
        Err(_) => return "Its contents cannot be summarised: read the file before trusting it.\n".into(),
    };
    let mut entries = Vec::new();
    entries_of("", &table, &mut entries);
    if entries.is_empty() {
        return "It sets nothing.\n".into();
    }
    let mut out = String::from("It sets:\n");
    for entry in entries.iter().take(MAX_LINES) {
        out.push_str("  ");
        out.push_str(&bounded(&crate::text::escape_line(entry)));
        out.push('\n');
    }
    if entries.len() > MAX_LINES {
        out.push_str(&format!(
            "  … and {} more (read the file before trusting it)\n",
            entries.len() - MAX_LINES
        ));
    }
    out
}

/// The entries of `table`, whose keys are below `prefix` (`""` or `network.`).
fn entries_of(prefix: &str, table: &Table, out: &mut Vec<String>) {
    for (key, value) in table {
        let path = format!("{prefix}{}", key_text(key));
        match value {
            Value::Table(t) if key == "env" => out.push(format!("{path}: {}", env_names(t))),
            Value::Table(t) if t.is_empty() => out.push(format!("{path} = {{}}")),
            Value::Table(t) => entries_of(&format!("{path}."), t, out),
            Value::Array(items) if !items.is_empty() && items.iter().all(Value::is_table) => {
                for item in items.iter().filter_map(Value::as_table) {
                    out.push(format!("[[{path}]] {}", pairs(item)));
                }
            }
            other => out.push(format!("{path} = {}", value_text(other))),
        }
    }
}

/// `k = v, k2 = v2` of `table` (an `env` table by its names only).
fn pairs(table: &Table) -> String {
    table
        .iter()
        .map(|(key, value)| match value {
            Value::Table(t) if key == "env" => format!("{}: {}", key_text(key), env_names(t)),
            _ => format!("{} = {}", key_text(key), value_text(value)),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// One value as TOML-like text (an inline table's `env` by its names only).
fn value_text(value: &Value) -> String {
    match value {
        Value::String(s) => format!("{s:?}"),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(value_text).collect::<Vec<_>>().join(", ")
        ),
        Value::Table(t) => format!("{{ {} }}", pairs(t)),
        other => other.to_string(),
    }
}

/// `names FOO, BAR (values not shown)`.
fn env_names(table: &Table) -> String {
    let names: Vec<String> = table.keys().map(|k| key_text(k)).collect();
    format!("names {} (values not shown)", names.join(", "))
}

/// A key as written bare when it can be, else quoted.
fn key_text(key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    match bare {
        true => key.to_string(),
        false => format!("{key:?}"),
    }
}

/// `line` cut to [`MAX_LINE_CHARS`] characters, marked with `…` when cut.
fn bounded(line: &str) -> String {
    match line.char_indices().nth(MAX_LINE_CHARS) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_key_and_each_hook_is_shown_with_its_value() {
        let s = summary(
            "[network]\nmode = \"allowlist\"\nallow = [\"github.com\"]\n\
             [[prepare_hook]]\nname = \"h\"\nexecutable = \"hooks/h\"\nargs = [\"--x\"]\n\
             [agent_guard]\ndeny = [\"rm -rf *\"]\n",
        );
        assert_eq!(
            s,
            "It sets:\n\
             \x20 agent_guard.deny = [\"rm -rf *\"]\n\
             \x20 network.allow = [\"github.com\"]\n\
             \x20 network.mode = \"allowlist\"\n\
             \x20 [[prepare_hook]] args = [\"--x\"], executable = \"hooks/h\", name = \"h\"\n"
        );
        assert_eq!(summary(""), "It sets nothing.\n");
        assert_eq!(summary("[sandbox]\n"), "It sets:\n  sandbox = {}\n");
    }

    #[test]
    fn env_values_are_never_shown() {
        let s = summary(
            "[agent.claude.env]\nTOKEN = \"s3cret-1\"\n\"ODD NAME\" = \"s3cret-2\"\n\
             [[project]]\npath = \"/p\"\nenv = { K = \"s3cret-3\" }\n\
             [[x]]\ny = { env = { K = \"s3cret-4\" } }\n",
        );
        assert!(!s.contains("s3cret"), "{s}");
        assert!(
            s.contains("agent.claude.env: names \"ODD NAME\", TOKEN (values not shown)"),
            "{s}"
        );
        assert!(
            s.contains("[[project]] env: names K (values not shown), path = \"/p\""),
            "{s}"
        );
        assert!(s.contains("[[x]] y = { env: names K (values not shown) }"), "{s}");
    }

    #[test]
    fn terminal_controls_are_escaped_and_the_summary_is_bounded() {
        let s = summary("[network]\nmode = \"a\\u001b]0;x\\u0007\\u202e\"\n\"k\\u001b\" = 1\n");
        assert!(!s.contains(['\x1b', '\x07', '\u{202e}']), "{s:?}");
        assert!(
            s.contains("network.mode = \"a\\u{1b}]0;x\\u{7}\\u{202e}\""),
            "{s}"
        );
        assert!(s.contains("network.\"k\\u{1b}\" = 1"), "{s}");
        let many: String = (0..30)
            .map(|i| format!("k{i:02} = \"{}\"\n", "9".repeat(300)))
            .collect();
        let s = summary(&format!("[t]\n{many}"));
        assert_eq!(s.lines().count(), 1 + MAX_LINES + 1, "{s}");
        assert!(
            s.ends_with("  … and 10 more (read the file before trusting it)\n"),
            "{s}"
        );
        assert!(
            s.lines().all(|l| l.chars().count() <= 2 + MAX_LINE_CHARS + 1),
            "{s}"
        );
        assert!(
            s.contains(&format!("t.k00 = \"{}…\n", "9".repeat(MAX_LINE_CHARS - 9))),
            "{s}"
        );
    }
}
