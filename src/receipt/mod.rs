//! The run receipt (issue 29, docs/receipts.md): one file per launch on the host,
//! `$XDG_STATE_HOME/ags/receipts/<launch>.json`, that binds what was launched to what the
//! launch wrote in the three host logs.
//!
//! - [`Draft::write`], once the plan is final and before the container exists: the image and
//!   the ID it resolves to, the create body as it is sent (env values redacted), the network
//!   policy and the mounts, and the owner (pid and start time), as `<launch>.draft.json`.
//! - [`close`], when the launch ends: the draft plus each hook's approval hash and response
//!   digest (from the hook log) and, per log, the count and last digest of the launch's chain
//!   (`crate::logfile::chain`), each chain ended by a closing record
//!   (`{"launch_id": …, "receipt": "closed"}`). Written atomically as two lines: the body, then
//!   `{"seal": DIGEST}`, the SHA-256 of the body's line. The draft and the chain heads go.
//! - [`recover`]: a draft whose owner died (a killed `ags`) is closed by the next launch or
//!   `ags gc`, `closed_by: "recovery"`.
//!
//! [`verify`] checks a receipt against the logs. What that proves, and what it cannot: see
//! docs/security.md ("The run receipt").

pub mod timeline;
pub mod verify;

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::Paths;
use crate::logfile::chain::{self, Head};
use crate::plan::LaunchPlan;

/// Version of the receipt format.
pub const RECEIPT_VERSION: u32 = 1;

/// What replaces an env value in the receipt's create body.
pub const REDACTED: &str = "(redacted)";

/// The logs a receipt closes, by the name it gives them.
pub fn logs(paths: &Paths) -> [(&'static str, PathBuf); 3] {
    [
        ("hooks", paths.hook_log()),
        ("agent-hooks", paths.agent_hooks_log()),
        ("egress", paths.egress_log()),
    ]
}

/// The directory of receipts.
pub fn dir(paths: &Paths) -> PathBuf {
    paths.state_dir().join("receipts")
}

/// The receipt of `launch` (none for a name that is not a launch id).
pub fn path(paths: &Paths, launch: &str) -> Option<PathBuf> {
    chain::valid_launch(launch).then(|| dir(paths).join(format!("{launch}.json")))
}

fn draft_path(paths: &Paths, launch: &str) -> Option<PathBuf> {
    chain::valid_launch(launch).then(|| dir(paths).join(format!("{launch}.draft.json")))
}

/// What is known before the container exists.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Draft {
    /// The launch.
    pub launch_id: String,
    /// The agent.
    pub agent: String,
    /// The container's name.
    pub container_name: String,
    /// The image as named.
    pub image: String,
    /// The image ID that name resolved to just before the container was created.
    pub image_id: Option<String>,
    /// The create body sent to Podman, env values replaced by [`REDACTED`].
    pub create: serde_json::Value,
    /// The network mode and the egress policy of the plan.
    pub network: serde_json::Value,
    /// The plan's mounts.
    pub mounts: serde_json::Value,
    /// The `ags` process that owns the launch: pid and start time.
    pub owner: (u32, u64),
}

/// One hook run of the launch, from the hook log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookRun {
    /// The hook's name.
    pub name: String,
    /// Its event (`prepare`, `started`, `finished`…).
    pub event: String,
    /// Its approval hash.
    pub hash: String,
    /// The digest of its validated response (prepare hooks that succeeded).
    pub response: Option<String>,
    /// How it ended.
    pub outcome: String,
}

/// The receipt's body: the draft, the hook runs, the closed chains.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Body {
    /// Format version.
    pub version: u32,
    /// What was launched.
    #[serde(flatten)]
    pub draft: Draft,
    /// The hook runs.
    pub hooks: Vec<HookRun>,
    /// Per log: how many records the launch wrote, and the digest of the last.
    pub logs: BTreeMap<String, Head>,
    /// The agent's exit code, when it is known.
    pub exit_code: Option<i32>,
    /// `launch` (the launch's own `ags`) or `recovery` (a later one, after a crash).
    pub closed_by: String,
    /// When it was closed, RFC 3339 UTC.
    pub closed_at: String,
}

