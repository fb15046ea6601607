//! `ags allow`: grants in flight (`egress::grants`). A grant is written atomically to the
//! user's private grants directory, which every running proxy reads at each decision, and is
//! recorded in the egress log (who, what, for which launch, until when).

use crate::Error;
use crate::cli::AllowArgs;
use crate::config::Paths;
use crate::egress::grants::{self, Grant};
use crate::egress::log::{Decision, EgressLog};
use crate::error::CommandError;

/// Grant, list or revoke.
pub fn allow(args: &AllowArgs) -> Result<u8, Error> {
    let paths = Paths::from_env()?;
    let dir = paths.egress_grants();
    grants::sweep(&dir);
    if args.list {
        let now = std::time::SystemTime::now();
        let live: Vec<Grant> = grants::all(&dir)
            .into_iter()
            .filter(|g| g.deadline().is_none_or(|d| now < d))
            .collect();
        if live.is_empty() {
            println!("no grants hold");
        }
        for g in live {
            println!("{}  {}", g.entry, crate::text::escape_line(&g.shown()));
        }
        return Ok(0);
    }
    if let Some(id) = &args.revoke {
        let io = CommandError::io(format!("removing grant {id} from {}", dir.display()));
        return match grants::revoke(&dir, id).map_err(io)? {
            true => {
                println!("revoked grant {id}");
                Ok(0)
            }
            false => Err(CommandError::invalid(
                format!("--revoke {id:?}"),
                "no such grant; `ags allow --list` shows the grants that hold",
            )
            .into()),
        };
    }
    grant(args, &paths)
}

/// Write the grant and its log record.
fn grant(args: &AllowArgs, paths: &Paths) -> Result<u8, Error> {
    let raw = args.entry.clone().unwrap_or_default();
    let entry = super::launch_input::allow_entries(std::slice::from_ref(&raw))?.remove(0);
    if entry.request.is_some() {
        return Err(CommandError::invalid(
            format!("ags allow {raw}"),
            "a grant opens a destination (HOST[:PORT]); method and path rules go into [network] allow of the global config",
        )
        .into());
    }
    if args.duration.is_none() && args.launch.is_none() {
        return Err(CommandError::invalid(
            format!("ags allow {raw}"),
            "say how long it holds: --for DURATION (every launch of yours), --launch ID (until that launch ends), or both",
        )
        .into());
    }
    if let Some(l) = &args.launch
        && (l.len() > 64 || !l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
    {
        return Err(
            CommandError::invalid(format!("--launch {l:?}"), "not a launch id (ags-PID-NANOS)").into(),
        );
    }
    if let Some(l) = args.launch.as_deref().filter(|l| !grants::launch_alive(l)) {
        return Err(CommandError::invalid(
            format!("--launch {l}"),
            "no launch with that id runs on this machine (its ags process is gone); the 403 the agent got names the id of its own launch",
        )
        .into());
    }
    let grant = Grant::new(&entry, args.launch.clone(), args.duration, who());
    let dir = paths.egress_grants();
    grants::write(&dir, &grant).map_err(CommandError::io(format!(
        "writing grant {} to {}",
        grant.id,
        dir.display()
    )))?;
    let log = EgressLog::new(
        paths.egress_log(),
        args.launch.clone().unwrap_or_else(|| "*".into()),
    );
    let record = log.record("grant", &entry.entry, 0, Decision::Granted, grant.shown());
    log.append(&record);
    println!(
        "granted {}: {}; revoke it with: ags allow --revoke {}",
        entry.entry,
        grant.shown(),
        grant.id
    );
    Ok(0)
}

/// Who grants: the user name and uid, and the terminal when there is one.
fn who() -> String {
    let uid = nix::unistd::getuid();
    let name = nix::unistd::User::from_uid(uid)
        .ok()
        .flatten()
        .map_or_else(|| uid.to_string(), |u| u.name);
    let tty = nix::unistd::ttyname(std::io::stdin()).ok();
    match tty {
        Some(t) => format!("{name} (uid {uid}, {})", t.display()),
        None => format!("{name} (uid {uid})"),
    }
}
