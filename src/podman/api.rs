//! The libpod endpoints `ags` uses, one short method each on [`Client`].
//!
//! Part of stage 4 (`podman`). Every method builds a request and passes it through the funnel in
//! `transport.rs`, which checks the status and decodes Podman's error body; no method touches a
//! socket itself. Status quirks observed on Podman 4.3.1 are handled here: `start` of a running
//! container answers 304 (success), `resize` before the container is initialised answers 409,
//! `kill` of an exited container answers 500 "container state improper", and deleting a missing
//! container, volume or image answers 404 ([`PodmanError::is_not_found`]).
//! Ref: <https://docs.podman.io/en/latest/_static/api.html>

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use http::Method;

use super::attach::{AttachOptions, AttachStream, split};
use super::endpoint::Endpoint;
use super::error::{Excerpt, PodmanError, Result};
use super::models::{
    ContainerInspect, ContainerState, ContainerSummary, CreateResponse, ImportResponse, Info, VersionInfo,
    Volume, VolumeCreate,
};
use super::spec::SpecGenerator;
use super::transport::{Client, Request, image_ref, segment};
use super::version::ServerVersion;

/// How often an inspect that raced the container's exit is asked again.
const EXIT_RACE_RETRIES: u32 = 20;

fn container(id: &str, action: &str) -> String {
    format!("/containers/{}{action}", segment(id))
}

fn bool_str(b: bool) -> &'static str {
    if b { "true" } else { "false" }
}

/// `{"label": ["k=v", ...]}`, the libpod list filter for labels (all must match).
fn label_filter<'a>(labels: &[&'a str]) -> BTreeMap<&'static str, Vec<&'a str>> {
    BTreeMap::from([("label", labels.to_vec())])
}

impl Client {
    /// Check that a libpod service answers (`GET /libpod/_ping`), and record its version from
    /// the `Libpod-Api-Version` header (sent by Podman 4 and 5).
    pub async fn ping(&self) -> Result<()> {
        let (_, headers, body) = self
            .call_with_headers(Request::new(Method::GET, "/_ping"))
            .await?;
        if body.as_ref() != b"OK" {
            return Err(PodmanError::Decode {
                what: "ping answer".into(),
                error: "expected the body OK".into(),
                excerpt: Excerpt(&body).to_string(),
                endpoint: self.shared_url(),
            });
        }
        let header = headers.get("libpod-api-version").and_then(|v| v.to_str().ok());
        if let Some(version) = header.and_then(ServerVersion::parse) {
            self.record_version(version);
        }
        Ok(())
    }

    /// Podman's version (`GET /libpod/version`); records the server's version too.
    pub async fn version(&self) -> Result<VersionInfo> {
        let info: VersionInfo = self
            .call_json(Request::new(Method::GET, "/version"), "version")
            .await?;
        if let Some(version) = ServerVersion::parse(&info.version) {
            self.record_version(version);
        }
        Ok(info)
    }

    /// The server's Podman version: the recorded one, or asked once (`GET /libpod/version`).
    /// `None` when the service reports a version that is not `MAJOR.MINOR[.PATCH]`.
    pub async fn server_version(&self) -> Result<Option<ServerVersion>> {
        if let Some(version) = self.known_version() {
            return Ok(Some(version));
        }
        self.version().await?;
        Ok(self.known_version())
    }

    /// Host facts: rootless, OCI runtime, cgroup version (`GET /libpod/info`).
    pub async fn info(&self) -> Result<Info> {
        self.call_json(Request::new(Method::GET, "/info"), "info").await
    }

    /// Whether the service runs rootless. For a unix socket this is read from the socket's
    /// owner (a rootless service's socket belongs to its user, a rootful one to root), which
    /// saves `GET /info` — the slowest call of a launch (~150 ms, it gathers host statistics).
    /// For TCP, `info` is asked.
    pub async fn rootless(&self) -> Result<bool> {
        if let Endpoint::Unix(path) = self.endpoint()
            && let Ok(meta) = std::fs::metadata(path)
        {
            use std::os::unix::fs::MetadataExt;
            return Ok(meta.uid() != 0);
        }
        Ok(self.info().await?.host.security.rootless)
    }

