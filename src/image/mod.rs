//! Images: the agent image's build context (embedded in the binary, or a directory), the
//! progress summary of a build, and the advice when an image or its base is missing.
//!
//! Pure apart from reading a context directory: the API calls live in `podman`, the
//! orchestration in `commands::image`. The Debian base image itself is made outside `ags` by
//! `scripts/bootstrap-base-image` (debootstrap is a host set-up action that needs root), which
//! imports its root filesystem through the same API as `ags image import`.

mod context;
mod progress;

use std::path::PathBuf;

pub use context::{
    Context, DEFAULT_BASE, EMBEDDED_CONTAINERFILE, ExtraFile, HOST_EXTRA_CA_DIR, ca_cert_files, dir_context,
    embedded_context, untrusted_host_cas,
};
pub use progress::BuildStats;

/// The Containerfile `ARG` that names the base image.
pub const BASE_ARG: &str = "BASE";

/// The embedded Containerfile's build argument naming the uid its Node compile cache is made
/// for; `ags image build` passes the invoking user's unless `--build-arg` sets it.
pub const AGENT_UID_ARG: &str = "AGENT_UID";

/// Changes applied by `ags image import` when no `--change` is given: a usual `PATH` and a
/// shell as the default command.
pub const DEFAULT_IMPORT_CHANGES: &[&str] = &[
    "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "CMD [\"/bin/sh\"]",
];

/// The label `ags image build` puts on what it builds: the digest of its recipe, see
/// [`recipe_digest`].
pub const RECIPE_LABEL: &str = "io.ags.image.recipe";

/// The digest of everything a build's result depends on: the context tar (Containerfile and
/// every file, with their modes), the Containerfile's path, the build arguments and the base
/// image's ID. An image whose [`RECIPE_LABEL`] equals it is what the build would make again,
/// so `ags image build` skips it (issue 28: 0.6 s for an all-cached build).
pub fn recipe_digest(
    context_tar: &[u8],
    containerfile: &str,
    build_args: &std::collections::BTreeMap<String, String>,
    base_id: &str,
) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    let mut field = |bytes: &[u8]| {
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    field(context_tar);
    field(containerfile.as_bytes());
    for (k, v) in build_args {
        field(k.as_bytes());
        field(v.as_bytes());
    }
    field(base_id.as_bytes());
    hex::encode(h.finalize())
}

/// The script that makes [`DEFAULT_BASE`] without a registry.
pub const BOOTSTRAP_SCRIPT: &str = "scripts/bootstrap-base-image";

/// Errors of the image commands (before or around the Podman API calls).
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// The `--context` directory cannot be read.
    #[error("build context {}: {source}; pass --context with a readable directory", path.display())]
    ContextRead { path: PathBuf, source: std::io::Error },
    /// The `--context` directory has no Containerfile.
    #[error(
        "build context {} has no Containerfile (or Dockerfile); put one there, or omit --context to build the agent image embedded in ags",
        path.display()
    )]
    NoContainerfile { path: PathBuf },
    /// A local base image is missing (no registry is asked for `localhost/` names).
    #[error(
        "base image {base} is not present in the Podman service at {url}; create it without a registry with `{BOOTSTRAP_SCRIPT}` (docs/images.md), or on a machine that can pull use --base docker.io/library/debian:trixie-slim"
    )]
    BaseMissing { base: String, url: String },
    /// A `--build-arg` value is not `KEY=VALUE`.
    #[error("--build-arg {0:?}: expected KEY=VALUE with a non-empty KEY")]
    BuildArg(String),
    /// A `--ca-cert` file (or an `[image] ca_certs` entry) is unusable.
    #[error("CA certificate {} (--ca-cert or [image] ca_certs): {reason}; name a PEM CA certificate file", path.display())]
    CaCert { path: PathBuf, reason: String },
    /// The root filesystem tar cannot be read.
    #[error("root filesystem tar {}: {source}", path.display())]
    ReadTar { path: PathBuf, source: std::io::Error },
}

/// Whether an image reference names local storage only (`localhost/…`): Podman cannot pull it,
/// so a missing one is an error before the build starts.
pub fn is_local_reference(reference: &str) -> bool {
    reference.starts_with("localhost/")
}

