//! `ags image build` and `ags image import` through the binary, against each live service.
//!
//! Every image is named `localhost/ags-test-<id>-…`, carries the test's `io.ags.test` label and
//! is deleted at the end, also when the test fails. Image tests are serialised: Podman 4.3's
//! build cache lookup fails ("layer not known") when an image is deleted while it looks. Needs
//! a static `/bin/busybox` on the host for the import.

use crate::common;

use std::sync::Mutex;

use common::api::{call, encode};
use common::{Mode, TestEnv, each_mode, show};

static IMAGES: Mutex<()> = Mutex::new(());

/// Deletes, when dropped, the named images and every image carrying the test's label: the
/// intermediate layers a build keeps for its cache, and an image a rebuild untagged.
struct ImageGuard {
    mode: Mode,
    label: String,
    images: Vec<String>,
}

impl ImageGuard {
    fn new(env: &TestEnv, images: &[&str]) -> Self {
        ImageGuard {
            mode: env.mode(),
            label: env.label(),
            images: images.iter().map(|i| (*i).to_owned()).collect(),
        }
    }

    fn labelled(&self) -> Vec<String> {
        let filter = encode(&serde_json::json!({ "label": [self.label] }).to_string());
        let reply = call(
            self.mode,
            "GET",
            &format!("/images/json?all=true&filters={filter}"),
            None,
        );
        let list = reply.json();
        let ids = list.as_array().into_iter().flatten();
        ids.filter_map(|i| i["Id"].as_str().map(str::to_owned)).collect()
    }
}

impl Drop for ImageGuard {
    fn drop(&mut self) {
        let delete = |image: &str| {
            call(
                self.mode,
                "DELETE",
                &format!("/images/{}?force=true", encode(image)),
                None,
            )
        };
        for image in &self.images {
            let reply = delete(image);
            if !reply.ok() && reply.status != 404 {
                eprintln!(
                    "cleanup of image {image} failed: {} {}",
                    reply.status,
                    reply.text()
                );
            }
        }
        // A parent goes only after its children: repeat while that makes progress.
        let mut left = self.labelled();
        for _ in 0..5 {
            left.iter().for_each(|id| drop(delete(id)));
            let now = self.labelled();
            if now.is_empty() || now.len() == left.len() {
                left = now;
                break;
            }
            left = now;
        }
        if !left.is_empty() {
            eprintln!("images labelled {} left behind: {left:?}", self.label);
        }
    }
}

fn exists(mode: Mode, image: &str) -> bool {
    call(mode, "GET", &format!("/images/{}/exists", encode(image)), None).status == 204
}

fn text(out: &std::process::Output) -> (String, String) {
    let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (s(&out.stdout), s(&out.stderr))
}

fn image_name(env: &TestEnv, what: &str) -> String {
    format!("localhost/{}:latest", env.unique_name(what))
}

#[test]
fn build_streams_progress_and_second_build_is_a_cache_hit() {
    let _one = IMAGES.lock().unwrap_or_else(|e| e.into_inner());
    each_mode(|env| {
        let tag = image_name(env, "build");
        let guard = ImageGuard::new(env, &[&tag]);
        let containerfile = format!(
            "FROM {}\nLABEL {}\nRUN echo {} > /marker\n",
            env.image(),
            env.label(),
            env.id()
        );
        let ctx = env.write_file("work/ctx/Containerfile", containerfile, 0o644);
        let ctx = ctx.parent().unwrap().to_str().unwrap().to_owned();
        let build = |extra: &[&str]| {
            let mut args = vec!["image", "build", "--context", &ctx, "--tag", &tag];
            args.extend_from_slice(extra);
            env.run(args)
        };

        let first = build(&[]);
        let (out, err) = text(&first);
        assert!(first.status.success(), "{}", show(&first));
        assert!(err.contains("STEP 3/3: RUN echo"), "{err}");
        assert!(err.contains(": 3 steps, 0 from cache"), "{err}");
        let id = out.trim().to_owned();
        assert_eq!(id.len(), 64, "stdout is the image ID: {out:?}");
        assert!(exists(env.mode(), &tag));

        let second = build(&[]);
        let (out, err) = text(&second);
        assert!(second.status.success(), "{}", show(&second));
        assert!(err.contains("--> Using cache"), "{err}");
        assert!(err.contains(": 3 steps, 2 from cache"), "{err}");
        assert_eq!(out.trim(), id, "a cache hit gives the same image");

        let forced = build(&["--no-cache"]);
        let (_, err) = text(&forced);
        assert!(forced.status.success(), "{}", show(&forced));
        assert!(!err.contains("Using cache"), "{err}");
        drop(guard);
        assert!(!exists(env.mode(), &tag));
    });
}

