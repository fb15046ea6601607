//! Attach streams: the upgraded connection of `POST /libpod/containers/{id}/attach`, split into
//! an output half (read) and an input half (write), plus the demultiplexer for non-tty output.
//!
//! Part of stage 4 (`podman`); the socket I/O itself is set up in `transport.rs`.
//!
//! Observed on Podman 4.3.1 (tests in `tests/live/podman_client.rs`):
//! - Attaching to a created container initialises it, so the decided flow is
//!   create → attach → resize → start → poll inspect → delete, and no output is lost.
//! - Without a tty the output is multiplexed: each frame is an 8-byte header
//!   `[stream, 0, 0, 0, len as u32 big-endian]` followed by `len` bytes; stream 1 is stdout,
//!   2 is stderr. With a tty the output is the raw terminal stream.
//! - **Stdin EOF**: the container must be created with `stdin: true` (`podman run -i`);
//!   without it the process's stdin is `/dev/null` and anything written is dropped. With it,
//!   half-closing the attach socket ([`AttachInput`]'s `shutdown(SHUT_WR)`) makes
//!   Podman close the container's stdin pipe, so `cat` or `read` see EOF. This works even when
//!   the input is written and closed before `start`. No `stdin_once` setting is involved.
//!   With a tty, EOF is a terminal matter: send `^D` (0x04) as the line discipline expects.
//! - Podman's detach keys (default ctrl-p ctrl-q) are disabled by sending `detachKeys=` empty,
//!   so agents' ctrl-p reaches the container.
//!
//! Ref: <https://docs.docker.com/engine/api/v1.41/#tag/Container/operation/ContainerAttach>
//! (the stream format Podman reuses).

use std::io;

use bytes::{Buf, Bytes, BytesMut};
use hyper::upgrade::Upgraded;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncReadExt, ReadHalf, WriteHalf};

/// Which streams to attach, and whether the container has a tty.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AttachOptions {
    /// Forward input to the container's stdin (needs `SpecGenerator::stdin`).
    pub stdin: bool,
    /// Receive stdout.
    pub stdout: bool,
    /// Receive stderr.
    pub stderr: bool,
    /// The container has a tty: the output is raw instead of multiplexed.
    pub tty: bool,
}

impl AttachOptions {
    /// Every stream, input included: the agent's session.
    pub fn all(tty: bool) -> Self {
        AttachOptions {
            stdin: true,
            stdout: true,
            stderr: true,
            tty,
        }
    }
}

/// The origin of a demultiplexed frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamKind {
    /// Stdin echo (stream type 0; Podman does not send it in practice).
    Stdin,
    /// Standard output (type 1; all raw tty output is reported as stdout).
    Stdout,
    /// Standard error (type 2).
    Stderr,
}

impl StreamKind {
    fn from_byte(b: u8) -> io::Result<Self> {
        match b {
            0 => Ok(StreamKind::Stdin),
            1 => Ok(StreamKind::Stdout),
            2 => Ok(StreamKind::Stderr),
            other => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("attach stream: unknown stream type {other} in a frame header"),
            )),
        }
    }
}

/// The read half of an attach connection: multiplexed frames, or raw bytes with a tty.
pub type AttachOutput = ReadHalf<TokioIo<Upgraded>>;

/// The write half of an attach connection. Its `shutdown()` half-closes the connection
/// (`shutdown(SHUT_WR)`): the container's stdin sees EOF, and output keeps flowing.
pub type AttachInput = WriteHalf<TokioIo<Upgraded>>;

/// An attached container: a frame reader over its output, and its input.
pub type AttachStream = (Demux<AttachOutput>, AttachInput);

/// Split the upgraded connection of an attach; `tty`: the output is raw, not multiplexed.
pub(crate) fn split(upgraded: Upgraded, tty: bool) -> AttachStream {
    let (r, w) = tokio::io::split(TokioIo::new(upgraded));
    (Demux::new(r, tty), w)
}

/// Frame header length of the multiplexed stream.
const HEADER: usize = 8;
/// Most bytes reserved for one read, whatever a header claims.
const READ_CHUNK: usize = 64 * 1024;

/// Reads `(StreamKind, payload)` frames from an attach output, robust to partial reads.
///
/// Multiplexed mode parses the 8-byte headers; raw (tty) mode returns whatever arrives as
/// stdout.
#[derive(Debug)]
pub struct Demux<R> {
    reader: R,
    buf: BytesMut,
    raw: bool,
}

impl<R: AsyncRead + Unpin> Demux<R> {
    /// A demultiplexer over `reader`; `raw` for a tty stream.
    pub fn new(reader: R, raw: bool) -> Self {
        Demux {
            reader,
            buf: BytesMut::new(),
            raw,
        }
    }

    /// The next frame, or `None` at a clean end of stream. A stream that ends inside a frame
    /// is an `UnexpectedEof` error.
    pub async fn read_frame(&mut self) -> io::Result<Option<(StreamKind, Bytes)>> {
        loop {
            if let Some(frame) = self.take_frame()? {
                return Ok(Some(frame));
            }
            let want = self.missing().clamp(8 * 1024, READ_CHUNK);
            self.buf.reserve(want);
            if self.reader.read_buf(&mut self.buf).await? == 0 {
                return self.at_eof();
            }
        }
    }

