//! Stage 2 (lifecycle protocol): the wire types of the `started` and `finished` events. Pure, no
//! I/O.
//!
//! A lifecycle hook receives [`StartedContext`] or [`FinishedContext`] on stdin, then EOF, and
//! prints exactly `{"version":1}` ([`LifecycleResponse`]): these events observe a launch, they
//! contribute nothing to it. Both contexts extend the prepare context (same first six members)
//! with the container; `finished` adds how the agent ended. Members whose value is unknown are
//! omitted, never `null`. The JSON Schemas in `docs/schemas/` are generated from these types
//! (see [`crate::hooks::schema`]).
//!
//! ```json
//! {"version":1,"event":"finished","launch_id":"ags-123-unique","project":"/work/project",
//!  "workdir":"/work/project","agent":"shell","container_id":"0123…","container_name":"ags-project-1a2b3c4d",
//!  "exit_code":0,"duration_ms":5021,"recovered":false}
//! ```

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::config::HookEvent;
use crate::hooks::protocol::{ContextError, ContextRule, PROTOCOL_VERSION, check_context, decode_context};
use crate::hooks::schema_fields as s;
use crate::hooks::validate::{ResponseError, Rule};
use crate::json;
use crate::json::strict::JsonPath;

/// The `event` member of a started context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum StartedEvent {
    /// The agent's container has started.
    Started,
}

/// The `event` member of a finished context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FinishedEvent {
    /// The agent has ended.
    Finished,
}

/// What every lifecycle context says about the launch and its container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchFacts {
    /// The launch id (also the value of the container's `io.ags.launch` annotation).
    pub launch_id: String,
    /// Project root, absolute.
    pub project: PathBuf,
    /// Canonical working directory, absolute.
    pub workdir: PathBuf,
    /// Agent name.
    pub agent: String,
    /// Full container id.
    pub container_id: String,
    /// Container name.
    pub container_name: String,
}

/// The context every `started` hook receives on stdin, followed by EOF. No credentials, secret
/// values or hook results are included.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[serde(expecting = "a started context object")]
#[schemars(title = "ags started hook input")]
pub struct StartedContext {
    /// Protocol version: always the integer `1`, written exactly so.
    #[schemars(schema_with = "s::version_schema")]
    pub version: u32,
    /// Always `started`.
    pub event: StartedEvent,
    /// The launch id, as in the prepare context and the container's `io.ags.launch` annotation.
    #[schemars(length(min = 1))]
    pub launch_id: String,
    /// The Git repository root of the working directory (or the working directory). Absolute.
    #[schemars(schema_with = "s::absolute_path_schema")]
    pub project: PathBuf,
    /// The canonical working directory; also the hook's current directory. Absolute.
    #[schemars(schema_with = "s::absolute_path_schema")]
    pub workdir: PathBuf,
    /// The agent being run (for example `pi`, `claude`, `shell`).
    #[schemars(length(min = 1))]
    pub agent: String,
    /// The full id of the agent's container.
    #[schemars(length(min = 1))]
    pub container_id: String,
    /// The name of the agent's container (`ags-<project>-<hex>`).
    #[schemars(length(min = 1))]
    pub container_name: String,
}