/// What to do about a missing image, by the kind of reference: the agent image is built, the
/// base image is bootstrapped, another `localhost/` image is built or imported, and anything
/// else would come from a registry, which `ags` never pulls from.
pub fn missing_image_advice(image: &str) -> String {
    let name = image.split(['@', ':']).next().unwrap_or(image);
    if image == crate::config::DEFAULT_IMAGE || name == "localhost/ags-agent" {
        format!(
            "build it with `ags image build` (its base {DEFAULT_BASE} comes from `{BOOTSTRAP_SCRIPT}` \
             when missing; docs/images.md), or choose another image with --image"
        )
    } else if image == DEFAULT_BASE {
        format!("create it with `{BOOTSTRAP_SCRIPT}` (docs/images.md)")
    } else if is_local_reference(image) {
        "it is a local image: build it (`ags image build --context DIR --tag`) or import a root \
         filesystem (`ags image import`), or choose another image with --image"
            .into()
    } else {
        "ags never pulls images: pull it into this Podman service first (as the service's user, \
         e.g. `podman pull`), or choose another image with --image"
            .into()
    }
}

/// Split `KEY=VALUE` build arguments.
pub fn parse_build_args(args: &[String]) -> Result<std::collections::BTreeMap<String, String>, ImageError> {
    args.iter()
        .map(|a| match a.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
            _ => Err(ImageError::BuildArg(a.clone())),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recipe_digest_changes_with_each_input() {
        let args = |v: &str| std::collections::BTreeMap::from([("A".to_owned(), v.to_owned())]);
        let base = recipe_digest(b"tar", "Containerfile", &args("1"), "id");
        assert_eq!(base, recipe_digest(b"tar", "Containerfile", &args("1"), "id"));
        for other in [
            recipe_digest(b"tax", "Containerfile", &args("1"), "id"),
            recipe_digest(b"tar", "Dockerfile", &args("1"), "id"),
            recipe_digest(b"tar", "Containerfile", &args("2"), "id"),
            recipe_digest(b"tar", "Containerfile", &args("1"), "id2"),
            recipe_digest(b"tarC", "ontainerfile", &args("1"), "id"),
        ] {
            assert_ne!(base, other);
        }
    }

    #[test]
    fn build_args_need_a_key() {
        let ok = parse_build_args(&["A=1".into(), "B=x=y".into(), "C=".into()]).unwrap();
        assert_eq!(ok["B"], "x=y");
        assert_eq!(ok["C"], "");
        let e = parse_build_args(&["=1".into()]).unwrap_err();
        assert!(e.to_string().contains("KEY=VALUE"), "{e}");
        assert!(parse_build_args(&["A".into()]).is_err());
    }

    #[test]
    fn local_references() {
        assert!(is_local_reference(DEFAULT_BASE));
        assert!(!is_local_reference("docker.io/library/debian:trixie-slim"));
    }

    #[test]
    fn missing_image_advice_follows_the_reference_kind() {
        let advice = missing_image_advice;
        assert!(advice("localhost/ags-agent:latest").starts_with("build it with `ags image build`"));
        assert!(advice("localhost/ags-agent:v2").contains(BOOTSTRAP_SCRIPT));
        assert!(advice(DEFAULT_BASE).starts_with(&format!("create it with `{BOOTSTRAP_SCRIPT}`")));
        assert!(advice("localhost/mine:1").contains("ags image import"));
        for registry in [
            "docker.io/library/debian:trixie",
            "debian",
            "quay.io/x/y@sha256:ab",
        ] {
            let a = advice(registry);
            assert!(
                a.contains("never pulls") && !a.contains(BOOTSTRAP_SCRIPT),
                "{registry}: {a}"
            );
        }
    }

    #[test]
    fn base_missing_names_the_script() {
        let e = ImageError::BaseMissing {
            base: DEFAULT_BASE.into(),
            url: "unix:///run/podman/podman.sock".into(),
        };
        assert!(e.to_string().contains("scripts/bootstrap-base-image"), "{e}");
    }
}
