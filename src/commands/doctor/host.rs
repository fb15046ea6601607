//! Doctor checks of the host: user namespace mapping and /dev/net/tun (rootless only), and the
//! permissions of the hook approval store and the overlay trust file. Nothing here spawns a
//! process or talks to Podman.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use nix::unistd::{AccessFlags, Uid, User, access};

use super::Check;
use crate::config::{Config, Network, Paths};
use crate::events::oci::{self, ServiceKind};
use crate::fsutil::{self, PrivateDirError};

/// Fewer subordinate ids than this break images with system users (nobody is 65534).
const MIN_SUBIDS: u64 = 65536;

/// All host checks. `rootless`: what the service said (None: no service answered).
pub(super) fn check(config: Option<&Config>, rootless: Option<bool>) -> Vec<Check> {
    let euid = nix::unistd::geteuid();
    let mut checks = Vec::new();
    match rootless {
        Some(false) => checks.push(Check::ok("userns", "rootful service: no subordinate ids needed")),
        None if euid.is_root() => checks.push(Check::skip("userns", "no service; root needs no mapping")),
        _ => {
            checks.push(userns_check(euid));
            if config.is_none_or(|c| c.network == Network::Open) {
                checks.push(tun_check(Path::new("/dev/net/tun")));
            }
        }
    }
    // Host paths from the configuration, or from the environment when it did not load.
    match config.map_or_else(Paths::from_env, |c| Ok(c.paths.clone())) {
        Ok(p) => {
            checks.push(store_check(&p.hook_trust_dir()));
            checks.push(trust_file_check(&p.overlay_trust_file()));
            checks.push(oci_hooks_check(&p, rootless));
        }
        Err(e) => checks.push(Check::fail("files", e.to_string(), "set HOME")),
    }
    checks
}

/// Whether ags's OCI hooks are installed where the service reads hooks (docs/lifecycle.md).
/// Missing is a warning: everything works, but the crash path relies on reconciliation alone.
fn oci_hooks_check(paths: &Paths, rootless: Option<bool>) -> Check {
    let kind = match rootless {
        Some(true) => ServiceKind::Rootless,
        Some(false) => ServiceKind::Rootful,
        None => ServiceKind::current(),
    };
    let status = oci::definitions::status(kind, &oci::ConfEnv::from_env(&paths.config_home));
    match status.fix() {
        None => Check::ok("oci hooks", status.summary()),
        Some(fix) => Check::warn("oci hooks", status.summary(), fix),
    }
}

/// Subordinate uid and gid ranges of the user in /etc/subuid and /etc/subgid.
fn userns_check(euid: Uid) -> Check {
    let name = User::from_uid(euid)
        .ok()
        .flatten()
        .map_or_else(|| euid.to_string(), |u| u.name);
    let read = |f: &str| std::fs::read_to_string(f).unwrap_or_default();
    let uids = subordinate_count(&read("/etc/subuid"), &name, euid.as_raw());
    let gids = subordinate_count(&read("/etc/subgid"), &name, euid.as_raw());
    let detail = format!("{name}: {uids} subordinate uids, {gids} subordinate gids");
    if uids >= MIN_SUBIDS && gids >= MIN_SUBIDS {
        return Check::ok("userns", detail);
    }
    let fix = format!(
        "as root: `usermod --add-subuids 100000-165535 --add-subgids 100000-165535 {name}`, then `podman system migrate` as {name}"
    );
    Check::warn("userns", format!("{detail} (want {MIN_SUBIDS} each)"), fix)
}

/// Total count of the `name:start:count` lines for the user (by name or uid).
fn subordinate_count(text: &str, name: &str, uid: u32) -> u64 {
    let uid = uid.to_string();
    text.lines()
        .filter_map(|l| {
            let mut f = l.trim().split(':');
            let (who, _start, count) = (f.next()?, f.next()?, f.next()?);
            (who == name || who == uid).then(|| count.parse::<u64>().ok())?
        })
        .sum()
}

