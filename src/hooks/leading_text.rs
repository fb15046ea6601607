//! Stage 2 (hook responses), diagnostics: a hook that prints text before its JSON response
//! (`Starting services...` then `{"version":1}`) gets told so, with the escaped start of that
//! text, instead of a bare "expected value at line 1 column 1".
//!
//! Stdout is where a hook delivers secrets, so the start shown is short ([`MAX_SHOWN`] bytes)
//! and every long unbroken run of characters in it (a token, a key, a password) is replaced by
//! its length. Pure, no I/O.

use crate::text::escape_controls;

/// At most this many bytes of the leading text are shown.
pub const MAX_SHOWN: usize = 40;
/// Runs of this many or more non-space characters are hidden (they may be credentials).
pub const HIDE_RUN: usize = 16;

/// Text found on stdout before the first `{`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeadingText {
    /// Bytes before the first `{`.
    pub bytes: usize,
    /// Their start, escaped, long runs hidden, at most [`MAX_SHOWN`] bytes of input.
    pub start: String,
}

/// `Some` when `stdout` holds something other than whitespace before its first `{` and a `{`
/// follows (a response preceded by chatter); `None` otherwise.
pub fn find(stdout: &[u8]) -> Option<LeadingText> {
    let brace = stdout.iter().position(|&b| b == b'{')?;
    let before = &stdout[..brace];
    if before.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    let mut cut = &before[..before.len().min(MAX_SHOWN)];
    if before.len() > MAX_SHOWN && !before[MAX_SHOWN].is_ascii_whitespace() {
        // The cut splits a run: drop its visible part, which may be the start of a secret
        // longer than what remains of it here.
        let run_start = cut.iter().rposition(u8::is_ascii_whitespace).map_or(0, |i| i + 1);
        cut = &cut[..run_start];
    }
    let mut start = hide_long_runs(&String::from_utf8_lossy(cut));
    if before.len() > cut.len() {
        start.push('…');
    }
    Some(LeadingText {
        bytes: before.len(),
        start: escape_controls(&start).replace('\n', "\\n"),
    })
}

/// Replace each run of [`HIDE_RUN`] or more non-whitespace characters by `<N chars hidden>`.
fn hide_long_runs(text: &str) -> String {
    let mut out = String::new();
    let mut run = String::new();
    let flush = |run: &mut String, out: &mut String| {
        let n = run.chars().count();
        if n >= HIDE_RUN {
            out.push_str(&format!("<{n} chars hidden>"));
        } else {
            out.push_str(run);
        }
        run.clear();
    };
    for c in text.chars() {
        if c.is_whitespace() {
            flush(&mut run, &mut out);
            out.push(c);
        } else {
            run.push(c);
        }
    }
    flush(&mut run, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chatter_before_the_response_is_shown_escaped() {
        let t = find(b"Starting services...\r\n\x1b[32mok\x1b[0m\n{\"version\":1}").unwrap();
        assert_eq!(t.bytes, 34);
        assert_eq!(t.start, "Starting services...\\r\\n\\u{1b}[32mok\\u{1b}[0m\\n");
    }

    #[test]
    fn long_runs_are_hidden_and_the_start_is_short() {
        let secret = "ghp_0123456789abcdefghijABCDEFGHIJ";
        let t = find(format!("token {secret}\n{{\"version\":1}}").as_bytes()).unwrap();
        assert_eq!(t.bytes, 41);
        assert!(!t.start.contains("0123456789"), "{}", t.start);
        assert_eq!(t.start, "token <34 chars hidden>…");
        // Cut inside a run: none of the run is shown, however short the visible part.
        let t = find(format!("{}{secret}\n{{}}", "x ".repeat(16)).as_bytes()).unwrap();
        assert_eq!(t.start, format!("{}…", "x ".repeat(16)));
        let long = format!("{}{{}}", "word ".repeat(20));
        let t = find(long.as_bytes()).unwrap();
        assert_eq!(t.bytes, 100);
        assert!(
            t.start.ends_with('…') && t.start.len() < MAX_SHOWN + 8,
            "{}",
            t.start
        );
    }

    #[test]
    fn nothing_to_say_without_text_or_without_a_brace() {
        assert_eq!(find(b"  \n{\"version\":1}"), None);
        assert_eq!(find(b"just text"), None);
    }
}
