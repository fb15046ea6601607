//! What allowlist mode adds to the container besides the command (see [`super::network`]): the
//! read-only binds of the proxy socket directory and the forwarder, and the proxy environment.
//! Pure.

use super::types::{EnvSource, Origin, PlanEnv, PlanMount};
use crate::egress::plan::{EGRESS_MOUNT, EgressPlan, FORWARDER_MOUNT, NO_PROXY, PROXY_ENV_KEYS, PROXY_URL};

/// The read-only binds of the socket directory and the forwarder.
pub fn mounts(egress: &EgressPlan) -> Vec<PlanMount> {
    let Some(p) = &egress.proxy else { return Vec::new() };
    [(&p.socket_dir, EGRESS_MOUNT), (&p.forwarder, FORWARDER_MOUNT)]
        .into_iter()
        .map(|(source, dest)| PlanMount::bind(dest, source.clone(), true, Origin::Default))
        .collect()
}

/// The proxy environment (plain values chosen by `ags`).
pub fn env(egress: &EgressPlan) -> Vec<PlanEnv> {
    if !egress.proxy_env() {
        return Vec::new();
    }
    PROXY_ENV_KEYS
        .iter()
        .map(|key| PlanEnv {
            key: key.to_string(),
            source: EnvSource::Plain {
                value: if key.eq_ignore_ascii_case("NO_PROXY") {
                    NO_PROXY
                } else {
                    PROXY_URL
                }
                .into(),
            },
            origin: Origin::Default,
        })
        .collect()
}
