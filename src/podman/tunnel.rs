//! The SSH transport of an `ssh://` endpoint: the system OpenSSH client forwards the remote
//! Podman socket to a socket in a private local directory, and every request connects there.
//!
//! Part of stage 4 (`podman`). `ags` adds no cryptography and no host-key policy of its own:
//! authentication, known hosts and the user's `~/.ssh/config` are OpenSSH's. The client runs
//! with `BatchMode` (it never prompts: a launch has the terminal), `ExitOnForwardFailure`, no
//! connection sharing (`ControlPath none`, so tearing it down ends the forward) and no agent or
//! X11 forwarding. It is started through the crate's one spawn primitive
//! (`crate::process`), in its own process group watched by the watchdog, with a small
//! allowlisted environment (no secret of `ags`'s own environment reaches it). Which `ssh` runs
//! is proven by `workspace::host_programs` ([`SshProgram`]: `[ssh] path`, else the first on
//! `PATH` outside every directory an agent can write). Dropping the
//! [`Tunnel`] (the last [`super::Client`] clone) kills the group and removes the directory, so a
//! failed launch leaves neither an `ssh` process nor a socket behind.

use std::ffi::OsString;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use super::endpoint::Endpoint;
use crate::containment::WritableRoot;
use crate::process::{self, Running, Spawn};
use crate::workspace::host_programs::{self, Wanted};

/// What [`host_programs::resolve`] looks for.
const SSH: Wanted<'static> = Wanted {
    name: "ssh",
    key: "[ssh] path",
    install: "Debian: apt-get install openssh-client",
};

/// Which `ssh` may run: `[ssh] path` of the global config, else the first on `PATH` outside
/// [`SshProgram::agent_writable`] and the read-write mounts of every running launch of this
/// machine (asked when the tunnel opens), by the rules of `workspace::host_programs`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SshProgram {
    /// `[ssh] path`.
    pub pinned: Option<PathBuf>,
    /// The project directory and this launch's read-write mounts.
    pub agent_writable: Vec<WritableRoot>,
}

/// How long OpenSSH may take to connect, authenticate and set up the forward.
pub const OPEN_TIMEOUT: Duration = Duration::from_secs(20);

/// Environment variables the `ssh` client gets from `ags`'s own environment (agent socket,
/// Kerberos cache, locale and the lookup path of a `ProxyCommand`); nothing else.
const PASSED_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SSH_AUTH_SOCK",
    "KRB5CCNAME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "XDG_RUNTIME_DIR",
];

/// Stderr bytes of `ssh` kept for error messages.
const STDERR_CAP: usize = 4096;

/// How long a failed request waits for `ssh`'s own words about it.
const SAID_WAIT: Duration = Duration::from_secs(1);

/// How long an exited `ssh`'s last words are waited for (the end of its stderr: at once, unless
/// a descendant such as a `ProxyCommand` still holds the pipe).
const LAST_WORDS_WAIT: Duration = Duration::from_secs(5);

/// Why the forward could not be set up.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TunnelError {
    #[error("not an ssh:// endpoint")]
    NotSsh,
    #[error(transparent)]
    Program(#[from] host_programs::HostProgramError),
    #[error(
        "the private socket path {} is too long for a unix socket; set XDG_RUNTIME_DIR (or TMPDIR) to a shorter directory",
        .0.display()
    )]
    SocketTooLong(PathBuf),
    #[error("starting ssh: {0}")]
    Start(std::io::Error),
    #[error("creating a private directory in {}: {source}", base.display())]
    PrivateDir { base: PathBuf, source: std::io::Error },
    #[error("{}: {source}", dir.display())]
    Permissions { dir: PathBuf, source: std::io::Error },
    #[error("ssh exited before the forward was ready{}", colon(said))]
    Exited { said: String },
    #[error("ssh did not set up the forward within {} s{}", OPEN_TIMEOUT.as_secs(), colon(said))]
    Timeout { said: String },
}

/// `": said"`, or nothing when `ssh` said nothing.
fn colon(said: &str) -> String {
    match said.is_empty() {
        true => String::new(),
        false => format!(": {said}"),
    }
}

/// A running forward of a remote Podman socket to a private local one.
pub(crate) struct Tunnel {
    socket: PathBuf,
    dir: Option<tempfile::TempDir>,
    ssh: Mutex<Option<Running>>,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// Set by the reader thread once `ssh`'s stderr reached its end.
    stderr_done: Arc<AtomicBool>,
    /// How many stderr bytes `ssh` had written when the forward became ready.
    said_when_ready: AtomicUsize,
}

impl std::fmt::Debug for Tunnel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tunnel")
            .field("socket", &self.socket)
            .finish_non_exhaustive()
    }
}

