//! Stage 4: the libpod REST client, and the only code in `ags` that talks to a socket.
//!
//! Input: a Podman API endpoint (discovered or given) and typed requests (a [`SpecGenerator`],
//! container IDs, tar archives). Output: typed responses and [`PodmanError`]s that keep
//! Podman's own message. Async (tokio); callers run it on a current-thread runtime with the I/O
//! and time drivers enabled.
//!
//! - `endpoint`: `unix://`, `tcp://` and `ssh://` URLs; `transport`: connecting, the request
//!   funnel and the HTTP upgrade; `tunnel`: the OpenSSH forward of an `ssh://` service.
//! - `discover`: which service to use (`--url` → `--connection` → `CONTAINER_HOST` →
//!   `CONTAINER_CONNECTION` → XDG → system socket); `connections`: Podman's named connections.
//! - `api`: one short [`Client`] method per endpoint; `build`: image builds with progress.
//! - `attach`: attach streams, stdin EOF and the stdout/stderr demultiplexer.
//! - `neighbours`: the read-write binds of other running launches, Podman's storage paths.
//! - `spec`: the create body; `keep_id`: a rootless `keep-id` spelled out as explicit id
//!   mappings and passwd/group entries, so the service need not read subordinate ids; `models`: response models; `error`: [`PodmanError`] and the
//!   predicates that read Podman's error texts; `version`: [`ServerVersion`] and the differences
//!   between Podman 4 and 5. No other stage matches Podman's texts or compares its versions.
//!
//! Only `/v4.0.0/libpod` routes are used (answered by Podman 4 and 5); the podman CLI is never
//! run. Why an own client: `docs/decisions/0001-own-libpod-client.md`.

mod api;
mod archive;
mod attach;
mod build;
mod connections;
mod discover;
mod endpoint;
mod error;
pub mod fixes;
mod from_plan;
mod keep_id;
mod models;
mod neighbours;
mod spec;
mod transport;
mod tunnel;
mod version;

pub use api::local_memory_total;
pub(crate) use api::retry;
pub use archive::ContainerFile;
pub use attach::{AttachInput, AttachOptions, AttachOutput, AttachStream, Demux, StreamKind};
pub use build::BuildOptions;
pub use discover::{Candidate, CandidateSource, Target, candidates, choose, connect};
pub use endpoint::Endpoint;
pub use error::{ExecFailure, PodmanError, Result, RuntimeSetupFailure, Tried};
pub use from_plan::{KEEPER_SECONDS, keeper_spec, spec_from_plan, volume_writer_spec, workdir_probe_spec};
pub use keep_id::spell_out_keep_id;
pub use models::{Info, Volume};
pub use neighbours::{Neighbour, local_running_roots};
pub use spec::{Mount, NamedVolume, Namespace, NsMode, PidsLimit, ResourceLimits, SpecGenerator};
pub use transport::Client;
pub use tunnel::SshProgram;
pub use version::ServerVersion;
