//! A real OpenSSH server on 127.0.0.1 for the `ssh://` tests: its own port, host key, user key
//! and `authorized_keys` in a private directory, no PAM password or keyboard logins, and
//! stream-local forwarding allowed. The client side is the system `ssh` behind a two-line
//! wrapper (`bin/ssh`) that adds `-F` with a config pinning this server's host key in its own
//! `known_hosts` (OpenSSH reads `~` from the passwd entry, not `$HOME`, so a test cannot point
//! the user's own config elsewhere). Put [`Sshd::path`] first on `PATH` to use it.
//!
//! I/O: runs ssh-keygen and sshd (Debian `openssh-server`, installed by scripts/test).

use std::fs;
use std::os::unix::fs::{PermissionsExt, chown};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{Account, CLEAN_PATH, loud, require_podman};

/// The sshd binary.
pub const SSHD: &str = "/usr/sbin/sshd";

/// A running sshd; killed and its directory removed on drop.
pub struct Sshd {
    dir: PathBuf,
    port: u16,
    child: Child,
}

impl Sshd {
    /// Start a server that lets `account` in with [`Sshd::key`]. `None` (with a loud SKIP) when
    /// sshd is not installed and the run does not require Podman tests.
    pub fn start(tag: &str, account: &Account) -> Option<Sshd> {
        if !Path::new(SSHD).exists() {
            assert!(
                !require_podman(),
                "{SSHD} is missing: install openssh-server (scripts/test does)"
            );
            loud(&format!(
                "SKIP: {SSHD} is not installed (apt-get install openssh-server)"
            ));
            return None;
        }
        let dir = PathBuf::from(format!("/tmp/ags-sshd-{tag}"));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
        fs::create_dir_all("/run/sshd").unwrap(); // sshd's privilege separation directory
        for key in ["host_key", "user_key"] {
            let ok = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-C", "ags-test", "-f"])
                .arg(dir.join(key))
                .status()
                .unwrap()
                .success();
            assert!(ok, "ssh-keygen failed");
        }
        chown(dir.join("user_key"), Some(account.uid), Some(account.gid)).unwrap();
        fs::copy(dir.join("user_key.pub"), dir.join("authorized_keys")).unwrap();
        let mut last = String::new();
        for _ in 0..5 {
            let port = free_port();
            fs::write(dir.join("sshd_config"), sshd_config(&dir, port)).unwrap();
            let mut child = Command::new(SSHD)
                .args(["-D", "-e", "-f"])
                .arg(dir.join("sshd_config"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(fs::File::create(dir.join("sshd.log")).unwrap())
                .spawn()
                .unwrap();
            // Its own words, not a connection: the port may have been taken by another process
            // since it was free (then sshd exits and another port is tried).
            let listening = format!("Server listening on 127.0.0.1 port {port}.");
            let deadline = Instant::now() + Duration::from_secs(60);
            while Instant::now() < deadline {
                if fs::read_to_string(dir.join("sshd.log")).is_ok_and(|log| log.contains(&listening)) {
                    let sshd = Sshd { dir, port, child };
                    sshd.write_client_side(account);
                    return Some(sshd);
                }
                if child.try_wait().unwrap().is_some() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
            last = fs::read_to_string(dir.join("sshd.log")).unwrap_or_default();
        }
        panic!("sshd did not start: {last}");
    }

    fn write_client_side(&self, account: &Account) {
        let host_key = fs::read_to_string(self.dir.join("host_key.pub")).unwrap();
        fs::write(
            self.dir.join("known_hosts"),
            format!("[127.0.0.1]:{} {host_key}", self.port),
        )
        .unwrap();
        fs::write(
            self.dir.join("ssh_config"),
            format!(
                "Host *\n  UserKnownHostsFile {0}/known_hosts\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  User {1}\n",
                self.dir.display(),
                account.name
            ),
        )
        .unwrap();
        let bin = self.dir.join("bin");
        fs::create_dir(&bin).unwrap();
        fs::set_permissions(&bin, fs::Permissions::from_mode(0o755)).unwrap();
        fs::write(
            bin.join("ssh"),
            format!(
                "#!/bin/sh\nexec /usr/bin/ssh -F {}/ssh_config \"$@\"\n",
                self.dir.display()
            ),
        )
        .unwrap();
        fs::set_permissions(bin.join("ssh"), fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// The port it listens on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The private key `account` logs in with (owned by it, 0600).
    pub fn key(&self) -> PathBuf {
        self.dir.join("user_key")
    }

    /// `PATH` with the client wrapper first.
    pub fn path(&self) -> String {
        format!("{}:{CLEAN_PATH}", self.dir.join("bin").display())
    }

    /// `ssh://user@127.0.0.1:PORT/socket`.
    pub fn url(&self, user: &str, socket: &Path) -> String {
        format!("ssh://{user}@127.0.0.1:{}{}", self.port, socket.display())
    }

    /// The server's log so far (for failure messages).
    pub fn log(&self) -> String {
        fs::read_to_string(self.dir.join("sshd.log")).unwrap_or_default()
    }

    /// The pids of running `ssh` clients talking to this server's port (the forwards `ags`
    /// starts carry `-p PORT` and `ExitOnForwardFailure`).
    pub fn clients(&self) -> Vec<String> {
        let port = self.port.to_string();
        let mut out = Vec::new();
        for entry in fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Ok(cmdline) = fs::read(entry.path().join("cmdline")) else {
                continue;
            };
            let args: Vec<String> = cmdline
                .split(|b| *b == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            if args.iter().any(|a| a == "ExitOnForwardFailure=yes") && args.contains(&port) {
                out.push(format!(
                    "{}: {}",
                    entry.file_name().to_string_lossy(),
                    args.join(" ")
                ));
            }
        }
        out
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = fs::remove_dir_all(&self.dir);
    }
}

fn sshd_config(dir: &Path, port: u16) -> String {
    let d = dir.display();
    format!(
        "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\nAuthorizedKeysFile {d}/authorized_keys\n\
         StrictModes no\nUsePAM yes\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n\
         PermitRootLogin prohibit-password\nAllowStreamLocalForwarding yes\nX11Forwarding no\nPermitTTY no\n\
         PidFile none\nLogLevel VERBOSE\n"
    )
}

/// A port that was free a moment ago.
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}
