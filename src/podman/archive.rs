//! Reading one file out of a container through `GET /containers/{id}/archive`: the state at
//! rest of a created (or initialised, not yet started) container, its named volumes included,
//! with symbolic links resolved by Podman inside the container's root, never on this host. The
//! response is a tar stream, read at most to a bound (the file may be the agent's).

use http::Method;
use http_body_util::{BodyExt, Limited};

use super::error::Result;
use super::transport::{Client, Request, segment};

/// What a container holds at a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContainerFile {
    /// Nothing there.
    Missing,
    /// A regular file's bytes.
    Content(Vec<u8>),
    /// Something that is not read: why (not a regular file, too big, not a tar stream).
    NotRead(String),
}

impl Client {
    /// The regular file `path` of container `id`, when it is at most `max` bytes.
    pub async fn read_file(&self, id: &str, path: &str, max: usize) -> Result<ContainerFile> {
        let req =
            Request::new(Method::GET, format!("/containers/{}/archive", segment(id))).query("path", path);
        let resp = match self.send(req).await {
            Ok(resp) => resp,
            Err(e) if e.is_not_found() => return Ok(ContainerFile::Missing),
            Err(e) => return Err(e),
        };
        // A tar stream: a 512-byte header and the content padded to 512, two zero blocks.
        let limit = max + 4096;
        let body = match Limited::new(resp.into_body(), limit).collect().await {
            Ok(c) => c.to_bytes(),
            Err(_) => return Ok(ContainerFile::NotRead(format!("over {max} bytes"))),
        };
        Ok(first_file(&body, max))
    }
}

/// The first entry of the tar stream `tar` when it is a regular file of at most `max` bytes.
fn first_file(tar: &[u8], max: usize) -> ContainerFile {
    let not_read = |why: String| ContainerFile::NotRead(why);
    let mut archive = tar::Archive::new(tar);
    let mut entries = match archive.entries() {
        Ok(e) => e,
        Err(e) => return not_read(format!("not a tar stream ({e})")),
    };
    let mut entry = match entries.next() {
        Some(Ok(e)) => e,
        Some(Err(e)) => return not_read(format!("not a tar stream ({e})")),
        None => return ContainerFile::Missing,
    };
    let kind = entry.header().entry_type();
    if !kind.is_file() {
        return not_read(format!("not a regular file ({kind:?})"));
    }
    if entry.size() > max as u64 {
        return not_read(format!("over {max} bytes"));
    }
    let mut out = Vec::new();
    match std::io::Read::read_to_end(&mut entry, &mut out) {
        Ok(_) => ContainerFile::Content(out),
        Err(e) => not_read(format!("not a tar stream ({e})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tar_of(kind: tar::EntryType, data: &[u8]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(kind);
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        b.append_data(&mut h, "settings.json", data).unwrap();
        b.into_inner().unwrap()
    }

    #[test]
    fn only_a_small_regular_file_is_read() {
        let file = tar_of(tar::EntryType::Regular, b"{}");
        assert_eq!(first_file(&file, 10), ContainerFile::Content(b"{}".to_vec()));
        assert!(matches!(first_file(&file, 1), ContainerFile::NotRead(_)));
        let link = tar_of(tar::EntryType::Symlink, b"");
        assert!(matches!(first_file(&link, 10), ContainerFile::NotRead(_)));
        assert!(matches!(first_file(b"junk", 10), ContainerFile::NotRead(_)));
    }
}
