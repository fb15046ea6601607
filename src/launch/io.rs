//! The attached session: host stdin → container, container output → host stdout/stderr (kept
//! separate without a tty), terminal resizes, and signal forwarding, until the output ends.

use std::io::Write;

use tokio::io::AsyncWriteExt;
use tokio::signal::unix::{SignalKind, signal};

use super::signals::SignalWatch;
use super::{LaunchError, terminal};
use crate::podman::{AttachInput, AttachOutput, Client, Demux, StreamKind};

/// Copy until the container's output ends. Stdin is forwarded in a task; without a tty its EOF
/// is delivered by half-closing the connection. At `deadline` (`--timeout`) the agent gets
/// SIGTERM, then SIGKILL after [`STOP_GRACE`]; returns whether that happened.
pub async fn pump(
    client: &Client,
    id: &str,
    mut output: Demux<AttachOutput>,
    input: AttachInput,
    tty: bool,
    signals: &mut SignalWatch,
    mut deadline: Option<tokio::time::Instant>,
) -> Result<bool, LaunchError> {
    let stdin_task = tokio::spawn(forward_stdin(input, tty));
    let mut winch = signal(SignalKind::window_change()).map_err(LaunchError::Terminal)?;
    let mut sigs = signals.receiver();
    sigs.mark_unchanged();
    let (mut sigs_open, mut escalate, mut timed_out) = (true, None, false);
    let result = loop {
        tokio::select! {
            frame = output.read_frame() => match frame {
                Ok(Some((kind, data))) => write_out(kind, &data)?,
                Ok(None) => break Ok(timed_out),
                Err(e) => break Err(LaunchError::Stream(e)),
            },
            _ = winch.recv(), if tty => {
                if let Some((rows, cols)) = terminal::window_size() {
                    let _ = client.resize(id, rows, cols).await;
                }
            }
            changed = sigs.changed(), if sigs_open => {
                // Copy the value out: the watch's read guard must not live across an await
                // (the signal task takes the write lock on this same thread).
                let sig = if changed.is_ok() { *sigs.borrow_and_update() } else { None };
                sigs_open = changed.is_ok();
                if let Some(sig) = sig {
                    // Like `podman run --sig-proxy`: the agent decides what the signal means.
                    let _ = client.kill(id, &crate::process::signal_name(sig)).await;
                    // Termination (not an interactive Ctrl-C) must end: like `podman stop`,
                    // SIGKILL the agent if it is still running after a grace period.
                    if sig != libc::SIGINT && escalate.is_none() {
                        escalate = Some(tokio::time::Instant::now() + STOP_GRACE);
                    }
                }
            }
            () = sleep_until_some(deadline) => {
                eprintln!("ags: --timeout reached; stopping the agent (SIGTERM, SIGKILL after {} s)", STOP_GRACE.as_secs());
                let _ = client.kill(id, "SIGTERM").await;
                (deadline, timed_out) = (None, true);
                escalate.get_or_insert(tokio::time::Instant::now() + STOP_GRACE);
            }
            () = sleep_until_some(escalate) => {
                eprintln!("ags: the agent did not exit within {} s of the signal; killing it", STOP_GRACE.as_secs());
                let _ = client.kill(id, "SIGKILL").await;
                escalate = None;
            }
        }
    };
    stdin_task.abort();
    result
}

/// How long a forwarded SIGTERM/SIGHUP may take to end the agent before it is killed.
pub const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

/// Sleep until `deadline`, or forever when there is none.
async fn sleep_until_some(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

fn write_out(kind: StreamKind, data: &[u8]) -> Result<(), LaunchError> {
    let res = match kind {
        StreamKind::Stderr => {
            let mut e = std::io::stderr().lock();
            e.write_all(data).and_then(|_| e.flush())
        }
        _ => {
            let mut o = std::io::stdout().lock();
            o.write_all(data).and_then(|_| o.flush())
        }
    };
    match res {
        // A closed stdout (e.g. `| head`) must not abort the session: the agent keeps running
        // and its exit code still matters.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.map_err(LaunchError::Output),
    }
}

async fn forward_stdin(mut input: AttachInput, tty: bool) {
    let mut stdin = tokio::io::stdin();
    let copied = tokio::io::copy(&mut stdin, &mut input).await;
    if !tty || copied.is_err() {
        let _ = input.shutdown().await;
    }
}