/// Issue 28 item 4: with the base known (`--base`, or the embedded context), an unchanged
/// build is skipped by comparing the recipe digest label; any change of the context, the build
/// arguments or `--no-cache` builds again.
#[test]
fn an_unchanged_build_is_skipped_and_any_change_builds_again() {
    let _one = IMAGES.lock().unwrap_or_else(|e| e.into_inner());
    each_mode(|env| {
        let tag = image_name(env, "recipe");
        let guard = ImageGuard::new(env, &[&tag]);
        let write = |extra: &str| {
            let text = format!(
                "ARG BASE\nFROM ${{BASE}}\nLABEL {}\nRUN echo {}{extra} > /marker\n",
                env.label(),
                env.id()
            );
            let file = env.write_file("work/recipe/Containerfile", text, 0o644);
            file.parent().unwrap().to_str().unwrap().to_owned()
        };
        let ctx = write("");
        let base = env.image();
        let build = |extra: &[&str]| {
            let mut args = vec![
                "image",
                "build",
                "--context",
                &ctx,
                "--base",
                &base,
                "--tag",
                &tag,
            ];
            args.extend_from_slice(extra);
            let out = env.run(args);
            assert!(out.status.success(), "{}", show(&out));
            let (id, err) = text(&out);
            (id.trim().to_owned(), err.contains("is up to date"))
        };
        let (id, skipped) = build(&[]);
        assert!(!skipped, "the first build builds");
        assert_eq!(
            build(&[]),
            (id.clone(), true),
            "an unchanged build is skipped, same image"
        );
        let (changed_arg, skipped) = build(&["--build-arg", "X=1"]);
        assert!(!skipped, "a new build argument builds again");
        assert_eq!(build(&["--build-arg", "X=1"]), (changed_arg, true));
        write(" changed");
        assert!(!build(&[]).1, "a changed Containerfile builds again");
        assert!(build(&[]).1);
        assert!(!build(&["--no-cache"]).1, "--no-cache always builds");
        drop(guard);
    });
}

#[test]
fn failing_build_and_missing_base_say_what_to_do() {
    let _one = IMAGES.lock().unwrap_or_else(|e| e.into_inner());
    each_mode(|env| {
        let base = image_name(env, "no-base");
        let tag = image_name(env, "never");
        let _guard = ImageGuard::new(env, &[]);
        let out = env.run(["image", "build", "--base", &base, "--tag", &tag]);
        let (_, err) = text(&out);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        assert!(
            err.contains(&format!("base image {base} is not present")),
            "{err}"
        );
        assert!(err.contains("scripts/bootstrap-base-image"), "{err}");

        let failing = format!("FROM {}\nLABEL {}\nRUN exit 3\n", env.image(), env.label());
        let ctx = env.write_file("work/fail/Containerfile", failing, 0o644);
        let ctx = ctx.parent().unwrap().to_str().unwrap().to_owned();
        let out = env.run(["image", "build", "--context", &ctx, "--tag", &tag]);
        let (_, err) = text(&out);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        assert!(
            err.contains(&format!("building image {tag}")) && err.contains("exit status 3"),
            "{err}"
        );
        assert!(!exists(env.mode(), &tag));
    });
}

#[test]
fn import_a_busybox_rootfs_and_launch_it() {
    let _one = IMAGES.lock().unwrap_or_else(|e| e.into_inner());
    each_mode(|env| {
        let reference = image_name(env, "import");
        let _guard = ImageGuard::new(env, &[&reference]);
        let tar = env.write_file("work/rootfs.tar", busybox_rootfs(), 0o644);
        let tar = tar.to_str().unwrap();
        let label_change = format!("LABEL {}", env.label());
        let out = env.run([
            "image",
            "import",
            "--reference",
            &reference,
            "--change",
            "ENV PATH=/bin",
            "--change",
            &label_change,
            tar,
        ]);
        let (stdout, err) = text(&out);
        assert!(out.status.success(), "{}", show(&out));
        assert!(err.contains(&format!("ags: imported {reference}")), "{err}");
        assert_eq!(
            stdout.trim().trim_start_matches("sha256:").len(),
            64,
            "{stdout:?}"
        );
        assert!(exists(env.mode(), &reference));

        let label = env.label();
        let args = [
            "--image",
            &reference,
            "--tty=false",
            "--label",
            &label,
            "--",
            "sh",
            "-c",
            "echo imported; exit 4",
        ];
        let run = env.run(args);
        assert_eq!(
            (text(&run).0.as_str(), run.status.code()),
            ("imported\n", Some(4)),
            "{}",
            show(&run)
        );
        env.assert_no_leftovers();

        let missing = env.run([
            "image",
            "import",
            "--reference",
            &reference,
            "/nonexistent/rootfs.tar",
        ]);
        assert_eq!(missing.status.code(), Some(125));
        assert!(
            text(&missing)
                .1
                .contains("root filesystem tar /nonexistent/rootfs.tar"),
            "{}",
            show(&missing)
        );
    });
}

