//! Running the `ags` binary in tests: a clean environment with a temporary HOME, the live
//! Podman URL (`AGS_TEST_PODMAN_URL`, default the rootful socket), a loud skip when no service
//! answers, and a guard that deletes the images a test made.

#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

use ags::podman::Client;

/// The Podman service the live tests use.
pub fn url() -> String {
    std::env::var("AGS_TEST_PODMAN_URL").unwrap_or_else(|_| "unix:///run/podman/podman.sock".to_owned())
}

/// Run `f` on a fresh current-thread runtime (tests are synchronous; the binary is a process).
pub fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// A client for the live service, or None with a loud SKIP line.
pub fn client() -> Option<Client> {
    match block_on(ags::podman::connect(Some(&url()))) {
        Ok(c) => Some(c),
        Err(e) => {
            eprintln!("\n!!!!!!!! SKIP: no Podman service for live tests: {e}\n");
            None
        }
    }
}

/// A name unique to this test process and call.
pub fn unique(kind: &str) -> String {
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

/// `ags ARGS` with HOME=`home`, no XDG or CONTAINER_HOST variables, in directory `cwd`.
pub fn ags(home: &Path, cwd: &Path, args: &[&str]) -> Output {
    ags_pid(home, cwd, args).1
}

/// [`ags`], also returning the process id (the owner label of what it creates).
pub fn ags_pid(home: &Path, cwd: &Path, args: &[&str]) -> (u32, Output) {
    let child = Command::new(env!("CARGO_BIN_EXE_ags"))
        .env_clear()
        .env("HOME", home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .current_dir(cwd)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the ags binary");
    let pid = child.id();
    (pid, child.wait_with_output().expect("wait for the ags binary"))
}

/// Standard output and error as text.
pub fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Deletes the named images when dropped (also when the test panics).
pub struct ImageGuard {
    pub client: Client,
    pub images: Vec<String>,
}

impl Drop for ImageGuard {
    fn drop(&mut self) {
        let client = self.client.clone();
        let images = std::mem::take(&mut self.images);
        block_on(async move {
            for i in images {
                match client.image_delete(&i, true).await {
                    Err(e) if !e.is_not_found() => eprintln!("cleanup of image {i} failed: {e}"),
                    _ => {}
                }
            }
        });
    }
}