/// A written receipt: where, and the SHA-256 of the whole file (what `--report` keeps).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Sealed {
    /// The receipt file.
    pub path: PathBuf,
    /// `sha256:` and the file's digest.
    pub digest: String,
}

impl Draft {
    /// The draft of `plan`, whose image resolved to `image_id`.
    pub fn new(plan: &LaunchPlan, image_id: Option<String>) -> Self {
        let mut create = serde_json::to_value(crate::podman::spec_from_plan(plan)).unwrap_or_default();
        if let Some(env) = create.get_mut("env").and_then(|e| e.as_object_mut()) {
            env.values_mut().for_each(|v| *v = REDACTED.into());
        }
        let network = serde_json::json!({ "mode": plan.network, "egress": plan.egress });
        let owner = std::process::id();
        Self {
            launch_id: plan.launch_id.clone(),
            agent: plan.agent.clone(),
            container_name: plan.container_name.clone(),
            image: plan.image.clone(),
            image_id,
            create,
            network,
            mounts: serde_json::to_value(&plan.mounts).unwrap_or_default(),
            owner: (owner, crate::procfs::process_start_time(owner).unwrap_or(0)),
        }
    }

    /// Keep it until the launch ends (0600 in the private receipts directory).
    pub fn write(&self, paths: &Paths) -> io::Result<()> {
        let path = draft_path(paths, &self.launch_id)
            .ok_or_else(|| io::Error::other(format!("{:?} is not a launch id", self.launch_id)))?;
        for d in [paths.state_dir(), dir(paths)] {
            crate::fsutil::ensure_private_dir(&d).map_err(|e| io::Error::other(e.to_string()))?;
        }
        crate::fsutil::atomic_write(&path, &serde_json::to_vec(self).map_err(io::Error::other)?, 0o600)
    }
}

/// From now on, `launch`'s records are chained (it will have a receipt, or [`abandon`] it).
pub fn open(paths: &Paths, launch: &str) {
    if let Err(e) = chain::open(&paths.state_dir(), launch) {
        eprintln!("ags: warning: the records of this launch cannot be chained: {e}");
    }
}

/// Begin the receipt of `plan`'s launch: its image resolved through `client`, the draft
/// written. A receipt that cannot be begun does not stop the launch: warned about.
pub async fn begin(client: &crate::podman::Client, paths: &Paths, plan: &LaunchPlan) {
    let image_id = match client.image_summary(&plan.image).await {
        Ok(summary) => summary.map(|s| s.id),
        Err(_) => None,
    };
    if let Err(e) = Draft::new(plan, image_id).write(paths) {
        eprintln!("ags: warning: the run receipt of this launch cannot be written: {e}");
    }
}

/// At the end of the launch, once every record of it is written: its receipt closed (warned
/// about when it cannot be).
pub fn end(paths: &Paths, launch: &str, code: Option<u8>) -> Option<Sealed> {
    close(paths, launch, code.map(i32::from), "launch").unwrap_or_else(|e| {
        eprintln!("ags: warning: the run receipt of this launch could not be closed: {e}");
        None
    })
}

