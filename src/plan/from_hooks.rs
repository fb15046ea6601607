//! The hooks-to-plan translation: the merged contributions of the prepare phase
//! ([`Prepared`]) in the plan's terms ([`HookLayer`]): literals staged (redacted), references
//! kept as references, files with their content, mounts with their checked host sources, each
//! with its origin. Pure.

use std::path::PathBuf;

use super::build::HookLayer;
use super::types::{EnvSource, MountKind, Origin, PlanFile, PlanMount};
use crate::hooks::prepare::Prepared;
use crate::hooks::protocol::MountMode;
use crate::hooks::resolve::Origin as HookOrigin;
use crate::hooks::validate::EnvValue;
use crate::secret::Secret;

/// Express the merged hook contributions in the plan's terms.
pub fn hook_layer(prepared: &Prepared) -> HookLayer {
    let r = &prepared.resolved;
    let env = r
        .env
        .iter()
        .map(|(key, (value, origin))| {
            let source = match value {
                EnvValue::Literal(l) => EnvSource::Staged {
                    value: Secret::new(l.as_str().to_string()),
                },
                EnvValue::Op(op) => EnvSource::OpRef {
                    reference: op.as_str().to_string(),
                },
            };
            (key.as_str().to_string(), source, plan_origin(origin))
        })
        .collect();
    let files = r
        .files
        .iter()
        .map(|(f, origin)| PlanFile {
            destination: f.destination.as_path().to_path_buf(),
            bytes: f.content.len(),
            content: Secret::new(f.content.clone()),
            origin: plan_origin(origin),
            host_path: PathBuf::new(),
        })
        .collect();
    let mounts = r
        .mounts
        .iter()
        .zip(&prepared.mount_sources)
        .map(|((m, origin), source)| PlanMount {
            destination: m.destination.as_path().to_path_buf(),
            kind: MountKind::Bind {
                source: source.clone(),
            },
            read_only: m.mode == MountMode::Ro,
            origin: plan_origin(origin),
        })
        .collect();
    HookLayer { env, files, mounts }
}

fn plan_origin(o: &HookOrigin) -> Origin {
    match o {
        HookOrigin::Default => Origin::Default,
        HookOrigin::GlobalHook { name, .. } => Origin::GlobalHook(name.clone()),
        HookOrigin::ProjectHook { name, .. } => Origin::ProjectHook(name.clone()),
        HookOrigin::Cli => Origin::Cli,
    }
}
