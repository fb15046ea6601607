//! Build contexts: the agent image's context generated in memory from the Containerfile
//! embedded in the binary (so `ags image build` works from any directory), or a directory on
//! disk (`--context DIR`) packed into a tar.

use std::path::{Path, PathBuf};

use bytes::Bytes;

use super::ImageError;

/// `containers/agent/Containerfile`, embedded at compile time.
pub const EMBEDDED_CONTAINERFILE: &str = include_str!("../../containers/agent/Containerfile");

/// Every file of `containers/agent/`, embedded: the context needs no checkout.
const EMBEDDED_FILES: &[(&str, &str)] = &[
    ("Containerfile", EMBEDDED_CONTAINERFILE),
    (
        "extra-ca/README",
        include_str!("../../containers/agent/extra-ca/README"),
    ),
];

/// The directory of the context that the Containerfile copies into the CA store.
const EXTRA_CA_DIR: &str = "extra-ca";

/// The default of the Containerfile's `ARG BASE` (made by `scripts/bootstrap-base-image`).
pub const DEFAULT_BASE: &str = "localhost/ags-base:trixie";

/// A build context ready to send.
#[derive(Debug, Clone)]
pub struct Context {
    /// The tar archive.
    pub tar: Bytes,
    /// The Containerfile's path inside the archive.
    pub containerfile: String,
    /// Where it came from, for messages (`embedded` or the directory).
    pub origin: String,
}

/// A file added to a context (a CA certificate).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtraFile {
    /// Path inside the context.
    pub path: String,
    /// Content.
    pub data: Vec<u8>,
}

/// The agent image's context, generated in memory from the embedded files plus `extra`.
pub fn embedded_context(extra: &[ExtraFile]) -> Context {
    let mut b = tar::Builder::new(Vec::new());
    let embedded = EMBEDDED_FILES.iter().map(|(p, d)| (*p, d.as_bytes()));
    let extra = extra.iter().map(|f| (f.path.as_str(), f.data.as_slice()));
    for (path, data) in embedded.chain(extra) {
        append_file(&mut b, path, data).expect("writing to a Vec cannot fail");
    }
    Context {
        tar: Bytes::from(b.into_inner().expect("writing to a Vec cannot fail")),
        containerfile: "Containerfile".into(),
        origin: "the agent image embedded in ags".into(),
    }
}

/// Pack directory `dir` (symbolic links kept as links) plus `extra` into a context. It must
/// hold a `Containerfile` or a `Dockerfile`.
pub fn dir_context(dir: &Path, extra: &[ExtraFile]) -> Result<Context, ImageError> {
    let read_err = |source| ImageError::ContextRead {
        path: dir.into(),
        source,
    };
    let meta = std::fs::metadata(dir).map_err(read_err)?;
    if !meta.is_dir() {
        return Err(read_err(std::io::Error::other("not a directory")));
    }
    let containerfile = ["Containerfile", "Dockerfile"]
        .into_iter()
        .find(|f| dir.join(f).is_file())
        .ok_or_else(|| ImageError::NoContainerfile { path: dir.into() })?;
    let mut b = tar::Builder::new(Vec::new());
    b.follow_symlinks(false);
    b.append_dir_all(".", dir).map_err(read_err)?;
    for f in extra {
        append_file(&mut b, &f.path, &f.data).map_err(read_err)?;
    }
    let tar = b.into_inner().map_err(read_err)?;
    Ok(Context {
        tar: Bytes::from(tar),
        containerfile: containerfile.into(),
        origin: dir.display().to_string(),
    })
}

/// Where Debian keeps the CA certificates a host administrator added (`update-ca-certificates`).
pub const HOST_EXTRA_CA_DIR: &str = "/usr/local/share/ca-certificates";

/// The `.crt` files under `dir` (one level of subdirectories, as update-ca-certificates reads)
/// whose content none of `given` carries: CAs this host trusts that the image would not.
/// Compared by content, so a copy under another name counts as given.
pub fn untrusted_host_cas(dir: &std::path::Path, given: &[ExtraFile]) -> Vec<PathBuf> {
    let list = |d: &std::path::Path| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(d)
            .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        v.sort();
        v
    };
    let mut files = Vec::new();
    for p in list(dir) {
        match p.is_dir() {
            true => files.extend(list(&p)),
            false => files.push(p),
        }
    }
    files
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "crt") && p.is_file())
        .filter(|p| std::fs::read(p).is_ok_and(|data| !given.iter().any(|g| g.data == data)))
        .collect()
}

/// Read PEM CA certificates for `extra-ca/` (named `<n>-<file stem>.crt`, the extension
/// update-ca-certificates wants).
pub fn ca_cert_files(paths: &[PathBuf]) -> Result<Vec<ExtraFile>, ImageError> {
    paths
        .iter()
        .enumerate()
        .map(|(i, path)| {
            let err = |reason: String| ImageError::CaCert {
                path: path.clone(),
                reason,
            };
            let data = std::fs::read(path).map_err(|e| err(e.to_string()))?;
            if !data.windows(PEM_MARKER.len()).any(|w| w == PEM_MARKER) {
                return Err(err(
                    "it holds no PEM certificate (-----BEGIN CERTIFICATE-----)".into()
                ));
            }
            let stem: String = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || "._-".contains(c) {
                        c
                    } else {
                        '_'
                    }
                })
                .collect();
            Ok(ExtraFile {
                path: format!("{EXTRA_CA_DIR}/{i}-{stem}.crt"),
                data,
            })
        })
        .collect()
}

