//! Cancellation of running children: an [`Interrupt`] fires with the number of the signal that
//! asked for it (SIGINT/SIGTERM/SIGHUP, or a trigger from the launch's signal watch). The
//! prepare runner, lifecycle hooks and `op` calls all stop their children when it fires.

use std::io;
use std::sync::Arc;

use tokio::sync::watch;

/// Cancellation input of a phase: triggered with the number of the signal that asked for it.
#[derive(Debug, Clone)]
pub struct Interrupt {
    rx: Option<watch::Receiver<Option<i32>>>,
}

/// The triggering side of an [`Interrupt`].
#[derive(Debug, Clone)]
pub struct InterruptHandle {
    tx: Arc<watch::Sender<Option<i32>>>,
}

/// A connected trigger and interrupt.
pub fn interrupt_channel() -> (InterruptHandle, Interrupt) {
    let (tx, rx) = watch::channel(None);
    (InterruptHandle { tx: Arc::new(tx) }, Interrupt { rx: Some(rx) })
}

impl InterruptHandle {
    /// Cancel the phase as if `signal` had been received (the first trigger wins).
    pub fn trigger(&self, signal: i32) {
        self.tx
            .send_if_modified(|v| v.is_none() && v.replace(signal).is_none());
    }
}

impl Interrupt {
    /// An interrupt that never fires.
    pub fn never() -> Self {
        Self { rx: None }
    }

    /// Fire when `rx` holds a signal number (the launch's signal watch feeds it).
    pub fn from_receiver(rx: watch::Receiver<Option<i32>>) -> Self {
        Self { rx: Some(rx) }
    }

    /// Fire on SIGINT, SIGTERM or SIGHUP. Must be called inside a Tokio runtime. Note: once
    /// Tokio handles a signal, its default action (terminating `ags`) is not restored for the
    /// rest of the process; the caller must act on it afterwards too. A question open on the
    /// terminal ends too when one of the signals comes (`prompt::end_on_signals`).
    pub fn on_signals() -> io::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        let (handle, interrupt) = interrupt_channel();
        let mut int = signal(SignalKind::interrupt())?;
        let mut term = signal(SignalKind::terminate())?;
        let mut hup = signal(SignalKind::hangup())?;
        crate::prompt::end_on_signals()?;
        tokio::spawn(async move {
            let sig = tokio::select! {
                _ = int.recv() => libc::SIGINT,
                _ = term.recv() => libc::SIGTERM,
                _ = hup.recv() => libc::SIGHUP,
                () = handle.tx.closed() => return,
            };
            handle.trigger(sig);
        });
        Ok(interrupt)
    }

    /// The signal, if the interrupt has fired already.
    pub fn fired(&self) -> Option<i32> {
        self.rx.as_ref().and_then(|rx| *rx.borrow())
    }

    /// Wait until the interrupt fires (forever for [`Interrupt::never`]) and return its signal.
    pub async fn wait(&mut self) -> i32 {
        if let Some(rx) = &mut self.rx
            && let Ok(sig) = rx.wait_for(Option::is_some).await
        {
            return sig.unwrap_or(libc::SIGINT);
        }
        std::future::pending().await
    }
}
