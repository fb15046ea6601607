//! Stage 2 (reporting): redacted summaries of contributions. Pure, no I/O.
//!
//! Input: one hook's [`Contribution`] (`ags hooks validate`, `ags hooks test`) or the merged
//! [`Resolved`] set (plan view). Output: a [`Summary`] with a text form (`Display`) and a JSON
//! form (`Serialize`).
//!
//! A summary shows env keys with their kind, file destinations with byte sizes, and mount
//! destinations with mode and host source, plus what lost to higher precedence. It never shows
//! env values, op references or file content. Mount sources are shown: they are host paths the
//! user must see to judge what a hook exposes, not secrets.

use std::fmt;

use serde::Serialize;

use super::protocol::MountMode;
use super::resolve::{Eliminated, EntryKind, Origin, Resolved};
use super::validate::{Contribution, EnvValue, GeneratedFile, HookMount, ResponseError, parse_response};

/// A redacted view of contributions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Env keys.
    pub env: Vec<EnvLine>,
    /// Generated files.
    pub files: Vec<FileLine>,
    /// Bind mounts.
    pub mounts: Vec<MountLine>,
    /// Entries that lost to higher precedence (resolved summaries only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub eliminated: Vec<Eliminated>,
}

/// One env key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EnvLine {
    /// The key.
    pub key: String,
    /// `literal` or `op_reference`.
    pub kind: EntryKind,
    /// Who set it (resolved summaries only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
}

/// One generated file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileLine {
    /// Container destination.
    pub destination: String,
    /// Content size in bytes.
    pub bytes: usize,
    /// Who contributed it (resolved summaries only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
}

/// One bind mount.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MountLine {
    /// Container destination.
    pub destination: String,
    /// Host source path.
    pub source: String,
    /// `ro` or `rw`.
    pub mode: MountMode,
    /// Who contributed it (resolved summaries only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
}

fn env_line(key: &str, value: &EnvValue, origin: Option<&Origin>) -> EnvLine {
    let kind = match value {
        EnvValue::Literal(_) => EntryKind::Literal,
        EnvValue::Op(_) => EntryKind::OpReference,
    };
    EnvLine {
        key: key.to_owned(),
        kind,
        origin: origin.cloned(),
    }
}

fn file_line(f: &GeneratedFile, origin: Option<&Origin>) -> FileLine {
    FileLine {
        destination: f.destination.as_str().to_owned(),
        bytes: f.content.len(),
        origin: origin.cloned(),
    }
}

fn mount_line(m: &HookMount, origin: Option<&Origin>) -> MountLine {
    MountLine {
        destination: m.destination.as_str().to_owned(),
        source: m.source.as_str().to_owned(),
        mode: m.mode,
        origin: origin.cloned(),
    }
}

/// Summarize one hook's contribution.
pub fn summarize_contribution(c: &Contribution) -> Summary {
    Summary {
        env: c.env.iter().map(|(k, v)| env_line(k.as_str(), v, None)).collect(),
        files: c.files.iter().map(|f| file_line(f, None)).collect(),
        mounts: c.mounts.iter().map(|m| mount_line(m, None)).collect(),
        eliminated: Vec::new(),
    }
}

/// `ags hooks validate`: decode and validate a response (static rules only; mount sources are
/// checked at materialization) and summarize it. The caller reads at most
/// `MAX_DOCUMENT_BYTES + 1` bytes so an oversized file is refused without reading it whole.
pub fn validate_and_summarize(bytes: &[u8]) -> Result<Summary, ResponseError> {
    parse_response(bytes).map(|c| summarize_contribution(&c))
}

/// Summarize the merged result, with origins and eliminated entries.
pub fn summarize_resolved(r: &Resolved) -> Summary {
    Summary {
        env: r
            .env
            .iter()
            .map(|(k, (v, o))| env_line(k.as_str(), v, Some(o)))
            .collect(),
        files: r.files.iter().map(|(f, o)| file_line(f, Some(o))).collect(),
        mounts: r.mounts.iter().map(|(m, o)| mount_line(m, Some(o))).collect(),
        eliminated: r.eliminated.clone(),
    }
}

fn kind_text(kind: EntryKind) -> &'static str {
    match kind {
        EntryKind::Literal => "literal",
        EntryKind::OpReference => "op reference",
        EntryKind::File => "file",
        EntryKind::Mount => "mount",
    }
}

