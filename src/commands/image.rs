//! `ags image build` and `ags image import`: images made through the Podman API.
//!
//! build: context (embedded or `--context DIR`) → base check → `POST /libpod/build`, progress
//! lines streamed to stderr as they arrive → summary (steps from cache) on stderr, image ID on
//! stdout. When the base image is known (the embedded context, or `--base`), the result is
//! labelled with its recipe digest, and a build whose tag already carries the same digest is
//! skipped (its ID printed) unless `--no-cache`. import: tar file or stdin → `POST /libpod/images/import` → image ID on stdout.
//! On a rootless service both then make the id-mapped copy a first launch would wait for
//! ([`map_for_user`]).

use std::io::{Read, Write};
use std::time::Instant;

use bytes::Bytes;

use crate::cli::{GlobalArgs, ImageArgs, ImageBuildArgs, ImageCommand, ImageImportArgs};
use crate::image::{self, BuildStats, Context, ImageError};
use crate::podman::{BuildOptions, Client};
use crate::{Error, podman};

/// Printed when a failed build refused a certificate chain.
const UNTRUSTED_TLS_HINT: &str = "ags: a build step did not trust a TLS certificate chain; behind a TLS-intercepting proxy, pass its CA with --ca-cert FILE (PEM) or list it in the global config's [image] ca_certs, e.g. each /usr/local/share/ca-certificates/*.crt of this host";

/// Run an `ags image` subcommand.
pub fn image(global: &GlobalArgs, args: &ImageArgs) -> Result<u8, Error> {
    let rt = super::runtime()?;
    let result = rt.block_on(async {
        match &args.command {
            ImageCommand::Build(a) => build(global, a).await,
            ImageCommand::Import(a) => import(global, a).await,
        }
    });
    super::finish(rt);
    result
}

async fn build(global: &GlobalArgs, args: &ImageBuildArgs) -> Result<u8, Error> {
    let mut cert_paths = crate::config::image_ca_certs(global.config.as_deref())?;
    cert_paths.extend(args.ca_certs.iter().cloned());
    let certs = image::ca_cert_files(&cert_paths)?;
    warn_untrusted_host_cas(&certs);
    let context = match &args.context {
        Some(dir) => image::dir_context(dir, &certs)?,
        None => image::embedded_context(&certs),
    };
    let mut opts = build_options(args, &context)?;
    let client = podman::connect(&super::target(global)).await?;
    let base_id = match base_to_check(args) {
        Some(base) => check_base(&client, &base).await?,
        None => None,
    };
    if let Some(base_id) = base_id {
        let recipe = image::recipe_digest(&context.tar, &opts.containerfile, &opts.build_args, &base_id);
        if !args.no_cache
            && let Some(id) = up_to_date(&client, &opts.tag, &recipe).await?
        {
            eprintln!(
                "ags: {} ({}) is up to date at {}: context, build arguments and base image are unchanged (--no-cache rebuilds it)",
                opts.tag,
                short_id(&id),
                client.url()
            );
            writeln!(std::io::stdout(), "{id}").map_err(Error::Output)?;
            return Ok(0);
        }
        opts.labels.insert(image::RECIPE_LABEL.into(), recipe);
    }
    eprintln!(
        "ags: building {} from {} at {}",
        opts.tag,
        context.origin,
        client.url()
    );
    let started = Instant::now();
    let mut stats = BuildStats::default();
    let mut stderr = std::io::stderr();
    let outcome = client
        .image_build(context.tar, &opts, |line| {
            stats.observe(line);
            let _ = writeln!(stderr, "{line}");
        })
        .await
        .inspect_err(|_| {
            if stats.untrusted_tls {
                eprintln!("{UNTRUSTED_TLS_HINT}");
            }
        })?;
    let id = outcome.image_id.unwrap_or_default();
    eprintln!(
        "ags: built {} ({}) in {:.1} s: {}",
        opts.tag,
        short_id(&id),
        started.elapsed().as_secs_f64(),
        stats.summary()
    );
    map_for_user(&client, &opts.tag).await;
    writeln!(std::io::stdout(), "{id}").map_err(Error::Output)?;
    Ok(0)
}

