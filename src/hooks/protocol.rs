//! Stage 2 (hook protocol): the wire types of the `prepare` event. Pure, no I/O.
//!
//! These types are the public contract between `ags` and a prepare hook:
//!
//! - [`HookContext`] is the JSON document written to every hook's stdin (and accepted by
//!   `ags hooks test --context FILE`),
//! - [`PrepareResponse`] is the JSON document a hook prints on stdout.
//!
//! Both refuse unknown members, and the JSON Schemas in `docs/schemas/` are generated from them
//! (see [`super::schema`]). A response is decoded through the strict pass
//! ([`crate::json::strict`], duplicate keys and trailing bytes refused) and then turned into
//! validated internal types by [`super::validate::parse_response`]; code outside this stage
//! should use those internal types, never these wire types.
//!
//! ```json
//! {"version":1,"event":"prepare","launch_id":"ags-123-unique","project":"/work/project",
//!  "workdir":"/work/project/subdir","agent":"pi"}
//! ```

use std::fmt;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use super::schema_fields as s;
use crate::json::strict::{JsonError, JsonErrorKind};
use crate::{config, json};

/// The only protocol version this `ags` speaks, in both directions.
pub const PROTOCOL_VERSION: u32 = 1;

/// The `event` member of a prepare context: always `prepare` (`started` and `finished` contexts
/// are separate types, see `hooks::events`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum HookEvent {
    /// Runs on the host before any container is created, to contribute env, files and mounts.
    Prepare,
}

/// The context every prepare hook receives on stdin, followed by EOF.
///
/// It carries no credentials, no resolved secret values and nothing from other hooks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[serde(expecting = "a prepare context object")]
#[schemars(title = "ags prepare hook input")]
pub struct HookContext {
    /// Protocol version: always the integer `1`, written exactly so.
    #[schemars(schema_with = "s::version_schema")]
    pub version: u32,
    /// The event being run; always `prepare`.
    pub event: HookEvent,
    /// Identifies this prepare phase (not the container name), e.g. `ags-<pid>-<nanos>`.
    #[schemars(length(min = 1))]
    pub launch_id: String,
    /// The Git repository root of the working directory, or the working directory itself
    /// outside Git. Absolute.
    #[schemars(schema_with = "s::absolute_path_schema")]
    pub project: PathBuf,
    /// The canonical working directory; also the hook's current directory. Absolute.
    #[schemars(schema_with = "s::absolute_path_schema")]
    pub workdir: PathBuf,
    /// The agent being launched (for example `pi`, `claude`, `shell`).
    #[schemars(length(min = 1))]
    pub agent: String,
}

/// Why a context document was refused (`ags hooks test --context FILE`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{event} context {path}: {rule}")]
pub struct ContextError {
    /// `prepare`, `started` or `finished`.
    pub event: config::HookEvent,
    /// JSON path of the problem, e.g. `$.workdir`.
    pub path: String,
    /// The broken rule.
    pub rule: ContextRule,
}

/// The rules a context document must follow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContextRule {
    /// Not valid strict JSON of the right shape.
    #[error(transparent)]
    Json(JsonErrorKind),
    /// Version other than 1.
    #[error("unsupported protocol version; this ags speaks version {PROTOCOL_VERSION}")]
    Version,
    /// A path that is not absolute.
    #[error("must be an absolute path")]
    NotAbsolute,
    /// An empty or control-character-bearing name.
    #[error("must be non-empty and free of control characters")]
    BadText,
    /// `exit_code` (finished context) outside 0..=255.
    #[error("must be an exit status between 0 and 255")]
    ExitCodeRange,
}

/// Decode a context of `event` strictly (no unknown fields, duplicate keys or trailing bytes).
pub(crate) fn decode_context<T: DeserializeOwned>(
    event: config::HookEvent,
    bytes: &[u8],
) -> Result<T, ContextError> {
    json::from_slice(bytes).map_err(|e: JsonError| ContextError {
        event,
        path: e.path.to_string(),
        rule: ContextRule::Json(e.kind),
    })
}

