//! Running a child with collected output and a deadline, and describing how it ended.

use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitStatus, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A byte stream collected by a background thread.
pub struct Collector {
    buf: Arc<Mutex<Vec<u8>>>,
    thread: JoinHandle<()>,
}

impl Collector {
    /// Start collecting everything `source` yields until EOF.
    pub fn start(mut source: impl Read + Send + 'static) -> Self {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&buf);
        let thread = std::thread::spawn(move || {
            let mut chunk = [0u8; 8192];
            loop {
                match source.read(&mut chunk) {
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Ok(0) | Err(_) => return,
                    Ok(n) => sink
                        .lock()
                        .expect("collector lock")
                        .extend_from_slice(&chunk[..n]),
                }
            }
        });
        Self { buf, thread }
    }

    /// The bytes collected so far (the stream may still be open).
    pub fn snapshot(&self) -> Vec<u8> {
        self.buf.lock().expect("collector lock").clone()
    }

    /// The bytes so far, after waiting up to `grace` for the end of the stream (a descendant
    /// that keeps the pipe open must not hang the test).
    pub fn finish(self, grace: Duration) -> Vec<u8> {
        let deadline = Instant::now() + grace;
        while !self.thread.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let bytes = self.buf.lock().expect("collector lock").clone();
        if self.thread.is_finished() {
            let _ = self.thread.join();
        }
        bytes
    }
}

/// Run `cmd` with piped stdout/stderr (and `stdin` if given, else /dev/null), killing it and
/// failing the test after `timeout`.
pub fn run_command(mut cmd: Command, stdin: Option<&[u8]>, timeout: Duration) -> Output {
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let desc = format!("{:?} {:?}", cmd.get_program(), cmd.get_args().collect::<Vec<_>>());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawning {desc}: {e}"));
    if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
        let bytes = bytes.to_vec();
        // A child that does not read its input must not block the test: write from a thread.
        std::thread::spawn(move || {
            let _ = pipe.write_all(&bytes);
        });
    }
    let stdout = Collector::start(child.stdout.take().expect("piped stdout"));
    let stderr = Collector::start(child.stderr.take().expect("piped stderr"));
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child
            .try_wait()
            .unwrap_or_else(|e| panic!("waiting for {desc}: {e}"))
        {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            let out = String::from_utf8_lossy(&stdout.finish(Duration::from_secs(1))).into_owned();
            let err = String::from_utf8_lossy(&stderr.finish(Duration::from_secs(1))).into_owned();
            panic!("{desc} still running after {timeout:?}: killed\n--- stdout\n{out}\n--- stderr\n{err}");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let grace = Duration::from_secs(10);
    Output {
        status,
        stdout: stdout.finish(grace),
        stderr: stderr.finish(grace),
    }
}

/// "exit code N" or "killed by signal N", for assertion messages.
pub fn describe_status(status: &ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        _ => format!("{status}"),
    }
}

/// Stdout and stderr of an [`Output`], for assertion messages.
pub fn show(out: &Output) -> String {
    format!(
        "{}\n--- stdout\n{}\n--- stderr\n{}",
        describe_status(&out.status),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}
