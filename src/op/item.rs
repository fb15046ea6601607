//! `--op-secret-set VAULT/ITEM`: the name syntax, and turning `op item get --format json` output
//! of a Secure Note into environment variables. Pure, no I/O.
//!
//! Which fields become variables: every field whose label is an environment name `ags` accepts
//! from hooks (`^[A-Za-z_][A-Za-z0-9_]*$`, reserved names and prefixes excluded) and whose value
//! is non-empty. The note body (`purpose: NOTES`) and empty fields are skipped; skipped fields
//! are listed by label and reason so the caller can mention them. A value that is not
//! single-line or holds a NUL byte, or two fields with the same label, fail the whole set.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde_json::Value;

use super::Secret;
use super::error::OpError;
use super::template::check_value;
use crate::hooks::policy::{EnvKey, EnvKeyError, display_escaped};

/// Longest vault or item name accepted, in bytes.
pub const MAX_SET_SEGMENT_BYTES: usize = 512;

/// A validated `--op-secret-set` argument: `VAULT/ITEM`, each a name or an ID.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SecretSetName {
    vault: String,
    item: String,
}

impl SecretSetName {
    /// The vault name or ID.
    pub fn vault(&self) -> &str {
        &self.vault
    }

    /// The item title or ID.
    pub fn item(&self) -> &str {
        &self.item
    }
}

impl FromStr for SecretSetName {
    type Err = OpError;

    /// Exactly one `/` between two non-empty segments without control characters; a segment may
    /// not start with `-` (it would reach `op` as an option).
    fn from_str(s: &str) -> Result<Self, OpError> {
        let refuse = |problem| OpError::SecretSetSyntax {
            given: display_escaped(s),
            problem,
        };
        if s.chars().any(char::is_control) {
            return Err(refuse("control characters (line breaks, NUL, …) are not allowed"));
        }
        let (vault, item) = s.split_once('/').ok_or_else(|| refuse("the `/` is missing"))?;
        if vault.is_empty() || item.is_empty() {
            return Err(refuse("the vault and the item must both be non-empty"));
        }
        if item.contains('/') {
            return Err(refuse(
                "only one `/` is allowed; name an item with a `/` in its title by its ID",
            ));
        }
        if vault.starts_with('-') || item.starts_with('-') {
            return Err(refuse("a vault or item may not start with `-`; use its ID"));
        }
        if vault.len() > MAX_SET_SEGMENT_BYTES || item.len() > MAX_SET_SEGMENT_BYTES {
            return Err(refuse("a vault or item name is too long"));
        }
        Ok(Self {
            vault: vault.into(),
            item: item.into(),
        })
    }
}

impl TryFrom<&str> for SecretSetName {
    type Error = OpError;

    fn try_from(s: &str) -> Result<Self, OpError> {
        s.parse()
    }
}

impl fmt::Display for SecretSetName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.vault, self.item)
    }
}

impl fmt::Debug for SecretSetName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecretSetName({self})")
    }
}

/// The variables one Secure Note contributes.
#[derive(Debug, Clone)]
pub struct SecretSet {
    /// Which set.
    pub name: SecretSetName,
    /// Its variables, by name.
    pub values: BTreeMap<String, Secret>,
    /// Fields that were not loaded, in item order.
    pub skipped: Vec<SkippedField>,
}

/// A field of a secret set that did not become a variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedField {
    /// Its label, control characters escaped (at most 100 characters).
    pub label: String,
    /// Why.
    pub reason: SkipReason,
}

/// Why a field was not loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    /// The Secure Note's body (`notesPlain`).
    NoteBody,
    /// The label is not an environment name.
    NotAnEnvName,
    /// The label is a name or prefix reserved for ags and the agent runtime.
    Reserved,
    /// No value, or an empty one.
    Empty,
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::NoteBody => "it is the note body",
            Self::NotAnEnvName => "its label is not an environment name ([A-Za-z_][A-Za-z0-9_]*)",
            Self::Reserved => "its label is reserved for ags or the agent runtime",
            Self::Empty => "it has no value",
        })
    }
}

impl fmt::Display for SkippedField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "field {:?} skipped: {}", self.label, self.reason)
    }
}

/// Only a Secure Note is a secret set (its fields are the variables).
fn check_category(item: &serde_json::Map<String, Value>, set: &str) -> Result<(), OpError> {
    match item.get("category").and_then(Value::as_str) {
        Some("SECURE_NOTE") => Ok(()),
        Some(other) => Err(OpError::NotSecureNote {
            set: set.to_string(),
            category: display_escaped(&other.chars().take(100).collect::<String>()),
        }),
        None => Err(OpError::ItemJson {
            set: set.to_string(),
            problem: "an item without a category".into(),
        }),
    }
}