/// The checks every context shares: version 1, absolute `project` and `workdir`, and
/// non-empty names free of control characters.
pub(crate) fn check_context<const T: usize>(
    event: config::HookEvent,
    version: u32,
    paths: [&PathBuf; 2],
    texts: [(&str, &String); T],
) -> Result<(), ContextError> {
    let fail = |path: String, rule| Err(ContextError { event, path, rule });
    if version != PROTOCOL_VERSION {
        return fail("$.version".into(), ContextRule::Version);
    }
    for (name, p) in ["project", "workdir"].iter().zip(paths) {
        if !p.is_absolute() {
            return fail(format!("$.{name}"), ContextRule::NotAbsolute);
        }
    }
    for (name, t) in texts {
        if t.is_empty() || t.chars().any(char::is_control) {
            return fail(format!("$.{name}"), ContextRule::BadText);
        }
    }
    Ok(())
}

impl HookContext {
    /// A version-1 `prepare` context.
    pub fn new(launch_id: String, project: PathBuf, workdir: PathBuf, agent: String) -> Self {
        Self {
            version: PROTOCOL_VERSION,
            event: HookEvent::Prepare,
            launch_id,
            project,
            workdir,
            agent,
        }
    }

    /// Decode a context strictly, then check the version, the event, absolute paths and
    /// non-empty names.
    pub fn parse_strict(bytes: &[u8]) -> Result<Self, ContextError> {
        let event = config::HookEvent::Prepare;
        let ctx: Self = decode_context(event, bytes)?;
        let texts = [("launch_id", &ctx.launch_id), ("agent", &ctx.agent)];
        check_context(event, ctx.version, [&ctx.project, &ctx.workdir], texts)?;
        Ok(ctx)
    }
}

/// The JSON document a prepare hook prints on stdout. Every section is optional; a member
/// that is present must not be `null`.
///
/// Beyond what this schema expresses, the `ags` validator enforces byte bounds and overlaps
/// between destinations; host existence of mount sources is checked when the launch is built.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[serde(expecting = "a prepare response object")]
#[schemars(title = "ags prepare hook output")]
pub struct PrepareResponse {
    /// Protocol version: the integer `1`, written exactly so (`ags` refuses `1.0` and `1e0`,
    /// which JSON Schema cannot tell apart from `1`).
    #[schemars(schema_with = "s::version_schema")]
    pub version: u32,
    /// Environment contributions: name → literal string or `{"op": "op://…"}` reference.
    /// Literals and references share one keyspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "env_map_schema")]
    pub env: Option<EnvMap>,
    /// Generated read-only files. Later entries with the same destination win.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<FileWire>")]
    pub files: Option<Vec<FileWire>>,
    /// Host bind mounts, applied after `files`. Later entries with the same destination win.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<MountWire>")]
    pub mounts: Option<Vec<MountWire>>,
}

/// The `env` object: entries in document order. Keys are unique when decoded through the strict
/// pass (plain serde decoders would silently keep repeats).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvMap(pub Vec<(String, EnvValueWire)>);

impl Serialize for EnvMap {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}

impl<'de> Deserialize<'de> for EnvMap {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(EnvMapVisitor)
    }
}

struct EnvMapVisitor;

impl<'de> Visitor<'de> for EnvMapVisitor {
    type Value = EnvMap;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<EnvMap, A::Error> {
        let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0));
        while let Some(entry) = map.next_entry()? {
            entries.push(entry);
        }
        Ok(EnvMap(entries))
    }
}

/// One environment value on the wire: a literal string, or a 1Password reference object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum EnvValueWire {
    /// A literal value: single-line, NUL-free UTF-8.
    Literal(#[schemars(schema_with = "s::env_literal_schema")] String),
    /// A secret reference, resolved by `ags` at launch, never by the hook.
    Op(OpRefWire),
}

/// `{"op": "op://VAULT/ITEM/[SECTION/]FIELD"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(
    deny_unknown_fields,
    expecting = r#"an object {"op": "op://VAULT/ITEM/FIELD"}"#
)]
pub struct OpRefWire {
    /// The reference; interpolation and commands are not supported.
    #[schemars(schema_with = "s::op_ref_schema")]
    pub op: String,
}

impl<'de> Deserialize<'de> for EnvValueWire {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(EnvValueVisitor)
    }
}

