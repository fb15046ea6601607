//! The network part of loading a config: the global `[network]` with the matching
//! `[[project]]`'s `[project.network]` over it, then the trusted overlay's narrowing
//! (`egress::model::resolve`); an invalid entry is named in the file that holds it.

use std::path::{Path, PathBuf};

use super::file::ConfigFile;
use super::{ConfigError, EgressSettings, Network, Paths, Result};
use crate::egress::model::NetworkFile;

/// The effective mode and settings. `place` is the project root and the user's paths (to
/// match `[[project]]` entries).
pub(super) fn settings(
    primary_path: &Path,
    primary: Option<&ConfigFile>,
    sandbox_network: Option<String>,
    overlay: Option<&(PathBuf, ConfigFile)>,
    (project, paths): (&Path, &Paths),
) -> Result<(Network, EgressSettings)> {
    let project_network = match primary {
        Some(f) => super::user::project_network(primary_path, &f.project, project, paths)?,
        None => None,
    };
    let global = NetworkFile::merged(primary.and_then(|f| f.network.as_ref()), project_network.as_ref());
    crate::egress::model::resolve(
        (global.as_ref(), sandbox_network.as_deref()),
        overlay.and_then(|(_, f)| f.network.as_ref()),
    )
    .map_err(|(in_overlay, (key, message))| ConfigError::Invalid {
        path: match (in_overlay, overlay) {
            (true, Some((p, _))) => p.clone(),
            _ => primary_path.to_path_buf(),
        },
        key,
        message,
    })
}
