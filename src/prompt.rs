//! Questions asked on the controlling terminal (`/dev/tty`), never on stdin/stdout, so a piped
//! launch cannot answer a trust prompt by accident. Used by overlay trust and hook approval.

use std::fs::OpenOptions;
use std::io::{BufRead, BufReader, Write};

/// Why no answer could be obtained.
#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    /// There is no controlling terminal (CI, setsid, cron…).
    #[error("no controlling terminal to ask on")]
    NoTerminal,
    /// Reading or writing the terminal failed.
    #[error("terminal I/O failed: {0}")]
    Io(#[from] std::io::Error),
}

/// Show `text` on the controlling terminal and ask a yes/no question; only `y`/`yes` is yes.
pub fn confirm(text: &str, question: &str) -> Result<bool, PromptError> {
    let tty = OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .map_err(|_| PromptError::NoTerminal)?;
    let mut out = tty.try_clone()?;
    write!(out, "{text}{question} [y/N] ")?;
    out.flush()?;
    let mut line = String::new();
    BufReader::new(tty).read_line(&mut line)?;
    let answer = line.trim().to_ascii_lowercase();
    Ok(answer == "y" || answer == "yes")
}

/// Whether a controlling terminal exists (without asking anything).
pub fn has_terminal() -> bool {
    OpenOptions::new().read(true).write(true).open("/dev/tty").is_ok()
}
