use std::sync::Mutex;

use super::*;

fn sh(script: &str) -> Spawn {
    Spawn {
        program: "/bin/sh".into(),
        args: vec!["-c".into(), script.into()],
        cwd: None,
        env: vec![],
    }
}

/// The io for `sh`, its stderr lines sent to `tx`.
fn io_to(tx: std::sync::mpsc::Sender<String>) -> Io {
    let tx = Mutex::new(tx);
    Io {
        stdin: Arc::from(&b"in"[..]),
        stdout_cap: 16,
        stderr_name: "sh".into(),
        stderr_cap: 1024,
        stderr_sink: Arc::new(move |l: &str| drop(tx.lock().unwrap().send(l.to_owned()))),
        timeout: Duration::from_secs(30),
        drain_grace: Duration::from_millis(200),
    }
}

fn gone(pid: i32) -> bool {
    (0..200).any(|_| {
        std::thread::sleep(Duration::from_millis(10));
        nix::sys::signal::kill(Pid::from_raw(pid), None).is_err()
    })
}

#[tokio::test]
async fn run_reports_stdin_stdout_stderr_and_an_abort() {
    let (tx, rx) = std::sync::mpsc::channel();
    let done = run(
        sh("cat; echo oops >&2"),
        &io_to(tx.clone()),
        std::future::pending::<()>(),
    )
    .await
    .unwrap();
    assert_eq!(
        (done.ending, &done.stdout.bytes[..]),
        (Ending::Exited, &b"in"[..])
    );
    assert_eq!(rx.recv().unwrap(), "[sh] oops");
    let abort = tokio::time::sleep(Duration::from_millis(100));
    let done = run(sh("sleep 30"), &io_to(tx), async move {
        abort.await;
        7
    })
    .await
    .unwrap();
    assert_eq!(done.ending, Ending::Aborted(7));
}

#[tokio::test]
async fn a_dropped_run_kills_the_group() {
    let (tx, rx) = std::sync::mpsc::channel();
    let io = io_to(tx);
    let running = run(
        sh("echo $$ >&2; sleep 30 & wait"),
        &io,
        std::future::pending::<()>(),
    );
    let timed_out = tokio::time::timeout(Duration::from_millis(500), running).await;
    assert!(timed_out.is_err());
    let line = rx.recv_timeout(Duration::from_secs(5)).unwrap();
    let pid: i32 = line.strip_prefix("[sh] ").unwrap().parse().unwrap();
    assert!(gone(pid), "the group of {pid} was killed and reaped");
}
