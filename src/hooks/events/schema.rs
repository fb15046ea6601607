//! Stage 2 (lifecycle protocol): JSON Schemas and the `ags hooks describe started|finished` texts.
//! Pure, no I/O (the drift test alone reads, and on request writes, `docs/schemas/`).

use schemars::Schema;
use schemars::generate::SchemaSettings;

use super::protocol::{FinishedContext, LifecycleResponse, StartedContext};
use crate::config::HookEvent;
use crate::hooks::schema::SchemaSide;

/// The schema of a started/finished context or of the lifecycle response.
pub fn schema(event: HookEvent, side: SchemaSide) -> Schema {
    let generator = SchemaSettings::draft2020_12().into_generator();
    match (event, side) {
        (HookEvent::Prepare, SchemaSide::Input) => crate::hooks::schema::prepare_input_schema(),
        (HookEvent::Prepare, SchemaSide::Output) => crate::hooks::schema::prepare_output_schema(),
        (HookEvent::Started, SchemaSide::Input) => generator.into_root_schema_for::<StartedContext>(),
        (HookEvent::Finished, SchemaSide::Input) => generator.into_root_schema_for::<FinishedContext>(),
        (_, SchemaSide::Output) => generator.into_root_schema_for::<LifecycleResponse>(),
    }
}

/// Pretty JSON text of one schema, newline-terminated (what `ags hooks schema EVENT SIDE` prints).
pub fn schema_text(event: HookEvent, side: SchemaSide) -> String {
    let mut text = serde_json::to_string_pretty(&schema(event, side)).unwrap_or_default();
    text.push('\n');
    text
}

/// What `ags hooks describe EVENT` prints.
pub fn describe(event: HookEvent) -> String {
    match event {
        HookEvent::Prepare => crate::hooks::schema::describe_prepare().to_string(),
        HookEvent::Started => format!("{DESCRIBE_STARTED}{COMMON}{SEE_ALSO}"),
        HookEvent::Finished => format!("{DESCRIBE_FINISHED}{COMMON}{SEE_ALSO}"),
    }
}

const SEE_ALSO: &str = "
See also: ags hooks schema started|finished input|output, docs/lifecycle.md.
";

const COMMON: &str = "\
Output (stdout): exactly {\"version\":1}. Anything else (another member, a second
  document, a non-zero exit, a timeout) is that hook's failure: it is reported and
  logged, and never changes the agent's exit code or cancels other hooks.

Trust and limits: as for prepare hooks — [[started_hook]] / [[finished_hook]] in the
  global config or a trusted project overlay, the same fields, 64 declarations per
  file and 128 in total per event, approval of the exact declaration, event and
  entrypoint bytes before the launch starts (a prepare approval never approves a
  started or finished hook), a private execution copy, a scrubbed environment, the
  workdir as cwd, 4 hooks at a time, timeout_seconds (default 30) per hook and 60 s
  for all hooks of the event.
";

const DESCRIBE_STARTED: &str = "\
started — host executables run once the agent's container has started

When: right after Podman started the container, while the agent runs. ags does not
  wait for them before the session begins and they do not slow the agent's I/O. Their
  stderr is held back and shown (escaped, prefixed with the hook name) after the
  session ends, so it never garbles the agent's terminal. ags waits for them, within
  their timeouts, before it runs the finished hooks and exits.

Input (stdin, then EOF): one JSON object
  version         1
  event           \"started\"
  launch_id       as in the prepare context; also the io.ags.launch annotation
  project         Git repository root (or the working directory), absolute
  workdir         canonical working directory, absolute
  agent           the agent being run
  container_id    full id of the agent's container
  container_name  its name (ags-<project>-<hex>)

";

const DESCRIBE_FINISHED: &str = "\
finished — host executables run once the agent has ended

When: after the agent's exit status is known, after the container, its staging
  volume and staged files were removed, and before ags exits. They run only for a
  launch whose agent started. When ags was killed first, the next ags start (or
  `ags gc`) runs them once from the record kept in $XDG_STATE_HOME/ags/spool, with
  \"recovered\": true (docs/lifecycle.md). Their stderr goes to ags's stderr.

Input (stdin, then EOF): one JSON object
  version         1
  event           \"finished\"
  launch_id, project, workdir, agent, container_id, container_name  as for started
  exit_code       the agent's exit status (128+N when killed by signal N); omitted
                  when unknown
  signal          \"SIGKILL\" etc. when exit_code is 128+N; omitted otherwise
  duration_ms     container start to the end of the agent; omitted when unknown
  recovered       true when a later ags runs it after the launching ags was gone

";

#[cfg(test)]
pub(crate) mod tests {

    use super::*;

    /// The committed schema file of `event`'s `side` under `docs/schemas/` (the output schema is
    /// shared by both events).
    pub(crate) fn file_name(event: HookEvent, side: SchemaSide) -> &'static str {
        match (event, side) {
            (HookEvent::Prepare, SchemaSide::Input) => "prepare-input.schema.json",
            (HookEvent::Prepare, SchemaSide::Output) => "prepare-output.schema.json",
            (HookEvent::Started, SchemaSide::Input) => "started-input.schema.json",
            (HookEvent::Finished, SchemaSide::Input) => "finished-input.schema.json",
            (_, SchemaSide::Output) => "lifecycle-output.schema.json",
        }
    }

    fn check_committed(event: HookEvent, side: SchemaSide) {
        crate::fsutil::check_committed(
            &format!("docs/schemas/{}", file_name(event, side)),
            &schema_text(event, side),
            "cargo test --lib hooks::events::schema",
        );
    }

    #[test]
    fn committed_schemas_are_current() {
        check_committed(HookEvent::Started, SchemaSide::Input);
        check_committed(HookEvent::Finished, SchemaSide::Input);
        check_committed(HookEvent::Finished, SchemaSide::Output);
    }

    #[test]
    fn output_schema_allows_only_the_version() {
        let v = serde_json::to_value(schema(HookEvent::Started, SchemaSide::Output)).unwrap();
        assert_eq!(v["additionalProperties"], false);
        assert_eq!(v["required"], serde_json::json!(["version"]));
        assert_eq!(v["properties"]["version"]["const"], 1);
        let v = serde_json::to_value(schema(HookEvent::Finished, SchemaSide::Input)).unwrap();
        assert_eq!(v["$defs"]["FinishedEvent"]["oneOf"][0]["const"], "finished");
        assert!(
            !v.to_string().contains("\"null\""),
            "unknown members are omitted, not null"
        );
    }

    #[test]
    fn describe_texts_end_with_the_shared_part() {
        for event in [HookEvent::Started, HookEvent::Finished] {
            assert!(describe(event).starts_with(event.as_str()));
        }
        assert!(COMMON.contains("never changes the agent's exit code"));
    }
}