struct EnvValueVisitor;

impl<'de> Visitor<'de> for EnvValueVisitor {
    type Value = EnvValueWire;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(r#"a string or an object {"op": "op://VAULT/ITEM/FIELD"}"#)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<EnvValueWire, E> {
        Ok(EnvValueWire::Literal(v.to_owned()))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<EnvValueWire, A::Error> {
        OpRefWire::deserialize(de::value::MapAccessDeserializer::new(map)).map(EnvValueWire::Op)
    }
}

/// A generated file: UTF-8 `content` staged privately and mounted read-only at `destination`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(
    deny_unknown_fields,
    expecting = "a file object with `destination` and `content`"
)]
pub struct FileWire {
    /// Normalized absolute container path strictly below /tmp, /workspace or /home/dev.
    #[schemars(schema_with = "s::destination_schema")]
    pub destination: String,
    /// The file's text. There is no executable mode and no secret expansion.
    pub content: String,
}

/// A bind mount of an existing host file or directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(
    deny_unknown_fields,
    expecting = "a mount object with `source`, `destination` and `mode`"
)]
pub struct MountWire {
    /// Absolute, normalized host path of an existing regular file or directory. `ags` does not
    /// create it.
    #[schemars(schema_with = "s::host_source_schema")]
    pub source: String,
    /// Normalized absolute container path strictly below /tmp, /workspace or /home/dev.
    #[schemars(schema_with = "s::destination_schema")]
    pub destination: String,
    /// Read-only or read-write.
    pub mode: MountMode,
}

/// Access mode of a hook bind mount (a closed set, so the wire and internal type are one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum MountMode {
    /// Read-only.
    Ro,
    /// Read-write.
    Rw,
}

impl MountMode {
    /// `ro` or `rw`.
    pub fn as_str(self) -> &'static str {
        match self {
            MountMode::Ro => "ro",
            MountMode::Rw => "rw",
        }
    }
}

/// The `env` map of a response: keys per the policy, values [`EnvValueWire`].
fn env_map_schema(generator: &mut schemars::generate::SchemaGenerator) -> schemars::Schema {
    s::env_map_schema(generator.subschema_for::<EnvValueWire>())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC_CONTEXT: &str = r#"{"version":1,"event":"prepare","launch_id":"ags-123-unique","project":"/work/project","workdir":"/work/project/subdir","agent":"pi"}"#;

    #[test]
    fn spec_context_round_trips() {
        let ctx = HookContext::parse_strict(SPEC_CONTEXT.as_bytes()).unwrap();
        assert_eq!(
            ctx,
            HookContext::new(
                "ags-123-unique".into(),
                "/work/project".into(),
                "/work/project/subdir".into(),
                "pi".into()
            )
        );
        assert_eq!(serde_json::to_string(&ctx).unwrap(), SPEC_CONTEXT);
    }

    #[test]
    fn context_rules() {
        let err = |doc: String| HookContext::parse_strict(doc.as_bytes()).unwrap_err().to_string();
        assert_eq!(
            err(SPEC_CONTEXT.replace("\"version\":1", "\"version\":2")),
            "prepare context $.version: unsupported protocol version; this ags speaks version 1"
        );
        assert_eq!(
            err(SPEC_CONTEXT.replace("\"prepare\"", "\"started\"")),
            "prepare context $.event: unsupported value; allowed: `prepare`"
        );
        assert_eq!(
            err(SPEC_CONTEXT.replace("\"/work/project/subdir\"", "\"subdir\"")),
            "prepare context $.workdir: must be an absolute path"
        );
        assert_eq!(
            err(SPEC_CONTEXT.replace("\"pi\"", "\"\"")),
            "prepare context $.agent: must be non-empty and free of control characters"
        );
        assert_eq!(
            err(SPEC_CONTEXT.replace("}", ",\"extra\":1}")),
            "prepare context $.extra: unknown field; allowed here: `version`, `event`, `launch_id`, \
             `project`, `workdir`, `agent`"
        );
        assert!(err(SPEC_CONTEXT.replace("}", ",\"agent\":\"x\"}")).contains("$.agent: duplicate"));
    }
}
