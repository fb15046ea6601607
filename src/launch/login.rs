//! `ags login import`: one file (an agent's login) written into an agent state volume through
//! the Podman API — never through a bind mount of the host's agent directory, never a temporary
//! file: the volume is created when missing (with the labels a launch gives it), a writer
//! container holding only that volume is created and initialised
//! (`podman::volume_writer_spec`), the file goes in as a tar archive (mode 0600, owned by the
//! agent's user; the buffer is zeroed once sent), and the writer is removed whatever happened.

use std::path::Path;

use bytes::Bytes;

use super::LaunchError;
use super::stage::ClearOnDrop;
use crate::plan::{LaunchPlan, StateVolume};
use crate::podman::{Client, volume_writer_spec};

/// Write `content` as `dir/name` into `volume` (mounted at `dir` for the plan's agent), and
/// `settings` (`(name, text)`) beside it when the volume has no file of that name (what is
/// there is the agent's and the user's: never read, never replaced). Whether `settings` was
/// written.
pub async fn import(
    client: &Client,
    plan: &LaunchPlan,
    volume: &StateVolume,
    dir: &Path,
    name: &str,
    content: &[u8],
    settings: Option<(&str, &str)>,
) -> Result<bool, LaunchError> {
    client.volume_ensure(&volume.name, volume.labels.clone()).await?;
    let (uid, gid) = owner(plan);
    let tar = archive(name, content, uid, gid).map_err(LaunchError::Stage)?;
    let writer = format!("{}-login-{}", volume.name, &plan.launch_id);
    let spec = volume_writer_spec(plan, &volume.name, dir, &writer);
    let id = client
        .create(&spec)
        .await
        .map_err(|e| LaunchError::from_create(e, &plan.image, &writer, client.url()))?;
    let written = async {
        client.init(&id).await.map_err(LaunchError::from_start)?;
        let dest = dir.to_string_lossy();
        client
            .put_archive(&id, &dest, Bytes::from_owner(ClearOnDrop(tar)))
            .await?;
        let Some((file, text)) = settings else {
            return Ok(false);
        };
        // Only whether something is there: at most a few KiB of it cross, none is parsed.
        let there = client
            .read_file(&id, &dir.join(file).to_string_lossy(), 0)
            .await?;
        if there != crate::podman::ContainerFile::Missing {
            return Ok(false);
        }
        let tar = archive(file, text.as_bytes(), uid, gid).map_err(LaunchError::Stage)?;
        client.put_archive(&id, &dest, Bytes::from(tar)).await?;
        Ok::<_, LaunchError>(true)
    }
    .await;
    let removed = client.delete(&id, true, false).await;
    let written = written?;
    match removed {
        Err(e) if !e.is_not_found() => Err(e.into()),
        _ => Ok(written),
    }
}

/// The agent's `uid:gid` (the invoking user's, see `LaunchPlan::user`); root without one.
fn owner(plan: &LaunchPlan) -> (u32, u32) {
    let parse = |s: Option<&str>| s.and_then(|v| v.parse().ok()).unwrap_or(0);
    let mut parts = plan.user.as_deref().unwrap_or("0:0").splitn(2, ':');
    (parse(parts.next()), parse(parts.next()))
}

/// One regular file `name`, mode 0600, modified now, in a buffer allocated once (no copy left behind).
fn archive(name: &str, content: &[u8], uid: u32, gid: u32) -> std::io::Result<Vec<u8>> {
    let mut builder = tar::Builder::new(Vec::with_capacity(content.len() + 4 * 1024));
    let mut h = super::stage::tar_header(tar::EntryType::Regular, 0o600, content.len(), (uid, gid));
    // Now, not the Unix epoch: the imported login is new (`ls -l` would say 1970).
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    h.set_mtime(now);
    builder.append_data(&mut h, name, content)?;
    builder.into_inner()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_archive_holds_one_private_file_owned_by_the_agent() {
        let tar = archive(".credentials.json", b"{\"k\":1}", 1001, 1002).unwrap();
        let mut a = tar::Archive::new(tar.as_slice());
        let entries: Vec<_> = a
            .entries()
            .unwrap()
            .map(|e| e.unwrap().header().clone())
            .collect();
        assert_eq!(entries.len(), 1);
        let h = &entries[0];
        assert_eq!(h.path().unwrap().to_str(), Some(".credentials.json"));
        assert_eq!(
            (h.mode().unwrap(), h.uid().unwrap(), h.gid().unwrap()),
            (0o600, 1001, 1002)
        );
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        assert!(h.mtime().unwrap().abs_diff(now) < 60, "{:?}", h.mtime());
    }
}
