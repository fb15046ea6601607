//! What goes into the per-launch staging volume: the environment file, as one tar archive
//! uploaded after the container is initialised (so it lands in the mounted tmpfs) and before it
//! starts. Nothing here touches the disk: the archive is built in memory, and generated files
//! are staged only in a RAM-backed directory ([`ram_stage_root`]).

use std::collections::BTreeMap;

use zeroize::{Zeroize, Zeroizing};

use std::path::PathBuf;

use super::LaunchError;
use crate::config::Paths;
use crate::op::Secret;
use crate::plan::{EnvSource, LaunchPlan};

/// Values looked up at the final handoff.
#[derive(Debug, Default)]
pub struct Secrets {
    /// Resolved 1Password references, by env key.
    pub references: BTreeMap<String, Secret>,
    /// `--op-secret-set` fields, applied last (they overwrite every other value of their key).
    pub finals: Vec<BTreeMap<String, Secret>>,
    /// Placeholders of the credentials the proxy adds (`crate::credentials`): the env file
    /// gets these instead of the real values.
    pub placeholders: BTreeMap<String, String>,
}

/// Every value the launch stages into the container, for scrubbing the agent hook record:
/// environment values (literals and resolved 1Password values, `--op-secret-set` fields) and
/// the contents of generated files, except `ags`'s own agent hook wiring (which holds none).
pub fn staged_values<'a>(plan: &'a LaunchPlan, secrets: &'a Secrets) -> Vec<&'a str> {
    let env = plan.env.iter().filter_map(|e| match &e.source {
        EnvSource::Staged { value } => Some(value.expose()),
        EnvSource::Plain { .. } | EnvSource::OpRef { .. } => None,
    });
    let op = secrets
        .references
        .values()
        .chain(secrets.finals.iter().flat_map(|set| set.values()))
        .map(|v| v.expose());
    let files = plan
        .files
        .iter()
        .filter(|f| f.origin != crate::plan::Origin::AgentHooks)
        .map(|f| f.content.expose());
    env.chain(op).chain(files).collect()
}

/// The launch's staged values by key, as the container would get them without placeholders:
/// literals, resolved references, then `--op-secret-set` fields.
pub fn values<'a>(plan: &'a LaunchPlan, secrets: &'a Secrets) -> BTreeMap<&'a str, &'a str> {
    let mut values: BTreeMap<&str, &str> = BTreeMap::new();
    for e in &plan.env {
        let value = match &e.source {
            EnvSource::Plain { .. } => continue,
            EnvSource::Staged { value } => value.expose(),
            EnvSource::OpRef { .. } => match secrets.references.get(&e.key) {
                Some(v) => v.expose(),
                None => continue,
            },
        };
        values.insert(&e.key, value);
    }
    for set in &secrets.finals {
        values.extend(set.iter().map(|(k, v)| (k.as_str(), v.expose())));
    }
    values
}

/// Swap the credentials the proxy adds (`plan.egress.credentials`) for placeholders: the real
/// values go into the returned vault (the proxy's), the placeholders into `secrets`, and the
/// launch's CA and trust bundle into the staging volume's root files.
pub fn take_credentials(
    plan: &mut LaunchPlan,
    secrets: &mut Secrets,
    declared: &[crate::credentials::model::Credential],
    extra_cas: &[PathBuf],
) -> Result<Option<std::sync::Arc<crate::credentials::Vault>>, crate::credentials::CredentialError> {
    if !plan.egress.credentials && plan.egress.inspected.is_empty() {
        return Ok(None);
    }
    let values = values(plan, secrets);
    let inspected = (plan.egress.inspected.as_slice(), extra_cas);
    let (vault, staged) = crate::credentials::Vault::take(&plan.credentials, declared, &values, inspected)?;
    secrets.placeholders = staged.placeholders;
    if let Some(staging) = plan.staging.as_mut() {
        let files = crate::credentials::plan::root_files(&staged.ca_pem, &staged.bundle_pem);
        staging.root_files.extend(files);
    }
    Ok(Some(std::sync::Arc::new(vault)))
}

/// The plan's 1Password references by env key (what survived precedence; hook references only).
pub fn op_references(
    plan: &LaunchPlan,
) -> Result<Vec<(&str, crate::hooks::policy::OpRef)>, crate::op::OpError> {
    let refs = plan.env.iter().filter_map(|e| match &e.source {
        EnvSource::OpRef { reference } => Some((e.key.as_str(), reference.as_str())),
        _ => None,
    });
    refs.map(
        |(key, reference)| match crate::hooks::policy::OpRef::try_from(reference) {
            Ok(r) => Ok((key, r)),
            // The plan holds only validated references.
            Err(_) => Err(crate::op::OpError::UnsafeReference { key: key.into() }),
        },
    )
    .collect()
}

