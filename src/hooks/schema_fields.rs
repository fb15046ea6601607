//! The JSON Schema of single fields of the hook protocols (versions, paths, environment keys,
//! references, destinations), used by the `schemars` attributes of `hooks::protocol` and
//! `hooks::events::protocol`; the whole documents are built in `hooks::schema`. Pure.

use schemars::generate::SchemaGenerator;
use schemars::{Schema, json_schema};

use super::policy::{
    ALLOWED_ENV_NAMES, MAX_PATH_BYTES, PROTECTED_HOME_ENTRIES, RESERVED_ENV_NAMES, RESERVED_ENV_PREFIXES,
    RESERVED_ENV_PREFIXES_ANY_CASE, RESERVED_ENV_SUFFIXES_ANY_CASE, RESERVED_TMP_PREFIX,
};
use crate::agents::CONTAINER_HOME;

/// Environment keys: `^[A-Za-z_][A-Za-z0-9_]*$`.
pub const ENV_KEY_PATTERN: &str = "^[A-Za-z_][A-Za-z0-9_]*$";

/// 1Password references: `op://VAULT/ITEM/FIELD` or `op://VAULT/ITEM/SECTION/FIELD`.
pub const OP_REF_PATTERN: &str =
    "^op://[A-Za-z0-9 _.%-]+/[A-Za-z0-9 _.%-]+/([A-Za-z0-9 _.%-]+/)?[A-Za-z0-9 _.%-]+$";

/// One normalized path segment: no `/`, NUL, CR, LF or `:`, and not `.` or `..`.
const SEGMENT: &str = r"([^/\x00\n\r:]*[^/.\x00\n\r:][^/\x00\n\r:]*|\.\.\.+)";

/// A segment of a mount source as written: also empty or `.` (the validator normalises those
/// away), never `..`.
const SOURCE_SEGMENT: &str = r"([^/\x00\n\r:]*[^/.\x00\n\r:][^/\x00\n\r:]*|\.\.\.+|\.?)";

pub(crate) fn version_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "integer", "const": 1 })
}

pub(crate) fn absolute_path_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string", "pattern": "^/" })
}

/// The `env` object of a response whose values follow `values` (the schema of `EnvValueWire`).
pub(crate) fn env_map_schema(values: Schema) -> Schema {
    let alternatives = |items: &[&str], f: fn(&str) -> String| -> String {
        items.iter().map(|p| f(p)).collect::<Vec<_>>().join("|")
    };
    let reserved_prefix = format!("^({})", alternatives(RESERVED_ENV_PREFIXES, regex_escape));
    let any_case_prefix = format!("^({})", alternatives(RESERVED_ENV_PREFIXES_ANY_CASE, any_case));
    let any_case_suffix = format!("({})$", alternatives(RESERVED_ENV_SUFFIXES_ANY_CASE, any_case));
    json_schema!({
        "type": "object",
        "propertyNames": {
            "pattern": ENV_KEY_PATTERN,
            "not": { "anyOf": [
                { "enum": RESERVED_ENV_NAMES },
                { "pattern": any_case_prefix },
                { "pattern": any_case_suffix },
                { "pattern": reserved_prefix, "not": { "enum": ALLOWED_ENV_NAMES } }
            ] }
        },
        "additionalProperties": values
    })
}

/// A regex matching `s` in any letter case (JSON Schema regexes have no case-insensitive flag).
fn any_case(s: &str) -> String {
    s.chars()
        .map(|c| match (c.to_ascii_lowercase(), c.to_ascii_uppercase()) {
            (l, u) if l != u => format!("[{u}{l}]"),
            _ => regex_escape(&c.to_string()),
        })
        .collect()
}

pub(crate) fn env_literal_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string", "pattern": r"^[^\x00\n\r]*$" })
}

pub(crate) fn op_ref_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({ "type": "string", "pattern": OP_REF_PATTERN })
}

pub(crate) fn destination_schema(_: &mut SchemaGenerator) -> Schema {
    let home = regex_escape(CONTAINER_HOME);
    let entries: Vec<String> = PROTECTED_HOME_ENTRIES.iter().map(|e| regex_escape(e)).collect();
    json_schema!({
        "type": "string",
        "maxLength": MAX_PATH_BYTES,
        "pattern": format!("^/(tmp|workspace|home/dev)(/{SEGMENT})+$"),
        "not": { "anyOf": [
            { "pattern": format!("^/tmp/{}", regex_escape(RESERVED_TMP_PREFIX)) },
            { "pattern": format!(r"^{home}/\.") },
            { "pattern": format!("^{home}/({})(/|$)", entries.join("|")) }
        ] }
    })
}

pub(crate) fn host_source_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "maxLength": MAX_PATH_BYTES,
        "pattern": format!("^(/{SOURCE_SEGMENT})+$")
    })
}

fn regex_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if r"\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping() {
        assert_eq!(regex_escape(".claude.json"), r"\.claude\.json");
        assert_eq!(regex_escape("/home/dev"), "/home/dev");
    }
}
