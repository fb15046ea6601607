//! The supervisor, on the calling thread: one `poll(2)` loop over the child's three pipes, its
//! pidfd and an [`Abort`] pipe (stdin written then closed, stdout capped, stderr forwarded line by
//! line and capped, a timeout, an abort; the whole group SIGKILLed before the child is reaped;
//! pipes drained for at most the drain grace). The async `super::run` runs it on the blocking pool.
//!
//! Why not async: the prepare runner starts many short hooks at once. Supervised on the
//! runtime thread, each hook cost a hand-off to the blocking pool for the spawn, a thread parked
//! in `waitid`, three pipe tasks with their epoll registrations and some eight thread wake-ups;
//! `ags`'s own CPU time per hook was 2–3 times that of the same spawns made by plain threads,
//! which on two cores is what made the 64-hook phase 1.25–1.5 times slower (docs/BENCHMARKS.md).
//! Here a worker thread does what such a plain thread does, nothing more.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, poll};
use rustix::fs::{OFlags, fcntl_getfl, fcntl_setfl};
use rustix::io::Errno;
use zeroize::Zeroize;

use super::output::{LineSplitter, StderrSummary, StdoutCapture};
use super::{Ending, Finished, Io, Running};

/// Bytes read per `read` call.
const CHUNK: usize = 16 * 1024;

/// Without a pidfd (kernels before 5.3) the exit is polled for this often.
const EXIT_POLL: Duration = Duration::from_millis(10);

/// A phase-wide abort: firing it records the first reason and makes a pipe readable, which every
/// supervising thread polls alongside its child's pipes.
pub(crate) struct Abort<A> {
    read: OwnedFd,
    write: OwnedFd,
    reason: Mutex<Option<A>>,
}

impl<A: Copy> Abort<A> {
    /// A new, unfired abort.
    pub(crate) fn new() -> io::Result<Self> {
        let flags = rustix::pipe::PipeFlags::CLOEXEC | rustix::pipe::PipeFlags::NONBLOCK;
        let (read, write) = rustix::pipe::pipe_with(flags)?;
        Ok(Self {
            read,
            write,
            reason: Mutex::new(None),
        })
    }

    /// Fire (the first reason is kept; later calls change nothing).
    pub(crate) fn fire(&self, reason: A) {
        let mut slot = self.reason.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_none() {
            *slot = Some(reason);
            // One byte, never read: the pipe stays readable for every poller.
            let _ = rustix::io::write(&self.write, b"!");
        }
    }

