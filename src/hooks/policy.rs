//! Stage 2 (hook responses): the static contribution rules, as validated newtypes. Pure, no I/O.
//!
//! Every value a hook contributes passes through one of these types: [`EnvKey`],
//! [`EnvLiteral`], [`OpRef`], [`Destination`], [`HostSource`]. Each is built only by `TryFrom`,
//! so holding one proves the rule held. The protected lists are public constants so the
//! schema generator, documentation and tests use the same data as the validator.
//!
//! Error messages name the rule and what to do; they never repeat the rejected value (env values
//! and op references may be secrets). Contextual checks (does a mount source exist, does it
//! expose AGS storage) live in [`super::mount_source`].

use std::cmp::Ordering;
use std::fmt;

#[path = "env_keys.rs"]
mod env_keys;
pub use env_keys::*;

/// Container directories below which hook destinations may live (never the directory itself).
pub const DESTINATION_ROOTS: &[&str] = &["/tmp", "/workspace", "/home/dev"];

/// The container home and the entries in it protected from hook destinations come from the agent
/// table ([`crate::agents`]): each agent's state directories, and the other credential, settings
/// and cache entries listed there. A destination may not equal, lie inside or contain any of them.
/// (Every hidden entry is refused as well; the list is what matters should that rule ever be
/// relaxed.)
pub use crate::agents::{CONTAINER_HOME, PROTECTED_HOME_ENTRIES};

/// First components under `/tmp` starting with this are AGS runtime resources.
pub const RESERVED_TMP_PREFIX: &str = "ags-";

/// Longest destination or mount source, in bytes (Linux `PATH_MAX` minus the NUL).
pub const MAX_PATH_BYTES: usize = 4095;

/// Longest single path component, in bytes (Linux `NAME_MAX`).
pub const MAX_COMPONENT_BYTES: usize = 255;

/// Characters a 1Password reference segment may use besides ASCII letters and digits.
pub const OP_SEGMENT_PUNCTUATION: &str = " _-.%";

/// Render a path or key for a message: control characters (newlines and tabs included) and
/// bidirectional overrides escaped, nothing else changed.
pub fn display_escaped(s: &str) -> String {
    crate::text::escape_line(s)
}

macro_rules! string_newtype {
    ($(#[$doc:meta])* $name:ident, $err:ty, $check:path) => {
        $(#[$doc])*
        pub struct $name(String);

        impl $name {
            /// The validated text.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// Like `try_from`, but hands the rejected text back (so the caller can locate it
            /// without copying every accepted value first).
            pub fn try_new(s: String) -> Result<Self, ($err, String)> {
                match $check(&s) {
                    Ok(()) => Ok(Self(s)),
                    Err(e) => Err((e, s)),
                }
            }
        }

        impl TryFrom<String> for $name {
            type Error = $err;

            fn try_from(s: String) -> Result<Self, $err> {
                Self::try_new(s).map_err(|(e, _)| e)
            }
        }

        impl TryFrom<&str> for $name {
            type Error = $err;

            fn try_from(s: &str) -> Result<Self, $err> {
                $check(s)?;
                Ok(Self(s.to_owned()))
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
    };
}

string_newtype!(
    /// An environment variable name a hook may set.
    #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
    #[serde(transparent)]
    EnvKey, EnvKeyError, check_env_key
);
string_newtype!(
    /// A literal environment value: single-line, NUL-free UTF-8. It may be a secret, so it is
    /// neither `Display` nor `Serialize`, and `Debug` shows only its length; read it with
    /// [`EnvLiteral::as_str`] where it is actually delivered.
    #[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
    EnvLiteral, EnvLiteralError, check_env_literal
);
string_newtype!(
    /// A 1Password secret reference `op://VAULT/ITEM/[SECTION/]FIELD`. A reference reveals where
    /// a secret lives, so like [`EnvLiteral`] it is redacted in `Debug` and not `Display`.
    #[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
    OpRef, OpRefError, check_op_ref
);
string_newtype!(
    /// A container path a hook may place a generated file or a bind mount at.
    #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
    #[serde(transparent)]
    Destination, DestinationError, check_destination
);
string_newtype!(
    /// A host path a hook asks to bind-mount (static rules only; see `mount_source` for the
    /// existence and protected-storage checks).
    #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
    #[serde(transparent)]
    HostSource, HostSourceError, check_host_source
);

impl fmt::Debug for EnvLiteral {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EnvLiteral(<redacted, {} bytes>)", self.0.len())
    }
}

impl fmt::Debug for OpRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("OpRef(<redacted>)")
    }
}

impl fmt::Display for EnvKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Paths are shown escaped and read as paths.
macro_rules! path_newtype {
    ($($name:ident),*) => {$(
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&display_escaped(&self.0))
            }
        }

        impl $name {
            /// The validated text as a path.
            pub fn as_path(&self) -> &std::path::Path {
                std::path::Path::new(&self.0)
            }
        }
    )*};
}
path_newtype!(Destination, HostSource);