/// Rootless networking (slirp4netns, pasta) opens /dev/net/tun.
fn tun_check(tun: &Path) -> Check {
    let network_none = "or set `[sandbox] network = \"none\"`";
    if !tun.exists() {
        let fix = format!("as root: `modprobe tun`; {network_none}");
        return Check::warn("tun", format!("{} is missing", tun.display()), fix);
    }
    if access(tun, AccessFlags::R_OK | AccessFlags::W_OK).is_ok() {
        return Check::ok(
            "tun",
            format!("{} is usable (rootless networking)", tun.display()),
        );
    }
    let mode = std::fs::metadata(tun).map_or(0, |m| m.permissions().mode() & 0o777);
    Check::warn(
        "tun",
        format!(
            "{} (mode {mode:04o}) is not read-writable by you: slirp4netns fails",
            tun.display()
        ),
        format!(
            "as root: `chmod 0666 {}` (and a udev rule to keep it); {network_none}",
            tun.display()
        ),
    )
}

/// The hook approval store must be a private directory (missing is fine).
fn store_check(dir: &Path) -> Check {
    let missing = "not created yet (made 0700 at the first approval)";
    let texts = (missing, "is private (0700, yours)", "chmod 700");
    private_check("approval store", dir, fsutil::check_private_dir, texts)
}

/// The overlay trust file must be a private regular file (missing is fine).
fn trust_file_check(file: &Path) -> Check {
    let texts = (
        "not created yet",
        "is private (yours, no group/other access)",
        "chmod 600",
    );
    private_check("overlay trust", file, fsutil::check_private_file, texts)
}

/// `path` passes `check`, or is missing: `missing` or `ok` said after it, else the `chmod` fix.
fn private_check(
    name: &'static str,
    path: &Path,
    check: fn(&Path) -> Result<(), PrivateDirError>,
    (missing, ok, chmod): (&str, &str, &str),
) -> Check {
    if std::fs::symlink_metadata(path).is_err() {
        return Check::ok(name, format!("{} {missing}", path.display()));
    }
    match check(path) {
        Ok(()) => Check::ok(name, format!("{} {ok}", path.display())),
        Err(e) => Check::fail(name, e.to_string(), private_fix(&e, chmod)),
    }
}

fn private_fix(e: &PrivateDirError, chmod: &str) -> String {
    match e {
        PrivateDirError::Mode { path, .. } => format!("`{chmod} {}`", path.display()),
        PrivateDirError::Owner { path, .. } => format!("remove {} or `chown` it to yourself", path.display()),
        PrivateDirError::Symlink(p) | PrivateDirError::NotDir(p) | PrivateDirError::NotFile(p) => {
            format!("move {} away; ags recreates it", p.display())
        }
        PrivateDirError::Io { path, .. } => format!("make {} readable by you", path.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::Status;
    use super::*;

    #[test]
    fn subordinate_ids_by_name_or_uid() {
        let text = "alice:100000:65536\n1000:200000:10\nbob:300000:65536\nbroken\nalice:1:x\n";
        assert_eq!(subordinate_count(text, "alice", 1000), 65546);
        assert_eq!(subordinate_count(text, "carol", 1001), 0);
    }

    #[test]
    fn store_and_trust_file_permissions() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("store");
        assert_eq!(store_check(&store).status, Status::Ok, "missing is fine");
        fsutil::ensure_private_dir(&store).unwrap();
        assert_eq!(store_check(&store).status, Status::Ok);
        std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o755)).unwrap();
        let c = store_check(&store);
        assert_eq!(c.status, Status::Fail);
        assert_eq!(c.fix.unwrap(), format!("`chmod 700 {}`", store.display()));
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&store, &link).unwrap();
        assert!(store_check(&link).fix.unwrap().starts_with("move "));

        let file = dir.path().join("trusted.txt");
        assert_eq!(trust_file_check(&file).status, Status::Ok);
        std::fs::write(&file, "/x\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(
            trust_file_check(&file).fix.unwrap(),
            format!("`chmod 600 {}`", file.display())
        );
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(trust_file_check(&file).status, Status::Ok);
    }

    #[test]
    fn missing_tun_is_a_warning() {
        let c = tun_check(Path::new("/nonexistent/tun"));
        assert_eq!(c.status, Status::Warn);
        assert!(c.fix.unwrap().contains("network = \"none\""));
    }
}