    /// A complete frame from the buffer, if there is one.
    fn take_frame(&mut self) -> io::Result<Option<(StreamKind, Bytes)>> {
        if self.raw {
            let data = self.buf.split().freeze();
            return Ok((!data.is_empty()).then_some((StreamKind::Stdout, data)));
        }
        if self.buf.len() < HEADER {
            return Ok(None);
        }
        let len = frame_len(&self.buf);
        if self.buf.len() < HEADER + len {
            return Ok(None);
        }
        let kind = StreamKind::from_byte(self.buf[0])?;
        self.buf.advance(HEADER);
        Ok(Some((kind, self.buf.split_to(len).freeze())))
    }

    /// Bytes still needed to complete the current frame.
    fn missing(&self) -> usize {
        if self.raw || self.buf.len() < HEADER {
            return HEADER.saturating_sub(self.buf.len());
        }
        (HEADER + frame_len(&self.buf)).saturating_sub(self.buf.len())
    }

    fn at_eof(&self) -> io::Result<Option<(StreamKind, Bytes)>> {
        if self.buf.is_empty() {
            return Ok(None);
        }
        Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!(
                "attach stream ended inside a frame ({} bytes of it received)",
                self.buf.len()
            ),
        ))
    }
}

fn frame_len(buf: &[u8]) -> usize {
    u32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;
    use std::pin::Pin;
    use std::task::{Context, Poll};
    use tokio::io::ReadBuf;

    /// A reader that returns its chunks one read at a time.
    struct Chunks(VecDeque<Vec<u8>>);

    impl AsyncRead for Chunks {
        fn poll_read(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            let this = self.get_mut();
            if let Some(mut chunk) = this.0.pop_front() {
                let n = chunk.len().min(buf.remaining());
                buf.put_slice(&chunk[..n]);
                if n < chunk.len() {
                    this.0.push_front(chunk.split_off(n));
                }
            }
            Poll::Ready(Ok(()))
        }
    }

    fn frame(kind: u8, payload: &[u8]) -> Vec<u8> {
        let mut v = vec![kind, 0, 0, 0];
        v.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        v.extend_from_slice(payload);
        v
    }

    async fn collect(chunks: Vec<Vec<u8>>, raw: bool) -> io::Result<Vec<(StreamKind, Vec<u8>)>> {
        let mut d = Demux::new(Chunks(chunks.into()), raw);
        let mut out = Vec::new();
        while let Some((k, b)) = d.read_frame().await? {
            out.push((k, b.to_vec()));
        }
        Ok(out)
    }

    fn stream() -> Vec<u8> {
        [
            frame(1, b"hello\n"),
            frame(2, b"oops"),
            frame(1, b""),
            frame(1, &[7u8; 70_000]),
        ]
        .concat()
    }

    fn expected() -> Vec<(StreamKind, Vec<u8>)> {
        vec![
            (StreamKind::Stdout, b"hello\n".to_vec()),
            (StreamKind::Stderr, b"oops".to_vec()),
            (StreamKind::Stdout, vec![]),
            (StreamKind::Stdout, vec![7u8; 70_000]),
        ]
    }

    #[tokio::test]
    async fn whole_buffer() {
        assert_eq!(collect(vec![stream()], false).await.unwrap(), expected());
    }

    #[tokio::test]
    async fn every_split_point() {
        let all = stream();
        for cut in [1, 3, 7, 8, 9, 13, 14, 20, 30, 100, all.len() - 1] {
            let (a, b) = all.split_at(cut);
            let got = collect(vec![a.to_vec(), b.to_vec()], false).await.unwrap();
            assert_eq!(got, expected(), "split at {cut}");
        }
    }

    #[tokio::test]
    async fn byte_by_byte() {
        // The first three frames: 8 + 6, 8 + 4 and 8 + 0 bytes.
        let chunks = stream()[..34].iter().map(|b| vec![*b]).collect();
        let got = collect(chunks, false).await.unwrap();
        assert_eq!(got[..], expected()[..3]);
    }

    #[tokio::test]
    async fn truncated_frame_is_an_error() {
        let mut s = frame(1, b"hello");
        s.truncate(10);
        let e = collect(vec![s], false).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
        let e = collect(vec![vec![1, 0, 0]], false).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
    }

    #[tokio::test]
    async fn unknown_stream_type_is_an_error() {
        let e = collect(vec![frame(5, b"x")], false).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
    }

    #[tokio::test]
    async fn raw_mode_passes_bytes_through() {
        let got = collect(vec![b"ab".to_vec(), b"\x01\x00c".to_vec()], true)
            .await
            .unwrap();
        let joined: Vec<u8> = got
            .iter()
            .flat_map(|(k, b)| {
                assert_eq!(*k, StreamKind::Stdout);
                b.clone()
            })
            .collect();
        assert_eq!(joined, b"ab\x01\x00c");
    }

    #[tokio::test]
    async fn empty_stream_ends_cleanly() {
        assert!(collect(vec![], false).await.unwrap().is_empty());
        assert!(collect(vec![], true).await.unwrap().is_empty());
    }
}
