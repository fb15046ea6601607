//! Scrubbing: every value a launch staged for its container (environment values, resolved
//! 1Password values, the contents of generated files) is replaced by [`REDACTED`] in every
//! string of every record before the record reaches the log. A record comes from the container,
//! which holds those values, so a hook input (a command like `curl -H "Authorization: $TOKEN"`
//! after expansion, say) can carry one.
//!
//! Needles: each value trimmed, and for a multi-line value (a file) each of its lines trimmed,
//! when at least [`MIN_BYTES`] long: a shorter one is no secret and would blank out ordinary
//! words; each also as an error message quotes it (`{:?}`: `"` and `\` escaped). Longest
//! first, so a value containing another is replaced whole. A value cut short (the dispatcher cuts
//! a 4 KiB summary, an error path a key at 64 bytes) is caught from its first [`PREFIX_BYTES`]
//! on. This catches values
//! as they are; it cannot catch a value the container re-encodes on purpose (base64, split), and
//! the container already holds the values: the point is that the log on the host does not.
//!
//! The values are kept as [`Secret`]s (zeroed when the launch ends).

use crate::secret::Secret;

/// What a scrubbed value becomes.
pub const REDACTED: &str = "<redacted>";

/// Shorter values (and lines of values) are not scrubbed.
pub const MIN_BYTES: usize = 4;

/// A value cut short is scrubbed from its first this many bytes on: the dispatcher cuts long
/// fields (a 4 KiB command summary can end inside a token), and an error path cuts a key.
pub const PREFIX_BYTES: usize = 8;

/// The staged values of one launch.
#[derive(Debug, Default)]
pub struct Scrubber {
    needles: Vec<Secret>,
}

impl Scrubber {
    /// A scrubber for `values` (and the lines of multi-line ones).
    pub fn new<'a>(values: impl IntoIterator<Item = &'a str>) -> Self {
        let mut needles: Vec<&str> = Vec::new();
        for value in values {
            needles.push(value.trim());
            if value.contains('\n') {
                needles.extend(value.lines().map(str::trim));
            }
        }
        needles.retain(|n| n.len() >= MIN_BYTES);
        // As an error message quotes a key (`{:?}`): `"` and `\` escaped, control characters too.
        let escaped: Vec<String> = needles
            .iter()
            .map(|n| format!("{n:?}").trim_matches('"').to_owned())
            .filter(|e| !needles.contains(&e.as_str()))
            .collect();
        needles.extend(escaped.iter().map(String::as_str));
        needles.sort_unstable_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
        needles.dedup();
        Self {
            needles: needles.into_iter().map(|n| Secret::new(n.to_owned())).collect(),
        }
    }

    /// How many needles there are.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.needles.len()
    }

    /// Whether there is nothing to scrub.
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.needles.is_empty()
    }

    /// Replace every needle in `text`, and from every place where one starts (its first
    /// [`PREFIX_BYTES`]) as much of it as follows there: a value cut short.
    pub fn scrub(&self, text: &mut String) {
        for needle in &self.needles {
            if text.contains(needle.expose()) {
                *text = text.replace(needle.expose(), REDACTED);
            }
        }
        for needle in &self.needles {
            let n = needle.expose();
            if n.len() <= PREFIX_BYTES {
                continue;
            }
            let mut head = PREFIX_BYTES;
            while !n.is_char_boundary(head) {
                head += 1;
            }
            let mut from = 0;
            while let Some(i) = text[from..].find(&n[..head]) {
                let at = from + i;
                let same = text[at..]
                    .char_indices()
                    .zip(n.chars())
                    .take_while(|((_, a), b)| a == b)
                    .last()
                    .map_or(0, |((j, a), _)| j + a.len_utf8());
                text.replace_range(at..at + same, REDACTED);
                from = at + REDACTED.len();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_their_lines_are_replaced_longest_first() {
        let s = Scrubber::new([
            "tok-123",
            "tok-123456",
            "abc",
            " padded-value \n",
            "[auth]\npassword = hunter22\n",
        ]);
        let mut t = "x tok-123456 y tok-123 z abc padded-value password = hunter22 [auth]".to_string();
        s.scrub(&mut t);
        assert_eq!(
            t,
            "x <redacted> y <redacted> z abc <redacted> <redacted> <redacted>"
        );
        // "abc" is too short; the file counts whole (also as quoted, its newline escaped) and
        // line by line.
        assert_eq!(s.len(), 7);
        assert!(format!("{s:?}").contains("redacted") && !format!("{s:?}").contains("tok"));
    }

    #[test]
    fn values_cut_short_or_quoted_are_replaced() {
        let s = Scrubber::new(["sk-test-0123456789abcdef", "pa\"ss\\word-12"]);
        let mut t = "curl -H 'key: sk-test-0123456".to_string();
        s.scrub(&mut t);
        assert_eq!(t, "curl -H 'key: <redacted>");
        let mut t = r#"$["pa\"ss\\word-12"]: unknown; $["sk-test-01234"] sk-test"#.to_string();
        s.scrub(&mut t);
        assert_eq!(t, r#"$["<redacted>"]: unknown; $["<redacted>"] sk-test"#);
    }

    #[test]
    fn nothing_to_scrub_leaves_text_alone() {
        let s = Scrubber::new(["", "  ", "\n"]);
        assert!(s.is_empty());
        let mut t = "unchanged".to_string();
        s.scrub(&mut t);
        assert_eq!(t, "unchanged");
    }
}