/// On a rootless service, make now what the first launch of the image would wait for: the
/// copy of its layers owned by the user's id mapping (`keep-id`), which Podman keeps for later
/// containers (in its store, the image's `mapped-layers`). A container is created (never
/// started) and deleted; a failure is only a note. After a build and after an import.
async fn map_for_user(client: &Client, tag: &str) {
    if !client.rootless().await.unwrap_or(false) {
        return;
    }
    let mut spec = super::doctor::container::probe_spec(tag, true);
    crate::podman::spell_out_keep_id(client, &mut spec);
    let started = Instant::now();
    match client.create(&spec).await {
        Ok(id) => {
            let _ = client.delete(&id, true, true).await;
            eprintln!(
                "ags: prepared {tag} for your user's id mapping in {:.1} s (the first launch does not wait for it)",
                started.elapsed().as_secs_f64()
            );
        }
        Err(e) => eprintln!(
            "ags: note: {tag} could not be prepared for your user's id mapping ({e}); the first launch will do it"
        ),
    }
}

/// Say at once, not after a failed download minutes later, that this host trusts CAs the
/// image will not (a TLS-intercepting proxy's, usually).
fn warn_untrusted_host_cas(certs: &[image::ExtraFile]) {
    let missing = image::untrusted_host_cas(std::path::Path::new(image::HOST_EXTRA_CA_DIR), certs);
    if missing.is_empty() {
        return;
    }
    let names: Vec<String> = missing.iter().map(|p| crate::safepath::display(p)).collect();
    eprintln!(
        "ags: this host trusts {} extra CA certificate(s) the image will not: {}; if a TLS-intercepting proxy \
         is between you and the internet the build will fail on them: pass each with --ca-cert FILE, or list them \
         in the global config as [image] ca_certs = [...] (docs/images.md)",
        missing.len(),
        names.join(", ")
    );
}

fn build_options(args: &ImageBuildArgs, context: &Context) -> Result<BuildOptions, Error> {
    let mut opts = BuildOptions::new(&args.tag);
    opts.containerfile = context.containerfile.clone();
    opts.no_cache = args.no_cache;
    opts.build_args = image::parse_build_args(&args.build_args)?;
    if let Some(base) = &args.base {
        opts.build_args.insert(image::BASE_ARG.into(), base.clone());
    }
    if args.context.is_none() {
        // The embedded image's Node compile cache is made for the uid launches run as: ours.
        let uid = nix::unistd::getuid().as_raw().to_string();
        opts.build_args.entry(image::AGENT_UID_ARG.into()).or_insert(uid);
    }
    Ok(opts)
}

/// The base image to look for before building: `--base`, or the embedded Containerfile's
/// default. A directory context names its own base, which the build itself resolves.
fn base_to_check(args: &ImageBuildArgs) -> Option<String> {
    match (&args.base, &args.context) {
        (Some(base), _) => Some(base.clone()),
        (None, None) => Some(image::DEFAULT_BASE.to_owned()),
        (None, Some(_)) => None,
    }
}

/// The ID of image `tag` when it carries `recipe` in [`image::RECIPE_LABEL`]: the build would
/// make it again.
async fn up_to_date(client: &Client, tag: &str, recipe: &str) -> Result<Option<String>, Error> {
    let summary = client.image_summary(tag).await?;
    Ok(summary
        .filter(|s| s.labels.get(image::RECIPE_LABEL).map(String::as_str) == Some(recipe))
        .map(|s| s.id))
}

