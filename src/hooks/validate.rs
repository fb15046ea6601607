//! Stage 2 (hook responses): bytes → validated [`Contribution`]. Pure, no I/O.
//!
//! Input: the stdout bytes of one hook (or a file given to `ags hooks validate`). Output: the
//! hook's effective contribution in internal types that cannot hold invalid data, or a
//! [`ResponseError`] naming the JSON path and the rule.
//!
//! Order of checks: strict JSON ([`crate::json::strict`]: size, UTF-8, one document, unique
//! keys), typed decoding ([`crate::json::de`]: shape, unknown fields), then the rules of
//! [`super::policy`] per value, then the rules between entries of the one response: exact
//! destination repeats resolve to the later entry (mounts count as later than files), and
//! distinct destinations nested in one another are refused.
//!
//! Byte bounds: the whole response is capped at 1 MiB ([`MAX_DOCUMENT_BYTES`]), which bounds the
//! total of all file contents; a single file's content is also capped at [`MAX_FILE_BYTES`] so
//! the bound stays explicit should the stdout cap change.
//!
//! Errors never contain env values, op references or file content.

use std::fmt;

use super::policy::{
    Destination, DestinationError, EnvKey, EnvKeyError, EnvLiteral, EnvLiteralError, HostSource,
    HostSourceError, MAX_ENV_ENTRY_BYTES, OpRef, OpRefError, component_cmp, display_escaped, find_nesting,
};
use super::protocol::{
    EnvValueWire, FileWire, MountMode, MountWire, OpRefWire, PROTOCOL_VERSION, PrepareResponse,
};
use crate::json;
use crate::json::strict::{JsonError, JsonErrorKind, JsonPath, MAX_DOCUMENT_BYTES};

/// Largest content of one generated file, in bytes.
pub const MAX_FILE_BYTES: usize = MAX_DOCUMENT_BYTES;

/// One environment value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvValue {
    /// Delivered as is.
    Literal(EnvLiteral),
    /// Resolved by `ags` through `op inject` at the final launch handoff.
    Op(OpRef),
}

impl EnvValue {
    /// `literal` or `op reference`, for summaries.
    pub fn kind_name(&self) -> &'static str {
        match self {
            EnvValue::Literal(_) => "literal",
            EnvValue::Op(_) => "op reference",
        }
    }
}

/// A generated read-only file. `Debug` shows the size, not the content.
#[derive(Clone, PartialEq, Eq)]
pub struct GeneratedFile {
    /// Where it is mounted in the container.
    pub destination: Destination,
    /// Its UTF-8 text.
    pub content: String,
}

impl fmt::Debug for GeneratedFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GeneratedFile")
            .field("destination", &self.destination)
            .field("content", &format_args!("<{} bytes>", self.content.len()))
            .finish()
    }
}

/// A host bind mount requested by a hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookMount {
    /// Host path (statically valid; see `mount_source::check_mount_source` before use).
    pub source: HostSource,
    /// Container path.
    pub destination: Destination,
    /// Access mode.
    pub mode: MountMode,
}

/// What one hook contributes, after its own within-response precedence.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Contribution {
    /// Env entries in response order (keys are unique).
    pub env: Vec<(EnvKey, EnvValue)>,
    /// Surviving generated files, in response order.
    pub files: Vec<GeneratedFile>,
    /// Surviving mounts, in response order.
    pub mounts: Vec<HookMount>,
}

/// A refused response: where and which rule. Never contains a secret value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {rule}")]
pub struct ResponseError {
    /// JSON path inside the response, e.g. `$.mounts[2].destination`.
    pub path: String,
    /// The broken rule.
    pub rule: Rule,
}