/// The context every `finished` hook receives on stdin, followed by EOF. Members whose value is
/// unknown are omitted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[serde(expecting = "a finished context object")]
#[schemars(title = "ags finished hook input")]
pub struct FinishedContext {
    /// Protocol version: always the integer `1`, written exactly so.
    #[schemars(schema_with = "s::version_schema")]
    pub version: u32,
    /// Always `finished`.
    pub event: FinishedEvent,
    /// The launch id, as in the prepare and started contexts.
    #[schemars(length(min = 1))]
    pub launch_id: String,
    /// The Git repository root of the working directory (or the working directory). Absolute.
    #[schemars(schema_with = "s::absolute_path_schema")]
    pub project: PathBuf,
    /// The canonical working directory; also the hook's current directory. Absolute.
    #[schemars(schema_with = "s::absolute_path_schema")]
    pub workdir: PathBuf,
    /// The agent that was run.
    #[schemars(length(min = 1))]
    pub agent: String,
    /// The full id of the agent's container (removed by the time the hook runs).
    #[schemars(length(min = 1))]
    pub container_id: String,
    /// The name of the agent's container.
    #[schemars(length(min = 1))]
    pub container_name: String,
    /// The agent's exit status as Podman reports it (`128+N` when killed by signal N). Omitted
    /// when unknown (crash recovery without a record of the exit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u8")]
    pub exit_code: Option<i32>,
    /// The signal name (`SIGKILL`) when `exit_code` is `128+N` for a known signal N. A program
    /// that itself exits with such a code looks the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", regex(pattern = r"^SIG[A-Z0-9]+$"))]
    pub signal: Option<String>,
    /// Milliseconds from the start of the container to the known end of the agent. Omitted when
    /// unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub duration_ms: Option<u64>,
    /// `true` when a later `ags` runs the hook because the launching `ags` was gone before its
    /// finished hooks ran (crash recovery, docs/lifecycle.md); the facts may then be partial.
    pub recovered: bool,
}

/// The only response a lifecycle hook may print: `{"version":1}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[serde(expecting = "a lifecycle response object {\"version\": 1}")]
#[schemars(title = "ags started/finished hook output")]
pub struct LifecycleResponse {
    /// Protocol version: the integer `1`, written exactly so (`ags` refuses `1.0` and `1e0`,
    /// which JSON Schema cannot tell apart from `1`).
    #[schemars(schema_with = "s::version_schema")]
    pub version: u32,
}

impl StartedContext {
    /// A version-1 `started` context.
    pub fn new(facts: LaunchFacts) -> Self {
        Self {
            version: PROTOCOL_VERSION,
            event: StartedEvent::Started,
            launch_id: facts.launch_id,
            project: facts.project,
            workdir: facts.workdir,
            agent: facts.agent,
            container_id: facts.container_id,
            container_name: facts.container_name,
        }
    }

    /// Decode strictly, then check version, paths and names.
    pub fn parse_strict(bytes: &[u8]) -> Result<Self, ContextError> {
        let event = HookEvent::Started;
        let ctx: Self = decode_context(event, bytes)?;
        let texts = [
            ("launch_id", &ctx.launch_id),
            ("agent", &ctx.agent),
            ("container_id", &ctx.container_id),
            ("container_name", &ctx.container_name),
        ];
        check_context(event, ctx.version, [&ctx.project, &ctx.workdir], texts)?;
        Ok(ctx)
    }
}

/// How the agent ended, as far as it is known.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ending {
    /// Exit status (`128+N` for a signal), when known.
    pub exit_code: Option<i32>,
    /// Run time in milliseconds, when known.
    pub duration_ms: Option<u64>,
    /// Run by crash recovery.
    pub recovered: bool,
}

impl FinishedContext {
    /// A version-1 `finished` context; `signal` is derived from `exit_code`.
    pub fn new(facts: LaunchFacts, ending: Ending) -> Self {
        Self {
            version: PROTOCOL_VERSION,
            event: FinishedEvent::Finished,
            launch_id: facts.launch_id,
            project: facts.project,
            workdir: facts.workdir,
            agent: facts.agent,
            container_id: facts.container_id,
            container_name: facts.container_name,
            exit_code: ending.exit_code,
            signal: ending.exit_code.and_then(signal_of_exit_code),
            duration_ms: ending.duration_ms,
            recovered: ending.recovered,
        }
    }

    /// Decode strictly, then check version, paths, names and the exit code range.
    pub fn parse_strict(bytes: &[u8]) -> Result<Self, ContextError> {
        let event = HookEvent::Finished;
        let ctx: Self = decode_context(event, bytes)?;
        let texts = [
            ("launch_id", &ctx.launch_id),
            ("agent", &ctx.agent),
            ("container_id", &ctx.container_id),
            ("container_name", &ctx.container_name),
        ];
        check_context(event, ctx.version, [&ctx.project, &ctx.workdir], texts)?;
        if ctx.exit_code.is_some_and(|c| !(0..=255).contains(&c)) {
            return Err(ContextError {
                event,
                path: "$.exit_code".into(),
                rule: ContextRule::ExitCodeRange,
            });
        }
        Ok(ctx)
    }
}

