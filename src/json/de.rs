//! Typed decoding of a strict [`Node`] tree. Pure, no I/O.
//!
//! Input: a [`Node`] from [`super::strict::parse`]. Output: any `Deserialize` type, or a
//! [`JsonError`] with the JSON path of the failure.
//!
//! This exists so that decoding errors never quote document values: serde's default error
//! messages embed the offending value (`invalid type: string "…"`), and a hook response may carry
//! secrets. The error type here overrides every constructor to keep only the JSON *kind*.
//! It is also stricter than serde_json: `null` never stands for an absent member, and a struct
//! is only decoded from an object (serde_json also accepts an array in field order).

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::value::BorrowedStrDeserializer;
use serde::de::{self, DeserializeSeed, Expected, IntoDeserializer, Unexpected, Visitor};

use super::strict::{self, JsonError, JsonErrorKind, JsonPath, Node, Seg};

/// Decode `bytes` strictly (see [`strict::parse`]) into `T`.
pub fn from_slice<T: for<'de> Deserialize<'de>>(bytes: &[u8]) -> Result<T, JsonError> {
    T::deserialize(NodeDe(strict::parse(bytes)?)).map_err(|e| {
        let mut segs = e.segs;
        segs.reverse();
        JsonError {
            path: JsonPath(segs),
            kind: e.kind,
        }
    })
}

/// Decoding error: a kind plus the path, innermost segment first while it bubbles up.
#[derive(Debug)]
pub struct DeError {
    segs: Vec<Seg>,
    kind: JsonErrorKind,
}

impl DeError {
    fn new(kind: JsonErrorKind) -> Self {
        Self {
            segs: Vec::new(),
            kind,
        }
    }

    fn within(mut self, seg: Seg) -> Self {
        self.segs.push(seg);
        self
    }
}

impl fmt::Display for DeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.kind.fmt(f)
    }
}

impl std::error::Error for DeError {}

impl de::Error for DeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Self::new(JsonErrorKind::Other(msg.to_string()))
    }

    fn invalid_type(unexp: Unexpected<'_>, exp: &dyn Expected) -> Self {
        Self::new(JsonErrorKind::WrongType {
            found: json_kind(&unexp),
            expected: expectation(exp),
        })
    }

    fn invalid_value(_unexp: Unexpected<'_>, exp: &dyn Expected) -> Self {
        Self::new(JsonErrorKind::InvalidValue {
            expected: expectation(exp),
        })
    }

    fn invalid_length(len: usize, exp: &dyn Expected) -> Self {
        Self::new(JsonErrorKind::InvalidLength {
            len,
            expected: expectation(exp),
        })
    }

    fn unknown_variant(_variant: &str, expected: &'static [&'static str]) -> Self {
        Self::new(JsonErrorKind::UnknownVariant {
            allowed: word_list(expected),
        })
    }

    fn unknown_field(_field: &str, expected: &'static [&'static str]) -> Self {
        Self::new(JsonErrorKind::UnknownField {
            allowed: word_list(expected),
        })
    }

    fn missing_field(field: &'static str) -> Self {
        Self::new(JsonErrorKind::MissingField { field })
    }

    fn duplicate_field(_field: &'static str) -> Self {
        Self::new(JsonErrorKind::DuplicateKey)
    }
}

fn wrong_type(node: &Node<'_>, exp: &dyn Expected) -> DeError {
    DeError::new(JsonErrorKind::WrongType {
        found: node.kind(),
        expected: expectation(exp),
    })
}