/// Why a literal cannot be an environment value (the value itself is never shown).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvLiteralError {
    /// Contains a forbidden character.
    #[error(
        "literal values must be a single line without NUL; this one contains {what} (value not shown), \
         remove it or deliver multi-line data as a generated file"
    )]
    Forbidden {
        /// Which character.
        what: &'static str,
    },
}

fn check_env_literal(s: &str) -> Result<(), EnvLiteralError> {
    match forbidden_char(s, false) {
        Some(what) => Err(EnvLiteralError::Forbidden { what }),
        None => Ok(()),
    }
}

/// The first NUL / line feed / carriage return (and colon, if asked) in `s`, named.
fn forbidden_char(s: &str, colon: bool) -> Option<&'static str> {
    s.bytes().find_map(|b| match b {
        0 => Some("a NUL byte"),
        b'\n' => Some("a line feed"),
        b'\r' => Some("a carriage return"),
        b':' if colon => Some("a colon"),
        _ => None,
    })
}

/// Why a string is not a usable 1Password reference (the reference itself is never shown).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpRefError {
    /// Not `op://VAULT/ITEM/[SECTION/]FIELD` with allowed characters.
    #[error(
        "not a 1Password reference (value not shown): use op://VAULT/ITEM/FIELD or \
         op://VAULT/ITEM/SECTION/FIELD, each segment non-empty and made of ASCII letters, digits, \
         space, `_`, `-`, `.` or `%`"
    )]
    Syntax,
}

fn check_op_ref(s: &str) -> Result<(), OpRefError> {
    let rest = s.strip_prefix("op://").ok_or(OpRefError::Syntax)?;
    let segs: Vec<&str> = rest.split('/').collect();
    let seg_ok = |seg: &&str| {
        !seg.is_empty()
            && seg
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || OP_SEGMENT_PUNCTUATION.as_bytes().contains(&b))
    };
    if (3..=4).contains(&segs.len()) && segs.iter().all(seg_ok) {
        Ok(())
    } else {
        Err(OpRefError::Syntax)
    }
}

/// Why a path is not normalized, absolute and short enough (shared by destinations and sources).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathSyntaxError {
    /// Does not start with `/`.
    #[error("must be an absolute path starting with `/`")]
    NotAbsolute,
    /// Contains NUL, a line break or a colon.
    #[error("must not contain NUL, line breaks or `:`; this one contains {what}")]
    Forbidden {
        /// Which character.
        what: &'static str,
    },
    /// Too long overall or in one component.
    #[error("is too long (at most {MAX_PATH_BYTES} bytes, {MAX_COMPONENT_BYTES} per component)")]
    TooLong,
    /// Has `//`, a trailing `/`, or a `.`/`..` segment.
    #[error("must be normalized: {problem}; write the path without it")]
    NotNormalized {
        /// Which normalization rule failed.
        problem: &'static str,
    },
}

/// Check the shared static path rules; return the text after the leading `/`.
fn check_path(s: &str) -> Result<&str, PathSyntaxError> {
    let rest = s.strip_prefix('/').ok_or(PathSyntaxError::NotAbsolute)?;
    if let Some(what) = forbidden_char(s, true) {
        return Err(PathSyntaxError::Forbidden { what });
    }
    if s.len() > MAX_PATH_BYTES {
        return Err(PathSyntaxError::TooLong);
    }
    if rest.is_empty() {
        return Ok(rest);
    }
    let bytes = rest.as_bytes();
    let mut start = 0;
    // One byte pass (deep paths have thousands of segments; `split` costs more per segment).
    for end in (0..=bytes.len()).filter(|&i| i == bytes.len() || bytes[i] == b'/') {
        let problem = match &bytes[start..end] {
            b"" if end == bytes.len() => "a trailing `/`",
            b"" => "an empty segment (`//`)",
            b"." => "a `.` segment",
            b".." => "a `..` segment",
            seg if seg.len() > MAX_COMPONENT_BYTES => return Err(PathSyntaxError::TooLong),
            _ => {
                start = end + 1;
                continue;
            }
        };
        return Err(PathSyntaxError::NotNormalized { problem });
    }
    Ok(rest)
}

