//! `ags explain [METHOD ]HOST[:PORT][/PATH]`: the network policy a launch here would have, asked about one
//! destination (`egress::explain` decides). Exit 0 when allowed, 1 when refused.

use crate::Error;
use crate::cli::{ExplainArgs, GlobalArgs};
use crate::egress::explain::{explain as decide, parse_request};
use crate::egress::plan::{Requested, plan};
use crate::error::CommandError;

/// Print the verdict and the rule behind it.
pub fn explain(global: &GlobalArgs, args: &ExplainArgs) -> Result<u8, Error> {
    let (host, port, asked) = parse_request(&args.target).map_err(|rule| {
        CommandError::invalid(
            format!("ags explain {:?}", args.target),
            format!("{rule}; write HOST[:PORT], or METHOD HOST[:PORT]/PATH for a request"),
        )
    })?;
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
    let verdict = decide(&egress, &host, port, asked.as_ref());
    let word = if verdict.allowed { "allowed" } else { "refused" };
    println!("{word}: {}", crate::text::escape_controls(&verdict.why));
    Ok(if verdict.allowed { 0 } else { 1 })
}
