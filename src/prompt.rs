//! Questions asked on the controlling terminal (`/dev/tty`), never on stdin/stdout, so a piped
//! launch cannot answer a trust prompt by accident. Used by overlay trust, hook approval and
//! `ags setup`.
//!
//! Input typed before the question was shown is discarded, so a stray `y` typed ahead (or
//! pasted) cannot answer it. While a question is open the terminal's signal characters are
//! turned off and Ctrl-C (and Ctrl-\) end the line instead: the answer is then
//! [`PromptError::Interrupted`], never a yes. This does not depend on signal handling.
//!
//! A signal sent to `ags` (SIGTERM from `kill`, SIGHUP from a closed terminal) ends an open
//! question too, once the process has taken those signals over ([`end_on_signals`], called by
//! the launch's signal watch): their handler only records the signal, so a blocking read on the
//! terminal would go on, and a `y` typed afterwards would still approve. The answer is waited for
//! in short polls that look at the recorded signal.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use crate::text::escape_controls;
use rustix::termios::{LocalModes, OptionalActions, SpecialCodeIndex, Termios, tcgetattr, tcsetattr};

/// The interrupt character (Ctrl-C).
const INTR: u8 = 0x03;
/// The quit character (Ctrl-\).
const QUIT: u8 = 0x1c;

/// Why no answer could be obtained.
#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    /// There is no controlling terminal (CI, setsid, cron…).
    #[error("no controlling terminal to ask on")]
    NoTerminal,
    /// The user pressed Ctrl-C (or Ctrl-\) at the prompt (`signal` SIGINT), or `ags` received
    /// `signal` while the question was open.
    #[error("interrupted at the prompt ({})", interruption(*signal))]
    Interrupted {
        /// SIGINT for Ctrl-C and Ctrl-\, else the signal received.
        signal: i32,
    },
    /// Reading or writing the terminal failed.
    #[error("terminal I/O failed: {0}")]
    Io(#[from] std::io::Error),
}

/// How an interruption by `signal` is named in messages: `Ctrl-C` for SIGINT, else the
/// signal's name (`SIGTERM`).
pub fn interruption(signal: i32) -> String {
    match nix::sys::signal::Signal::try_from(signal) {
        Ok(nix::sys::signal::Signal::SIGINT) => "Ctrl-C".into(),
        Ok(s) => s.as_str().into(),
        Err(_) => format!("signal {signal}"),
    }
}

/// The last of SIGINT, SIGTERM and SIGHUP received since [`end_on_signals`] (0: none).
static SIGNALLED: OnceLock<Arc<AtomicUsize>> = OnceLock::new();

/// From now on, SIGINT, SIGTERM or SIGHUP end an open question (and any later one) with
/// [`PromptError::Interrupted`]. Only for a process that has taken these signals over for good
/// (a handler stays installed): the launch's signal watch and `Interrupt::on_signals` call it.
pub fn end_on_signals() -> std::io::Result<()> {
    static DONE: Mutex<bool> = Mutex::new(false);
    let mut done = DONE.lock().unwrap_or_else(PoisonError::into_inner);
    if *done {
        return Ok(());
    }
    let flag = SIGNALLED.get_or_init(Arc::default);
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        signal_hook::flag::register_usize(signal, Arc::clone(flag), signal as usize)?;
    }
    *done = true;
    Ok(())
}

/// The signal recorded by [`end_on_signals`]' handlers, if one came.
fn signalled() -> Option<i32> {
    let n = SIGNALLED.get()?.load(Ordering::SeqCst);
    (n != 0).then_some(n as i32)
}

/// How long one wait for the answer lasts before the recorded signal is looked at again.
const POLL_MS: i64 = 50;

