//! The started and finished events of a launch, one capability in one folder
//! (docs/decisions/0009-capability-folders.md): the spool of launch records for crash recovery
//! (`spool`), the OCI hooks that record container starts and stops (`oci`), and the session
//! bookkeeping that runs the started and finished hooks and recovers launches whose `ags` is
//! gone (`session`).

pub mod oci;
pub mod session;
pub mod spool;
