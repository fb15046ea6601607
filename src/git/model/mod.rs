//! Git's rules and the host's git setup as data (layer 0 in `tests/offline/architecture.rs`):
//! the strict judge of configuration keys, the lenient reader of the host's own files, the
//! guard plan of a repository's git metadata, and the host's identity.

pub mod config_keys;
pub mod guard;
pub mod identity;
