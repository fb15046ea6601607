//! `keep-id` spelled out: for a rootless service on this machine that runs as the caller, the
//! create body carries the user namespace, /etc/passwd line and /etc/group line that Podman's
//! `keep-id` would compute, as `userns` `private` with explicit `idmappings`, `passwd_entry` and
//! `group_entry`.
//!
//! Why: for every `keep-id` create a rootless service reads its user's subordinate id ranges
//! through libsubid (Podman 4.3 and 5.4 alike: `GetKeepIDMapping` → `GetConfiguredMappings`),
//! and libsubid is not thread-safe: concurrent creates fail with "keep-id requires additional
//! UIDs or GIDs" or crash the service (SIGSEGV in `subid_get_gid_ranges`). Given the mapping,
//! the service reads no subordinate ids (strace of a 4.3.1 service: no open of /etc/subuid or
//! /etc/subgid for such a create, one each for a `keep-id` one), so these creates need not take
//! turns.
//!
//! The values are computed as Podman computes them (`pkg/util` `GetKeepIDMapping`, libpod
//! `userPasswdEntry` and `generateCurrentUserGroupEntry`), from this host's /etc/subuid,
//! /etc/subgid and user database. Anything this cannot reproduce exactly keeps `keep-id`: a
//! service of another user or on another machine, subordinate ids from an NSS module, a primary
//! group 0, a home directory under /proc, /dev, /sys or /run or not a clean absolute path, and
//! any field with `:`, `$` or a newline. Differences that remain (docs/security.md): Podman
//! before 4.5 ignores `group_entry`, so there the group is Podman's numeric entry
//! (`1000:x:1000:1000`) instead of `keep-id`'s named one; and an image that already names a user
//! or group like the caller, with other ids, still gets the caller's line.

use std::path::{Component, Path};

use super::spec::{IdMap, IdMappings, MountType, Namespace, NsMode, SpecGenerator};
use super::{Client, Endpoint};

/// What `keep-id` derives from the host for the service's user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeepId {
    /// User name (`pw_name`).
    pub name: String,
    /// The user's uid (the service's).
    pub uid: u32,
    /// The primary gid of the user's passwd entry (`pw_gid`; the passwd line shows it).
    pub passwd_gid: u32,
    /// The service's gid (the group the container user runs as).
    pub gid: u32,
    /// The GECOS field up to its first comma (Go's `user.User.Name`).
    pub full_name: String,
    /// The user's home directory.
    pub home: String,
    /// The name of the group `gid`.
    pub group_name: String,
    /// The user's subordinate uids (the sum of their /etc/subuid ranges).
    pub subuids: u32,
    /// The user's subordinate gids.
    pub subgids: u32,
}

/// Replace a plain `keep-id` user namespace in `spec` by its spelled-out equivalent when the
/// service is a local unix socket owned by the spec's user (and group). Returns true when the
/// spec was changed; false leaves it as it was (the service then computes `keep-id` itself).
pub fn spell_out_keep_id(client: &Client, spec: &mut SpecGenerator) -> bool {
    let Endpoint::Unix(path) = client.endpoint() else {
        return false;
    };
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    use std::os::unix::fs::MetadataExt;
    if !is_plain_keep_id(spec) {
        return false;
    }
    // [`KeepId::apply`] checks that the spec runs as the socket's owner, who is not root.
    match KeepId::read_host(meta.uid(), meta.gid()) {
        Some(keep_id) => keep_id.apply(spec),
        None => false,
    }
}

fn is_plain_keep_id(spec: &SpecGenerator) -> bool {
    spec.userns == Some(Namespace::new(NsMode::KeepId))
}