/// Build the env file: one `export KEY='value'` line per staged variable, in key order, a
/// credential's placeholder in place of its value. Values are single-line (validated
/// earlier); single quotes are escaped as `'\''`.
pub fn env_file(plan: &LaunchPlan, secrets: &Secrets) -> Zeroizing<Vec<u8>> {
    let mut values = values(plan, secrets);
    for (key, placeholder) in &secrets.placeholders {
        if let Some(v) = values.get_mut(key.as_str()) {
            *v = placeholder;
        }
    }
    exports(&values)
}

/// One `export KEY='value'` line per entry. Sized up front and written in place: no
/// reallocation leaves a copy of a value behind in freed memory, and the buffer is cleared when
/// the caller drops it.
fn exports(values: &BTreeMap<&str, &str>) -> Zeroizing<Vec<u8>> {
    let size: usize = values
        .iter()
        .map(|(k, v)| "export =''\n".len() + k.len() + v.len() + 3 * v.matches('\'').count())
        .sum();
    let mut out = Zeroizing::new(Vec::with_capacity(size));
    for (key, value) in values {
        out.extend_from_slice(b"export ");
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(b"='");
        for (i, part) in value.split('\'').enumerate() {
            if i > 0 {
                out.extend_from_slice(br"'\''");
            }
            out.extend_from_slice(part.as_bytes());
        }
        out.extend_from_slice(b"'\n");
    }
    out
}

/// The staging volume's archive for `plan` (none when it stages nothing): the env file, the
/// generated files when they travel in the volume (a remote service), and the files staged
/// owned by uid 0, for the user `ids`. Cleared from memory when dropped.
pub fn staging_archive(
    plan: &LaunchPlan,
    secrets: &Secrets,
    ids: (u32, u32),
) -> std::io::Result<Option<bytes::Bytes>> {
    let Some(staging) = &plan.staging else {
        return Ok(None);
    };
    // For a remote service the generated files travel in the archive too (in volume mode the
    // plan gives them no host file).
    let files: Vec<&[u8]> = match plan.files_in_volume() {
        true => plan.files.iter().map(|f| f.content.expose().as_bytes()).collect(),
        false => Vec::new(),
    };
    let root_files: Vec<(&str, &[u8])> = staging
        .root_files
        .iter()
        .map(|f| {
            let name = f
                .destination
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            (name, f.content.as_bytes())
        })
        .collect();
    let env = env_file(plan, secrets);
    let tar = archive(&env, &files, &root_files, ids)?;
    Ok(Some(bytes::Bytes::from_owner(ClearOnDrop(tar))))
}

/// A tar archive for the root of the staging volume: the directory itself (uid 0's, 0711), the
/// env file (0400) and, for a remote service, the generated files (`files/<n>`, 0400, in an
/// owner-only directory; see [`crate::plan::staged_file_path`]), owned by the container user;
/// then the plan's [`crate::plan::RootFile`]s (`root/<name>`, 0444, in a 0755 directory),
/// owned by uid 0 (`root_files`: name and content). Allocated once with room to spare, so the
/// env file's bytes are not left behind by a reallocation; see [`ClearOnDrop`] for the
/// buffer's end.
pub fn archive(
    env_file: &[u8],
    files: &[&[u8]],
    root_files: &[(&str, &[u8])],
    (uid, gid): (u32, u32),
) -> std::io::Result<Vec<u8>> {
    let sizes = files.iter().copied().chain(root_files.iter().map(|(_, c)| *c));
    let room = env_file.len() + sizes.map(|f| f.len() + 2 * 512).sum::<usize>() + 8 * 1024;
    let mut builder = tar::Builder::new(Vec::with_capacity(room));
    let header = |kind, mode, size| tar_header(kind, mode, size, (uid, gid));
    // The volume's root: uid 0's, which the agent can pass but not list (an agent that trusts
    // a file only when root owns it and every directory above it checks this one too).
    let mut root = tar_header(tar::EntryType::Directory, 0o711, 0, (0, 0));
    builder.append_data(&mut root, "./", std::io::empty())?;
    builder.append_data(
        &mut header(tar::EntryType::Regular, 0o400, env_file.len()),
        "env",
        env_file,
    )?;
    if !files.is_empty() {
        let dir = format!("{}/", crate::plan::STAGED_FILES_DIR);
        builder.append_data(
            &mut header(tar::EntryType::Directory, 0o500, 0),
            dir,
            std::io::empty(),
        )?;
    }
    for (i, content) in files.iter().enumerate() {
        let path = crate::plan::staged_file_path(i);
        builder.append_data(
            &mut header(tar::EntryType::Regular, 0o400, content.len()),
            path,
            *content,
        )?;
    }
    if !root_files.is_empty() {
        let dir = format!("{}/", crate::plan::STAGED_ROOT_DIR);
        let mut h = tar_header(tar::EntryType::Directory, 0o755, 0, (0, 0));
        builder.append_data(&mut h, dir, std::io::empty())?;
    }
    for (name, content) in root_files {
        let path = format!("{}/{name}", crate::plan::STAGED_ROOT_DIR);
        let mut h = tar_header(tar::EntryType::Regular, 0o444, content.len(), (0, 0));
        builder.append_data(&mut h, path, *content)?;
    }
    let out = builder.into_inner()?;
    debug_assert!(out.len() <= room, "the staging archive was reallocated");
    Ok(out)
}

