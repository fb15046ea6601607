//! A seccomp profile that keeps setuid and setgid bits out of files the agent writes.
//!
//! The workspace is bind-mounted `nosuid`, which makes such a bit ineffective *inside* the
//! container, but a bit the agent sets is still stored in the file: on the host the file is
//! setuid to the user (to root when `ags` runs as root on the rootful service). The profile is
//! the service host's default (`/usr/share/containers/seccomp.json`) with the calls that set a
//! mode — `chmod`, `fchmod`, `fchmodat`, `fchmodat2`, `open`, `openat`, `creat`, `mknod`,
//! `mknodat` — allowed only when the mode has neither bit, and `EPERM` otherwise; `openat2`
//! (whose mode sits behind a pointer) answers `ENOSYS`, as on kernels without it, and callers
//! fall back to `openat`. Only for a local (unix socket) service: the path is on this host.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// The default profile of Podman's `containers-common`.
pub const BASE_PROFILE: &str = "/usr/share/containers/seccomp.json";

/// Why the profile could not be derived from the base one or written.
#[derive(Debug, thiserror::Error)]
pub enum SeccompError {
    #[error("not JSON: {0}")]
    NotJson(serde_json::Error),
    #[error("no `syscalls` list")]
    NoSyscalls,
    #[error("{0}")]
    Encode(serde_json::Error),
    #[error("reading {BASE_PROFILE}: {0}")]
    Read(std::io::Error),
    #[error("{BASE_PROFILE}: {0}")]
    Base(Box<SeccompError>),
    #[error("creating {}: {error}", path.display())]
    Create { path: PathBuf, error: std::io::Error },
    #[error("writing {}: {error}", path.display())]
    Write { path: PathBuf, error: std::io::Error },
}

/// The calls that take a mode, and the index of the mode argument.
const MODE_CALLS: &[(&str, u32)] = &[
    ("chmod", 1),
    ("fchmod", 1),
    ("fchmodat", 2),
    ("fchmodat2", 2),
    ("open", 2),
    ("openat", 3),
    ("creat", 1),
    ("mknod", 1),
    ("mknodat", 2),
];
const S_ISUID: u64 = 0o4000;
const S_ISGID: u64 = 0o2000;

/// Derive the profile from `base` (a Podman seccomp profile).
pub fn no_setuid_profile(base: &[u8]) -> Result<Vec<u8>, SeccompError> {
    let mut profile: Value = serde_json::from_slice(base).map_err(SeccompError::NotJson)?;
    let rules = profile
        .get_mut("syscalls")
        .and_then(Value::as_array_mut)
        .ok_or(SeccompError::NoSyscalls)?;
    let ours: Vec<&str> = MODE_CALLS.iter().map(|(n, _)| *n).chain(["openat2"]).collect();
    for rule in rules.iter_mut() {
        if let Some(names) = rule.get_mut("names").and_then(Value::as_array_mut) {
            names.retain(|n| !n.as_str().is_some_and(|n| ours.contains(&n)));
        }
    }
    rules.retain(|r| r["names"].as_array().is_none_or(|n| !n.is_empty()));
    for (name, index) in MODE_CALLS {
        let masked = |mask: u64, value: u64| json!({"index": index, "value": mask, "valueTwo": value, "op": "SCMP_CMP_MASKED_EQ"});
        rules.push(
            json!({"names": [name], "action": "SCMP_ACT_ALLOW", "args": [masked(S_ISUID | S_ISGID, 0)]}),
        );
        for bit in [S_ISUID, S_ISGID] {
            rules.push(json!({"names": [name], "action": "SCMP_ACT_ERRNO", "errnoRet": libc::EPERM, "args": [masked(bit, bit)]}));
        }
    }
    rules.push(json!({"names": ["openat2"], "action": "SCMP_ACT_ERRNO", "errnoRet": libc::ENOSYS}));
    serde_json::to_vec_pretty(&profile).map_err(SeccompError::Encode)
}

/// Write the profile derived from [`BASE_PROFILE`] to `dir` (content-addressed, atomically) and
/// return its path.
pub fn write_profile(dir: &Path) -> Result<PathBuf, SeccompError> {
    let base = std::fs::read(BASE_PROFILE).map_err(SeccompError::Read)?;
    let profile = no_setuid_profile(&base).map_err(|e| SeccompError::Base(Box::new(e)))?;
    let digest = {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(&profile))
    };
    let path = dir.join(format!("seccomp-no-setuid-{}.json", &digest[..12]));
    if std::fs::read(&path).is_ok_and(|b| b == profile) {
        return Ok(path);
    }
    std::fs::create_dir_all(dir).map_err(|error| SeccompError::Create {
        path: dir.into(),
        error,
    })?;
    crate::fsutil::atomic_write(&path, &profile, 0o644).map_err(|error| SeccompError::Write {
        path: path.clone(),
        error,
    })?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_calls_become_conditional() {
        let base = br#"{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[
            {"names":["read","chmod","openat2"],"action":"SCMP_ACT_ALLOW","args":[]},
            {"names":["open"],"action":"SCMP_ACT_ALLOW"}]}"#;
        let out: Value = serde_json::from_slice(&no_setuid_profile(base).unwrap()).unwrap();
        let rules = out["syscalls"].as_array().unwrap();
        assert_eq!(rules[0]["names"], json!(["read"]));
        let chmod: Vec<&Value> = rules.iter().filter(|r| r["names"] == json!(["chmod"])).collect();
        assert_eq!(chmod.len(), 3);
        assert_eq!(chmod[0]["args"][0]["value"], json!(0o6000));
        assert_eq!(chmod[1]["errnoRet"], json!(libc::EPERM));
        assert!(
            rules
                .iter()
                .any(|r| r["names"] == json!(["openat2"]) && r["errnoRet"] == json!(libc::ENOSYS))
        );
        assert!(
            !rules
                .iter()
                .any(|r| r["names"] == json!(["open"]) && r["args"].is_null())
        );
    }
}
