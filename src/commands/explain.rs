//! `ags explain [METHOD ]HOST[:PORT][/PATH]` or `ags explain RECORD`: the network policy a launch here would have, asked about one
//! destination (`egress::explain` decides). Exit 0 when allowed, 1 when refused.

use crate::Error;
use crate::cli::{ExplainArgs, GlobalArgs};
use crate::egress::explain::{explain as decide, parse_request};
use crate::egress::plan::{Requested, plan};
use crate::error::CommandError;

/// Print the verdict and the rule behind it.
pub fn explain(global: &GlobalArgs, args: &ExplainArgs) -> Result<u8, Error> {
    if is_record_id(&args.target) {
        return explain_record(global, args);
    }
    let (host, port, asked) = parse_request(&args.target).map_err(|rule| {
        CommandError::invalid(
            format!("ags explain {:?}", args.target),
            format!("{rule}; write HOST[:PORT], METHOD HOST[:PORT]/PATH for a request, or a record id"),
        )
    })?;
    let verdict = decide(&plan_here(global, args)?, &host, port, asked.as_ref());
    let word = if verdict.allowed { "allowed" } else { "refused" };
    println!("{word}: {}", crate::text::escape_controls(&verdict.why));
    Ok(if verdict.allowed { 0 } else { 1 })
}

/// The network part of the plan a launch here would have.
fn plan_here(global: &GlobalArgs, args: &ExplainArgs) -> Result<crate::egress::plan::EgressPlan, Error> {
    let allow = super::launch_input::allow_entries(&args.allow)?;
    let profile = crate::plan::check::find_agent(&args.agent)?;
    let config = super::run::load_config(global, args.workdir.clone())?;
    let local = super::chosen_url(global).is_none_or(|u| u.starts_with("unix://"));
    let requested = Requested {
        network: args.network.map(super::launch_input::network_mode),
        allow: &allow,
    };
    let egress = plan(
        &config,
        requested,
        profile,
        std::path::Path::new("/"),
        false,
        local,
    );
    Ok(egress)
}

/// Whether `raw` is an egress record's id (`ags-PID-NANOS.N`).
fn is_record_id(raw: &str) -> bool {
    raw.starts_with("ags-")
        && raw.rsplit_once('.').is_some_and(|(launch, n)| {
            !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && !launch.contains(':')
        })
}

/// `ags explain RECORD`: the record's decision and reason (the rule, its layer, file and line,
/// as the proxy wrote them), then what a launch here would get now. Exit 0 when the record
/// was allowed, 1 otherwise.
fn explain_record(global: &GlobalArgs, args: &ExplainArgs) -> Result<u8, Error> {
    let path = crate::config::Paths::from_env()?.egress_log();
    let records: Vec<crate::egress::log::EgressRecord> = crate::egress::log::read_last(&path, usize::MAX)
        .map_err(CommandError::io(format!("egress log {}", path.display())))?;
    // The launch's own record of that id (`LAUNCH.N`), never one another launch id carries.
    let own = |r: &crate::egress::log::EgressRecord| {
        r.id == args.target
            && r.id
                .strip_prefix(&r.launch_id)
                .is_some_and(|n| n.starts_with('.'))
    };
    let Some(r) = records.into_iter().find(own) else {
        return Err(CommandError::invalid(
            format!("ags explain {}", crate::text::escape_line(&args.target)),
            format!(
                "no record with that id in the egress log {} (or its rotated copy); ags log --egress lists the ids",
                path.display()
            ),
        )
        .into());
    };
    println!("{}", crate::egress::log::render(&r));
    let allowed = r.decision == crate::egress::log::Decision::Allowed;
    if let Some(host) = crate::egress::proxy::Host::parse(&r.host).filter(|_| r.port > 0) {
        let plan = plan_here(global, args)?;
        // A plain-HTTP record is asked about as plain HTTP (its path is not recorded).
        let now = match r.kind.as_str() {
            "http" => crate::egress::explain::explain_plain(&plan, &host, r.port),
            _ => decide(&plan, &host, r.port, None),
        };
        let word = if now.allowed { "allowed" } else { "refused" };
        println!(
            "now, for a launch here: {word}: {}",
            crate::text::escape_controls(&now.why)
        );
    }
    Ok(if allowed { 0 } else { 1 })
}