/// Why a path cannot be a hook destination.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DestinationError {
    /// Static path rules.
    #[error("destination {0}")]
    Syntax(#[from] PathSyntaxError),
    /// Not strictly below an allowed root.
    #[error("destination must be strictly below /tmp, /workspace or /home/dev; choose a data path there")]
    OutsideRoots,
    /// Under `/tmp/ags-*`.
    #[error("destinations under /tmp/ags-* are AGS runtime resources; choose another /tmp name")]
    AgsRuntime,
    /// Equal to, inside or an ancestor of an agent configuration path.
    #[error("destination overlaps the protected agent configuration path {protected}; choose a data path")]
    AgentConfig {
        /// The protected path.
        protected: String,
    },
    /// A hidden entry directly in the home directory.
    #[error("hidden entries directly under /home/dev are agent/home settings; choose a non-hidden path")]
    HiddenHome,
}

fn check_destination(s: &str) -> Result<(), DestinationError> {
    let mut segs = check_path(s)?.split('/');
    let top = segs.next();
    let under_home = match top {
        Some("tmp" | "workspace") => false,
        Some("home") if segs.next() == Some("dev") => true,
        _ => return Err(DestinationError::OutsideRoots),
    };
    let Some(first) = segs.next() else {
        return Err(DestinationError::OutsideRoots);
    };
    if top == Some("tmp") && first.starts_with(RESERVED_TMP_PREFIX) {
        return Err(DestinationError::AgsRuntime);
    }
    if !under_home {
        return Ok(());
    }
    if let Some(entry) = PROTECTED_HOME_ENTRIES.iter().find(|e| **e == first) {
        return Err(DestinationError::AgentConfig {
            protected: format!("{CONTAINER_HOME}/{entry}"),
        });
    }
    if first.starts_with('.') {
        return Err(DestinationError::HiddenHome);
    }
    Ok(())
}

/// Why a path cannot be a bind-mount source.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostSourceError {
    /// Static path rules.
    #[error("mount source {0}")]
    Syntax(#[from] PathSyntaxError),
}

fn check_host_source(s: &str) -> Result<(), HostSourceError> {
    check_path(s)?;
    Ok(())
}

/// Order normalized paths component by component (`/a` < `/a/b` < `/a-b`): byte order with `/`
/// ranked below every other byte. In this order every descendant of a path directly follows it.
pub fn component_cmp(a: &str, b: &str) -> Ordering {
    let rank = |c: u8| if c == b'/' { 0 } else { c };
    let common = common_prefix(a.as_bytes(), b.as_bytes());
    match (a.as_bytes().get(common), b.as_bytes().get(common)) {
        (Some(x), Some(y)) => rank(*x).cmp(&rank(*y)),
        (x, y) => x.is_some().cmp(&y.is_some()),
    }
}

/// Length of the common prefix, compared 16 bytes at a time (deep paths share long prefixes).
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 16 <= n && a[i..i + 16] == b[i..i + 16] {
        i += 16;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

/// Whether normalized path `inner` lies strictly inside `outer`.
pub fn is_strictly_inside(inner: &str, outer: &str) -> bool {
    let base = outer.strip_suffix('/').unwrap_or(outer);
    inner.len() > base.len() + 1 && inner.starts_with(base) && inner.as_bytes()[base.len()] == b'/'
}

/// Given distinct normalized paths sorted by [`component_cmp`], find a pair
/// `(ancestor, descendant)` of indices, nearest ancestor first, for which `counts` holds.
///
/// Linear after sorting whatever the depth: a stack keeps the chain of ancestors of the current
/// path, so thousands of 4 KiB-deep destinations cost no more than flat ones.
pub fn find_nesting(sorted: &[&str], counts: impl Fn(usize, usize) -> bool) -> Option<(usize, usize)> {
    let mut stack: Vec<usize> = Vec::new();
    for (i, path) in sorted.iter().enumerate() {
        while stack
            .last()
            .is_some_and(|&top| !is_strictly_inside(path, sorted[top]))
        {
            stack.pop();
        }
        if let Some(&ancestor) = stack.iter().rev().find(|&&a| counts(a, i)) {
            return Some((ancestor, i));
        }
        stack.push(i);
    }
    None
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