/// Issue 28 item 2: on a rootless service `ags image import` makes the copy of the image's
/// layers in the user's id mapping that the first launch would otherwise wait for, as
/// `ags image build` does: a container of the image is created and removed (never started), and
/// the store lists a mapped layer for the image. A rootful service gets neither.
#[test]
fn a_rootless_import_makes_the_id_mapped_copy_ahead() {
    let _one = IMAGES.lock().unwrap_or_else(|e| e.into_inner());
    each_mode(|env| {
        let reference = image_name(env, "mapped");
        let _guard = ImageGuard::new(env, &[&reference]);
        let tar = env.write_file("work/rootfs.tar", busybox_rootfs(), 0o644);
        let label_change = format!("LABEL {}", env.label());
        let since = unix_now() - 1;
        let args = [
            "image",
            "import",
            "--reference",
            &reference,
            "--change",
            &label_change,
        ];
        let out = env.run(args.into_iter().chain([tar.to_str().unwrap()]));
        let (stdout, err) = text(&out);
        assert!(out.status.success(), "{}", show(&out));
        let rootless = env.mode() == common::Mode::Rootless;
        assert_eq!(
            err.contains(&format!("ags: prepared {reference} for your user's id mapping")),
            rootless,
            "{err}"
        );
        let expected: &[&str] = if rootless { &["create", "remove"] } else { &[] };
        assert_eq!(container_events(env.mode(), &reference, since), expected);
        match mapped_layers(env.mode(), stdout.trim()) {
            Some(n) => assert_eq!(n > 0, rootless, "mapped layers of {reference}: {n}"),
            None => eprintln!("the store's image records are not readable here: mapped layers unchecked"),
        }
        env.assert_no_leftovers();
    });
}

fn unix_now() -> u64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    now.expect("a clock after 1970").as_secs()
}

/// The actions of the container events of `image` since `since` (unix seconds), in order.
fn container_events(mode: common::Mode, image: &str, since: u64) -> Vec<String> {
    let filter = encode(&serde_json::json!({ "type": ["container"] }).to_string());
    let path = format!("/events?stream=false&since={since}&filters={filter}");
    let reply = call(mode, "GET", &path, None);
    assert!(reply.ok(), "{} {}", reply.status, reply.text());
    // One JSON object per line.
    let events = reply.text();
    let events = events
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok());
    events
        .filter(|e| e["Actor"]["Attributes"]["image"] == image)
        .filter_map(|e| e["Action"].as_str().map(str::to_owned))
        .collect()
}

/// How many id-mapped copies of image `id` the service's store records (containers/storage's
/// `mapped-layers` of the image in overlay-images/images.json, which the API does not show);
/// `None` when the store is not overlay or its records are not readable by this process.
fn mapped_layers(mode: common::Mode, id: &str) -> Option<usize> {
    let info = call(mode, "GET", "/info", None).json();
    let store = &info["store"];
    let driver = store["graphDriverName"].as_str()?;
    let root = store["graphRoot"].as_str()?;
    let records = std::fs::read(format!("{root}/{driver}-images/images.json")).ok()?;
    let records: serde_json::Value = serde_json::from_slice(&records).ok()?;
    let id = id.trim_start_matches("sha256:");
    let image = records.as_array()?.iter().find(|i| i["id"] == id)?;
    Some(image["mapped-layers"].as_array().map_or(0, Vec::len))
}

#[test]
fn launch_with_a_missing_image_says_how_to_make_it() {
    each_mode(|env| {
        let image = image_name(env, "missing");
        let label = env.label();
        let out = env.run(["--image", &image, "--tty=false", "--label", &label, "--", "true"]);
        let (_, err) = text(&out);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        assert!(err.contains(&format!("image {image} is not present")), "{err}");
        // Another local image (not the agent image): build or import it; the base-image script
        // is no advice for it.
        assert!(
            err.contains("`ags image build --context DIR --tag`")
                && err.contains("`ags image import`")
                && !err.contains("scripts/bootstrap-base-image"),
            "{err}"
        );
        env.assert_no_leftovers();
    });
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