const PEM_MARKER: &[u8] = b"-----BEGIN CERTIFICATE-----";

fn append_file(b: &mut tar::Builder<Vec<u8>>, path: &str, data: &[u8]) -> std::io::Result<()> {
    let mut h = tar::Header::new_gnu();
    h.set_size(data.len() as u64);
    h.set_mode(0o644);
    h.set_mtime(0);
    h.set_cksum();
    b.append_data(&mut h, path, data)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(tar: &[u8]) -> Vec<String> {
        tar::Archive::new(tar)
            .entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().display().to_string())
            .collect()
    }

    #[test]
    fn embedded_context_holds_the_containerfile() {
        let c = embedded_context(&[]);
        assert_eq!(names(&c.tar), ["Containerfile", "extra-ca/README"]);
        assert!(EMBEDDED_CONTAINERFILE.contains(&format!("ARG BASE={DEFAULT_BASE}")));
        assert!(EMBEDDED_CONTAINERFILE.contains("FROM ${BASE}"));
        assert!(EMBEDDED_CONTAINERFILE.contains(&format!("ARG {}=", super::super::AGENT_UID_ARG)));
        assert!(EMBEDDED_CONTAINERFILE.contains("USER dev"));
        for line in EMBEDDED_CONTAINERFILE.lines().filter(|l| l.starts_with("COPY")) {
            let src = line.split_whitespace().nth(1).unwrap();
            assert!(
                EMBEDDED_FILES.iter().any(|(p, _)| p.starts_with(src)),
                "{src} is not embedded"
            );
        }
        assert_eq!(embedded_context(&[]).tar, c.tar, "deterministic");
    }

    #[test]
    fn dir_context_packs_files_and_keeps_links() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("Dockerfile"), "FROM x\n").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/f"), "data").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("link")).unwrap();
        let extra = [ExtraFile {
            path: "extra-ca/0-x.crt".into(),
            data: b"pem".to_vec(),
        }];
        let c = dir_context(dir.path(), &extra).unwrap();
        assert_eq!(c.containerfile, "Dockerfile");
        let mut archive = tar::Archive::new(c.tar.as_ref());
        let link = archive
            .entries()
            .unwrap()
            .map(|e| e.unwrap())
            .find(|e| e.path().unwrap().ends_with("link"))
            .unwrap();
        assert_eq!(link.header().entry_type(), tar::EntryType::Symlink);
        assert!(names(&c.tar).iter().any(|n| n.ends_with("sub/f")));
        assert!(names(&c.tar).contains(&"extra-ca/0-x.crt".to_string()));
    }

    #[test]
    fn dir_context_errors_name_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let e = dir_context(dir.path(), &[]).unwrap_err().to_string();
        assert!(e.contains("has no Containerfile"), "{e}");
        let e = dir_context(&dir.path().join("missing"), &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing") && e.contains("--context"), "{e}");
    }

    #[test]
    fn host_cas_not_given_are_found_by_content() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("corp")).unwrap();
        let pem = |n: &str| format!("-----BEGIN CERTIFICATE-----\n{n}\n-----END CERTIFICATE-----\n");
        std::fs::write(dir.path().join("a.crt"), pem("A")).unwrap();
        std::fs::write(dir.path().join("corp/b.crt"), pem("B")).unwrap();
        std::fs::write(dir.path().join("notes.txt"), pem("C")).unwrap();
        let given = |data: &str| ExtraFile {
            path: "extra-ca/0-x.crt".into(),
            data: data.as_bytes().to_vec(),
        };
        let missing = untrusted_host_cas(dir.path(), &[given(&pem("A"))]);
        assert_eq!(missing, vec![dir.path().join("corp/b.crt")]);
        assert!(untrusted_host_cas(dir.path(), &[given(&pem("B")), given(&pem("A"))]).is_empty());
        assert!(untrusted_host_cas(&dir.path().join("none"), &[]).is_empty());
    }

    #[test]
    fn ca_certs_must_be_pem_and_get_crt_names() {
        let dir = tempfile::tempdir().unwrap();
        let pem = dir.path().join("my proxy.pem");
        std::fs::write(
            &pem,
            "-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let files = ca_cert_files(std::slice::from_ref(&pem)).unwrap();
        assert_eq!(files[0].path, "extra-ca/0-my_proxy.crt");
        let junk = dir.path().join("junk.crt");
        std::fs::write(&junk, "hello").unwrap();
        let e = ca_cert_files(&[pem, junk]).unwrap_err().to_string();
        assert!(e.contains("junk.crt") && e.contains("no PEM certificate"), "{e}");
    }
}
