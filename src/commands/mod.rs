//! Orchestration: one function per subcommand; the only module that calls several stages.

use crate::Error;
use crate::cli::Cli;

/// Run the subcommand selected on the command line.
pub fn dispatch(_cli: Cli) -> Result<u8, Error> {
    Err(Error::Usage("not wired yet".into()))
}
