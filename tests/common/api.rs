//! Podman REST calls for the harness itself, made with `curl --unix-socket`, so that cleanup and
//! checks never depend on the `ags` library under test. Blocking, one curl process per request.
//!
//! Ref: https://docs.podman.io/en/latest/_static/api.html (libpod routes under `/v4.0.0/libpod`
//! answer on Podman 4 and 5).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

use super::{Mode, tool};

/// The libpod route prefix used for every request.
pub const API_PREFIX: &str = "/v4.0.0/libpod";

/// One HTTP answer: status code and body.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub body: Vec<u8>,
}

impl Reply {
    /// The body as JSON (panics with the body when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("reply is not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    /// Whether the status is 2xx.
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The body as text (lossy).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Send `method path` (below [`API_PREFIX`]) to the socket, with an optional JSON body. Errors are
/// transport failures (curl could not connect or timed out), never HTTP statuses.
pub fn request(socket: &Path, method: &str, path: &str, json: Option<&Value>) -> Result<Reply, String> {
    let body = json.map(|v| v.to_string().into_bytes());
    request_body(
        socket,
        method,
        path,
        body.as_deref().map(|b| ("application/json", b)),
    )
}

/// [`request`] with any body: `(content type, bytes)`. (Without a content type other than a
/// form's, Go's form parser eats the body.)
pub fn request_body(
    socket: &Path,
    method: &str,
    path: &str,
    body: Option<(&str, &[u8])>,
) -> Result<Reply, String> {
    let mut cmd = Command::new(tool("curl"));
    cmd.args(["-sS", "--max-time", "120", "--unix-socket"])
        .arg(socket)
        .args(["-X", method, "-w", "\n%{http_code}"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some((content_type, _)) = body {
        // Without a content type Go's form parser eats the body ("Decode(): EOF").
        cmd.args([
            "-H",
            &format!("Content-Type: {content_type}"),
            "--data-binary",
            "@-",
        ]);
    }
    cmd.arg(format!("http://d{API_PREFIX}{path}"));
    let mut child = cmd.spawn().map_err(|e| format!("cannot run curl: {e}"))?;
    let mut stdin = child.stdin.take().expect("piped stdin");
    if let Some((_, body)) = body {
        stdin
            .write_all(body)
            .map_err(|e| format!("writing the request body to curl: {e}"))?;
    }
    drop(stdin);
    let out = child
        .wait_with_output()
        .map_err(|e| format!("waiting for curl: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "curl {method} {path} on {}: {} {}",
            socket.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let mut body = out.stdout;
    let split = body
        .iter()
        .rposition(|&b| b == b'\n')
        .ok_or("curl printed no status")?;
    let status = std::str::from_utf8(&body[split + 1..])
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .ok_or_else(|| {
            format!(
                "curl printed a bad status line: {:?}",
                String::from_utf8_lossy(&body)
            )
        })?;
    body.truncate(split);
    Ok(Reply { status, body })
}

/// Like [`request`], but panics on a transport failure (the service must be up in a test).
pub fn call(mode: Mode, method: &str, path: &str, json: Option<&Value>) -> Reply {
    request(&mode.socket(), method, path, json).unwrap_or_else(|e| panic!("{mode}: {e}"))
}

/// Whether a Podman service answers `_ping` on the socket.
pub fn ping(socket: &Path) -> Result<(), String> {
    let reply = request(socket, "GET", "/_ping", None)?;
    if reply.ok() && reply.body == b"OK" {
        Ok(())
    } else {
        Err(format!("_ping answered {} {:?}", reply.status, reply.text()))
    }
}

/// Whether `image` exists in the storage of the service on `socket`.
pub fn image_exists(socket: &Path, image: &str) -> Result<bool, String> {
    let reply = request(socket, "GET", &format!("/images/{image}/exists"), None)?;
    match reply.status {
        204 => Ok(true),
        404 => Ok(false),
        s => Err(format!("images/{image}/exists answered {s}: {}", reply.text())),
    }
}

/// Percent-encode a query parameter value (everything but RFC 3986 unreserved characters).
pub fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len() * 3);
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The `filters` query parameter selecting `label` ("key" or "key=value").
fn label_filter(label: &str) -> String {
    encode(&serde_json::json!({ "label": [label] }).to_string())
}

/// Containers (all states) carrying `label`: (id, name).
pub fn try_containers_with_label(mode: Mode, label: &str) -> Result<Vec<(String, String)>, String> {
    let path = format!("/containers/json?all=true&filters={}", label_filter(label));
    let list = listing(mode, &path)?;
    Ok(list
        .iter()
        .map(|c| {
            let id = c["Id"].as_str().unwrap_or_default().to_owned();
            let name = c["Names"][0].as_str().unwrap_or(&id).to_owned();
            (id, name)
        })
        .collect())
}

/// Names of the volumes carrying `label`.
pub fn try_volumes_with_label(mode: Mode, label: &str) -> Result<Vec<String>, String> {
    let list = listing(mode, &format!("/volumes/json?filters={}", label_filter(label)))?;
    Ok(list
        .iter()
        .filter_map(|v| v["Name"].as_str().map(str::to_owned))
        .collect())
}

/// Remove the agent state volumes `ags` kept for projects under `root` (label
/// `io.ags.state-workdir`, whose value is the project's path): they outlive every launch by
/// design, so a test's own label does not reach them. Returns the names removed.
pub fn cleanup_state_volumes_under(mode: Mode, root: &std::path::Path) -> Vec<String> {
    let key = "io.ags.state-workdir";
    let list = listing(mode, &format!("/volumes/json?filters={}", label_filter(key))).unwrap_or_else(|e| {
        super::loud(&format!("WARNING: {mode}: listing state volumes: {e}"));
        Vec::new()
    });
    let mut removed = Vec::new();
    for v in list {
        let (Some(name), Some(project)) = (v["Name"].as_str(), v["Labels"][key].as_str()) else {
            continue;
        };
        if !std::path::Path::new(project).starts_with(root) {
            continue;
        }
        match request(
            &mode.socket(),
            "DELETE",
            &format!("/volumes/{}", encode(name)),
            None,
        ) {
            Ok(r) if r.ok() || r.status == 404 => removed.push(format!("volume:{name}")),
            Ok(r) => super::loud(&format!(
                "WARNING: {mode}: removing {name}: {} {}",
                r.status,
                r.text()
            )),
            Err(e) => super::loud(&format!("WARNING: {mode}: removing {name}: {e}")),
        }
    }
    removed
}

/// A GET answering a JSON array.
fn listing(mode: Mode, path: &str) -> Result<Vec<Value>, String> {
    let reply = request(&mode.socket(), "GET", path, None)?;
    if !reply.ok() {
        return Err(format!("{mode}: GET {path}: {} {}", reply.status, reply.text()));
    }
    match serde_json::from_slice(&reply.body) {
        Ok(Value::Array(items)) => Ok(items),
        Ok(Value::Null) => Ok(Vec::new()),
        _ => Err(format!("{mode}: GET {path}: not a JSON array: {}", reply.text())),
    }
}

/// [`try_containers_with_label`], panicking on failure.
pub fn containers_with_label(mode: Mode, label: &str) -> Vec<(String, String)> {
    try_containers_with_label(mode, label).unwrap_or_else(|e| panic!("{e}"))
}

/// [`try_volumes_with_label`], panicking on failure.
pub fn volumes_with_label(mode: Mode, label: &str) -> Vec<String> {
    try_volumes_with_label(mode, label).unwrap_or_else(|e| panic!("{e}"))
}

/// Everything carrying `label`, as `container:NAME` and `volume:NAME`, containers first.
pub fn list_by_label(mode: Mode, label: &str) -> Vec<String> {
    let containers = containers_with_label(mode, label)
        .into_iter()
        .map(|(_, n)| format!("container:{n}"));
    let volumes = volumes_with_label(mode, label)
        .into_iter()
        .map(|n| format!("volume:{n}"));
    containers.chain(volumes).collect()
}

/// Force-remove every container (with its anonymous volumes) and then every volume carrying
/// `label`. Best effort: returns what was removed; failures are reported on stderr (never a
/// panic, so it is safe in `Drop`). A 404 counts as removed by someone else.
pub fn cleanup_label(mode: Mode, label: &str) -> Vec<String> {
    let mut removed = Vec::new();
    let mut failures = Vec::new();
    let containers = try_containers_with_label(mode, label).unwrap_or_else(|e| {
        failures.push(e);
        Vec::new()
    });
    for (id, name) in containers {
        match request(
            &mode.socket(),
            "DELETE",
            &format!("/containers/{id}?force=true&v=true"),
            None,
        ) {
            Ok(r) if r.ok() || r.status == 404 => removed.push(format!("container:{name}")),
            Ok(r) => failures.push(format!("container {name}: {} {}", r.status, r.text())),
            Err(e) => failures.push(format!("container {name}: {e}")),
        }
    }
    let volumes = try_volumes_with_label(mode, label).unwrap_or_else(|e| {
        failures.push(e);
        Vec::new()
    });
    for name in volumes {
        match request(
            &mode.socket(),
            "DELETE",
            // Never `force`: the containers are gone already, and a forced volume removal that
            // has to remove a container deadlocked Podman 4.3 (see `Client::volume_delete`).
            &format!("/volumes/{}", encode(&name)),
            None,
        ) {
            Ok(r) if r.ok() || r.status == 404 => removed.push(format!("volume:{name}")),
            Ok(r) => failures.push(format!("volume {name}: {} {}", r.status, r.text())),
            Err(e) => failures.push(format!("volume {name}: {e}")),
        }
    }
    for f in failures {
        super::loud(&format!("WARNING: {mode}: cleanup of {label}: {f}"));
    }
    removed
}

/// Create a named volume with labels (used by the harness's own smoke test).
pub fn create_volume(mode: Mode, name: &str, labels: &[(&str, &str)]) {
    let labels: serde_json::Map<String, Value> = labels
        .iter()
        .map(|(k, v)| ((*k).to_owned(), Value::from(*v)))
        .collect();
    let body = serde_json::json!({ "Name": name, "Label": labels });
    let reply = call(mode, "POST", "/volumes/create", Some(&body));
    assert!(
        reply.ok(),
        "{mode}: creating volume {name}: {} {}",
        reply.status,
        reply.text()
    );
}

/// Create (not start) a container from `image` with labels; returns its id.
pub fn create_container(mode: Mode, name: &str, image: &str, labels: &[(&str, &str)]) -> String {
    let labels: serde_json::Map<String, Value> = labels
        .iter()
        .map(|(k, v)| ((*k).to_owned(), Value::from(*v)))
        .collect();
    let body = serde_json::json!({
        "name": name,
        "image": image,
        "command": ["/bin/true"],
        "labels": labels,
        "netns": { "nsmode": "none" },
    });
    let reply = call(mode, "POST", "/containers/create", Some(&body));
    assert!(
        reply.ok(),
        "{mode}: creating container {name}: {} {}",
        reply.status,
        reply.text()
    );
    reply.json()["Id"]
        .as_str()
        .expect("create answers an Id")
        .to_owned()
}

/// Create, start and wait for a container from the libpod create `spec`, then remove it: its
/// exit code and output (stdout and stderr, from its log). Through the API, not `podman run`:
/// the remote client's attach can miss the output of a container that exits at once.
pub fn run_to_end(mode: Mode, spec: &Value) -> (i64, String) {
    let created = call(mode, "POST", "/containers/create", Some(spec));
    assert!(created.ok(), "{mode}: create: {}", created.text());
    let id = created.json()["Id"]
        .as_str()
        .expect("create answers an Id")
        .to_owned();
    let started = call(mode, "POST", &format!("/containers/{id}/start"), None);
    let waited = call(mode, "POST", &format!("/containers/{id}/wait"), None);
    let logs = call(
        mode,
        "GET",
        &format!("/containers/{id}/logs?stdout=true&stderr=true"),
        None,
    );
    call(mode, "DELETE", &format!("/containers/{id}?force=true"), None);
    assert!(started.ok(), "{mode}: start: {}", started.text());
    assert!(waited.ok(), "{mode}: wait: {}", waited.text());
    let code = waited.text().trim().parse().expect("wait answers the exit code");
    (code, demux(&logs.body))
}

/// The text of a multiplexed log stream (8-byte frame headers: stream, 0, 0, 0, length BE).
pub fn demux(mut raw: &[u8]) -> String {
    let mut out = Vec::new();
    while raw.len() >= 8 {
        let len = u32::from_be_bytes([raw[4], raw[5], raw[6], raw[7]]) as usize;
        let end = (8 + len).min(raw.len());
        out.extend_from_slice(&raw[8..end]);
        raw = &raw[end..];
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The major version of the mode's Podman service.
pub fn podman_major(mode: Mode) -> u32 {
    let version = call(mode, "GET", "/version", None).json();
    let text = version["Version"].as_str().unwrap_or_default().to_string();
    text.split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .unwrap_or_else(|| panic!("no major version in {version}"))
}