/// The base image's ID when the service has it. A missing `localhost/` base cannot be pulled:
/// say how to make it. A missing registry base is pulled by the build (and its ID is unknown
/// here, so that build is never skipped).
async fn check_base(client: &Client, base: &str) -> Result<Option<String>, Error> {
    if let Some(summary) = client.image_summary(base).await? {
        return Ok(Some(summary.id));
    }
    if image::is_local_reference(base) {
        return Err(ImageError::BaseMissing {
            base: base.to_owned(),
            url: client.url().to_owned(),
        }
        .into());
    }
    eprintln!("ags: base image {base} is not present; the build pulls it from its registry");
    Ok(None)
}

async fn import(global: &GlobalArgs, args: &ImageImportArgs) -> Result<u8, Error> {
    let tar = read_tar(args)?;
    let size_mb = tar.len() as f64 / 1e6;
    let changes: Vec<&str> = if args.changes.is_empty() {
        image::DEFAULT_IMPORT_CHANGES.to_vec()
    } else {
        args.changes.iter().map(String::as_str).collect()
    };
    let client = podman::connect(&super::target(global)).await?;
    let started = Instant::now();
    let id = client.image_import(tar, &args.reference, &changes).await?;
    eprintln!(
        "ags: imported {} ({}) from {} ({size_mb:.1} MB) in {:.1} s",
        args.reference,
        short_id(&id),
        args.tar.display(),
        started.elapsed().as_secs_f64()
    );
    map_for_user(&client, &args.reference).await;
    writeln!(std::io::stdout(), "{id}").map_err(Error::Output)?;
    Ok(0)
}

fn read_tar(args: &ImageImportArgs) -> Result<Bytes, Error> {
    let err = |source| ImageError::ReadTar {
        path: args.tar.clone(),
        source,
    };
    let data = if args.tar.as_os_str() == "-" {
        let mut buf = Vec::new();
        std::io::stdin().lock().read_to_end(&mut buf).map_err(err)?;
        buf
    } else {
        std::fs::read(&args.tar).map_err(err)?
    };
    if data.is_empty() {
        return Err(err(std::io::Error::other("empty; expected a tar archive")).into());
    }
    Ok(Bytes::from(data))
}

/// The first 12 hex digits of an image ID (without `sha256:`).
fn short_id(id: &str) -> &str {
    let id = id.trim_start_matches("sha256:");
    &id[..id.len().min(12)]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(base: Option<&str>, context: Option<&str>) -> ImageBuildArgs {
        ImageBuildArgs {
            no_cache: false,
            tag: "localhost/t:1".into(),
            base: base.map(Into::into),
            context: context.map(Into::into),
            ca_certs: vec![],
            build_args: vec!["X=1".into()],
        }
    }

    #[test]
    fn base_is_checked_for_the_embedded_context_or_when_given() {
        assert_eq!(
            base_to_check(&args(None, None)).as_deref(),
            Some(image::DEFAULT_BASE)
        );
        assert_eq!(base_to_check(&args(Some("b"), Some("/d"))).as_deref(), Some("b"));
        assert_eq!(base_to_check(&args(None, Some("/d"))), None);
    }

    #[test]
    fn base_becomes_a_build_arg() {
        let ctx = image::embedded_context(&[]);
        let o = build_options(&args(Some("docker.io/library/debian:trixie-slim"), None), &ctx).unwrap();
        assert_eq!(o.build_args["BASE"], "docker.io/library/debian:trixie-slim");
        assert_eq!(o.build_args["X"], "1");
        let o = build_options(&args(None, None), &ctx).unwrap();
        assert!(!o.build_args.contains_key("BASE"));
        let uid = nix::unistd::getuid().as_raw().to_string();
        assert_eq!(
            o.build_args["AGENT_UID"], uid,
            "the embedded image's compile cache is made for us"
        );
        let o = build_options(&args(None, Some("/d")), &ctx).unwrap();
        assert!(
            !o.build_args.contains_key("AGENT_UID"),
            "a directory context gets what was given"
        );
    }

    #[test]
    fn short_ids() {
        assert_eq!(short_id("sha256:0123456789abcdef"), "0123456789ab");
        assert_eq!(short_id("abc"), "abc");
    }
}