/// Show `text` on the controlling terminal and ask a yes/no question; only `y`/`yes` is yes.
/// Terminal controls in both are escaped (newlines in `text` kept).
/// Ctrl-C or Ctrl-\ at the prompt, or a signal after [`end_on_signals`], is
/// [`PromptError::Interrupted`].
pub fn confirm(text: &str, question: &str) -> Result<bool, PromptError> {
    let tty = OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .map_err(|_| PromptError::NoTerminal)?;
    let mut out = tty.try_clone()?;
    if let Some(signal) = signalled() {
        return Err(PromptError::Interrupted { signal });
    }
    let guard = InterruptAsLineEnd::enter(&tty);
    // Discard type-ahead: only what is typed once the question is shown can answer it. Before
    // showing it: an answer typed as soon as it appears must not be discarded too.
    let _ = rustix::termios::tcflush(tty.as_fd(), rustix::termios::QueueSelector::IFlush);
    write!(out, "{}", shown(text, question))?;
    out.flush()?;
    let line = read_answer(&tty);
    drop(guard);
    let interrupted = match &line {
        Err(PromptError::Interrupted { signal }) => Some(*signal),
        Ok(line) if line.iter().any(|b| [INTR, QUIT].contains(b)) => Some(libc::SIGINT),
        // A signal that came with the answer wins over it.
        _ => signalled(),
    };
    if let Some(signal) = interrupted {
        let _ = writeln!(out);
        return Err(PromptError::Interrupted { signal });
    }
    let line = line?;
    let answer = String::from_utf8_lossy(&line).trim().to_ascii_lowercase();
    Ok(answer == "y" || answer == "yes")
}

/// What the prompt shows. The text may name paths an agent chose (an overlay's repository, a
/// hook's workdir): it must not drive the terminal it asks on.
fn shown(text: &str, question: &str) -> String {
    format!("{}{} [y/N] ", escape_controls(text), escape_controls(question))
}

/// One answer: the bytes up to and including the first line end — a newline, or Ctrl-C or
/// Ctrl-\ (line ends too while the question is open: a Ctrl-C alone must end the prompt, not
/// wait for Enter) — or all there is at end of input. A signal recorded meanwhile
/// ([`end_on_signals`]) ends the wait with [`PromptError::Interrupted`], whatever was typed.
fn read_answer(mut tty: &File) -> Result<Vec<u8>, PromptError> {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let mut line = Vec::new();
    let mut buf = [0u8; 256];
    let wait = Timespec {
        tv_sec: 0,
        tv_nsec: POLL_MS * 1_000_000,
    };
    loop {
        if let Some(signal) = signalled() {
            return Err(PromptError::Interrupted { signal });
        }
        let mut fds = [PollFd::new(&tty, PollFlags::IN)];
        match poll(&mut fds, Some(&wait)) {
            Ok(0) | Err(rustix::io::Errno::INTR) => continue,
            Ok(_) => {}
            Err(e) => return Err(std::io::Error::from(e).into()),
        }
        let n = match tty.read(&mut buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            other => other?,
        };
        line.extend_from_slice(&buf[..n]);
        if n == 0 || buf[..n].iter().any(|b| [b'\n', INTR, QUIT].contains(b)) {
            return Ok(line);
        }
    }
}

/// Whether a controlling terminal exists (without asking anything).
pub fn has_terminal() -> bool {
    OpenOptions::new().read(true).write(true).open("/dev/tty").is_ok()
}

/// Turns off the terminal's signal characters and makes Ctrl-C and Ctrl-\ additional line ends
/// (canonical line editing stays on), so they reach the prompt as bytes. Restores the saved
/// settings when dropped, on every exit path.
struct InterruptAsLineEnd<'a> {
    tty: &'a File,
    saved: Option<Termios>,
}

impl<'a> InterruptAsLineEnd<'a> {
    /// Best effort: a terminal whose settings cannot be changed keeps its own behaviour.
    fn enter(tty: &'a File) -> Self {
        let saved = tcgetattr(tty.as_fd()).ok();
        if let Some(saved) = &saved {
            let mut t = saved.clone();
            t.local_modes.remove(LocalModes::ISIG);
            t.local_modes.insert(LocalModes::ICANON | LocalModes::IEXTEN);
            t.special_codes[SpecialCodeIndex::VEOL] = INTR;
            t.special_codes[SpecialCodeIndex::VEOL2] = QUIT;
            if tcsetattr(tty.as_fd(), OptionalActions::Now, &t).is_err() {
                return Self { tty, saved: None };
            }
        }
        Self { tty, saved }
    }
}

impl Drop for InterruptAsLineEnd<'_> {
    fn drop(&mut self) {
        if let Some(saved) = self.saved.take() {
            let _ = tcsetattr(self.tty.as_fd(), OptionalActions::Now, &saved);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_prompt_shows_terminal_controls_escaped() {
        let shown = super::shown(
            "ags: /w/\x1b]0;x\x07\r\u{202e}/.ags/config.toml\n",
            "Trust /w/\x1b[2J?",
        );
        assert_eq!(
            shown,
            "ags: /w/\\u{1b}]0;x\\u{7}\\r\\u{202e}/.ags/config.toml\nTrust /w/\\u{1b}[2J? [y/N] "
        );
    }
}
