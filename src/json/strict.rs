//! The strict JSON pass (hook responses, hook contexts, lifecycle documents). Pure, no I/O.
//!
//! Input: raw bytes a hook printed (or a context file). Output: a [`Node`] tree, or a
//! [`JsonError`] naming a JSON path and the broken rule.
//!
//! Why not plain `serde_json::from_slice`: serde_json keeps the *last* value of a repeated object
//! key in maps, and a hook could use that to smuggle a second value past a reviewer reading the
//! first. This pass walks the document once through serde_json's tokenizer (which also enforces
//! its 128-level nesting limit) and builds a small tree, refusing
//!
//! - input larger than [`MAX_DOCUMENT_BYTES`],
//! - input that is not UTF-8,
//! - anything that is not exactly one JSON document followed only by whitespace,
//! - a repeated key in any object at any depth (reported as `$.env.FOO`).
//!
//! Typed decoding of the tree happens in [`super::de`], whose errors never repeat a value.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

/// Largest document accepted, in bytes (the runner also caps hook stdout at this size).
pub const MAX_DOCUMENT_BYTES: usize = 1024 * 1024;

/// A parsed JSON value whose objects are known to have unique keys.
///
/// Strings borrow from the input where they contain no escapes. Object members keep their
/// document order.
#[derive(Debug, Clone, PartialEq)]
pub enum Node<'a> {
    /// `null`
    Null,
    /// `true` / `false`
    Bool(bool),
    /// A non-negative integer.
    UInt(u64),
    /// A negative integer.
    Int(i64),
    /// Any other number.
    Float(f64),
    /// A string.
    Str(Cow<'a, str>),
    /// An array.
    Array(Vec<Node<'a>>),
    /// An object, members in document order, keys unique.
    Object(Vec<(Cow<'a, str>, Node<'a>)>),
}

impl Node<'_> {
    /// The JSON type, with its article (`a string`, `an array`, …); never the value.
    pub fn kind(&self) -> &'static str {
        match self {
            Node::Null => "null",
            Node::Bool(_) => "a boolean",
            Node::UInt(_) | Node::Int(_) | Node::Float(_) => "a number",
            Node::Str(_) => "a string",
            Node::Array(_) => "an array",
            Node::Object(_) => "an object",
        }
    }
}

/// One step of a JSON path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    /// An object member.
    Key(String),
    /// An array element.
    Index(usize),
}

/// A location inside a document, rendered like `$.mounts[2].destination`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JsonPath(pub Vec<Seg>);

/// Longest key rendered in a path; longer keys are cut (they are user data).
const MAX_KEY_IN_PATH: usize = 64;

impl JsonPath {
    /// The document root, `$`.
    pub fn root() -> Self {
        Self(Vec::new())
    }

    /// This path extended by one member key.
    pub fn key(&self, key: &str) -> Self {
        let mut segs = self.0.clone();
        segs.push(Seg::Key(key.to_owned()));
        Self(segs)
    }

    /// This path extended by one array index.
    pub fn index(&self, index: usize) -> Self {
        let mut segs = self.0.clone();
        segs.push(Seg::Index(index));
        Self(segs)
    }
}

impl fmt::Display for JsonPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("$")?;
        for seg in &self.0 {
            match seg {
                Seg::Index(i) => write!(f, "[{i}]")?,
                Seg::Key(k) if is_plain_key(k) => write!(f, ".{k}")?,
                Seg::Key(k) => write!(f, "[{:?}]", truncate(k, MAX_KEY_IN_PATH))?,
            }
        }
        Ok(())
    }
}

fn is_plain_key(k: &str) -> bool {
    let mut bytes = k.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && k.len() <= MAX_KEY_IN_PATH
}

fn truncate(s: &str, max: usize) -> Cow<'_, str> {
    if s.len() <= max {
        return Cow::Borrowed(s);
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!("{}…", &s[..end]))
}

