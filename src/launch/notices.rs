//! Podman's create warnings (e.g. "Resource limits are not supported and ignored on cgroups V1
//! rootless systems"), shown once per service rather than on every launch: they describe the
//! host, not the launch. What was shown is remembered in `$XDG_STATE_HOME/ags/podman-warnings`
//! as one digest per (service URL, warning text) line — no text, nothing secret.
//!
//! Best effort: when the state cannot be read or written, the warning is shown every time.
//!
//! Also [`say`]: how the end of a launch writes to stderr, which may be a pipe closed early.

use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::config::Paths;
use crate::text::escape_controls;

/// Write `text` on stderr as is; a failed write (stderr a pipe whose reader is gone, as in
/// `ags … 2>&1 | head`) is ignored. `eprint!` would panic there and end `ags` before the checks
/// after the launch (git, protected files) and the finished hooks have run; the agent can time
/// its output so that this happens (issue 22, attack2-2).
pub fn say(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// [`say`] `line` and a newline.
pub fn say_line(line: &str) {
    say(&format!("{line}\n"));
}

/// The file that remembers which warnings were shown, under the user's state directory.
fn shown_file() -> Option<PathBuf> {
    Paths::from_env()
        .ok()
        .map(|p| p.state_dir().join("podman-warnings"))
}

/// Print each of `warnings` from the service at `service` unless it was printed before.
pub fn print_create_warnings(service: &str, warnings: &[String]) {
    if warnings.is_empty() {
        return;
    }
    let file = shown_file();
    for w in warnings {
        let fresh = file.as_deref().is_none_or(|f| remember(f, &digest(service, w)));
        if fresh {
            eprintln!(
                "ags: warning: podman: {} (said once for {service})",
                escape_controls(w).replace('\n', "\\n")
            );
        }
    }
}

fn digest(service: &str, warning: &str) -> String {
    let mut h = Sha256::new();
    h.update(service.as_bytes());
    h.update([0]);
    h.update(warning.as_bytes());
    hex::encode(&h.finalize()[..16])
}

/// Record `digest` in `file`; false when it was there already. True (show it) on any error.
fn remember(file: &Path, digest: &str) -> bool {
    const MAX: usize = 64 * 1024;
    if let Ok(seen) = crate::fsutil::read_small_text_nofollow(file, MAX)
        && seen.lines().any(|l| l == digest)
    {
        return false;
    }
    let dir = file.parent().unwrap_or(file);
    if crate::fsutil::ensure_private_dir(dir).is_ok()
        && let Ok(mut f) = crate::fsutil::open_private_append(file)
    {
        let _ = writeln!(f, "{digest}");
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_warning_once_per_service() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("ags/podman-warnings");
        let a = digest("unix:///a.sock", "limits ignored");
        let b = digest("unix:///b.sock", "limits ignored");
        assert_ne!(a, b);
        assert!(remember(&file, &a));
        assert!(!remember(&file, &a));
        assert!(remember(&file, &b));
        assert!(remember(&file, &digest("unix:///a.sock", "another")));
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(!text.contains("limits"), "digests only: {text}");
    }
}
