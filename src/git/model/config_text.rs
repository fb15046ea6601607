//! Reading the values of a git configuration file, leniently: lines this reader does not
//! understand are skipped (it serves the host's own configuration, `git::model::identity`, and
//! a submodule's `core.worktree`, `git::model::guard`). Judging configuration the agent may have
//! written is `git::model::config_keys`'s job, which is strict. Pure.

/// The `(section[.subsection].name, value)` entries of a git configuration file, keys with
/// the section and name lower-cased (the subsection keeps its case), values unquoted.
pub(crate) fn entries(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut section: Option<String> = None;
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let mut rest = line.trim_start();
        if rest.starts_with('[') {
            let Some((header, after)) = parse_header(rest) else {
                section = None;
                continue;
            };
            section = Some(header);
            rest = after.trim_start();
        }
        if rest.is_empty() || rest.starts_with(['#', ';']) {
            continue;
        }
        let Some(sec) = &section else { continue };
        let name_len = rest
            .bytes()
            .take_while(|b| b.is_ascii_alphanumeric() || *b == b'-')
            .count();
        if name_len == 0 {
            continue;
        }
        let name = rest[..name_len].to_ascii_lowercase();
        let after = rest[name_len..].trim_start();
        let value = if let Some(v) = after.strip_prefix('=') {
            let mut raw = v.to_string();
            // A backslash at the end of the line continues the value.
            while ends_with_continuation(&raw) {
                raw.pop();
                match lines.next() {
                    Some(next) => raw.push_str(next),
                    None => break,
                }
            }
            parse_value(&raw)
        } else if after.is_empty() || after.starts_with(['#', ';']) {
            "true".into()
        } else {
            continue;
        };
        out.push((format!("{sec}.{name}"), value));
    }
    out
}

fn ends_with_continuation(raw: &str) -> bool {
    let trailing = raw.bytes().rev().take_while(|&b| b == b'\\').count();
    trailing % 2 == 1
}

/// `[section]`, `[section "sub"]` or `[section.sub]` → the lower-cased key prefix, and what
/// follows the `]` on the line.
fn parse_header(line: &str) -> Option<(String, &str)> {
    let inner = &line[1..];
    let name_len = inner
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'.')
        .count();
    let name = inner[..name_len].to_ascii_lowercase();
    if name.is_empty() {
        return None;
    }
    let rest = &inner[name_len..];
    if let Some(after) = rest.strip_prefix(']') {
        return Some((name, after));
    }
    let rest = rest.trim_start().strip_prefix('"')?;
    let mut sub = String::new();
    let mut chars = rest.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => sub.push(chars.next()?.1),
            '"' => {
                let after = rest[i + 1..].strip_prefix(']')?;
                return Some((format!("{name}.{sub}"), after));
            }
            _ => sub.push(c),
        }
    }
    None
}

/// A raw value: quotes removed, `\"`, `\\`, `\n`, `\t`, `\b` decoded, an unquoted `#`/`;`
/// starts a comment, unquoted whitespace at the ends dropped.
fn parse_value(raw: &str) -> String {
    let mut out = String::new();
    let mut quoted = false;
    // Length of `out` up to its last character that must be kept (quoted or non-space).
    let mut keep = 0;
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                quoted = !quoted;
                keep = out.len();
            }
            '\\' => {
                let decoded = match chars.next() {
                    Some('n') => '\n',
                    Some('t') => '\t',
                    Some('b') => '\u{8}',
                    Some(other) => other,
                    None => break,
                };
                out.push(decoded);
                keep = out.len();
            }
            '#' | ';' if !quoted => break,
            c if c.is_whitespace() && !quoted => {
                if !out.is_empty() {
                    out.push(c);
                }
            }
            c => {
                out.push(c);
                keep = out.len();
            }
        }
    }
    out.truncate(keep);
    out
}
