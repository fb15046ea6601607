//! Helpers of the live Podman tests: the client (or a loud skip), unique names, the cleanup
//! guard, a spec with the test label, and the decided create → attach → start → exit-code flow.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use ags::podman::{AttachOptions, Client, Namespace, NsMode, PodmanError, SpecGenerator, StreamKind};
use bytes::Bytes;
use tokio::io::AsyncWriteExt;

pub(crate) const IMAGE: &str = "localhost/ags-busybox:latest";
pub(crate) const POLL: Duration = Duration::from_millis(5);

/// Serialises the tests that add and delete images: Podman 4.3's build cache lookup fails with
/// "getting top layer info: layer not known" when an image is deleted while it looks.
pub(crate) static IMAGE_LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

pub(crate) fn url() -> String {
    std::env::var("AGS_TEST_PODMAN_URL").unwrap_or_else(|_| "unix:///run/podman/podman.sock".to_owned())
}

pub(crate) async fn client() -> Option<Client> {
    match ags::podman::connect(&ags::podman::Target::url(url())).await {
        Ok(c) => Some(c),
        Err(e) => {
            eprintln!("\n!!!!!!!! SKIP: no Podman service for live tests: {e}\n");
            None
        }
    }
}

macro_rules! client_or_skip {
    () => {
        match $crate::podman_client::support::client().await {
            Some(c) => c,
            None => return,
        }
    };
}

pub(crate) fn unique(kind: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!(
        "ags-test-{kind}-{}-{}-{nanos:x}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

pub(crate) fn test_labels() -> BTreeMap<String, String> {
    BTreeMap::from([("io.ags.test".to_owned(), "1".to_owned())])
}

/// Removes what a test created, in reverse kind order, when dropped (also on panic).
pub(crate) struct Guard {
    client: Client,
    pub(crate) containers: Vec<String>,
    volumes: Vec<String>,
    images: Vec<String>,
}

impl Guard {
    pub(crate) fn new(client: &Client) -> Self {
        Guard {
            client: client.clone(),
            containers: vec![],
            volumes: vec![],
            images: vec![],
        }
    }

    pub(crate) fn container(&mut self, kind: &str) -> String {
        let name = unique(kind);
        self.containers.push(name.clone());
        name
    }

    pub(crate) fn volume(&mut self) -> String {
        let name = unique("vol");
        self.volumes.push(name.clone());
        name
    }

    pub(crate) fn image(&mut self) -> String {
        let name = format!("localhost/{}:latest", unique("img"));
        self.images.push(name.clone());
        name
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let client = self.client.clone();
        let (containers, volumes, images) = (
            std::mem::take(&mut self.containers),
            std::mem::take(&mut self.volumes),
            std::mem::take(&mut self.images),
        );
        // A test's runtime cannot be re-entered from Drop: clean up on a runtime of our own.
        let cleanup = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                for c in containers {
                    report("container", &c, client.delete(&c, true, true).await);
                }
                for v in volumes {
                    report("volume", &v, client.volume_delete(&v).await);
                }
                for i in images {
                    report("image", &i, client.image_delete(&i, true).await);
                }
            });
        });
        let _ = cleanup.join();
    }
}

pub(crate) fn report(kind: &str, name: &str, r: Result<(), PodmanError>) {
    match r {
        Err(e) if !e.is_not_found() => eprintln!("cleanup of {kind} {name} failed: {e}"),
        _ => {}
    }
}

pub(crate) fn spec(name: &str, command: &[&str]) -> SpecGenerator {
    SpecGenerator {
        name: Some(name.to_owned()),
        image: IMAGE.to_owned(),
        command: command.iter().map(|s| (*s).to_owned()).collect(),
        labels: test_labels(),
        netns: Some(Namespace::new(NsMode::None)),
        ..Default::default()
    }
}

/// What an attached run produced.
#[derive(Debug, Default)]
pub(crate) struct Run {
    pub(crate) stdout: Vec<u8>,
    pub(crate) stderr: Vec<u8>,
    pub(crate) exit_code: i32,
}

impl Run {
    pub(crate) fn out(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
}

/// The decided flow: create → attach → (resize) → start → read to the end → poll inspect.
/// `input` is written after start and then the input half is closed.
pub(crate) async fn run(
    client: &Client,
    spec: &SpecGenerator,
    input: Option<&[u8]>,
    size: Option<(u16, u16)>,
) -> Run {
    let id = client.create(spec).await.expect("create");
    let opts = AttachOptions {
        stdin: spec.stdin,
        stdout: true,
        stderr: true,
        tty: spec.terminal,
    };
    let (mut demux, mut stdin) = client.attach(&id, opts).await.expect("attach");
    if let Some((h, w)) = size {
        client.resize(&id, h, w).await.expect("resize after attach");
    }
    client.start(&id).await.expect("start");
    let write = async {
        if let Some(data) = input {
            stdin.write_all(data).await.expect("write stdin");
            stdin.shutdown().await.expect("close stdin");
        }
    };
    let read = async {
        let mut run = Run::default();
        while let Some((kind, data)) = demux.read_frame().await.expect("read frame") {
            match kind {
                StreamKind::Stderr => run.stderr.extend_from_slice(&data),
                _ => run.stdout.extend_from_slice(&data),
            }
        }
        run
    };
    let ((), mut run) = tokio::join!(write, read);
    let state = tokio::time::timeout(Duration::from_secs(120), client.wait_exited(&id, POLL))
        .await
        .expect("container did not exit")
        .expect("inspect");
    run.exit_code = state.exit_code;
    run
}

pub(crate) fn tar_of(files: &[(&str, &[u8], u32)]) -> Bytes {
    let mut b = tar::Builder::new(Vec::new());
    for (path, data, mode) in files {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(*mode);
        h.set_cksum();
        b.append_data(&mut h, path, *data).unwrap();
    }
    Bytes::from(b.into_inner().unwrap())
}