/// Close the receipt of `launch` from its draft: the hook runs and the chain heads added, written
/// atomically, the draft and the heads removed. `None` when the launch has no draft.
pub fn close(
    paths: &Paths,
    launch: &str,
    exit_code: Option<i32>,
    closed_by: &str,
) -> io::Result<Option<Sealed>> {
    let (Some(draft_at), Some(at)) = (draft_path(paths, launch), path(paths, launch)) else {
        return Ok(None);
    };
    let draft: Draft = match std::fs::read(&draft_at) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(io::Error::other)?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    if at.exists() {
        let _ = std::fs::remove_file(&draft_at); // closed by a racing recovery
        return Ok(None);
    }
    let mut logs_closed = BTreeMap::new();
    for (name, log) in logs(paths) {
        // The chain's last record marks where the receipt closed it in the file: a record of
        // the launch before it must be in the chain (an empty chain gets its place too).
        // Ended under the log's lock with it: a record racing the close carries no link.
        let closing = serde_json::json!({ "launch_id": launch, "receipt": "closed" });
        let ended = crate::logfile::end_chain(&log, launch, format!("{closing}\n").as_bytes())?;
        let head = ended.map_or_else(|| chain::head(&log, launch), Ok)?;
        logs_closed.insert(name.to_string(), head);
    }
    let body = Body {
        version: RECEIPT_VERSION,
        draft,
        hooks: hook_runs(&paths.hook_log(), launch)?,
        logs: logs_closed,
        exit_code,
        closed_by: closed_by.into(),
        closed_at: crate::time::rfc3339(std::time::SystemTime::now()),
    };
    let mut bytes = serde_json::to_vec(&body).map_err(io::Error::other)?;
    let seal = chain::digest(&bytes);
    bytes.extend_from_slice(format!("\n{{\"seal\":\"{seal}\"}}\n").as_bytes());
    // Never over a receipt already there: a second recovery racing the first reads the heads
    // after the first forgot them, and would seal zero records.
    let written = crate::fsutil::atomic_create(&at, &bytes, 0o600);
    let _ = std::fs::remove_file(&draft_at);
    chain::forget(&paths.state_dir(), launch);
    match written {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(None),
        other => other?,
    }
    Ok(Some(Sealed {
        path: at,
        digest: file_digest(&bytes),
    }))
}

/// The SHA-256 of a receipt file's bytes, as `--report` shows it.
pub fn file_digest(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(bytes)))
}

/// The hook runs of `launch` in the hook log.
fn hook_runs(log: &Path, launch: &str) -> io::Result<Vec<HookRun>> {
    let records: Vec<crate::hooks::log::Record> = crate::logfile::read_all(log)?;
    let name = |v: serde_json::Result<serde_json::Value>| {
        v.ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default()
    };
    Ok(records
        .into_iter()
        .filter(|r| r.launch_id == launch)
        .map(|r| HookRun {
            event: name(serde_json::to_value(r.event)),
            outcome: name(serde_json::to_value(r.outcome)),
            name: r.name,
            hash: r.hash,
            response: r.response,
        })
        .collect())
}

/// The chain heads of `launch` dropped when it has no draft (a launch refused before its
/// plan): no receipt will close them. Its records stay in the logs.
pub fn abandon(paths: &Paths, launch: &str) {
    if draft_path(paths, launch).is_some_and(|d| !d.exists()) {
        chain::forget(&paths.state_dir(), launch);
    }
}

/// Chain heads left by a killed `ags` that had no draft (its pid, in its id `ags-PID-NANOS`, is
/// gone): dropped.
fn sweep_heads(paths: &Paths) {
    let Ok(entries) = std::fs::read_dir(paths.state_dir().join("chains")) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(chain::GONE) {
            let _ = std::fs::remove_dir_all(entry.path());
            continue;
        }
        let pid = name.split('-').nth(1).and_then(|p| p.parse::<i32>().ok());
        let gone = pid.is_some_and(|p| {
            rustix::process::test_kill_process(
                rustix::process::Pid::from_raw(p).unwrap_or(rustix::process::Pid::INIT),
            )
            .is_err()
        });
        if gone {
            abandon(paths, &name);
        }
    }
}

/// Close the receipts whose launch's `ags` died (its draft left behind); messages for the user.
pub fn recover(paths: &Paths) -> Vec<String> {
    sweep_heads(paths);
    let Ok(entries) = std::fs::read_dir(dir(paths)) else {
        return Vec::new();
    };
    let mut said = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(launch) = name.strip_suffix(".draft.json") else {
            continue;
        };
        let Ok(draft) = std::fs::read(entry.path())
            .map_err(io::Error::other)
            .and_then(|b| serde_json::from_slice::<Draft>(&b).map_err(io::Error::other))
        else {
            continue;
        };
        if crate::procfs::alive(draft.owner.0, draft.owner.1) {
            continue;
        }
        if let Err(e) = close(paths, launch, None, "recovery") {
            said.push(format!(
                "warning: the receipt of launch {launch} could not be closed: {e}"
            ));
        }
    }
    said
}

#[cfg(test)]
mod attack1_tests;
#[cfg(test)]
mod attack2_tests;
#[cfg(test)]
mod attack3_tests;
#[cfg(test)]
mod tests;