    /// The reason, once fired.
    pub(crate) fn fired(&self) -> Option<A> {
        *self.reason.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A pipe end of ours, non-blocking, until it is closed.
struct End(Option<OwnedFd>);

impl End {
    fn new(fd: OwnedFd) -> io::Result<Self> {
        fcntl_setfl(&fd, fcntl_getfl(&fd)? | OFlags::NONBLOCK)?;
        Ok(Self(Some(fd)))
    }

    fn close(&mut self) {
        self.0 = None;
    }
}

/// What the loop has read and written so far.
struct Streams<'a> {
    io: &'a Io,
    stdin: End,
    stdout: End,
    stderr: End,
    written: usize,
    write_error: Option<io::Error>,
    out: StdoutCapture,
    err: StderrSummary,
    lines: LineSplitter,
    chunk: Vec<u8>,
}

/// Feed, read and watch `running` on this thread until it exits, times out, overflows stdout or
/// `abort` fires; then kill its group, reap it and drain its pipes (bounded by the drain grace).
pub(crate) fn supervise<A: Copy>(mut running: Running, io: &Io, abort: &Abort<A>) -> Finished<A> {
    let child = running.child.as_mut().expect("the child is not reaped yet");
    let pipes = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let (Some(stdin), Some(stdout), Some(stderr)) = pipes else {
        return running.abandon(io::Error::other("a standard stream of the child was not piped"));
    };
    let ends = (|| -> io::Result<_> {
        Ok((
            End::new(OwnedFd::from(stdin))?,
            End::new(OwnedFd::from(stdout))?,
            End::new(OwnedFd::from(stderr))?,
        ))
    })();
    let (stdin, stdout, stderr) = match ends {
        Ok(ends) => ends,
        Err(e) => return running.abandon(e),
    };
    let pidfd = rustix::process::pidfd_open(
        rustix::process::Pid::from_raw(running.pgid.as_raw()).expect("a child's pid is positive"),
        rustix::process::PidfdFlags::empty(),
    )
    .ok();
    let mut s = Streams {
        io,
        stdin,
        stdout,
        stderr,
        written: 0,
        write_error: None,
        out: StdoutCapture::default(),
        err: StderrSummary::default(),
        lines: LineSplitter::new(io.stderr_name.clone(), io.stderr_sink.clone()),
        chunk: Vec::with_capacity(CHUNK),
    };
    if io.stdin.is_empty() {
        s.stdin.close();
    }
    let deadline = Instant::now() + io.timeout;
    let ending = watch(&mut s, &running, pidfd.as_ref(), abort, deadline);
    running.kill();
    if !matches!(ending, Ending::Exited) {
        wait_exit(&running, pidfd.as_ref()); // prompt: the whole group was just SIGKILLed
    }
    let status = running.reap();
    drain(&mut s, Instant::now() + io.drain_grace);
    s.chunk.zeroize(); // `op`'s output holds secret values
    s.lines.finish(&s.err, io.stderr_cap);
    Finished {
        ending,
        status,
        stdout: s.out,
        stderr: s.err,
        write_error: s.write_error,
    }
}

/// The loop until the process exits, times out, overflows or is aborted.
fn watch<A: Copy>(
    s: &mut Streams<'_>,
    running: &Running,
    pidfd: Option<&OwnedFd>,
    abort: &Abort<A>,
    deadline: Instant,
) -> Ending<A> {
    loop {
        let now = Instant::now();
        if now >= deadline {
            return Ending::Timeout;
        }
        let mut wait = deadline - now;
        if pidfd.is_none() {
            wait = wait.min(EXIT_POLL);
        }
        let ready = poll_once(s, [pidfd, Some(&abort.read)], wait);
        if ready[0] || (pidfd.is_none() && running.has_exited()) {
            return Ending::Exited;
        }
        if s.out.overflow {
            return Ending::Overflow;
        }
        if ready[1]
            && let Some(reason) = abort.fired()
        {
            return Ending::Aborted(reason);
        }
    }
}

/// After the kill: keep reading (and writing stdin) until every pipe is closed or `until`.
fn drain(s: &mut Streams<'_>, until: Instant) {
    while s.stdin.0.is_some() || s.stdout.0.is_some() || s.stderr.0.is_some() {
        let now = Instant::now();
        if now >= until {
            break; // something outside the group still holds a pipe open
        }
        poll_once(s, [None, None], until - now);
    }
}

/// One `poll` over the open pipes and `extra` (readable or hung up); serve the pipes that are
/// ready. Returns which of `extra` were ready.
fn poll_once(s: &mut Streams<'_>, extra: [Option<&OwnedFd>; 2], wait: Duration) -> [bool; 2] {
    let (rd, wr) = (PollFlags::IN, PollFlags::OUT);
    let ends = [(&s.stdin, wr), (&s.stdout, rd), (&s.stderr, rd)];
    let mut fds = Vec::with_capacity(5);
    let mut slots = [None; 5];
    for (i, (fd, flags)) in ends
        .iter()
        .map(|(e, f)| (e.0.as_ref(), *f))
        .chain(extra.iter().map(|fd| (*fd, rd)))
        .enumerate()
    {
        if let Some(fd) = fd {
            slots[i] = Some(fds.len());
            fds.push(PollFd::from_borrowed_fd(fd.as_fd(), flags));
        }
    }
    let timeout = rustix::time::Timespec::try_from(wait).unwrap_or(rustix::time::Timespec {
        tv_sec: i64::MAX,
        tv_nsec: 0,
    });
    match poll(&mut fds, Some(&timeout)) {
        Ok(_) | Err(Errno::INTR) => {}
        Err(e) => panic!("poll on a child's pipes failed: {e}"),
    }
    let ready: Vec<bool> = slots
        .iter()
        .map(|slot| slot.is_some_and(|k| !fds[k].revents().is_empty()))
        .collect();
    drop(fds);
    if ready[0] {
        write_stdin(s);
    }
    if ready[1] {
        read_stdout(s);
    }
    if ready[2] {
        read_stderr(s);
    }
    [ready[3], ready[4]]
}

fn write_stdin(s: &mut Streams<'_>) {
    let Some(fd) = &s.stdin.0 else { return };
    match rustix::io::write(fd, &s.io.stdin[s.written..]) {
        Ok(n) => {
            s.written += n;
            if s.written == s.io.stdin.len() {
                s.stdin.close(); // the child sees EOF
            }
        }
        Err(Errno::AGAIN | Errno::INTR) => {}
        Err(Errno::PIPE) => s.stdin.close(), // a child may ignore its input
        Err(e) => {
            s.write_error = Some(e.into());
            s.stdin.close();
        }
    }
}

/// Read what is there into the reused chunk buffer: `Some(n)` bytes (0 after EOF, which closes
/// the end), `None` when nothing was ready.
fn read_chunk(end: &mut End, chunk: &mut Vec<u8>) -> io::Result<Option<usize>> {
    let Some(fd) = &end.0 else { return Ok(Some(0)) };
    chunk.as_mut_slice().zeroize();
    chunk.clear();
    match rustix::io::read(fd, rustix::buffer::spare_capacity(chunk)) {
        Ok(0) => {
            end.close();
            Ok(Some(0))
        }
        Ok(n) => Ok(Some(n)),
        Err(Errno::AGAIN | Errno::INTR) => Ok(None),
        Err(e) => {
            end.close();
            Err(e.into())
        }
    }
}

fn read_stdout(s: &mut Streams<'_>) {
    match read_chunk(&mut s.stdout, &mut s.chunk) {
        Ok(Some(n)) if n > 0 => {
            if s.out.take(&s.chunk[..n], s.io.stdout_cap) {
                s.stdout.close(); // reading stops at once: the caller kills
            }
        }
        Ok(_) => {}
        Err(e) => s.out.error = Some(e),
    }
}

fn read_stderr(s: &mut Streams<'_>) {
    if let Ok(Some(n)) = read_chunk(&mut s.stderr, &mut s.chunk)
        && n > 0
    {
        s.err.forward(&s.chunk[..n], s.io.stderr_cap, &mut s.lines);
    }
}

/// Block until the (killed) process has exited, without reaping it.
fn wait_exit(running: &Running, pidfd: Option<&OwnedFd>) {
    match pidfd {
        Some(fd) => loop {
            let mut fds = [PollFd::new(fd, PollFlags::IN)];
            match poll(&mut fds, None) {
                Err(Errno::INTR) => continue,
                _ => return,
            }
        },
        None => loop {
            let flags = nix::sys::wait::WaitPidFlag::WEXITED | nix::sys::wait::WaitPidFlag::WNOWAIT;
            match nix::sys::wait::waitid(nix::sys::wait::Id::Pid(running.pgid), flags) {
                Err(nix::errno::Errno::EINTR) => continue,
                _ => return,
            }
        },
    }
}
