//! A hook's output streams: stdout captured with a byte cap, stderr forwarded line by line
//! (escaped, prefixed with the hook name) with its own cap. The supervisor (`blocking`) reads the
//! pipes and hands the bytes to these.

use std::io;
use std::sync::Arc;

use crate::text::escape_controls;

/// Receives each diagnostic line, already escaped and prefixed with the hook name.
pub type StderrSink = Arc<dyn Fn(&str) + Send + Sync>;

/// Flush a partial stderr line once it is this long, so a hook without newlines is still seen.
const MAX_LINE: usize = 4096;

/// What was read from stdout.
#[derive(Debug, Default)]
pub(crate) struct StdoutCapture {
    /// At most `cap` bytes.
    pub bytes: Vec<u8>,
    /// Bytes read (more than `cap` only when `overflow`).
    pub total: u64,
    /// The hook wrote more than `cap` bytes; reading stopped.
    pub overflow: bool,
    /// Reading failed.
    pub error: Option<io::Error>,
}

impl StdoutCapture {
    /// Keep what of `read` fits in `cap` bytes; true when it did not fit (`overflow`: reading
    /// stops at once, the caller kills).
    pub(super) fn take(&mut self, read: &[u8], cap: usize) -> bool {
        self.total += read.len() as u64;
        let room = cap.saturating_sub(self.bytes.len());
        self.bytes.extend_from_slice(&read[..read.len().min(room)]);
        self.overflow |= read.len() > room;
        self.overflow
    }
}

/// What was read from stderr.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct StderrSummary {
    /// Bytes read in total.
    pub total: u64,
    /// Bytes beyond the cap (read and thrown away so the hook never blocks on a full pipe).
    pub discarded: u64,
}

impl StderrSummary {
    /// Count `read` and forward what of it fits in `cap` bytes.
    pub(super) fn forward(&mut self, read: &[u8], cap: usize, lines: &mut LineSplitter) {
        let keep = read.len().min(cap.saturating_sub(self.total as usize));
        self.total += read.len() as u64;
        self.discarded += (read.len() - keep) as u64;
        lines.push(&read[..keep]);
    }
}

pub(super) struct LineSplitter {
    prefix: String,
    sink: StderrSink,
    pending: Vec<u8>,
}

impl LineSplitter {
    pub(super) fn new(name: String, sink: StderrSink) -> Self {
        Self {
            prefix: format!("[{name}] "),
            sink,
            pending: Vec::new(),
        }
    }

    pub(super) fn push(&mut self, bytes: &[u8]) {
        self.pending.extend_from_slice(bytes);
        while let Some(pos) = self.pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=pos).collect();
            let line = &line[..line.len() - 1];
            // A long line is shown in pieces of MAX_LINE bytes, however the reads cut it.
            line.chunks(MAX_LINE).for_each(|piece| self.emit(piece));
            if line.is_empty() {
                self.emit(line);
            }
        }
        // A partial line is flushed in whole pieces; the rest waits for the rest of its line.
        while self.pending.len() >= MAX_LINE {
            let piece: Vec<u8> = self.pending.drain(..MAX_LINE).collect();
            self.emit(&piece);
        }
    }

    /// Emit the partial last line, and say how much of stderr was discarded past `cap`.
    pub(super) fn finish(&mut self, summary: &StderrSummary, cap: usize) {
        if !self.pending.is_empty() {
            let line = std::mem::take(&mut self.pending);
            self.emit(&line);
        }
        if summary.discarded > 0 {
            self.emit_raw(&format!(
                "[ags: {} more bytes of stderr discarded; the limit is {cap} bytes]",
                summary.discarded
            ));
        }
    }

    fn emit(&self, line: &[u8]) {
        self.emit_raw(&escape_controls(&String::from_utf8_lossy(line)));
    }

    fn emit_raw(&self, text: &str) {
        (self.sink)(&format!("{}{text}", self.prefix));
    }
}

/// The stderr sink used by `ags`: one line at a time on its own stderr.
pub fn stderr_to_terminal() -> StderrSink {
    Arc::new(|line: &str| {
        use std::io::Write;
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{line}");
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[test]
    fn splits_lines_and_flushes_long_partials() {
        let got = Arc::new(Mutex::new(Vec::<String>::new()));
        let g = got.clone();
        let sink: StderrSink = Arc::new(move |l: &str| g.lock().unwrap().push(l.to_string()));
        let mut s = LineSplitter::new("h".into(), sink);
        s.push(b"one\ntw");
        s.push(b"o\n\x1bx");
        s.push(&vec![b'y'; MAX_LINE]);
        s.finish(&StderrSummary::default(), 0);
        let got = got.lock().unwrap();
        assert_eq!(got[..2], ["[h] one", "[h] two"]);
        assert!(got[2].starts_with("[h] \\u{1b}xyyy"), "{}", got[2]);
        assert_eq!(got[3], "[h] yy", "pieces of {MAX_LINE} bytes");
        assert_eq!(got.len(), 4);
    }
}