/// A ustar header of an entry of `kind`, `mode` and `size` bytes owned by `(uid, gid)`.
pub(crate) fn tar_header(
    kind: tar::EntryType,
    mode: u32,
    size: usize,
    (uid, gid): (u32, u32),
) -> tar::Header {
    let mut h = tar::Header::new_ustar();
    h.set_entry_type(kind);
    h.set_mode(mode);
    h.set_uid(uid.into());
    h.set_gid(gid.into());
    h.set_size(size as u64);
    h
}

/// A buffer holding secret values (the staging archive) that is zeroed when its last user is
/// done with it: wrap it in `Bytes::from_owner(ClearOnDrop(vec))` to hand it to the HTTP client,
/// which drops its reference once the upload was sent.
pub struct ClearOnDrop(pub Vec<u8>);

impl AsRef<[u8]> for ClearOnDrop {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for ClearOnDrop {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

/// Where a launch without secret generated files keeps its socket directories (egress proxy,
/// agent hook record) and its agent hook wiring: the first usable of [`Paths::stage_root`],
/// [`Paths::shm_stage_root`] and [`Paths::disk_stage_root`]. A root is passed over when another
/// user could replace a directory on its way (`fsutil::check_ancestors_private`; after `su`,
/// `$XDG_RUNTIME_DIR` is still the other user's runtime directory, whose owner may rename the
/// directory `ags` made there and put a symlink to its own in its place, taking the sockets
/// created after the check) or when it exists and is not an owner-only directory of ours
/// (another local user created `/dev/shm/ags-<uid>` first): none of these needs RAM.
pub fn host_stage_root(paths: &Paths) -> PathBuf {
    let [runtime, shm, disk] = paths.stage_roots();
    [runtime, shm]
        .into_iter()
        .find(|root| crate::fsutil::private_root_problem(root).is_none())
        .unwrap_or(disk)
}

/// Where a launch's private host directories go: on a `remote` service, or without generated
/// files, [`host_stage_root`]; hook-generated files (`secret_files`) only in RAM
/// ([`ram_stage_root`], else the launch is refused); the agent hook wiring alone (`wiring`) in
/// RAM when a private RAM directory exists, else in [`host_stage_root`].
pub fn launch_stage_root(
    paths: &Paths,
    remote: bool,
    secret_files: bool,
    wiring: bool,
) -> Result<PathBuf, LaunchError> {
    if remote || !secret_files && !wiring {
        return Ok(host_stage_root(paths));
    }
    match ram_stage_root(paths) {
        Err(_) if !secret_files => Ok(host_stage_root(paths)),
        found => found,
    }
}

/// The directory to stage generated files in: [`Paths::stage_root`] (`$XDG_RUNTIME_DIR/ags`)
/// when its file system is RAM-backed (tmpfs or ramfs, by `statfs`), else
/// [`Paths::shm_stage_root`] (`/dev/shm/ags-<uid>`) when that is; otherwise the launch is
/// refused: the content of generated files must never reach a disk. A root another user could
/// replace is passed over (see [`host_stage_root`]): that user could take the staged files.
pub fn ram_stage_root(paths: &Paths) -> Result<PathBuf, LaunchError> {
    let mut seen = Vec::new();
    for root in paths.ram_root_candidates() {
        // Another user's runtime directory (`su` keeps `$XDG_RUNTIME_DIR`: see host_stage_root)
        // or a disk-backed one is passed over.
        match crate::fsutil::ram_root_problem(&root, false) {
            None => return Ok(root),
            Some(why) => seen.push(why),
        }
    }
    Err(LaunchError::DiskStage {
        tried: seen.join("; "),
    })
}

/// Write the plan's generated files into its private host staging directory (0700 directories,
/// 0600 files), ready to be bind-mounted read-only. The caller records the directory for
/// cleanup before calling this, and removes it as soon as the container is initialised: the
/// mounts keep the content reachable inside the container, the host copy disappears.
pub fn write_host_files(plan: &LaunchPlan) -> Result<(), crate::fsutil::PrivateDirError> {
    use crate::fsutil::{PrivateDirError, ensure_private_dir};
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let Some(dir) = &plan.host_stage_dir else {
        return Ok(());
    };
    if let Some(root) = dir.parent() {
        ensure_private_dir(root)?;
    }
    ensure_private_dir(dir)?;
    // Checked again where the bytes go, not only when the directory was chosen.
    // Only `ags`'s own agent hook wiring (no secret) may be staged on disk ([`host_stage_root`]).
    let secret = plan
        .files
        .iter()
        .any(|f| f.origin != crate::plan::Origin::AgentHooks);
    match crate::fsutil::ram_backed(dir) {
        Ok(Ok(())) => {}
        Ok(Err(_)) if !secret => {}
        Ok(Err(kind)) => {
            return Err(PrivateDirError::Io {
                path: dir.clone(),
                source: std::io::Error::other(format!(
                    "it is on {kind}, not in RAM; generated files are only staged on tmpfs or ramfs"
                )),
            });
        }
        Err(source) => {
            return Err(PrivateDirError::Io {
                path: dir.clone(),
                source,
            });
        }
    }
    ensure_private_dir(&dir.join("files"))?;
    for f in &plan.files {
        let io = |source| PrivateDirError::Io {
            path: f.host_path.clone(),
            source,
        };
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&f.host_path)
            .map_err(io)?;
        file.write_all(f.content.expose().as_bytes()).map_err(io)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_survives_a_shell() {
        for v in ["plain", "it's", "a b  c", "$HOME `id` $(id) \\n", "'", ""] {
            let vars = BTreeMap::from([("V", v)]);
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!(
                    "{}printf %s \"$V\"",
                    String::from_utf8(exports(&vars).to_vec()).unwrap()
                ))
                .output()
                .unwrap();
            assert_eq!(String::from_utf8(out.stdout).unwrap(), v);
        }
    }

