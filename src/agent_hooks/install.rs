//! Installing the dispatcher on the host, where the launch bind-mounts it read-only at
//! [`super::DISPATCHER_PATH`]: the static program embedded in `ags`
//! ([`super::dispatch::PROGRAM`]), written once per content to `<cache>/agent-hooks/` (0555 in a
//! 0700 directory, atomically), like the egress forwarder.

use std::io;
use std::path::{Path, PathBuf};

use super::dispatch::PROGRAM;

/// The dispatcher could not be installed.
#[derive(Debug, thiserror::Error)]
#[error("agent hooks: cannot install the dispatcher at {}: {source}; check that the cache directory is writable", path.display())]
pub struct InstallError {
    /// Where it was to be written.
    pub path: PathBuf,
    /// Why not.
    pub source: io::Error,
}

/// Write the dispatcher to `path` unless an identical copy is there (the name carries a hash of
/// the content).
pub fn install(path: &Path) -> Result<(), InstallError> {
    crate::fsutil::install_program(path, PROGRAM).map_err(|source| InstallError {
        path: path.to_path_buf(),
        source,
    })
}
