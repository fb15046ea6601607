//! `ags-egress-fwd`: the forwarder that runs inside an allowlist-mode agent container (see
//! docs/decisions/0003-egress.md and docs/network.md).
//!
//! The container has no network, only loopback. This program listens on `127.0.0.1:PORT`
//! there and relays every TCP connection, byte for byte, to the unix socket of the egress
//! proxy that the `ags` process serves on the host (bind-mounted read-only into the container).
//! It decides nothing: the proxy enforces the allowlist.
//!
//! `ags-egress-fwd --listen ADDR --socket PATH -- CMD [ARG…]` binds the listener, starts a copy
//! of itself in its own process group (so terminal signals meant for the agent do not reach it)
//! that serves the listener it inherits as stdin, and then replaces itself with `CMD`: the
//! agent keeps the process the container started, exactly as without the forwarder.
//!
//! Std only, no crate dependencies: `build.rs` compiles this file alone into a statically
//! linked executable that `ags` carries and that runs in any image, with or without a libc.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitCode, Stdio};

/// Exit status for the forwarder's own failures (as `podman run` uses 125).
const EXIT_OWN: u8 = 125;

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
enum Mode {
    /// Bind `listen`, start the server, exec `command`.
    Launch {
        listen: String,
        socket: String,
        command: Vec<String>,
    },
    /// Serve the listening socket that is stdin.
    Serve { socket: String },
}

fn parse(args: &[String]) -> Result<Mode, String> {
    let mut listen = None;
    let mut socket = None;
    let mut serve = false;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--listen" => listen = it.next().cloned(),
            "--socket" => socket = it.next().cloned(),
            "--serve" => serve = true,
            "--" => break,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let socket = socket.ok_or("--socket PATH is required")?;
    if serve {
        return Ok(Mode::Serve { socket });
    }
    let listen = listen.ok_or("--listen ADDR is required")?;
    let command: Vec<String> = it.cloned().collect();
    if command.is_empty() {
        return Err("no command after --".into());
    }
    Ok(Mode::Launch {
        listen,
        socket,
        command,
    })
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match parse(&args) {
        Ok(Mode::Launch {
            listen,
            socket,
            command,
        }) => launch(&listen, &socket, &command),
        Ok(Mode::Serve { socket }) => serve(&socket),
        Err(e) => Err((
            EXIT_OWN,
            format!("{e}; usage: ags-egress-fwd --listen ADDR --socket PATH -- CMD…"),
        )),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err((code, message)) => {
            eprintln!("ags-egress-fwd: {message}");
            ExitCode::from(code)
        }
    }
}

/// Bind, hand the listener to a detached server, then become the agent.
fn launch(listen: &str, socket: &str, command: &[String]) -> Result<(), (u8, String)> {
    let own = |what: &str, e: std::io::Error| (EXIT_OWN, format!("{what}: {e}"));
    let listener = TcpListener::bind(listen).map_err(|e| own(&format!("listen on {listen}"), e))?;
    let fd = listener
        .as_fd()
        .try_clone_to_owned()
        .map_err(|e| own("dup listener", e))?;
    let me = std::env::current_exe().map_err(|e| own("own executable", e))?;
    Command::new(me)
        .args(["--serve", "--socket", socket])
        .stdin(Stdio::from(fd))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| own("start the relay", e))?;
    drop(listener);
    let err = Command::new(&command[0]).args(&command[1..]).exec();
    let code = match err.kind() {
        std::io::ErrorKind::NotFound => 127,
        _ => 126,
    };
    Err((code, format!("{}: {err}", command[0])))
}

/// Accept connections on the inherited listener and relay each to the proxy socket.
fn serve(socket: &str) -> Result<(), (u8, String)> {
    let fd = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .map_err(|e| (EXIT_OWN, format!("listener: {e}")))?;
    let listener = TcpListener::from(fd);
    for conn in listener.incoming() {
        let Ok(client) = conn else { continue };
        let socket = socket.to_string();
        std::thread::spawn(move || relay(client, &socket));
    }
    Ok(())
}

/// Relay one connection both ways until each side has finished sending.
fn relay(mut client: TcpStream, socket: &str) {
    let upstream = match UnixStream::connect(socket) {
        Ok(s) => s,
        Err(e) => {
            let body = format!(
                "ags egress: the proxy at {socket} is unreachable ({e}); the ags process that launched this container has ended\n"
            );
            let _ = write!(
                client,
                "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            return;
        }
    };
    let (Ok(client2), Ok(upstream2)) = (client.try_clone(), upstream.try_clone()) else {
        return;
    };
    let up = std::thread::spawn(move || {
        pump(client2, &upstream2);
        let _ = upstream2.shutdown(Shutdown::Write);
    });
    pump(&upstream, &client);
    let _ = client.shutdown(Shutdown::Write);
    let _ = up.join();
}

/// Copy until end of stream or error.
fn pump(mut from: impl Read, mut to: impl Write) {
    let mut buf = [0u8; 16 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_launch_and_serve() {
        let m = parse(&args(&[
            "--listen",
            "127.0.0.1:3128",
            "--socket",
            "/s",
            "--",
            "sh",
            "-c",
            "x",
        ]))
        .unwrap();
        assert_eq!(
            m,
            Mode::Launch {
                listen: "127.0.0.1:3128".into(),
                socket: "/s".into(),
                command: args(&["sh", "-c", "x"]),
            }
        );
        assert_eq!(
            parse(&args(&["--serve", "--socket", "/s"])).unwrap(),
            Mode::Serve { socket: "/s".into() }
        );
        assert!(parse(&args(&["--listen", "x", "--socket", "/s", "--"])).is_err());
        assert!(parse(&args(&["--bogus"])).is_err());
    }
}