    #[test]
    fn archive_has_dir_and_private_env() {
        let tar = archive(b"export A='1'\n", &[], &[], (1000, 1000)).unwrap();
        let mut ar = tar::Archive::new(&tar[..]);
        let entries: Vec<_> = ar
            .entries()
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (
                    e.path().unwrap().display().to_string(),
                    e.header().mode().unwrap(),
                    e.header().uid().unwrap(),
                )
            })
            .collect();
        assert_eq!(entries, [("./".into(), 0o711, 0), ("env".into(), 0o400, 1000)]);
    }

    #[test]
    fn archive_carries_generated_files_for_a_remote_service() {
        let tar = archive(b"", &[b"one", b"two\n"], &[], (1000, 1001)).unwrap();
        let mut ar = tar::Archive::new(&tar[..]);
        let mut entries = Vec::new();
        for e in ar.entries().unwrap() {
            let mut e = e.unwrap();
            let mut content = String::new();
            std::io::Read::read_to_string(&mut e, &mut content).unwrap();
            let h = e.header();
            let path = e.path().unwrap().display().to_string();
            entries.push((path, h.mode().unwrap(), h.gid().unwrap(), content));
        }
        let row = |p: &str, m, c: &str| (p.to_string(), m, 1001, c.to_string());
        assert_eq!(
            entries,
            [
                ("./".to_string(), 0o711, 0, String::new()),
                row("env", 0o400, ""),
                row("files/", 0o500, ""),
                row("files/0", 0o400, "one"),
                row("files/1", 0o400, "two\n"),
            ]
        );
    }

    #[test]
    fn root_files_are_uid_0s_and_readable_by_all() {
        let tar = archive(b"", &[], &[("gemini-settings.json", b"{}")], (1000, 1001)).unwrap();
        let mut ar = tar::Archive::new(&tar[..]);
        let entries: Vec<_> = ar
            .entries()
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let h = e.header();
                let path = e.path().unwrap().display().to_string();
                (path, h.mode().unwrap(), h.uid().unwrap(), h.gid().unwrap())
            })
            .collect();
        assert_eq!(
            entries[2..],
            [
                ("root/".to_string(), 0o755, 0, 0),
                ("root/gemini-settings.json".to_string(), 0o444, 0, 0),
            ]
        );
    }
}
