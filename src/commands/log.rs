//! `ags log --egress`: the last records of the egress log (`crate::egress::log`).

use std::io::Write;

use crate::Error;
use crate::cli::{GlobalArgs, LogArgs};
use crate::config::Paths;
use crate::egress::log;

/// Print the last `-n` egress records, as text or JSON lines.
pub fn log(_global: &GlobalArgs, args: &LogArgs) -> Result<u8, Error> {
    let paths = Paths::from_env()?;
    let path = paths.egress_log();
    let records = log::read_last(&path, args.n)
        .map_err(|e| Error::Usage(format!("egress log {}: {e}", path.display())))?;
    let mut out = std::io::stdout().lock();
    for r in &records {
        let line = match args.json {
            true => serde_json::to_string(r).expect("a record serializes"),
            false => log::render(r),
        };
        writeln!(out, "{line}").map_err(Error::Output)?;
    }
    Ok(0)
}
