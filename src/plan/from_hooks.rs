//! The hooks-to-plan translation: the merged contributions of the prepare phase
//! ([`Prepared`]) in the plan's terms ([`HookLayer`]): literals staged (redacted), references
//! kept as references, files with their content, mounts with their checked host sources, each
//! with its origin. Pure.

use std::path::PathBuf;

use super::input::HookLayer;
use super::types::{EnvSource, Origin, PlanFile, PlanMount};
use crate::hooks::prepare::Prepared;
use crate::hooks::protocol::MountMode;
use crate::hooks::resolve::{Origin as HookOrigin, Resolved};
use crate::hooks::validate::{EnvValue, GeneratedFile, HookMount};
use crate::secret::Secret;

/// Express the merged hook contributions in the plan's terms.
///
/// Every struct of the hook stage is taken apart field by field (no `..`), so a field added to
/// [`Prepared`], [`Resolved`](crate::hooks::resolve::Resolved), a generated file or a mount
/// does not compile until it is carried into the plan or explicitly left out here.
pub fn hook_layer(prepared: &Prepared) -> HookLayer {
    let Prepared {
        resolved,
        mount_sources,
    } = prepared;
    // `eliminated` is what lost to precedence: reported by `ags hooks test`, not launched.
    let Resolved {
        env,
        files,
        mounts,
        eliminated: _,
    } = resolved;
    let env = env
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
    let files = files
        .iter()
        .map(|(GeneratedFile { destination, content }, origin)| PlanFile {
            destination: destination.as_path().to_path_buf(),
            bytes: content.len(),
            content: Secret::new(content.clone()),
            origin: plan_origin(origin),
            host_path: PathBuf::new(),
        })
        .collect();
    // The hook's `source` text was resolved and checked into `mount_sources` (index for index).
    let mounts = mounts
        .iter()
        .zip(mount_sources)
        .map(
            |(
                (
                    HookMount {
                        source: _,
                        destination,
                        mode,
                    },
                    origin,
                ),
                source,
            )| {
                let read_only = matches!(mode, MountMode::Ro);
                PlanMount::bind(
                    destination.as_path(),
                    source.clone(),
                    read_only,
                    plan_origin(origin),
                )
            },
        )
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
