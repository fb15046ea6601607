//! Live image tests: exists, import of a rootfs tar, build with streamed progress and cache.

use ags::podman::{BuildOptions, PodmanError};
use bytes::Bytes;

use crate::podman_client::support::{Guard, IMAGE, IMAGE_LOCK, run, spec, tar_of, unique};

#[tokio::test]
async fn image_exists_and_import() {
    let client = client_or_skip!();
    let _lock = IMAGE_LOCK.lock().await;
    let mut g = Guard::new(&client);
    assert!(client.image_exists(IMAGE).await.unwrap());
    assert!(
        !client
            .image_exists("localhost/ags-test-no-such-image:latest")
            .await
            .unwrap()
    );
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
    let rootfs = Bytes::from(b.into_inner().unwrap());

    let image = g.image();
    let id = client
        .image_import(
            rootfs,
            &image,
            &["CMD [\"/bin/sh\", \"-c\", \"echo imported\"]", "ENV PATH=/bin"],
        )
        .await
        .unwrap();
    assert!(id.starts_with("sha256:") || id.len() == 64, "{id}");
    assert!(client.image_exists(&image).await.unwrap());
    let mut s = spec(&g.container("imported"), &[]);
    s.image = image.clone();
    let r = run(&client, &s, None, None).await;
    assert_eq!((r.out().as_str(), r.exit_code), ("imported\n", 0));
    client.delete(&g.containers[0], true, true).await.unwrap();
    client.image_delete(&image, false).await.unwrap();
    assert!(!client.image_exists(&image).await.unwrap());
}

#[tokio::test]
async fn image_build_streams_and_uses_cache() {
    let client = client_or_skip!();
    let _lock = IMAGE_LOCK.lock().await;
    let mut g = Guard::new(&client);
    let image = g.image();
    let marker = unique("build");
    let containerfile = format!("FROM {IMAGE}\nRUN echo {marker} > /x\n");
    let context = tar_of(&[("Containerfile", containerfile.as_bytes(), 0o644)]);
    let opts = BuildOptions::new(&image);
    let mut first = Vec::new();
    let outcome = client
        .image_build(context.clone(), &opts, |l| first.push(l.to_owned()))
        .await
        .unwrap();
    assert!(
        first.iter().any(|l| l.starts_with("STEP 2/2: RUN echo")),
        "{first:#?}"
    );
    assert!(!first.iter().any(|l| l.contains("Using cache")), "{first:#?}");
    assert!(outcome.image_id.is_some(), "{first:#?}");
    let mut second = Vec::new();
    let again = client
        .image_build(context, &opts, |l| second.push(l.to_owned()))
        .await
        .unwrap();
    assert!(second.iter().any(|l| l.contains("Using cache")), "{second:#?}");
    assert_eq!(again.image_id, outcome.image_id);

    let failing = tar_of(&[(
        "Containerfile",
        format!("FROM {IMAGE}\nRUN exit 3\n").as_bytes(),
        0o644,
    )]);
    let e = client
        .image_build(failing, &BuildOptions::new(g.image()), |_| {})
        .await
        .unwrap_err();
    assert!(
        matches!(&e, PodmanError::Build { message, .. } if message.contains("exit status 3")),
        "{e}"
    );
}
