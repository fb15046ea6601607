//! `ags hooks …`: describe, schema and validate are inert; test, list, revoke and log work with
//! declarations, approvals and the run log.

use crate::error::CommandError;
use std::io::Read;
use std::path::Path;

use super::hooks_admin::event_of;
use crate::Error;
use crate::cli::{GlobalArgs, HooksArgs, HooksCommand};
use crate::hooks::{schema, summary};

/// Exit code of `ags hooks validate` for a refused response.
pub const EXIT_INVALID: u8 = 1;

/// Run an `ags hooks` subcommand.
pub fn hooks(global: &GlobalArgs, args: &HooksArgs) -> Result<u8, Error> {
    match &args.command {
        HooksCommand::Describe { event } => {
            print!("{}", schema::describe(event_of(*event)));
            Ok(0)
        }
        HooksCommand::Schema { event, side } => {
            print!("{}", schema::schema_text(event_of(*event), *side));
            Ok(0)
        }
        HooksCommand::Validate { file } => validate(file),
        HooksCommand::Approve {
            name,
            hash,
            event,
            workdir,
        } => super::hooks_approve::approve(global, name, hash, event.map(event_of), workdir),
        other => super::hooks_admin::run(global, other),
    }
}

/// Validate a response document without running anything; print a redacted summary.
fn validate(file: &Path) -> Result<u8, Error> {
    let limit = crate::json::MAX_DOCUMENT_BYTES as u64 + 1;
    let mut bytes = Vec::new();
    let read = if file == Path::new("-") {
        std::io::stdin().take(limit).read_to_end(&mut bytes)
    } else {
        std::fs::File::open(file).and_then(|f| f.take(limit).read_to_end(&mut bytes))
    };
    read.map_err(CommandError::io(file.display().to_string()))?;
    match summary::validate_and_summarize(&bytes) {
        Ok(summary) => {
            println!("{}: valid prepare response", file.display());
            print!("{summary}");
            Ok(0)
        }
        Err(e) => {
            eprintln!(
                "{}",
                crate::text::escape_controls(&format!(
                    "ags: {}: invalid prepare response: {e}",
                    file.display()
                ))
            );
            Ok(EXIT_INVALID)
        }
    }
}