/// What is wrong with a JSON document. Messages never contain a value from the document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JsonErrorKind {
    /// The document exceeds [`MAX_DOCUMENT_BYTES`].
    #[error("document is {size} bytes, over the {limit}-byte limit; print a smaller response")]
    TooLarge {
        /// Actual size.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// The bytes are not UTF-8.
    #[error("document is not valid UTF-8 (first bad byte at offset {offset}); emit UTF-8 JSON")]
    NotUtf8 {
        /// Offset of the first invalid byte.
        offset: usize,
    },
    /// A syntax error, including trailing non-whitespace after the document.
    #[error("invalid JSON: {reason} at line {line} column {column}; print exactly one JSON document")]
    Syntax {
        /// serde_json's description (never includes document text).
        reason: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
    },
    /// An object repeats a key; the path names the key.
    #[error("duplicate object key; every key may appear only once per object")]
    DuplicateKey,
    /// A value has the wrong JSON type.
    #[error("wrong type: found {found}, expected {expected}")]
    WrongType {
        /// JSON kind of what was found (never the value itself).
        found: &'static str,
        /// What the protocol expects here.
        expected: String,
    },
    /// A value has the right type but is out of range.
    #[error("invalid value: expected {expected}")]
    InvalidValue {
        /// What the protocol expects here.
        expected: String,
    },
    /// An array has the wrong length.
    #[error("wrong length {len}: expected {expected}")]
    InvalidLength {
        /// Actual length.
        len: usize,
        /// What the protocol expects here.
        expected: String,
    },
    /// An object has a member the protocol does not define; the path names it.
    #[error("unknown field; allowed here: {allowed}")]
    UnknownField {
        /// The allowed member names.
        allowed: String,
    },
    /// A required member is absent.
    #[error("missing required field `{field}`")]
    MissingField {
        /// The missing member.
        field: &'static str,
    },
    /// A string is not one of the allowed words.
    #[error("unsupported value; allowed: {allowed}")]
    UnknownVariant {
        /// The allowed words.
        allowed: String,
    },
    /// Any other decoding failure.
    #[error("{0}")]
    Other(String),
}

/// A [`JsonErrorKind`] at a [`JsonPath`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {kind}")]
pub struct JsonError {
    /// Where the problem is.
    pub path: JsonPath,
    /// What the problem is.
    pub kind: JsonErrorKind,
}

impl JsonError {
    fn at_root(kind: JsonErrorKind) -> Self {
        Self {
            path: JsonPath::root(),
            kind,
        }
    }
}

/// Parse `bytes` into a [`Node`], enforcing size, UTF-8, a single document and unique keys.
pub fn parse(bytes: &[u8]) -> Result<Node<'_>, JsonError> {
    if bytes.len() > MAX_DOCUMENT_BYTES {
        return Err(JsonError::at_root(JsonErrorKind::TooLarge {
            size: bytes.len(),
            limit: MAX_DOCUMENT_BYTES,
        }));
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        JsonError::at_root(JsonErrorKind::NotUtf8 {
            offset: e.valid_up_to(),
        })
    })?;
    let mut trace = None;
    let mut de = serde_json::Deserializer::from_str(text);
    let parsed = NodeSeed { trace: &mut trace }
        .deserialize(&mut de)
        .and_then(|node| {
            de.end()?;
            Ok(node)
        });
    parsed.map_err(|e| match trace {
        Some(mut segs) => {
            segs.reverse();
            JsonError {
                path: JsonPath(segs),
                kind: JsonErrorKind::DuplicateKey,
            }
        }
        None => JsonError::at_root(syntax_kind(&e)),
    })
}

fn syntax_kind(e: &serde_json::Error) -> JsonErrorKind {
    let (line, column) = (e.line(), e.column());
    let text = e.to_string();
    let suffix = format!(" at line {line} column {column}");
    let reason = text.strip_suffix(&suffix).unwrap_or(&text).to_owned();
    JsonErrorKind::Syntax { reason, line, column }
}

/// Set when a duplicate key is found: the path to it, innermost segment first.
type Trace = Option<Vec<Seg>>;

struct NodeSeed<'t> {
    trace: &'t mut Trace,
}

impl<'de> DeserializeSeed<'de> for NodeSeed<'_> {
    type Value = Node<'de>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Node<'de>, D::Error> {
        d.deserialize_any(NodeVisitor { trace: self.trace })
    }
}

struct NodeVisitor<'t> {
    trace: &'t mut Trace,
}