impl Tunnel {
    /// Start `ssh` forwarding the socket of `endpoint` (an [`Endpoint::Ssh`]) and wait until the
    /// local socket accepts connections. `identity` is passed as `-i`; `ssh` is the program
    /// [`SshProgram`] proves. On failure nothing is left running; the error says what `ssh` said.
    pub(crate) async fn open(
        endpoint: &Endpoint,
        identity: Option<&Path>,
        ssh: &SshProgram,
    ) -> Result<Tunnel, TunnelError> {
        let Endpoint::Ssh { .. } = endpoint else {
            return Err(TunnelError::NotSsh);
        };
        let mut writable = ssh.agent_writable.clone();
        writable.extend(super::local_running_roots(None).await);
        let path = std::env::var_os("PATH");
        let euid = nix::unistd::geteuid().as_raw();
        let found = host_programs::resolve(SSH, ssh.pinned.as_deref(), path.as_deref(), &writable, euid)?;
        for s in found.skipped() {
            eprintln!("ags: note: passed over {s} on PATH when looking for ssh");
        }
        let program = found.path().to_path_buf();
        let dir = private_dir()?;
        let socket = dir.path().join("s");
        if socket.as_os_str().len() > 100 {
            return Err(TunnelError::SocketTooLong(socket));
        }
        let spec = Spawn {
            program,
            args: ssh_args(endpoint, identity, &socket),
            cwd: Some(PathBuf::from("/")),
            env: PASSED_ENV
                .iter()
                .filter_map(|k| std::env::var_os(k).map(|v| (OsString::from(k), v)))
                .collect(),
        };
        let mut running = tokio::task::spawn_blocking(move || process::spawn(&spec))
            .await
            .map_err(std::io::Error::other)
            .and_then(|r| r)
            .map_err(TunnelError::Start)?;
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let stderr_done = Arc::new(AtomicBool::new(false));
        match running.take_stderr() {
            Some(pipe) => collect(pipe, stderr.clone(), stderr_done.clone()),
            None => stderr_done.store(true, Ordering::Release),
        }
        let tunnel = Tunnel {
            socket,
            dir: Some(dir),
            ssh: Mutex::new(Some(running)),
            stderr,
            stderr_done,
            said_when_ready: AtomicUsize::new(0),
        };
        tunnel.wait_ready().await?;
        Ok(tunnel)
    }

    /// The local socket to connect to.
    pub(crate) fn socket(&self) -> &Path {
        &self.socket
    }

    /// What `ssh` wrote to stderr so far (escaped, last lines first cut), for error messages.
    pub(crate) fn ssh_said(&self) -> String {
        let bytes = self.stderr.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<String> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(|l| l.escape_debug().to_string())
            .collect();
        lines.join("; ")
    }

    /// What `ssh` said about a request that just failed. OpenSSH logs a refused channel
    /// ("open failed: connect failed: ...") before it closes the local connection, but the
    /// reader thread may not have collected the line yet: wait a bounded moment for a whole new
    /// line (written after the forward was ready). Only called on a failure path.
    pub(crate) async fn ssh_said_after_failure(&self) -> String {
        let before = self.said_when_ready.load(Ordering::Relaxed);
        wait_for(SAID_WAIT, || {
            let buf = self.stderr.lock().unwrap_or_else(PoisonError::into_inner);
            (buf.len() > before && buf.ends_with(b"\n"))
                || buf.len() >= STDERR_CAP
                || self.stderr_done.load(Ordering::Acquire)
        })
        .await;
        self.ssh_said()
    }

    fn exited(&self) -> bool {
        let guard = self.ssh.lock().unwrap_or_else(PoisonError::into_inner);
        guard.as_ref().is_none_or(Running::has_exited)
    }

    async fn wait_ready(&self) -> Result<(), TunnelError> {
        let deadline = tokio::time::Instant::now() + OPEN_TIMEOUT;
        let mut delay = Duration::from_millis(5);
        loop {
            if self.socket.exists() && tokio::net::UnixStream::connect(&self.socket).await.is_ok() {
                let said = self.stderr.lock().unwrap_or_else(PoisonError::into_inner).len();
                self.said_when_ready.store(said, Ordering::Relaxed);
                return Ok(());
            }
            if self.exited() {
                // The reader thread may not have collected the last words yet (e.g. "Host key
                // verification failed."): wait, bounded, for the end of the pipe.
                wait_for(LAST_WORDS_WAIT, || self.stderr_done.load(Ordering::Acquire)).await;
                return Err(TunnelError::Exited {
                    said: self.ssh_said(),
                });
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(TunnelError::Timeout {
                    said: self.ssh_said(),
                });
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_millis(100));
        }
    }
}

impl Drop for Tunnel {
    fn drop(&mut self) {
        // Dropping `Running` SIGKILLs the group and reaps `ssh`.
        drop(self.ssh.lock().unwrap_or_else(PoisonError::into_inner).take());
        if let Some(dir) = self.dir.take() {
            let _ = dir.close();
        }
    }
}

