//! The digest of a launch plan (`ags plan` prints it, `--expect-plan` pins it, docs/ci.md):
//! SHA-256 of the plan's JSON with what differs between two launches of the same thing taken
//! out: the launch id, the random name suffix and the process of `ags` (in the labels, the
//! container and volume names, the host staging paths). Everything else counts: the image
//! name, the command, the environment's keys and sources (values of staged secrets are never
//! in the plan), the mounts, the network policy, the hooks' approval hashes, the limits.
//! Pure.

use sha2::{Digest, Sha256};

use super::{LaunchIdentity, LaunchPlan};

/// `sha256:` and the hex digest of `plan`, made by the launch `identity`.
pub fn digest(plan: &LaunchPlan, identity: &LaunchIdentity) -> String {
    let mut value = serde_json::to_value(plan).expect("a plan serializes");
    if let Some(labels) = value.get_mut("labels").and_then(|l| l.as_object_mut()) {
        for key in ["io.ags.owner-pid", "io.ags.owner-start"] {
            if let Some(v) = labels.get_mut(key) {
                *v = serde_json::Value::String(format!("<{key}>"));
            }
        }
    }
    let stage = format!("{}-{}-{}", identity.pid, identity.start_time, identity.suffix);
    let text = serde_json::to_string(&value)
        .expect("a plan serializes")
        .replace(&identity.launch_id, "<launch-id>")
        .replace(&stage, "<stage>")
        .replace(&identity.suffix, "<suffix>");
    format!("sha256:{}", hex::encode(Sha256::digest(text.as_bytes())))
}

/// Whether `pinned` (what `--expect-plan` got) names `digest`: the same hex digits, with or
/// without the `sha256:` prefix.
pub fn matches(pinned: &str, digest: &str) -> bool {
    let bare = |s: &str| s.strip_prefix("sha256:").unwrap_or(s).to_ascii_lowercase();
    bare(pinned) == bare(digest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pin_matches_with_or_without_its_prefix() {
        assert!(matches("sha256:ABcd", "sha256:abcd"));
        assert!(matches("abcd", "sha256:abcd"));
        assert!(!matches("abce", "sha256:abcd"));
    }
}
