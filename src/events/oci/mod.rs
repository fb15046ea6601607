//! `ags`'s OCI hooks: the program that records container events into the spool
//! ([`record`]), the hook definitions and whether they are active ([`definitions`]), and the
//! Podman configuration that enables them ([`conf`], used by `ags setup oci-hooks`).
//!
//! Podman runs OCI hooks from the `hooks_dir` of the service that initializes the container; a
//! create request can only select installed hooks through annotations. `ags`'s definitions match
//! the `io.ags.launch` annotation only, so they never fire for other containers.
//! Ref: <https://github.com/containers/common/blob/main/pkg/hooks/docs/oci-hooks.5.md>.

pub mod conf;
pub mod definitions;
pub mod install;
pub mod record;

pub use conf::{ConfEnv, ServiceKind};
pub use definitions::OciHooksStatus;