fn json_kind(unexp: &Unexpected<'_>) -> &'static str {
    match unexp {
        Unexpected::Bool(_) => "a boolean",
        Unexpected::Unsigned(_) | Unexpected::Signed(_) | Unexpected::Float(_) => "a number",
        Unexpected::Char(_) | Unexpected::Str(_) | Unexpected::Bytes(_) => "a string",
        Unexpected::Unit | Unexpected::Option => "null",
        Unexpected::Seq => "an array",
        Unexpected::Map => "an object",
        _ => "another kind of value",
    }
}

/// serde's expectation text, translated to JSON words where serde uses Rust ones.
fn expectation(exp: &dyn Expected) -> String {
    match exp.to_string().as_str() {
        "a map" => "an object".into(),
        "a sequence" => "an array".into(),
        "u32" | "u64" => "a non-negative integer".into(),
        other => other.into(),
    }
}

fn word_list(words: &[&str]) -> String {
    if words.is_empty() {
        return "none".into();
    }
    words
        .iter()
        .map(|w| format!("`{w}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A [`Node`] as a serde `Deserializer`.
struct NodeDe<'de>(Node<'de>);

impl<'de> de::Deserializer<'de> for NodeDe<'de> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        match self.0 {
            Node::Null => v.visit_unit(),
            Node::Bool(b) => v.visit_bool(b),
            Node::UInt(n) => v.visit_u64(n),
            Node::Int(n) => v.visit_i64(n),
            Node::Float(n) => v.visit_f64(n),
            Node::Str(Cow::Borrowed(s)) => v.visit_borrowed_str(s),
            Node::Str(Cow::Owned(s)) => v.visit_string(s),
            Node::Array(items) => v.visit_seq(Seq {
                items: items.into_iter(),
                index: 0,
            }),
            Node::Object(members) => v.visit_map(Map {
                members: members.into_iter(),
                current: None,
            }),
        }
    }

    /// `null` is not an absent value here: an optional member is either missing or well-typed.
    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        v.visit_some(self)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, DeError> {
        match self.0 {
            node @ Node::Object(_) => NodeDe(node).deserialize_any(v),
            other => Err(wrong_type(&other, &v)),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, DeError> {
        match self.0 {
            Node::Str(s) => v.visit_enum(s.into_owned().into_deserializer()),
            other => Err(wrong_type(&other, &v)),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        v: V,
    ) -> Result<V::Value, DeError> {
        v.visit_newtype_struct(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map identifier ignored_any
    }
}

struct Seq<'de> {
    items: std::vec::IntoIter<Node<'de>>,
    index: usize,
}

impl<'de> de::SeqAccess<'de> for Seq<'de> {
    type Error = DeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, DeError> {
        let Some(node) = self.items.next() else {
            return Ok(None);
        };
        let index = self.index;
        self.index += 1;
        seed.deserialize(NodeDe(node))
            .map(Some)
            .map_err(|e| e.within(Seg::Index(index)))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

struct Map<'de> {
    members: std::vec::IntoIter<(Cow<'de, str>, Node<'de>)>,
    current: Option<(Cow<'de, str>, Node<'de>)>,
}

impl<'de> de::MapAccess<'de> for Map<'de> {
    type Error = DeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, DeError> {
        let Some((key, node)) = self.members.next() else {
            return Ok(None);
        };
        let decoded = match &key {
            Cow::Borrowed(k) => seed.deserialize(BorrowedStrDeserializer::new(k)),
            Cow::Owned(k) => seed.deserialize(k.as_str().into_deserializer()),
        };
        let decoded = decoded.map_err(|e: DeError| e.within(Seg::Key(key.to_string())))?;
        self.current = Some((key, node));
        Ok(Some(decoded))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, DeError> {
        let (key, node) = self
            .current
            .take()
            .ok_or_else(|| <DeError as de::Error>::custom("value requested before key"))?;
        seed.deserialize(NodeDe(node))
            .map_err(|e| e.within(Seg::Key(key.into_owned())))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.members.len())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Inner {
        a: u32,
        #[serde(default)]
        b: Option<Vec<String>>,
        mode: Option<Mode>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(rename_all = "lowercase")]
    enum Mode {
        Ro,
        Rw,
    }

    fn err<T: for<'de> Deserialize<'de> + fmt::Debug>(doc: &str) -> String {
        from_slice::<T>(doc.as_bytes()).unwrap_err().to_string()
    }

    #[test]
    fn wrong_types_name_kind_not_value() {
        assert_eq!(
            err::<BTreeMap<String, Inner>>(r#"{"x":{"a":"s3cr3t"}}"#),
            "$.x.a: wrong type: found a string, expected a non-negative integer"
        );
        assert_eq!(
            err::<Vec<Inner>>(r#"[{"a":1,"b":["ok",5]}]"#),
            "$[0].b[1]: wrong type: found a number, expected a string"
        );
    }

    #[test]
    fn unknown_fields_and_variants_are_named_by_path() {
        assert_eq!(
            err::<Inner>(r#"{"a":1,"s3cr3t":true}"#),
            "$.s3cr3t: unknown field; allowed here: `a`, `b`, `mode`"
        );
        assert_eq!(
            err::<Inner>(r#"{"a":1,"mode":"s3cr3t"}"#),
            "$.mode: unsupported value; allowed: `ro`, `rw`"
        );
        assert_eq!(err::<Inner>(r#"{"b":[]}"#), "$: missing required field `a`");
    }

    #[test]
    fn null_is_not_absent_and_arrays_are_not_structs() {
        assert_eq!(
            err::<Inner>(r#"{"a":1,"b":null}"#),
            "$.b: wrong type: found null, expected an array"
        );
        assert!(err::<Inner>("[1]").starts_with("$: wrong type: found an array, expected struct Inner"));
        let ok: Inner = from_slice(br#"{"a":7,"mode":"rw"}"#).unwrap();
        assert!(ok.b.is_none() && matches!(ok.mode, Some(Mode::Rw)));
    }

    #[test]
    fn out_of_range_numbers_are_refused_without_echo() {
        assert_eq!(
            err::<Inner>(r#"{"a":99999999999}"#),
            "$.a: invalid value: expected a non-negative integer"
        );
        assert_eq!(
            err::<Inner>(r#"{"a":-1}"#),
            "$.a: invalid value: expected a non-negative integer"
        );
    }
}