/// The rules a prepare response must follow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rule {
    /// Not strict JSON of the protocol's shape.
    #[error(transparent)]
    Json(#[from] JsonErrorKind),
    /// Stdout has text before the JSON response (at a successful exit).
    #[error(
        "stdout starts with non-JSON text ({bytes} bytes before the first `{{`, starting \"{start}\"); \
         print only the JSON response on stdout and diagnostics on stderr"
    )]
    TextBeforeJson {
        /// Bytes before the first `{`.
        bytes: usize,
        /// Their escaped start (see [`super::leading_text`]).
        start: String,
    },
    /// `version` is not 1.
    #[error("unsupported protocol version; this ags speaks version {PROTOCOL_VERSION}, print \"version\": 1")]
    Version,
    /// Bad env key.
    #[error(transparent)]
    EnvKey(#[from] EnvKeyError),
    /// Bad literal value.
    #[error(transparent)]
    EnvLiteral(#[from] EnvLiteralError),
    /// Bad op reference.
    #[error(transparent)]
    OpRef(#[from] OpRefError),
    /// `KEY=VALUE` is longer than Linux accepts for one environment string.
    #[error(
        "`{key}=VALUE` is {size} bytes, over the {limit}-byte limit of one environment entry \
         (Linux refuses to start a program with a longer one; value not shown); deliver large \
         data as a generated file"
    )]
    EnvTooLarge {
        /// The key.
        key: String,
        /// Bytes of `KEY=VALUE`.
        size: usize,
        /// [`MAX_ENV_ENTRY_BYTES`].
        limit: usize,
    },
    /// Bad destination.
    #[error(transparent)]
    Destination(#[from] DestinationError),
    /// Bad mount source.
    #[error(transparent)]
    Source(#[from] HostSourceError),
    /// A file's content is too large.
    #[error("file content is {size} bytes, over the {limit}-byte limit; mount a host file instead")]
    FileTooLarge {
        /// Actual size.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// Two entries of this response nest one destination inside the other.
    #[error(
        "destination {inner} is nested inside destination {outer} of {outer_path}; \
         give each file and mount an independent (non-nested) destination"
    )]
    Nested {
        /// The descendant destination (this entry's).
        inner: String,
        /// The ancestor destination.
        outer: String,
        /// JSON path of the ancestor entry.
        outer_path: String,
    },
}

impl From<JsonError> for ResponseError {
    fn from(e: JsonError) -> Self {
        Self {
            path: e.path.to_string(),
            rule: Rule::Json(e.kind),
        }
    }
}

/// Decode and validate one hook response.
pub fn parse_response(bytes: &[u8]) -> Result<Contribution, ResponseError> {
    let wire: PrepareResponse = json::from_slice(bytes).map_err(|e| match e.kind {
        JsonErrorKind::Syntax { .. } => match super::leading_text::find(bytes) {
            Some(t) => fail(
                JsonPath::root(),
                Rule::TextBeforeJson {
                    bytes: t.bytes,
                    start: t.start,
                },
            ),
            None => e.into(),
        },
        _ => e.into(),
    })?;
    validate(wire)
}

/// Validate an already decoded response.
///
/// Wire types are taken apart field by field (no `..`): a member added to the protocol does
/// not compile until it is carried on or refused here.
pub fn validate(wire: PrepareResponse) -> Result<Contribution, ResponseError> {
    let PrepareResponse {
        version,
        env,
        files,
        mounts,
    } = wire;
    if version != PROTOCOL_VERSION {
        return Err(fail(JsonPath::root().key("version"), Rule::Version));
    }
    let env = env
        .unwrap_or_default()
        .0
        .into_iter()
        .map(|(k, v)| env_entry(k, v));
    let env = env.collect::<Result<Vec<_>, _>>()?;
    let files = files.unwrap_or_default().into_iter().enumerate();
    let files = files
        .map(|(i, f)| file_entry(i, f))
        .collect::<Result<Vec<_>, _>>()?;
    let mounts = mounts.unwrap_or_default().into_iter().enumerate();
    let mounts = mounts
        .map(|(i, m)| mount_entry(i, m))
        .collect::<Result<Vec<_>, _>>()?;
    let (files, mounts) = apply_within_response(files, mounts)?;
    Ok(Contribution { env, files, mounts })
}

fn fail(path: JsonPath, rule: impl Into<Rule>) -> ResponseError {
    ResponseError {
        path: path.to_string(),
        rule: rule.into(),
    }
}

/// The two entry arrays of a response. Paths are only built when an error is reported.
#[derive(Debug, Clone, Copy)]
enum Section {
    Files,
    Mounts,
}

impl Section {
    fn path(self, index: usize, field: &str) -> JsonPath {
        let name = match self {
            Section::Files => "files",
            Section::Mounts => "mounts",
        };
        JsonPath::root().key(name).index(index).key(field)
    }
}

fn env_path(key: &str) -> JsonPath {
    JsonPath::root().key("env").key(key)
}

fn env_entry(key: String, value: EnvValueWire) -> Result<(EnvKey, EnvValue), ResponseError> {
    let key = EnvKey::try_new(key).map_err(|(e, key)| fail(env_path(&key), e))?;
    let value = match value {
        EnvValueWire::Literal(s) if key.as_str().len() + 1 + s.len() > MAX_ENV_ENTRY_BYTES => {
            let rule = Rule::EnvTooLarge {
                key: key.to_string(),
                size: key.as_str().len() + 1 + s.len(),
                limit: MAX_ENV_ENTRY_BYTES,
            };
            return Err(fail(env_path(key.as_str()), rule));
        }
        EnvValueWire::Literal(s) => EnvLiteral::try_from(s)
            .map(EnvValue::Literal)
            .map_err(|e| fail(env_path(key.as_str()), e))?,
        EnvValueWire::Op(OpRefWire { op }) => OpRef::try_from(op)
            .map(EnvValue::Op)
            .map_err(|e| fail(env_path(key.as_str()).key("op"), e))?,
    };
    Ok((key, value))
}

fn file_entry(i: usize, f: FileWire) -> Result<GeneratedFile, ResponseError> {
    let FileWire {
        destination: dest,
        content,
    } = f;
    let destination = destination(Section::Files, i, dest)?;
    if content.len() > MAX_FILE_BYTES {
        let rule = Rule::FileTooLarge {
            size: content.len(),
            limit: MAX_FILE_BYTES,
        };
        return Err(fail(Section::Files.path(i, "content"), rule));
    }
    Ok(GeneratedFile { destination, content })
}

fn mount_entry(i: usize, m: MountWire) -> Result<HookMount, ResponseError> {
    let MountWire {
        source,
        destination: dest,
        mode,
    } = m;
    let source = HostSource::try_from(normalize_source(source))
        .map_err(|e| fail(Section::Mounts.path(i, "source"), e))?;
    Ok(HookMount {
        source,
        destination: destination(Section::Mounts, i, dest)?,
        mode,
    })
}

/// Write an absolute mount source without empty and `.` segments (`/data/` → `/data`,
/// `/a//b` → `/a/b`, `/a/./b` → `/a/b`): the same path to the kernel, so nothing is lost, and the
/// canonical path is what gets checked anyway. `..` is kept (and then refused), because what it
/// names depends on symlinks; relative text is kept (and refused).
pub fn normalize_source(s: String) -> String {
    let redundant = |seg: &str| seg.is_empty() || seg == ".";
    let Some(rest) = s.strip_prefix('/') else {
        return s;
    };
    if !rest.split('/').any(redundant) || rest.is_empty() {
        return s;
    }
    let kept: Vec<&str> = rest.split('/').filter(|seg| !redundant(seg)).collect();
    format!("/{}", kept.join("/"))
}

fn destination(section: Section, i: usize, s: String) -> Result<Destination, ResponseError> {
    Destination::try_from(s).map_err(|e| fail(section.path(i, "destination"), e))
}

/// Drop entries replaced by a later one at the same destination (mounts come after files), then
/// refuse nested destinations among the survivors.
fn apply_within_response(
    files: Vec<GeneratedFile>,
    mounts: Vec<HookMount>,
) -> Result<(Vec<GeneratedFile>, Vec<HookMount>), ResponseError> {
    let keep = surviving_entries(&files, &mounts)?;
    let (keep_files, keep_mounts) = keep.split_at(files.len());
    let files = files.into_iter().zip(keep_files).filter(|(_, k)| **k);
    let mounts = mounts.into_iter().zip(keep_mounts).filter(|(_, k)| **k);
    Ok((files.map(|(f, _)| f).collect(), mounts.map(|(m, _)| m).collect()))
}

/// For files then mounts, whether each entry survives; an error if two survivors nest.
///
/// One sort in component order groups equal destinations (the last entry of a group wins) and
/// puts every descendant right after its ancestors for [`find_nesting`].
fn surviving_entries(files: &[GeneratedFile], mounts: &[HookMount]) -> Result<Vec<bool>, ResponseError> {
    let order: Vec<(&str, Section, usize)> = files
        .iter()
        .enumerate()
        .map(|(i, f)| (f.destination.as_str(), Section::Files, i))
        .chain(
            mounts
                .iter()
                .enumerate()
                .map(|(i, m)| (m.destination.as_str(), Section::Mounts, i)),
        )
        .collect();
    let mut sorted: Vec<usize> = (0..order.len()).collect();
    sorted.sort_by(|&a, &b| component_cmp(order[a].0, order[b].0).then(a.cmp(&b)));
    let is_last = |pos: usize| {
        sorted
            .get(pos + 1)
            .is_none_or(|&next| order[next].0 != order[sorted[pos]].0)
    };
    let winners: Vec<usize> = (0..sorted.len())
        .filter(|&pos| is_last(pos))
        .map(|pos| sorted[pos])
        .collect();
    let paths: Vec<&str> = winners.iter().map(|&w| order[w].0).collect();
    if let Some((outer, inner)) = find_nesting(&paths, |_, _| true) {
        let ((_, in_section, in_index), (_, out_section, out_index)) =
            (order[winners[inner]], order[winners[outer]]);
        let rule = Rule::Nested {
            inner: display_escaped(paths[inner]),
            outer: display_escaped(paths[outer]),
            outer_path: out_section.path(out_index, "destination").to_string(),
        };
        return Err(fail(in_section.path(in_index, "destination"), rule));
    }
    let mut keep = vec![false; order.len()];
    winners.into_iter().for_each(|w| keep[w] = true);
    Ok(keep)
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
