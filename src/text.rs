//! Text shown to a person that came from somewhere `ags` does not control (hook output, file
//! contents, paths, Podman messages): [`escape_controls`] makes it unable to drive the terminal.
//! A leaf module: pure, no I/O, imports nothing else of `ags`.

/// Escape terminal control characters so hook text cannot drive the terminal: C0 controls
/// (except tab and newline), DEL, C1 controls and Unicode bidirectional overrides become
/// Rust-style escapes (`\r`, `\u{1b}`, `\u{202e}`). Everything else is kept as is.
pub fn escape_controls(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\n' | '\t' => out.push(c),
            '\r' => out.push_str("\\r"),
            c if c.is_control() || is_bidi_control(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// [`escape_controls`] for text shown on one line (a path, a key): newlines and tabs are escaped
/// too (`\n`, `\t`).
pub fn escape_line(s: &str) -> String {
    escape_controls(s).replace('\n', "\\n").replace('\t', "\\t")
}

/// `s` as one word a POSIX shell takes literally, for a command `ags` suggests you paste: as
/// is when it holds only characters no shell treats specially, else in single quotes (each
/// `'` as `'\''`). A path the agent named (`x$(touch f)y`) then runs nothing. Apply it to text
/// already made safe for the terminal ([`escape_line`]).
pub fn shell_word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+,:@%=".contains(&b));
    match plain {
        true => s.to_string(),
        false => format!("'{}'", s.replace('\'', "'\\''")),
    }
}

fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_are_taken_literally() {
        assert_eq!(shell_word("/a/b.c-d_e"), "/a/b.c-d_e");
        assert_eq!(shell_word("x$(touch f)y"), "'x$(touch f)y'");
        assert_eq!(shell_word("it's"), "'it'\\''s'");
        assert_eq!(shell_word(""), "''");
    }

    #[test]
    fn escapes_terminal_controls() {
        assert_eq!(
            escape_controls("a\x1b[31mb\rc\td\u{7f}\u{9b}\u{202e}é"),
            "a\\u{1b}[31mb\\rc\td\\u{7f}\\u{9b}\\u{202e}é"
        );
        assert_eq!(escape_line("a\nb\tc\u{1b}"), "a\\nb\\tc\\u{1b}");
    }
}