impl<'de> Visitor<'de> for NodeVisitor<'_> {
    type Value = Node<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<Node<'de>, E> {
        Ok(Node::Null)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Node<'de>, E> {
        Ok(Node::Bool(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Node<'de>, E> {
        Ok(Node::UInt(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Node<'de>, E> {
        Ok(if v >= 0 {
            Node::UInt(v as u64)
        } else {
            Node::Int(v)
        })
    }

    fn visit_f64<E>(self, v: f64) -> Result<Node<'de>, E> {
        Ok(Node::Float(v))
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Node<'de>, E> {
        Ok(Node::Str(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Node<'de>, E> {
        Ok(Node::Str(Cow::Owned(v.to_owned())))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node<'de>, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        loop {
            match seq.next_element_seed(NodeSeed { trace: self.trace }) {
                Ok(Some(node)) => items.push(node),
                Ok(None) => return Ok(Node::Array(items)),
                Err(e) => return Err(note(self.trace, Seg::Index(items.len()), e)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node<'de>, A::Error> {
        let mut members: Vec<(Cow<'de, str>, Node<'de>)> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            match map.next_value_seed(NodeSeed { trace: self.trace }) {
                Ok(node) => members.push((Cow::Owned(key), node)),
                Err(e) => return Err(note(self.trace, Seg::Key(key), e)),
            }
        }
        if let Some(dup) = find_duplicate(&members) {
            *self.trace = Some(vec![Seg::Key(dup.to_owned())]);
            return Err(de::Error::custom("duplicate object key"));
        }
        Ok(Node::Object(members))
    }
}

/// Append `seg` to the duplicate-key trace (if one is being reported) and pass `e` on.
fn note<E>(trace: &mut Trace, seg: Seg, e: E) -> E {
    if let Some(segs) = trace {
        segs.push(seg);
    }
    e
}

/// The first key that repeats an earlier one, if any.
fn find_duplicate<'m>(members: &'m [(Cow<'_, str>, Node<'_>)]) -> Option<&'m str> {
    let mut seen = std::collections::HashSet::new();
    members.iter().map(|(k, _)| k.as_ref()).find(|k| !seen.insert(*k))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(input: &str) -> String {
        parse(input.as_bytes()).unwrap_err().to_string()
    }

    #[test]
    fn duplicate_nested_key_names_its_path() {
        assert_eq!(
            err(r#"{"version":1,"env":{"FOO":"a","BAR":"b","FOO":"c"}}"#),
            "$.env.FOO: duplicate object key; every key may appear only once per object"
        );
        assert_eq!(
            err(r#"{"mounts":[{},{"a":1,"b":{"x":1,"x":2}}]}"#),
            "$.mounts[1].b.x: duplicate object key; every key may appear only once per object"
        );
    }

    #[test]
    fn duplicate_in_large_object_is_found() {
        let mut members: Vec<String> = (0..100).map(|i| format!("\"K{i}\":1")).collect();
        members.push("\"K42\":2".into());
        let doc = format!("{{\"env\":{{{}}}}}", members.join(","));
        assert!(err(&doc).starts_with("$.env.K42: duplicate object key"));
    }

    #[test]
    fn odd_keys_are_quoted_and_escaped_in_paths() {
        assert_eq!(
            err("{\"a b\":{\"x\\u001b\":1,\"x\\u001b\":2}}"),
            "$[\"a b\"][\"x\\u{1b}\"]: duplicate object key; every key may appear only once per object"
        );
    }

    #[test]
    fn trailing_bytes_are_refused() {
        assert_eq!(
            err("{\"version\":1} x"),
            "$: invalid JSON: trailing characters at line 1 column 15; print exactly one JSON document"
        );
        assert!(parse(b"{\"version\":1} \n\t ").is_ok());
        assert!(err("{} {}").contains("trailing characters"));
    }

    #[test]
    fn size_and_encoding_are_checked_first() {
        let big = vec![b' '; MAX_DOCUMENT_BYTES + 1];
        assert_eq!(
            parse(&big).unwrap_err().to_string(),
            "$: document is 1048577 bytes, over the 1048576-byte limit; print a smaller response"
        );
        assert_eq!(
            parse(b"{\"a\":\"\xff\"}").unwrap_err().to_string(),
            "$: document is not valid UTF-8 (first bad byte at offset 6); emit UTF-8 JSON"
        );
    }

    #[test]
    fn empty_and_deep_documents_fail_cleanly() {
        assert!(err("").contains("EOF while parsing"));
        let deep = "[".repeat(10_000);
        assert!(err(&deep).contains("recursion limit exceeded"));
    }

    #[test]
    fn builds_the_tree_in_document_order() {
        let node = parse(br#"{"b":[1,-2,1.5,null,true],"a":"x\ny"}"#).unwrap();
        let Node::Object(members) = node else {
            panic!("object")
        };
        assert_eq!(members[0].0, "b");
        assert_eq!(
            members[0].1,
            Node::Array(vec![
                Node::UInt(1),
                Node::Int(-2),
                Node::Float(1.5),
                Node::Null,
                Node::Bool(true)
            ])
        );
        assert_eq!(members[1], ("a".into(), Node::Str("x\ny".into())));
    }
}
