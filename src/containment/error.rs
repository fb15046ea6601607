//! Why a host path cannot be mounted: each refusal names the input, the rule and what to do.

use crate::safepath::ResolveError;

/// Why a host path cannot be mounted.
#[derive(Debug, thiserror::Error)]
pub enum ContainmentError {
    /// The path is not valid UTF-8: Podman's API would receive a different path.
    #[error(
        "{what} is not valid UTF-8; Podman's API takes UTF-8 paths and would mount a different directory: rename it or use another directory"
    )]
    NotUtf8 {
        /// The input, escaped.
        what: String,
    },
    /// It does not exist.
    #[error("{what} does not exist{missing}; {remedy}")]
    Missing {
        /// The input.
        what: String,
        /// ` (PATH is missing)` naming the first missing component, or empty when that is the
        /// input itself (already named in `what`).
        missing: String,
        /// What to do.
        remedy: &'static str,
    },
    /// It cannot be resolved.
    #[error("{what} cannot be resolved: {source}")]
    Resolve {
        /// The input.
        what: String,
        /// The failure.
        source: ResolveError,
    },
    /// Not the right kind of entry.
    #[error("{what} is a {kind}; only {allowed} can be mounted")]
    WrongType {
        /// The input.
        what: String,
        /// What it is.
        kind: &'static str,
        /// What is accepted.
        allowed: &'static str,
    },
    /// Passes through a symlink inside a directory an agent can write.
    #[error(
        "{what} passes through the symlink {link}, which lies inside {inside}: an agent can write there and \
         plant such a link to reach other host files; {remedy}, naming a path without symlinks inside \
         read-write mounts"
    )]
    SymlinkInWritable {
        /// The input.
        what: String,
        /// The symlink and its target (`link -> target`).
        link: String,
        /// The writable root containing it, with its owner.
        inside: String,
        /// What to do.
        remedy: &'static str,
    },
    /// A hook mount source passes through a symlink that is not part of the system's layout.
    #[error(
        "{what} passes through the symlink {link}; hook mount sources may only pass through root-owned \
         symlinks in root-owned directories (the system's layout), because any other link could have been \
         planted by an agent; make the hook answer the real path {real}"
    )]
    UntrustedSymlink {
        /// The input.
        what: String,
        /// The symlink and its target (`link -> target`).
        link: String,
        /// The physical path it resolves to.
        real: String,
    },
    /// Overlaps a protected location.
    #[error(
        "{what} overlaps the {protected}: its real path {real} {relation} that location; {why}; {remedy}"
    )]
    Protected {
        /// The input.
        what: String,
        /// Its physical path.
        real: String,
        /// "is", "is inside" or "contains".
        relation: &'static str,
        /// What the location is, and where (as configured or resolved).
        protected: String,
        /// Why that matters.
        why: &'static str,
        /// What to do.
        remedy: &'static str,
    },
    /// Strictly inside a directory an agent can write while the launch starts.
    #[error(
        "{what} (real path {real}) lies inside {inside}, which is mounted read-write: an agent there could \
         swap it for a symlink between ags's check and Podman's mount; {remedy}"
    )]
    InsideWritable {
        /// The input.
        what: String,
        /// Its physical path.
        real: String,
        /// The writable root, with its owner.
        inside: String,
        /// What to do.
        remedy: String,
    },
}
