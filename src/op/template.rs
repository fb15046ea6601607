//! The single `op inject` template of a launch, and reading the answer back. Pure, no I/O.
//!
//! `op inject` replaces `{{ op://… }}`, but also expands `$VAR`, `${VAR}` and bare `op://`
//! strings anywhere in its input. The template therefore holds nothing but fixed text of our own
//! (ASCII letters, digits, `-`, `.`, `:`, braces and spaces) and references that passed
//! validation and a second, local character check here. One line per unique reference:
//!
//! ```text
//! ags-<32 random hex digits>.0:{{ op://Vault/Item/field }}
//! ags-<32 random hex digits>.1:{{ op://Vault/Other/section/field }}
//! ags-<32 random hex digits>.end
//! ```
//!
//! The answer is split at the random marker, not at line ends, so a resolved value that itself
//! contains line breaks or look-alike text is still attributed to the right reference (and then
//! refused, naming its keys): a value cannot fake a marker it never saw.

use std::fmt::Write as _;

use crate::hooks::policy::{OP_SEGMENT_PUNCTUATION, OpRef};

/// A built template: the references in index order and the bytes for `op inject`'s stdin.
pub(super) struct Template {
    marker: String,
    text: String,
    count: usize,
}

impl Template {
    /// One line per reference, in the order given. Refuses (with the index) a reference with any
    /// character the validator should never have let through.
    pub(super) fn build<'a>(refs: impl IntoIterator<Item = &'a OpRef>) -> Result<Self, usize> {
        let mut nonce = [0u8; 16];
        getrandom::fill(&mut nonce).expect("the OS random number generator is available");
        let marker = format!("ags-{}.", hex::encode(nonce));
        let mut text = String::new();
        let mut count = 0;
        for (i, r) in refs.into_iter().enumerate() {
            if !template_safe(r.as_str()) {
                return Err(i);
            }
            let _ = writeln!(text, "{marker}{i}:{{{{ {} }}}}", r.as_str());
            count += 1;
        }
        let _ = writeln!(text, "{marker}end");
        Ok(Self { marker, text, count })
    }

    /// The template text (references only: showing it reveals no value).
    pub(super) fn text(&self) -> &str {
        &self.text
    }

    /// Split `op inject`'s output into one raw value per reference, in index order. Errors say
    /// what did not match, never what was there.
    pub(super) fn parse<'o>(&self, output: &'o [u8]) -> Result<Vec<&'o [u8]>, &'static str> {
        let mut parts = split(output, self.marker.as_bytes());
        if parts.next() != Some(&b""[..]) {
            return Err("it does not start with the first marker");
        }
        let mut values = Vec::with_capacity(self.count);
        for i in 0..self.count {
            let part = parts.next().ok_or("markers are missing")?;
            let value = part
                .strip_prefix(format!("{i}:").as_bytes())
                .ok_or("markers are out of order")?;
            values.push(value.strip_suffix(b"\n").ok_or("a line end is missing")?);
        }
        match parts.next() {
            Some(b"end\n" | b"end") => {}
            _ => return Err("the end marker is missing or altered"),
        }
        if parts.next().is_some() {
            return Err("markers are repeated");
        }
        Ok(values)
    }
}

/// Every character of `r` is one `op inject` treats literally inside `{{ }}`.
fn template_safe(r: &str) -> bool {
    r.strip_prefix("op://").is_some_and(|rest| {
        rest.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'/' || OP_SEGMENT_PUNCTUATION.as_bytes().contains(&b))
    })
}

/// `haystack` split at every occurrence of `sep` (non-empty).
fn split<'h>(haystack: &'h [u8], sep: &[u8]) -> impl Iterator<Item = &'h [u8]> {
    let mut rest = Some(haystack);
    std::iter::from_fn(move || {
        let h = rest?;
        match h.windows(sep.len()).position(|w| w == sep) {
            Some(pos) => {
                rest = Some(&h[pos + sep.len()..]);
                Some(&h[..pos])
            }
            None => {
                rest = None;
                Some(h)
            }
        }
    })
}

