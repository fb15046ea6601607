//! The host terminal: raw mode while a TTY session is attached (restored by a guard on every
//! exit path, including unwinding) and the window size for the initial resize and SIGWINCH.

use std::io::{IsTerminal, stdin, stdout};
use std::os::fd::AsFd;

use rustix::termios::{OptionalActions, Termios, tcgetattr, tcgetwinsize, tcsetattr};

/// Whether both stdin and stdout are terminals (`--tty=auto`).
pub fn both_are_terminals() -> bool {
    stdin().is_terminal() && stdout().is_terminal()
}

/// The current size (rows, columns) of the terminal on stdout, else stdin.
pub fn window_size() -> Option<(u16, u16)> {
    let ws = tcgetwinsize(stdout().as_fd())
        .or_else(|_| tcgetwinsize(stdin().as_fd()))
        .ok()?;
    (ws.ws_row > 0 && ws.ws_col > 0).then_some((ws.ws_row, ws.ws_col))
}

/// Puts stdin's terminal in raw mode; restores the saved settings when dropped.
#[derive(Debug)]
pub struct RawModeGuard {
    saved: Option<Termios>,
}

impl RawModeGuard {
    /// Enter raw mode when stdin is a terminal; a no-op guard otherwise.
    pub fn enter() -> std::io::Result<Self> {
        let fd = stdin();
        if !fd.is_terminal() {
            return Ok(Self { saved: None });
        }
        let saved = tcgetattr(fd.as_fd())?;
        let mut raw = saved.clone();
        raw.make_raw();
        tcsetattr(fd.as_fd(), OptionalActions::Now, &raw)?;
        Ok(Self { saved: Some(saved) })
    }

    /// Restore the saved settings now (idempotent).
    pub fn restore(&mut self) {
        if let Some(saved) = self.saved.take() {
            let _ = tcsetattr(stdin().as_fd(), OptionalActions::Now, &saved);
        }
    }
}

impl Drop for RawModeGuard {
    fn drop(&mut self) {
        self.restore();
    }
}