/// Check `done` every 10 ms until it holds or `limit` has passed.
async fn wait_for(limit: Duration, done: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + limit;
    while !done() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The `ssh` command line after `argv[0]`.
fn ssh_args(endpoint: &Endpoint, identity: Option<&Path>, local: &Path) -> Vec<OsString> {
    let Endpoint::Ssh {
        user,
        host,
        port,
        path,
    } = endpoint
    else {
        return Vec::new();
    };
    let mut args: Vec<OsString> = vec!["-N".into(), "-T".into()];
    for opt in [
        "BatchMode=yes",
        "ExitOnForwardFailure=yes",
        "StreamLocalBindMask=0177",
        "StreamLocalBindUnlink=yes",
        "ControlMaster=no",
        "ControlPath=none",
        "ForwardAgent=no",
        "ForwardX11=no",
        "PermitLocalCommand=no",
        "ConnectTimeout=10",
        "ServerAliveInterval=15",
        "ServerAliveCountMax=3",
    ] {
        args.push("-o".into());
        args.push(opt.into());
    }
    let mut forward = local.as_os_str().to_owned();
    forward.push(":");
    forward.push(path.as_os_str());
    args.push("-L".into());
    args.push(forward);
    if let Some(identity) = identity {
        args.push("-i".into());
        args.push(identity.as_os_str().into());
    }
    if let Some(port) = port {
        args.push("-p".into());
        args.push(port.to_string().into());
    }
    if let Some(user) = user {
        args.push("-l".into());
        args.push(user.into());
    }
    args.push("--".into());
    args.push(host.into());
    args
}

/// A new owner-only directory for the local socket: under `$XDG_RUNTIME_DIR` when set (a
/// tmpfs of this user's), else the temporary directory.
fn private_dir() -> Result<tempfile::TempDir, TunnelError> {
    let base = socket_base(std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from));
    let dir = tempfile::Builder::new()
        .prefix("ags-ssh-")
        .tempdir_in(&base)
        .map_err(|source| TunnelError::PrivateDir { base, source })?;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).map_err(|source| {
        TunnelError::Permissions {
            dir: dir.path().into(),
            source,
        }
    })?;
    Ok(dir)
}

/// `runtime` unless another user could replace it or a directory above it (after `su` it is
/// still the other user's runtime directory, who could swap ours there for one holding its own
/// socket and see the API traffic), else the temporary directory.
fn socket_base(runtime: Option<PathBuf>) -> PathBuf {
    runtime
        .filter(|d| d.is_absolute() && d.is_dir())
        .filter(|d| crate::fsutil::check_ancestors_private(&d.join("s")).is_ok())
        .unwrap_or_else(std::env::temp_dir)
}

/// Read `pipe` to its end on a thread, keeping the first [`STDERR_CAP`] bytes; `done` is set at
/// the end.
fn collect(mut pipe: std::process::ChildStderr, into: Arc<Mutex<Vec<u8>>>, done: Arc<AtomicBool>) {
    std::thread::spawn(move || {
        let mut chunk = [0u8; 1024];
        loop {
            match pipe.read(&mut chunk) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Ok(0) | Err(_) => {
                    done.store(true, Ordering::Release);
                    return;
                }
                Ok(n) => {
                    let mut buf = into.lock().unwrap_or_else(PoisonError::into_inner);
                    let room = STDERR_CAP.saturating_sub(buf.len());
                    buf.extend_from_slice(&chunk[..n.min(room)]);
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_socket_goes_to_the_temporary_directory_when_others_may_replace_the_runtime_dir() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let runtime = dir.path().canonicalize().unwrap();
        assert_eq!(super::socket_base(Some(runtime.clone())), runtime);
        std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert_eq!(super::socket_base(Some(runtime)), std::env::temp_dir());
        assert_eq!(super::socket_base(None), std::env::temp_dir());
    }

    use super::*;

    #[test]
    fn args_forward_the_socket_and_end_options_before_the_host() {
        let ep = Endpoint::parse("ssh://core@example.org:2222/run/podman/podman.sock").unwrap();
        let args: Vec<String> = ssh_args(&ep, Some(Path::new("/k/id")), Path::new("/r/ags-ssh-x/s"))
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect();
        let joined = args.join(" ");
        assert!(
            joined.starts_with("-N -T -o BatchMode=yes -o ExitOnForwardFailure=yes"),
            "{joined}"
        );
        assert!(joined.contains("-o ControlPath=none"), "{joined}");
        assert!(
            joined.ends_with(
                "-L /r/ags-ssh-x/s:/run/podman/podman.sock -i /k/id -p 2222 -l core -- example.org"
            ),
            "{joined}"
        );
        let bare = Endpoint::parse("ssh://h/run/p.sock").unwrap();
        let args = ssh_args(&bare, None, Path::new("/s"));
        assert_eq!(
            args[args.len() - 4..],
            [
                "-L".into(),
                OsString::from("/s:/run/p.sock"),
                "--".into(),
                "h".into()
            ]
        );
    }
}