fn from(origin: &Option<Origin>) -> String {
    origin.as_ref().map(|o| format!("  [{o}]")).unwrap_or_default()
}

fn esc(s: &str) -> String {
    super::policy::display_escaped(s)
}

fn heading(f: &mut fmt::Formatter<'_>, name: &str, n: usize) -> fmt::Result {
    if n == 0 {
        writeln!(f, "{name}: none")
    } else {
        writeln!(f, "{name} ({n}):")
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        heading(f, "env", self.env.len())?;
        for e in &self.env {
            writeln!(f, "  {}  {}{}", e.key, kind_text(e.kind), from(&e.origin))?;
        }
        heading(f, "files", self.files.len())?;
        for l in &self.files {
            writeln!(
                f,
                "  {}  {} bytes{}",
                esc(&l.destination),
                l.bytes,
                from(&l.origin)
            )?;
        }
        heading(f, "mounts", self.mounts.len())?;
        for m in &self.mounts {
            let (dest, src, mode) = (esc(&m.destination), esc(&m.source), m.mode.as_str());
            writeln!(f, "  {dest}  {mode}  from host {src}{}", from(&m.origin))?;
        }
        if !self.eliminated.is_empty() {
            writeln!(f, "overridden ({}):", self.eliminated.len())?;
        }
        for e in &self.eliminated {
            let (target, kind) = (esc(&e.target), kind_text(e.kind));
            writeln!(f, "  {target}  {kind} from {} replaced by {}", e.loser, e.winner)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::hooks::resolve::{HookOutput, LaunchOverrides, resolve};

    const SPEC: &str = include_str!("../../tests/fixtures/responses/valid-spec-example.json");

    #[test]
    fn contribution_text_and_json() {
        let s = validate_and_summarize(SPEC.as_bytes()).unwrap();
        assert_eq!(
            s.to_string(),
            "env (2):\n  SERVICE_URL  literal\n  SERVICE_TOKEN  op reference\n\
             files (1):\n  /tmp/development-client.json  15 bytes\n\
             mounts (1):\n  /workspace/service-data  ro  from host /absolute/host/generated-data\n"
        );
        assert_eq!(
            serde_json::to_value(&s).unwrap(),
            serde_json::json!({
                "env": [{"key": "SERVICE_URL", "kind": "literal"}, {"key": "SERVICE_TOKEN", "kind": "op_reference"}],
                "files": [{"destination": "/tmp/development-client.json", "bytes": 15}],
                "mounts": [{"destination": "/workspace/service-data", "source": "/absolute/host/generated-data", "mode": "ro"}]
            })
        );
    }

    #[test]
    fn resolved_summary_shows_origins_and_overrides() {
        let layer = |origin, doc: &str| HookOutput {
            origin,
            contribution: parse_response(doc.as_bytes()).unwrap(),
        };
        let g = Origin::GlobalHook {
            name: "g".into(),
            index: 0,
        };
        let overrides = LaunchOverrides {
            cli_env: BTreeMap::from([("T".to_owned(), "x".to_owned())]),
            ..LaunchOverrides::default()
        };
        let doc = r#"{"version":1,"env":{"T":{"op":"op://v/i/f"},"U":"u"}}"#;
        let s = summarize_resolved(&resolve(vec![layer(g, doc)], &overrides).unwrap());
        assert_eq!(
            s.to_string(),
            "env (1):\n  U  literal  [global hook `g` (#0)]\nfiles: none\nmounts: none\n\
             overridden (1):\n  T  op reference from global hook `g` (#0) replaced by the command line\n"
        );
        assert_eq!(
            serde_json::to_value(&s).unwrap()["eliminated"][0]["winner"],
            serde_json::json!({"layer": "cli"})
        );
    }

    #[test]
    fn summaries_never_contain_values() {
        let doc = r#"{"version":1,"env":{"A":"s3cr3t-SENTINEL","B":{"op":"op://v/s3cr3t-SENTINEL/f"}},
            "files":[{"destination":"/tmp/f","content":"s3cr3t-SENTINEL"}]}"#;
        let s = summarize_contribution(&parse_response(doc.as_bytes()).unwrap());
        assert!(!s.to_string().contains("SENTINEL"));
        assert!(!serde_json::to_value(&s).unwrap().to_string().contains("SENTINEL"));
    }
}