impl KeepId {
    /// Read what `keep-id` would use for `uid` running as `gid` from this host; `None` when
    /// something is missing or not reproducible (see the module doc).
    pub fn read_host(uid: u32, gid: u32) -> Option<KeepId> {
        let nsswitch = std::fs::read_to_string("/etc/nsswitch.conf").unwrap_or_default();
        if !subids_from_files(&nsswitch) {
            return None;
        }
        let user = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid)).ok()??;
        let group = nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(gid)).ok()??;
        let gecos = user.gecos.into_string().ok()?;
        let subuids = subid_total(&std::fs::read_to_string("/etc/subuid").ok()?, &user.name, uid)?;
        let subgids = subid_total(&std::fs::read_to_string("/etc/subgid").ok()?, &user.name, uid)?;
        Some(KeepId {
            full_name: gecos.split(',').next().unwrap_or_default().to_string(),
            home: user.dir.into_os_string().into_string().ok()?,
            name: user.name,
            uid,
            passwd_gid: user.gid.as_raw(),
            gid,
            group_name: group.name,
            subuids,
            subgids,
        })
    }

    /// Put the spelled-out `keep-id` into `spec` (which must ask for plain `keep-id` and run as
    /// `uid:gid`); false, and `spec` unchanged, when that is not reproducible.
    pub fn apply(&self, spec: &mut SpecGenerator) -> bool {
        if self.uid == 0 || self.gid == 0 || self.subuids == 0 || self.subgids == 0 {
            return false;
        }
        if !is_plain_keep_id(spec) || spec.user.as_deref() != Some(&format!("{}:{}", self.uid, self.gid)) {
            return false;
        }
        let Some(home) = passwd_home(&self.home, spec) else {
            return false;
        };
        let passwd = format!(
            "{}:*:{}:{}:{}:{}:/bin/sh",
            self.name, self.uid, self.passwd_gid, self.full_name, home
        );
        let group = format!("{}:x:{}:{}", self.group_name, self.gid, self.name);
        let fields = [&self.name, &self.full_name, &home, &self.group_name];
        if fields.iter().any(|f| f.contains([':', '$', '\n'])) {
            return false;
        }
        spec.userns = Some(Namespace::new(NsMode::Private));
        spec.idmappings = Some(IdMappings {
            uid_map: keep_id_map(self.uid, self.subuids),
            gid_map: keep_id_map(self.gid, self.subgids),
        });
        spec.passwd_entry = Some(passwd);
        spec.group_entry = Some(group);
        true
    }
}

/// Podman's `keep-id` mapping of `id` (not 0) with `total` subordinate ids, in the service's
/// namespace (0: the service's user, 1..=total: its subordinate ids): the ids below `id` map to
/// the first subordinate ids, `id` to the user, the ids above `id` to the rest.
fn keep_id_map(id: u32, total: u32) -> Vec<IdMap> {
    let mut map = vec![
        IdMap {
            container_id: 0,
            host_id: 1,
            size: id.min(total),
        },
        IdMap {
            container_id: id,
            host_id: 0,
            size: 1,
        },
    ];
    if total > id {
        map.push(IdMap {
            container_id: id + 1,
            host_id: id + 1,
            size: total - id,
        });
    }
    map
}

/// True when libsubid reads /etc/subuid and /etc/subgid: /etc/nsswitch.conf has no `subid:`
/// line, or one naming `files`.
fn subids_from_files(nsswitch: &str) -> bool {
    nsswitch
        .lines()
        .map(|l| l.split('#').next().unwrap_or_default().trim())
        .filter_map(|l| l.strip_prefix("subid:"))
        .all(|sources| matches!(sources.trim(), "" | "files"))
}

/// The number of subordinate ids of the user `name` (uid `uid`) in a /etc/subuid-style text, as
/// libsubid counts them: every `owner:start:count` line whose owner is the name or the uid
/// (lines that do not parse are skipped). `None` when there are none or too many.
fn subid_total(text: &str, name: &str, uid: u32) -> Option<u32> {
    let uid = uid.to_string();
    let mut total: u64 = 0;
    for line in text.lines() {
        let fields: Vec<&str> = line.split(':').collect();
        let [owner, start, count] = fields[..] else {
            continue;
        };
        let number = |s: &str| {
            (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                .then(|| s.parse::<u64>().ok())
                .flatten()
        };
        if (owner == name || owner == uid)
            && let (Some(_), Some(count)) = (number(start), number(count))
        {
            total = total.checked_add(count)?;
        }
    }
    u32::try_from(total).ok().filter(|t| *t > 0 && *t < u32::MAX / 2)
}

/// The home directory of `keep-id`'s passwd line (libpod `userPasswdEntry`): the user's home
/// when a mount's destination is the home or one of its parents (not `/`), or a named volume's
/// is the home; else the working directory. `None` when the home is not reproducible.
fn passwd_home(home: &str, spec: &SpecGenerator) -> Option<String> {
    if !is_clean_absolute(home) || home == "/" {
        return None;
    }
    let path = Path::new(home);
    if ["/proc", "/dev", "/sys", "/run"]
        .iter()
        .any(|p| path.starts_with(p))
    {
        return None;
    }
    let covered = spec.mounts.iter().any(|m| {
        matches!(m.kind, MountType::Bind | MountType::Tmpfs) && {
            let dest = Path::new(&m.destination);
            dest != Path::new("/") && path.starts_with(dest)
        }
    }) || spec.volumes.iter().any(|v| Path::new(&v.dest) == path);
    match covered {
        true => Some(home.to_string()),
        false => Some(spec.work_dir.clone().unwrap_or_else(|| "/".into())),
    }
}

/// An absolute path without `.`, `..`, doubled or trailing slashes.
fn is_clean_absolute(p: &str) -> bool {
    let mut components = Path::new(p).components();
    components.next() == Some(Component::RootDir)
        && components.all(|c| matches!(c, Component::Normal(_)))
        && !p.contains("//")
        && (p == "/" || !p.ends_with('/'))
}

#[cfg(test)]
#[path = "keep_id_tests.rs"]
mod tests;