    /// Whether the service labels containers with SELinux (`host.security.selinuxEnabled` of
    /// `GET /libpod/info`). A unix socket's service shares this host's kernel: without a
    /// mounted selinuxfs SELinux cannot be enabled, and the slow `info` call is skipped.
    pub async fn selinux_enabled(&self) -> Result<bool> {
        if self.endpoint().is_unix() && !std::path::Path::new("/sys/fs/selinux/enforce").exists() {
            return Ok(false);
        }
        Ok(self.info().await?.host.security.selinux_enabled)
    }

    /// The total memory of the machine the service runs on (`host.memTotal`), for the default
    /// memory limit. A unix socket's service shares this host: /proc/meminfo is read instead of
    /// the slow `info` call. `None` when it cannot be learnt.
    pub async fn memory_total(&self) -> Result<Option<u64>> {
        if self.endpoint().is_unix() {
            return Ok(local_memory_total());
        }
        Ok(Some(self.info().await?.host.mem_total).filter(|n| *n > 0))
    }

    /// Whether a container with this name or id exists (`GET /libpod/containers/{name}/exists`).
    pub async fn container_exists(&self, name: &str) -> Result<bool> {
        self.exists(format!("/containers/{}/exists", segment(name))).await
    }

    /// True when `path` answers 204, false when 404.
    async fn exists(&self, path: String) -> Result<bool> {
        match self.call(Request::new(Method::GET, path)).await {
            Ok(_) => Ok(true),
            Err(e) if e.is_not_found() => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Create a container; returns its ID. The image must exist locally.
    pub async fn create(&self, spec: &SpecGenerator) -> Result<String> {
        self.create_with_warnings(spec).await.map(|(id, _)| id)
    }

    /// Create a container; returns its ID and Podman's warnings (e.g. limits that a rootless
    /// cgroup v1 host ignores).
    pub async fn create_with_warnings(&self, spec: &SpecGenerator) -> Result<(String, Vec<String>)> {
        let req = Request::new(Method::POST, "/containers/create").json(spec)?;
        let resp: CreateResponse = self.call_json(req, "container create response").await?;
        Ok((resp.id, resp.warnings))
    }

    /// Initialise a created container (mounts its volumes) without starting it. A monitor lost
    /// on the way ([`PodmanError::is_conmon_lost`]) is retried.
    pub async fn init(&self, id: &str) -> Result<()> {
        retry_conmon_lost(|| self.call(Request::new(Method::POST, container(id, "/init"))))
            .await
            .map(drop)
    }

    /// Attach to a container (HTTP upgrade). Attaching initialises a created container; attach
    /// before `start` so no output is lost. See `attach.rs` for the stream format and stdin EOF.
    /// A lost init is not retried here: the launch makes a new container (`launch::lifecycle`).
    pub async fn attach(&self, id: &str, opts: AttachOptions) -> Result<AttachStream> {
        let req = Request::new(Method::POST, container(id, "/attach"))
            .query("stream", "true")
            .query("stdin", bool_str(opts.stdin))
            .query("stdout", bool_str(opts.stdout))
            .query("stderr", bool_str(opts.stderr))
            .query("detachKeys", "");
        let upgraded = self.upgrade(req).await?;
        Ok(split(upgraded, opts.tty))
    }

    /// Set the tty size (rows `h`, columns `w`). Answers 409 before the container is initialised.
    pub async fn resize(&self, id: &str, h: u16, w: u16) -> Result<()> {
        let req = Request::new(Method::POST, container(id, "/resize"))
            .query("h", h.to_string())
            .query("w", w.to_string());
        self.call(req).await.map(drop)
    }

    /// Start a container; starting one that already runs (304) is success. A monitor lost while
    /// initialising one that was not ([`PodmanError::is_conmon_lost`]) is retried.
    pub async fn start(&self, id: &str) -> Result<()> {
        retry_conmon_lost(|| self.call(Request::new(Method::POST, container(id, "/start"))))
            .await
            .map(drop)
    }

    /// Inspect a container. Its `Config.Env` may hold secrets: do not print it.
    /// An inspect that races the container's exit ([`PodmanError::is_exit_race`]) is asked again
    /// (a few times, 5 ms apart).
    pub async fn inspect(&self, id: &str) -> Result<ContainerInspect> {
        let mut retries = EXIT_RACE_RETRIES;
        let body = loop {
            match self.call(Request::new(Method::GET, container(id, "/json"))).await {
                Ok((_, body)) => break body,
                Err(e) if retries > 0 && e.is_exit_race() => {
                    retries -= 1;
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                Err(e) => return Err(e),
            }
        };
        self.decode(&body, "container inspect response", true)
    }

    /// After `start`, poll `inspect` every `interval` until the container has exited, and return
    /// its final state (exit code). Faster than `POST …/wait`, which answers only after Podman's
    /// cleanup (≥ 250 ms here). Inspect may still say running for a few ms after the attach
    /// stream ends, hence the polling. Wrap it in `tokio::time::timeout` to bound it.
    pub async fn wait_exited(&self, id: &str, interval: Duration) -> Result<ContainerState> {
        loop {
            let state = self.inspect(id).await?.state;
            if !state.running && matches!(state.status.as_str(), "exited" | "stopped") {
                return Ok(state);
            }
            tokio::time::sleep(interval).await;
        }
    }

    /// Send `signal` (`SIGTERM`, `KILL`, `15`) to a running container.
    pub async fn kill(&self, id: &str, signal: &str) -> Result<()> {
        let req = Request::new(Method::POST, container(id, "/kill")).query("signal", signal);
        self.call(req).await.map(drop)
    }

    /// Delete a container without waiting (`timeout=0`); `force` kills it first, `volumes` also
    /// removes its anonymous volumes. A missing container is an error with
    /// [`PodmanError::is_not_found`].
    pub async fn delete(&self, id: &str, force: bool, volumes: bool) -> Result<()> {
        let req = Request::new(Method::DELETE, container(id, ""))
            .query("force", bool_str(force))
            .query("v", bool_str(volumes))
            .query("timeout", "0");
        self.call(req).await.map(drop)
    }

    /// All containers (running or not) carrying every label filter (`key` or `key=value`).
    pub async fn list(&self, labels: &[&str]) -> Result<Vec<ContainerSummary>> {
        let filters = label_filter(labels);
        let (_, body) = retry_removal_race(|| async {
            let req = Request::new(Method::GET, "/containers/json")
                .query("all", "true")
                .query_json("filters", &filters)?;
            self.call(req).await
        })
        .await?;
        // Redacted on error: the list carries each container's command line.
        self.decode(&body, "container list", true)
    }

    /// Extract `tar` into the container at directory `path`. Works on a created container, and
    /// into a read-only named volume once the container is initialised. The entries keep the
    /// owners the archive gives them (in the container's user namespace): the libpod route
    /// would otherwise give every entry to the container's user (`copyUIDGID` defaults to
    /// true there), and a file an agent trusts only when uid 0 owns it could not be staged.
    pub async fn put_archive(&self, id: &str, path: &str, tar: Bytes) -> Result<()> {
        let req = Request::new(Method::PUT, container(id, "/archive"))
            .query("path", path)
            .query("copyUIDGID", "false")
            .tar(tar);
        self.call(req).await.map(drop)
    }

    /// Create a named volume with `labels` and driver `options` (driver `local`).
    pub async fn volume_create(
        &self,
        name: &str,
        labels: BTreeMap<String, String>,
        options: BTreeMap<String, String>,
    ) -> Result<Volume> {
        let body = VolumeCreate {
            name: name.to_owned(),
            driver: "local".to_owned(),
            labels,
            options,
        };
        let req = Request::new(Method::POST, "/volumes/create").json(&body)?;
        self.call_json(req, "volume create response").await
    }

    /// Create a named volume with `labels` unless one of that name exists (kept from an earlier
    /// launch, or made by a concurrent one).
    pub async fn volume_ensure(&self, name: &str, labels: BTreeMap<String, String>) -> Result<()> {
        match self.volume_create(name, labels, BTreeMap::new()).await {
            Err(e) if !e.is_already_exists() => Err(e),
            _ => Ok(()),
        }
    }

    /// Delete a named volume that no container uses any more (a volume still in use answers
    /// 409, see [`PodmanError::is_conflict`]). There is deliberately no `force`: with it, Podman
    /// removes the containers using the volume while holding the volume's lock, and on 4.3 that
    /// deadlocked the whole service against the container's own `podman container cleanup`
    /// process (observed with concurrent sweeps of a SIGKILLed launch). Remove the container
    /// first, then the volume.
    pub async fn volume_delete(&self, name: &str) -> Result<()> {
        let req = Request::new(Method::DELETE, format!("/volumes/{}", segment(name)));
        self.call(req).await.map(drop)
    }

    /// Volumes carrying every label filter (`key` or `key=value`).
    pub async fn volume_list(&self, labels: &[&str]) -> Result<Vec<Volume>> {
        let filters = label_filter(labels);
        retry_removal_race(|| async {
            let req = Request::new(Method::GET, "/volumes/json").query_json("filters", &filters)?;
            self.call_json(req, "volume list").await
        })
        .await
    }

    /// True when the image exists locally (204), false when it does not (404).
    pub async fn image_exists(&self, name: &str) -> Result<bool> {
        self.exists(format!("/images/{}/exists", image_ref(name))).await
    }

    /// Import a root-filesystem tar as image `reference`, applying Containerfile `changes`
    /// (`CMD ["/bin/sh"]`, `ENV PATH=/bin`, ...). Returns the image ID.
    pub async fn image_import(&self, tar: Bytes, reference: &str, changes: &[&str]) -> Result<String> {
        let mut req = Request::new(Method::POST, "/images/import").query("reference", reference);
        for change in changes {
            req = req.query("changes", change);
        }
        let resp: ImportResponse = self.call_json(req.tar(tar), "image import response").await?;
        Ok(resp.id)
    }

    /// Remove an image by name or ID; `force` also removes containers using it.
    pub async fn image_delete(&self, name: &str, force: bool) -> Result<()> {
        let req = Request::new(Method::DELETE, format!("/images/{}", image_ref(name)))
            .query("force", bool_str(force));
        self.call(req).await.map(drop)
    }
}

/// How often a step whose container monitor was lost ([`PodmanError::is_conmon_lost`]) is
/// repeated, 100 ms more apart each time.
const CONMON_RETRIES: u32 = 2;

/// `step`, repeated while it fails with [`PodmanError::is_conmon_lost`].
async fn retry_conmon_lost<T, Fut>(step: impl FnMut() -> Fut) -> Result<T>
where
    Fut: std::future::Future<Output = Result<T>>,
{
    retry(CONMON_RETRIES, 100, PodmanError::is_conmon_lost, step).await
}

/// A list, asked again while it races a removal ([`PodmanError::is_removal_race`]).
async fn retry_removal_race<T, Fut>(step: impl FnMut() -> Fut) -> Result<T>
where
    Fut: std::future::Future<Output = Result<T>>,
{
    retry(3, 20, PodmanError::is_removal_race, step).await
}

/// `step`, repeated while it fails with an error `again` accepts, at most `retries` more times
/// and `pause_ms` more apart each time; its last result.
pub(crate) async fn retry<T, Fut>(
    retries: u32,
    pause_ms: u64,
    again: impl Fn(&PodmanError) -> bool,
    mut step: impl FnMut() -> Fut,
) -> Result<T>
where
    Fut: std::future::Future<Output = Result<T>>,
{
    let mut attempt = 0;
    loop {
        match step().await {
            Err(e) if attempt < retries && again(&e) => {
                attempt += 1;
                tokio::time::sleep(Duration::from_millis(pause_ms * u64::from(attempt))).await;
            }
            other => return other,
        }
    }
}

/// This host's total memory (`MemTotal` of /proc/meminfo), when it can be read.
pub fn local_memory_total() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    crate::limits::meminfo_total(&text)
}
