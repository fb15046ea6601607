//! Termination signals during a launch. Once installed, SIGINT, SIGTERM and SIGHUP no longer kill
//! `ags` outright: they are recorded in a watch channel that the hook runner (to cancel hooks) and
//! the lifecycle (to stop, forward or clean up) observe, so every exit path runs cleanup.

use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::watch;

/// The first termination signal received, if any.
#[derive(Debug, Clone)]
pub struct SignalWatch {
    rx: watch::Receiver<Option<i32>>,
}

impl SignalWatch {
    /// Start listening (must be called inside a tokio runtime). A question open on the
    /// terminal ends too when one of the signals comes (`prompt::end_on_signals`).
    pub fn install() -> std::io::Result<Self> {
        let (tx, rx) = watch::channel(None);
        for (kind, num) in [
            (SignalKind::interrupt(), libc::SIGINT),
            (SignalKind::terminate(), libc::SIGTERM),
            (SignalKind::hangup(), libc::SIGHUP),
        ] {
            let mut stream = signal(kind)?;
            let tx = tx.clone();
            tokio::spawn(async move {
                while stream.recv().await.is_some() {
                    tx.send_modify(|v| *v = Some(num));
                    // Keep the latest as a new event for listeners that forward every signal.
                }
            });
        }
        // After tokio's handlers: no signal falls between the two.
        crate::prompt::end_on_signals()?;
        Ok(Self { rx })
    }

    /// The signal received so far, if any.
    pub fn received(&self) -> Option<i32> {
        *self.rx.borrow()
    }

    /// A receiver for components that wait on signals.
    pub fn receiver(&self) -> watch::Receiver<Option<i32>> {
        self.rx.clone()
    }
}

/// Conventional exit code for death by `signal` (128 + N).
pub fn exit_code_for(signal: i32) -> u8 {
    (128 + signal).clamp(0, 255) as u8
}