/// Read `op item get --format json` output as a secret set. Errors never include content: JSON
/// problems are reported by position only (a `serde_json` message may quote a value).
pub(super) fn parse_item(name: &SecretSetName, json: &[u8]) -> Result<SecretSet, OpError> {
    let set = name.to_string();
    let bad = |problem: String| OpError::ItemJson {
        set: set.clone(),
        problem,
    };
    let item: Value = serde_json::from_slice(json)
        .map_err(|e| bad(format!("invalid JSON (line {}, column {})", e.line(), e.column())))?;
    let item = item
        .as_object()
        .ok_or_else(|| bad("JSON that is not an object".into()))?;
    check_category(item, &set)?;
    let fields = match item.get("fields") {
        None => &Vec::new(),
        Some(f) => f
            .as_array()
            .ok_or_else(|| bad("`fields` that is not a list".into()))?,
    };
    let mut values = BTreeMap::new();
    let mut seen = std::collections::BTreeSet::new();
    let mut skipped = Vec::new();
    for (i, field) in fields.iter().enumerate() {
        let field = field
            .as_object()
            .ok_or_else(|| bad(format!("field {i} that is not an object")))?;
        let text = |k: &str| -> Result<Option<&str>, OpError> {
            match field.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s)),
                Some(_) => Err(bad(format!("field {i} with a `{k}` that is not a string"))),
            }
        };
        let label = text("label")?.unwrap_or("");
        let skip = |reason| SkippedField {
            label: display_escaped(&label.chars().take(100).collect::<String>()),
            reason,
        };
        if text("purpose")? == Some("NOTES") {
            skipped.push(skip(SkipReason::NoteBody));
            continue;
        }
        let key = match EnvKey::try_from(label) {
            Ok(key) => key,
            Err(EnvKeyError::Syntax) => {
                skipped.push(skip(SkipReason::NotAnEnvName));
                continue;
            }
            Err(_) => {
                skipped.push(skip(SkipReason::Reserved));
                continue;
            }
        };
        if !seen.insert(key.to_string()) {
            return Err(OpError::DuplicateField {
                set,
                label: key.to_string(),
            });
        }
        let value = match text("value")? {
            None | Some("") => {
                skipped.push(skip(SkipReason::Empty));
                continue;
            }
            Some(v) => check_value(v.as_bytes()).map_err(|problem| OpError::UnusableField {
                set: set.clone(),
                label: key.to_string(),
                problem,
            })?,
        };
        values.insert(key.to_string(), Secret::new(value.to_owned()));
    }
    Ok(SecretSet {
        name: name.clone(),
        values,
        skipped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name() -> SecretSetName {
        "Dev/agent env".parse().unwrap()
    }

    #[test]
    fn set_names() {
        let n: SecretSetName = "My Vault/item one".parse().unwrap();
        assert_eq!((n.vault(), n.item()), ("My Vault", "item one"));
        assert_eq!(n.to_string(), "My Vault/item one");
        for bad in [
            "",
            "vault",
            "/item",
            "vault/",
            "a/b/c",
            "a\n/b",
            "a/b\0",
            "-v/i",
            "v/--format",
        ] {
            let e = bad.parse::<SecretSetName>().unwrap_err();
            assert!(matches!(e, OpError::SecretSetSyntax { .. }), "{bad:?}: {e}");
            assert!(!e.to_string().contains('\n'), "{e}");
        }
    }

    #[test]
    fn loads_env_named_fields_and_skips_the_rest() {
        let json = br#"{"id":"x","title":"agent env","category":"SECURE_NOTE","vault":{"id":"v","name":"Dev"},
            "fields":[
              {"id":"notesPlain","type":"STRING","purpose":"NOTES","label":"notesPlain","value":"body\nlines"},
              {"id":"a","type":"CONCEALED","label":"API_KEY","value":"k1"},
              {"id":"b","type":"STRING","label":"not a name","value":"v"},
              {"id":"c","type":"STRING","label":"PATH","value":"/evil"},
              {"id":"d","type":"STRING","label":"LD_PRELOAD","value":"/evil.so"},
              {"id":"e","type":"STRING","label":"EMPTY"},
              {"id":"f","type":"STRING","label":"_under_1","value":"it's $ok"}
            ]}"#;
        let set = parse_item(&name(), json).unwrap();
        let got: Vec<(&str, &str)> = set.values.iter().map(|(k, v)| (k.as_str(), v.expose())).collect();
        assert_eq!(got, [("API_KEY", "k1"), ("_under_1", "it's $ok")]);
        let skipped: Vec<(&str, SkipReason)> =
            set.skipped.iter().map(|s| (s.label.as_str(), s.reason)).collect();
        assert_eq!(
            skipped,
            [
                ("notesPlain", SkipReason::NoteBody),
                ("not a name", SkipReason::NotAnEnvName),
                ("PATH", SkipReason::Reserved),
                ("LD_PRELOAD", SkipReason::Reserved),
                ("EMPTY", SkipReason::Empty),
            ]
        );
    }

    #[test]
    fn refuses_what_cannot_be_env_without_showing_it() {
        let cases: [(&[u8], &str); 6] = [
            (br#"{"category":"SECURE_NOTE","fields":[{"label":"K","value":"SENTINEL\nx"}]}"#, "line feed"),
            (br#"{"category":"SECURE_NOTE","fields":[{"label":"K","value":"a"},{"label":"K","value":"b"}]}"#, "two fields"),
            (br#"{"category":"LOGIN","fields":[{"label":"password","value":"SENTINEL"}]}"#, "not a Secure Note"),
            (br#"{"category":"SECURE_NOTE","fields":[{"label":"K","value":["SENTINEL"]}]}"#, "not a string"),
            (br#"{"category":"SECURE_NOTE","fields":[{"label":"K","value":"SENTINEL"#, "invalid JSON"),
            (b"[\"SENTINEL\"]", "not an object"),
        ];
        for (json, expect) in cases {
            let e = parse_item(&name(), json).unwrap_err().to_string();
            assert!(e.contains(expect), "{e}");
            assert!(!e.contains("SENTINEL"), "{e}");
            assert!(e.contains("Dev/agent env"), "{e}");
        }
    }
}
