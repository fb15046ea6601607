//! `ags log`: the last records of the agent hook log (`crate::agent_hooks::log::file`), filtered by
//! agent and launch, as a table or JSON lines, optionally followed; `ags log --egress`: the
//! egress log (`crate::egress::log`). A closed standard output (`ags log | head`) ends it
//! quietly.

use crate::error::CommandError;
use std::io::{self, Write};
use std::time::Duration;

use crate::Error;
use crate::agent_hooks::log::file::{self, Filter, Follower};
use crate::cli::{GlobalArgs, LogArgs};
use crate::config::Paths;
use crate::egress::log;

/// How often `--follow` looks for new records.
const FOLLOW_INTERVAL: Duration = Duration::from_millis(250);

/// Print the requested log.
pub fn log(_global: &GlobalArgs, args: &LogArgs) -> Result<u8, Error> {
    let result = match (args.egress, &args.launch) {
        (true, _) => egress(args),
        (false, Some(launch)) if args.agent.is_none() && !args.follow => timeline(launch, args),
        (false, _) => agent_hooks(args),
    };
    match result {
        Err(Error::Output(e)) if e.kind() == io::ErrorKind::BrokenPipe => Ok(0),
        other => other,
    }
}

fn agent_hooks(args: &LogArgs) -> Result<u8, Error> {
    if let Some(agent) = &args.agent {
        crate::plan::check::find_agent(agent)?;
    }
    let path = Paths::from_env()?.agent_hooks_log();
    let unreadable = |e: io::Error| CommandError::io(format!("agent hook log {}", path.display()))(e);
    let filter = Filter {
        agent: args.agent.clone(),
        launch: args.launch.clone(),
    };
    // Opened before the last records are read, so nothing appended in between is missed.
    let mut follower = match args.follow {
        true => Some(Follower::from_end(&path).map_err(unreadable)?),
        false => None,
    };
    let entries = file::read_last(&path, &filter, args.n).map_err(unreadable)?;
    let mut out = io::stdout().lock();
    if !args.json {
        writeln!(out, "{}", file::header()).map_err(Error::Output)?;
    }
    print(&mut out, &entries, args.json, file::render)?;
    let Some(follower) = &mut follower else {
        return Ok(0);
    };
    drop(out);
    loop {
        std::thread::sleep(FOLLOW_INTERVAL);
        let new: Vec<_> = follower
            .poll()
            .map_err(unreadable)?
            .into_iter()
            .filter(|e| filter.matches(e))
            .collect();
        print(&mut io::stdout().lock(), &new, args.json, file::render)?;
    }
}

/// Each of `entries` on one line: as JSON with `json`, else as `render` shows it.
fn print<T: serde::Serialize>(
    out: &mut impl Write,
    entries: &[T],
    json: bool,
    render: impl Fn(&T) -> String,
) -> Result<(), Error> {
    for e in entries {
        let line = match json {
            true => serde_json::to_string(e).expect("a record serializes"),
            false => render(e),
        };
        writeln!(out, "{line}").map_err(Error::Output)?;
    }
    out.flush().map_err(Error::Output)?;
    Ok(())
}

/// The last `-n` records of one launch in the three logs, as one timeline.
fn timeline(launch: &str, args: &LogArgs) -> Result<u8, Error> {
    let paths = Paths::from_env()?;
    let mut rows = crate::receipt::timeline::rows(&paths, launch).map_err(CommandError::io(format!(
        "the logs in {}",
        paths.state_dir().display()
    )))?;
    rows = rows.split_off(rows.len().saturating_sub(args.n));
    let mut out = io::stdout().lock();
    if !args.json {
        let head = match rows.is_empty() {
            true => format!("no records of launch {}", crate::text::escape_line(launch)),
            false => crate::receipt::timeline::header(),
        };
        writeln!(out, "{head}").map_err(Error::Output)?;
    }
    for (row, under) in &rows {
        let line = match args.json {
            true => row.json.clone(),
            false => row.render(*under),
        };
        writeln!(out, "{line}").map_err(Error::Output)?;
    }
    Ok(0)
}

/// The last `-n` egress records (of `--launch` only, if given), as text or JSON lines.
fn egress(args: &LogArgs) -> Result<u8, Error> {
    let paths = Paths::from_env()?;
    let path = paths.egress_log();
    let n = match args.launch {
        Some(_) => usize::MAX,
        None => args.n,
    };
    let mut records =
        log::read_last(&path, n).map_err(CommandError::io(format!("egress log {}", path.display())))?;
    if let Some(id) = &args.launch {
        records.retain(|r| r.launch_id == *id);
        records = records.split_off(records.len().saturating_sub(args.n));
    }
    let mut out = io::stdout().lock();
    if !args.json {
        let line = match (records.is_empty(), &args.launch) {
            (true, Some(id)) => format!("no egress records of launch {}", crate::text::escape_line(id)),
            (true, None) => "no egress records (launches with network mode allowlist write them)".to_string(),
            (false, _) => log::header(),
        };
        writeln!(out, "{line}").map_err(Error::Output)?;
    }
    print(&mut out, &records, args.json, log::render)?;
    Ok(0)
}
