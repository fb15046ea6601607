//! A pseudo-terminal runner for TTY tests, without `unsafe`: the pair comes from nix's
//! `posix_openpt` (opened close-on-exec, so processes spawned concurrently by other tests never
//! inherit it), the child gets the slave as stdin/stdout/stderr and becomes a session leader with
//! the slave as its controlling terminal through util-linux `setsid --ctty` (the caller builds
//! that command line). Window sizes are set with one `TIOCSWINSZ` (rustix `tcsetwinsize`; `stty
//! rows R cols C` makes two, and a program woken by the first saw the old column count); the
//! kernel then sends SIGWINCH to the terminal's foreground process group, as a terminal
//! emulator's resize does.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::fcntl::OFlag;
use nix::pty::{grantpt, posix_openpt, ptsname_r, unlockpt};

/// A running child on a pseudo-terminal. Output is collected in the background; dropping the
/// session kills the child.
#[derive(Debug)]
pub struct PtySession {
    child: Child,
    writer: File,
    slave_path: PathBuf,
    output: Arc<Mutex<Vec<u8>>>,
    reader: Option<JoinHandle<()>>,
    status: Option<ExitStatus>,
}

/// A new pseudo-terminal pair: the master (close-on-exec) and the slave's path and handle.
fn open_pair() -> std::io::Result<(File, PathBuf, File)> {
    let master = posix_openpt(OFlag::O_RDWR | OFlag::O_NOCTTY | OFlag::O_CLOEXEC)?;
    grantpt(&master)?;
    unlockpt(&master)?;
    let slave_path = PathBuf::from(ptsname_r(&master)?);
    // std opens with O_CLOEXEC; O_NOCTTY keeps the test process from acquiring it.
    let slave = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOCTTY)
        .open(&slave_path)?;
    Ok((File::from(std::os::fd::OwnedFd::from(master)), slave_path, slave))
}

/// Set the window size of the terminal at `slave`, rows and columns at once.
pub fn set_size(slave: &Path, rows: u16, cols: u16) -> std::io::Result<()> {
    let tty = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOCTTY)
        .open(slave)?;
    let size = rustix::termios::Winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    rustix::termios::tcsetwinsize(&tty, size)
        .map_err(|e| std::io::Error::other(format!("setting the size of {}: {e}", slave.display())))
}

impl PtySession {
    /// Spawn `cmd` (which must make itself the session leader with the terminal as controlling
    /// terminal, e.g. `setsid --ctty -w …`) on a new terminal of `rows` x `cols`. With `owner`,
    /// the slave device is given to that uid/gid first, as login does for a user's terminal.
    pub fn spawn(cmd: Command, rows: u16, cols: u16, owner: Option<(u32, u32)>) -> std::io::Result<Self> {
        Self::spawn_typed_ahead(cmd, rows, cols, owner, b"")
    }

    /// [`Self::spawn`] with `typed` already in the terminal's input queue when the child starts,
    /// as keys a user typed before the program ran. The child is spawned only once the line
    /// discipline holds every byte (`FIONREAD` on the slave): a pty master's write reaches it
    /// through a kernel work queue, which under load can run after the child's first read.
    pub fn spawn_typed_ahead(
        mut cmd: Command,
        rows: u16,
        cols: u16,
        owner: Option<(u32, u32)>,
        typed: &[u8],
    ) -> std::io::Result<Self> {
        let (mut master, slave_path, slave) = open_pair()?;
        set_size(&slave_path, rows, cols)?;
        if let Some((uid, gid)) = owner {
            std::os::unix::fs::fchown(&slave, Some(uid), Some(gid))?;
        }
        if !typed.is_empty() {
            master.write_all(typed)?;
            let deadline = Instant::now() + Duration::from_secs(60);
            while (rustix::io::ioctl_fionread(&slave)? as usize) < typed.len() {
                if Instant::now() > deadline {
                    return Err(std::io::Error::other(
                        "typed-ahead input never reached the terminal",
                    ));
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        cmd.stdin(Stdio::from(slave.try_clone()?))
            .stdout(Stdio::from(slave.try_clone()?))
            .stderr(Stdio::from(slave));
        let child = cmd.spawn()?;
        // The Command holds the slave handles: drop it so that the master sees EOF/EIO once the
        // child and its descendants have closed the terminal.
        drop(cmd);
        let writer = master.try_clone()?;
        let output = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&output);
        let reader = std::thread::spawn(move || read_all(master, &sink));
        Ok(Self {
            child,
            writer,
            slave_path,
            output,
            reader: Some(reader),
            status: None,
        })
    }

    /// Type `bytes` into the terminal.
    pub fn write(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).expect("writing to the pty master");
        self.writer.flush().expect("flushing the pty master");
    }

    /// Type `bytes` into the terminal if it is still open (the child may be gone).
    pub fn try_write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.writer.write_all(bytes)?;
        self.writer.flush()
    }

    /// Resize the terminal (the foreground process group gets SIGWINCH).
    pub fn resize(&self, rows: u16, cols: u16) {
        set_size(&self.slave_path, rows, cols).expect("resizing the pty");
    }

    /// The pid of the spawned child (e.g. `setsid`, which may exec the real program).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The slave device, e.g. `/dev/pts/3`.
    pub fn slave_path(&self) -> &Path {
        &self.slave_path
    }

    /// Everything the child wrote so far (lossy UTF-8; the terminal turns `\n` into `\r\n`).
    pub fn output(&self) -> String {
        String::from_utf8_lossy(&self.output.lock().expect("output lock")).into_owned()
    }

    /// Wait until the output contains `needle`; false after `timeout`.
    pub fn wait_for(&self, needle: &str, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if self.output().contains(needle) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Wait for the child to exit. `None` when it did not within `timeout` (it is killed then).
    /// The output is complete once this returns `Some`, unless a descendant keeps the terminal.
    pub fn wait(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        while self.status.is_none() {
            match self.child.try_wait().expect("waiting for the pty child") {
                Some(status) => self.status = Some(status),
                None if Instant::now() >= deadline => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return None;
                }
                None => std::thread::sleep(Duration::from_millis(10)),
            }
        }
        self.join_reader(Duration::from_secs(5));
        self.status
    }

    /// Stop collecting once the reader finished (EOF/EIO) or after `grace`.
    fn join_reader(&mut self, grace: Duration) {
        let deadline = Instant::now() + grace;
        while self.reader.as_ref().is_some_and(|r| !r.is_finished()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        if self.reader.as_ref().is_some_and(JoinHandle::is_finished) {
            let _ = self.reader.take().map(JoinHandle::join);
        }
    }
}

impl Drop for PtySession {
    fn drop(&mut self) {
        if self.status.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Copy the master's output into `sink` until EOF or EIO (all slave handles closed).
fn read_all(mut master: File, sink: &Mutex<Vec<u8>>) {
    let mut buf = [0u8; 4096];
    loop {
        match master.read(&mut buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Ok(0) | Err(_) => return,
            Ok(n) => sink.lock().expect("output lock").extend_from_slice(&buf[..n]),
        }
    }
}
