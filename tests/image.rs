//! `ags image build` and `ags image import` against a live Podman service, through the binary.
//!
//! Needs `localhost/ags-busybox:latest` and a static `/bin/busybox` on the host. Every image is
//! named `localhost/ags-test-…`, labelled `io.ags.test=1` and deleted at the end. The tests are
//! serialised: Podman 4.3's build cache lookup fails ("layer not known") when an image is
//! deleted while it looks.

mod cli_support;

use std::sync::Mutex;

use cli_support::{ImageGuard, ags, block_on, client, text, unique, url};

static LOCK: Mutex<()> = Mutex::new(());

macro_rules! client_or_skip {
    () => {
        match client() {
            Some(c) => c,
            None => return,
        }
    };
}

#[test]
fn build_streams_progress_and_second_build_is_a_cache_hit() {
    let client = client_or_skip!();
    let _lock = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let home = tempfile::tempdir().unwrap();
    let ctx = tempfile::tempdir().unwrap();
    let tag = format!("localhost/{}:latest", unique("build"));
    let guard = ImageGuard {
        client: client.clone(),
        images: vec![tag.clone()],
    };
    let marker = unique("marker");
    let containerfile = format!(
        "FROM localhost/ags-busybox:latest\nLABEL io.ags.test=1 io.ags.test-marker={marker}\nRUN echo {marker} > /marker\n"
    );
    std::fs::write(ctx.path().join("Containerfile"), containerfile).unwrap();
    let u = url();
    let ctx_dir = ctx.path().to_str().unwrap();
    let build = |extra: &[&str]| {
        let mut args = vec!["image", "build", "--url", &u, "--context", ctx_dir, "--tag", &tag];
        args.extend_from_slice(extra);
        ags(home.path(), home.path(), &args)
    };

    let first = build(&[]);
    let (out, err) = text(&first);
    assert!(first.status.success(), "{err}");
    assert!(err.contains("STEP 3/3: RUN echo"), "{err}");
    assert!(err.contains(": 3 steps, 0 from cache"), "{err}");
    let id = out.trim().to_owned();
    assert_eq!(id.len(), 64, "stdout is the image ID: {out:?}");
    assert!(block_on(client.image_exists(&tag)).unwrap());

    let second = build(&[]);
    let (out, err) = text(&second);
    assert!(second.status.success(), "{err}");
    assert!(err.contains("--> Using cache"), "{err}");
    assert!(err.contains(": 3 steps, 2 from cache"), "{err}");
    assert_eq!(out.trim(), id, "a cache hit gives the same image");

    let forced = build(&["--no-cache"]);
    let (_, err) = text(&forced);
    assert!(forced.status.success(), "{err}");
    assert!(!err.contains("Using cache"), "{err}");
    drop(guard);
    assert!(!block_on(client.image_exists(&tag)).unwrap());
}

#[test]
fn failing_build_and_missing_base_say_what_to_do() {
    let _client = client_or_skip!();
    let _lock = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let home = tempfile::tempdir().unwrap();
    let u = url();
    let base = format!("localhost/{}:none", unique("no-base"));
    let tag = format!("localhost/{}:latest", unique("never"));
    let out = ags(
        home.path(),
        home.path(),
        &["image", "build", "--url", &u, "--base", &base, "--tag", &tag],
    );
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(125), "{err}");
    assert!(
        err.contains(&format!("base image {base} is not present")),
        "{err}"
    );
    assert!(err.contains("scripts/bootstrap-base-image"), "{err}");

    let ctx = tempfile::tempdir().unwrap();
    std::fs::write(
        ctx.path().join("Containerfile"),
        "FROM localhost/ags-busybox:latest\nLABEL io.ags.test=1\nRUN exit 3\n",
    )
    .unwrap();
    let ctx_dir = ctx.path().to_str().unwrap();
    let out = ags(
        home.path(),
        home.path(),
        &["image", "build", "--url", &u, "--context", ctx_dir, "--tag", &tag],
    );
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(125), "{err}");
    assert!(
        err.contains(&format!("building image {tag}")) && err.contains("exit status 3"),
        "{err}"
    );
}

#[test]
fn import_a_busybox_rootfs_and_launch_it() {
    let client = client_or_skip!();
    let _lock = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let home = tempfile::tempdir().unwrap();
    let reference = format!("localhost/{}:latest", unique("import"));
    let _guard = ImageGuard {
        client: client.clone(),
        images: vec![reference.clone()],
    };
    let tar_path = home.path().join("rootfs.tar");
    std::fs::write(&tar_path, busybox_rootfs()).unwrap();
    let u = url();
    let tar_arg = tar_path.to_str().unwrap();
    let out = ags(
        home.path(),
        home.path(),
        &[
            "image",
            "import",
            "--url",
            &u,
            "--reference",
            &reference,
            "--change",
            "ENV PATH=/bin",
            "--change",
            "LABEL io.ags.test=1",
            tar_arg,
        ],
    );
    let (stdout, err) = text(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains(&format!("ags: imported {reference}")), "{err}");
    assert!(
        stdout.trim().trim_start_matches("sha256:").len() == 64,
        "{stdout:?}"
    );
    assert!(block_on(client.image_exists(&reference)).unwrap());

    let run = ags(
        home.path(),
        home.path(),
        &[
            "--url",
            &u,
            "--image",
            &reference,
            "--tty=false",
            "--label",
            "io.ags.test=1",
            "--",
            "sh",
            "-c",
            "echo imported; exit 4",
        ],
    );
    let (stdout, err) = text(&run);
    assert_eq!(
        (stdout.as_str(), run.status.code()),
        ("imported\n", Some(4)),
        "{err}"
    );

    let missing = ags(
        home.path(),
        home.path(),
        &[
            "image",
            "import",
            "--url",
            &u,
            "--reference",
            &reference,
            "/nonexistent/rootfs.tar",
        ],
    );
    let (_, err) = text(&missing);
    assert_eq!(missing.status.code(), Some(125));
    assert!(
        err.contains("root filesystem tar /nonexistent/rootfs.tar"),
        "{err}"
    );
}

/// A root filesystem with the host's static busybox as /bin/busybox and /bin/sh.
fn busybox_rootfs() -> Vec<u8> {
    let busybox = std::fs::read("/bin/busybox").expect("a static /bin/busybox on the host");
    let mut b = tar::Builder::new(Vec::new());
    let mut h = tar::Header::new_gnu();
    h.set_size(busybox.len() as u64);
    h.set_mode(0o755);
    h.set_cksum();
    b.append_data(&mut h, "bin/busybox", busybox.as_slice()).unwrap();
    let mut l = tar::Header::new_gnu();
    l.set_entry_type(tar::EntryType::Symlink);
    l.set_size(0);
    l.set_mode(0o777);
    b.append_link(&mut l, "bin/sh", "busybox").unwrap();
    b.into_inner().unwrap()
}

#[test]
fn launch_with_a_missing_image_says_how_to_make_it() {
    if client().is_none() {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let image = format!("localhost/{}:latest", unique("missing"));
    let out = ags(
        home.path(),
        home.path(),
        &["--url", &url(), "--image", &image, "--tty=false", "--", "true"],
    );
    let (_, err) = text(&out);
    assert_eq!(out.status.code(), Some(125), "{err}");
    assert!(err.contains(&format!("image {image} is not present")), "{err}");
    assert!(
        err.contains("`ags image build`") && err.contains("scripts/bootstrap-base-image"),
        "{err}"
    );
}