/// Why a value cannot go into the env file (single-line, NUL-free UTF-8), or the value.
pub(super) fn check_value(bytes: &[u8]) -> Result<&str, &'static str> {
    if let Some(b) = bytes.iter().find(|b| matches!(b, 0 | b'\n' | b'\r')) {
        return Err(match b {
            0 => "contains a NUL byte",
            b'\n' => "contains a line feed",
            _ => "contains a carriage return",
        });
    }
    std::str::from_utf8(bytes).map_err(|_| "is not valid UTF-8")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(list: &[&str]) -> Vec<OpRef> {
        list.iter().map(|r| OpRef::try_from(*r).unwrap()).collect()
    }

    /// What a faithful `op inject` would print for `values`.
    fn answer(t: &Template, values: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, v) in values.iter().enumerate() {
            out.extend_from_slice(format!("{}{i}:", t.marker).as_bytes());
            out.extend_from_slice(v);
            out.push(b'\n');
        }
        out.extend_from_slice(format!("{}end\n", t.marker).as_bytes());
        out
    }

    #[test]
    fn template_holds_only_markers_and_references() {
        let rs = refs(&["op://Dev/db/password", "op://My Vault/api key/sec.1/token-%20"]);
        let t = Template::build(&rs).unwrap();
        let lines: Vec<&str> = t.text().lines().collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0], format!("{}0:{{{{ op://Dev/db/password }}}}", t.marker));
        assert_eq!(lines[2], format!("{}end", t.marker));
        assert!(!t.text().contains('$'));
        assert_eq!(t.marker.len(), "ags-.".len() + 32);
        assert_ne!(
            t.marker,
            Template::build(&rs).unwrap().marker,
            "a fresh nonce per template"
        );
    }

    #[test]
    fn refuses_characters_outside_the_reference_charset() {
        for bad in [
            "op://a/b/$X",
            "op://a/b/{{c}}",
            "op://a/b/c\n",
            "op://a/b/${HOME}",
            "http://a/b/c",
        ] {
            assert!(!template_safe(bad), "{bad:?}");
        }
        assert!(template_safe("op://a b/c_d/e-f.g%2F"));
    }

    #[test]
    fn parses_values_by_marker_even_with_line_breaks_inside() {
        let rs = refs(&["op://v/i/a", "op://v/i/b", "op://v/i/c"]);
        let t = Template::build(&rs).unwrap();
        let fake_line = format!("x\n{}1:forged", "ags-0000.");
        let out = answer(&t, &[b"one", fake_line.as_bytes(), b""]);
        let got = t.parse(&out).unwrap();
        assert_eq!(got, [&b"one"[..], fake_line.as_bytes(), b""]);
        assert_eq!(check_value(got[1]), Err("contains a line feed"));
        assert_eq!(check_value(b"a\rb"), Err("contains a carriage return"));
        assert_eq!(check_value(b"a\0b"), Err("contains a NUL byte"));
        assert_eq!(check_value(b"\xff"), Err("is not valid UTF-8"));
        assert_eq!(check_value("ünï $HOME 'q'".as_bytes()), Ok("ünï $HOME 'q'"));
    }

    #[test]
    fn refuses_output_that_does_not_fit() {
        let rs = refs(&["op://v/i/a", "op://v/i/b"]);
        let t = Template::build(&rs).unwrap();
        let good = answer(&t, &[b"1", b"2"]);
        assert!(t.parse(&good).is_ok());
        let cases: Vec<Vec<u8>> = vec![
            Vec::new(),
            good[1..].to_vec(),
            good[..good.len() - 10].to_vec(),
            [b"junk".as_slice(), &good].concat(),
            answer(&t, &[b"1"]),
            answer(&t, &[b"1", b"2", b"3"]),
            [good.as_slice(), t.marker.as_bytes(), b"end\n"].concat(),
            String::from_utf8(good.clone())
                .unwrap()
                .replacen(&format!("{}1:", t.marker), &format!("{}0:", t.marker), 1)
                .into_bytes(),
        ];
        for case in cases {
            assert!(t.parse(&case).is_err(), "{:?}", String::from_utf8_lossy(&case));
        }
    }

    #[test]
    fn no_references_is_just_the_end_marker() {
        let t = Template::build(&[]).unwrap();
        assert_eq!(t.parse(format!("{}end\n", t.marker).as_bytes()).unwrap().len(), 0);
    }
}