/// `SIGKILL` for 137: Podman's (and the shell's) `128+N` convention for death by signal N.
pub fn signal_of_exit_code(code: i32) -> Option<String> {
    let n = code.checked_sub(128).filter(|n| (1..=64).contains(n))?;
    nix::sys::signal::Signal::try_from(n)
        .ok()
        .map(|s| s.as_str().to_string())
}

/// Accept exactly `{"version":1}` (strict JSON: no duplicate keys, unknown members or trailing
/// bytes). Anything else is that hook's failure.
pub fn parse_lifecycle_response(bytes: &[u8]) -> Result<(), ResponseError> {
    let wire: LifecycleResponse = json::from_slice(bytes)?;
    if wire.version != PROTOCOL_VERSION {
        return Err(ResponseError {
            path: JsonPath::root().key("version").to_string(),
            rule: Rule::Version,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> LaunchFacts {
        LaunchFacts {
            launch_id: "ags-1-2".into(),
            project: "/p".into(),
            workdir: "/p/sub".into(),
            agent: "shell".into(),
            container_id: "c0ffee".into(),
            container_name: "ags-p-12345678".into(),
        }
    }

    #[test]
    fn started_context_round_trips() {
        let ctx = StartedContext::new(facts());
        let text = serde_json::to_string(&ctx).unwrap();
        assert_eq!(
            text,
            r#"{"version":1,"event":"started","launch_id":"ags-1-2","project":"/p","workdir":"/p/sub","agent":"shell","container_id":"c0ffee","container_name":"ags-p-12345678"}"#
        );
        assert_eq!(StartedContext::parse_strict(text.as_bytes()).unwrap(), ctx);
    }

    #[test]
    fn finished_context_omits_unknowns_and_names_signals() {
        let ending = Ending {
            exit_code: Some(137),
            duration_ms: Some(12),
            recovered: false,
        };
        let text = serde_json::to_string(&FinishedContext::new(facts(), ending)).unwrap();
        assert!(
            text.ends_with(r#""exit_code":137,"signal":"SIGKILL","duration_ms":12,"recovered":false}"#),
            "{text}"
        );
        let unknown = FinishedContext::new(
            facts(),
            Ending {
                recovered: true,
                ..Ending::default()
            },
        );
        let text = serde_json::to_string(&unknown).unwrap();
        assert!(
            text.ends_with(r#""container_name":"ags-p-12345678","recovered":true}"#),
            "{text}"
        );
        assert_eq!(FinishedContext::parse_strict(text.as_bytes()).unwrap(), unknown);
        assert_eq!(signal_of_exit_code(3), None);
        assert_eq!(signal_of_exit_code(130).as_deref(), Some("SIGINT"));
    }

    #[test]
    fn only_version_one_is_a_response() {
        assert!(parse_lifecycle_response(b" {\"version\":1}\n").is_ok());
        let err = |doc: &str| parse_lifecycle_response(doc.as_bytes()).unwrap_err().to_string();
        assert_eq!(
            err(r#"{"version":1,"env":{}}"#),
            "$.env: unknown field; allowed here: `version`"
        );
        assert!(err(r#"{"version":2}"#).starts_with("$.version: unsupported protocol version"));
        assert!(err(r#"{"version":1,"version":1}"#).contains("duplicate"));
        assert!(err(r#"{"version":1} x"#).contains("invalid JSON"));
        assert!(err("").contains("invalid JSON"));
    }

    #[test]
    fn context_rules() {
        let good = serde_json::to_string(&StartedContext::new(facts())).unwrap();
        let err = |doc: String| {
            StartedContext::parse_strict(doc.as_bytes())
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err(good.replace("\"started\"", "\"prepare\"")),
            "started context $.event: unsupported value; allowed: `started`"
        );
        assert_eq!(
            err(good.replace("\"c0ffee\"", "\"\"")),
            "started context $.container_id: must be non-empty and free of control characters"
        );
    }
}
