//! `ags-egress-fwd`: the forwarder that runs inside an allowlist-mode agent container (see
//! docs/decisions/0003-egress.md and docs/network.md).
//!
//! The container has no network, only loopback. This program listens on `127.0.0.1:PORT`
//! there and relays every TCP connection, byte for byte, to the unix socket of the egress
//! proxy that the `ags` process serves on the host (bind-mounted read-only into the container).
//! It decides nothing: the proxy enforces the allowlist.
//!
//! `ags-egress-fwd --listen ADDR --socket PATH [--forward PORT]… -- CMD [ARG…]` binds the
//! listener, starts a copy of itself in its own process group (so terminal signals meant for
//! the agent do not reach it) that serves the listener it inherits as stdin, and then replaces
//! itself with `CMD`: the agent keeps the process the container started, exactly as without
//! the forwarder.
//!
//! Each `--forward PORT` is a port of the host's loopback opened to the launch: the copy also
//! listens on `127.0.0.1:PORT` and relays each connection through the proxy with
//! `CONNECT 127.0.0.1:PORT` (the proxy decides). It says it is ready (or which port it could
//! not take, a warning) on a pipe before the agent starts, so no connection of the agent can
//! come before a listener.
//!
//! Std only, no crate dependencies: `ags`'s `build.rs` compiles this file alone into a statically
//! linked executable that `ags` carries and that runs in any image, with or without a libc.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitCode, Stdio};

/// Exit status for the forwarder's own failures (as `podman run` uses 125).
const EXIT_OWN: u8 = 125;
/// What the serving copy prints when every listener is up.
const READY: &str = "ready";

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
enum Mode {
    /// Bind `listen`, start the server, exec `command`.
    Launch {
        listen: String,
        socket: String,
        forward: Vec<u16>,
        command: Vec<String>,
    },
    /// Serve the listening socket that is stdin, and listen on the forwarded ports.
    Serve { socket: String, forward: Vec<u16> },
}

fn parse(args: &[String]) -> Result<Mode, String> {
    let mut listen = None;
    let mut socket = None;
    let mut serve = false;
    let mut forward = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--listen" => listen = it.next().cloned(),
            "--socket" => socket = it.next().cloned(),
            "--forward" => match it.next().and_then(|p| p.parse::<u16>().ok()) {
                Some(p) if p > 0 => forward.push(p),
                _ => return Err("--forward needs a port from 1 to 65535".into()),
            },
            "--serve" => serve = true,
            "--" => break,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let socket = socket.ok_or("--socket PATH is required")?;
    if serve {
        return Ok(Mode::Serve { socket, forward });
    }
    let listen = listen.ok_or("--listen ADDR is required")?;
    let command: Vec<String> = it.cloned().collect();
    if command.is_empty() {
        return Err("no command after --".into());
    }
    Ok(Mode::Launch {
        listen,
        socket,
        forward,
        command,
    })
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match parse(&args) {
        Ok(Mode::Launch {
            listen,
            socket,
            forward,
            command,
        }) => launch(&listen, &socket, &forward, &command),
        Ok(Mode::Serve { socket, forward }) => serve(&socket, &forward),
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

/// Bind, hand the listener to a detached server, wait until it listens on the forwarded
/// ports, then become the agent.
fn launch(listen: &str, socket: &str, forward: &[u16], command: &[String]) -> Result<(), (u8, String)> {
    let own = |what: &str, e: std::io::Error| (EXIT_OWN, format!("{what}: {e}"));
    let listener = TcpListener::bind(listen).map_err(|e| own(&format!("listen on {listen}"), e))?;
    let fd = listener
        .as_fd()
        .try_clone_to_owned()
        .map_err(|e| own("dup listener", e))?;
    let me = std::env::current_exe().map_err(|e| own("own executable", e))?;
    let mut server = Command::new(me)
        .args(["--serve", "--socket", socket])
        .args(
            forward
                .iter()
                .flat_map(|p| ["--forward".to_string(), p.to_string()]),
        )
        .stdin(Stdio::from(fd))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| own("start the relay", e))?;
    drop(listener);
    if let Some(out) = server.stdout.take() {
        let lines = std::io::BufRead::lines(std::io::BufReader::new(out.take(64 * 1024)));
        for line in lines.map_while(Result::ok) {
            if line == READY {
                break;
            }
            eprintln!("ags-egress-fwd: {line}");
        }
    }
    let err = Command::new(&command[0]).args(&command[1..]).exec();
    let code = match err.kind() {
        std::io::ErrorKind::NotFound => 127,
        _ => 126,
    };
    Err((code, format!("{}: {err}", command[0])))
}

/// Listen on the forwarded ports (a port taken is a warning on stdout: the agent still
/// reaches it as `host.ags.internal` through the proxy), close stdout to say so, then accept
/// connections on every listener and relay each to the proxy socket.
fn serve(socket: &str, forward: &[u16]) -> Result<(), (u8, String)> {
    let fd = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .map_err(|e| (EXIT_OWN, format!("listener: {e}")))?;
    let mut listeners = vec![(TcpListener::from(fd), None)];
    let mut out = std::io::stdout();
    for &port in forward {
        match TcpListener::bind(("127.0.0.1", port)) {
            Ok(l) => listeners.push((l, Some(port))),
            Err(e) => {
                let _ = writeln!(
                    out,
                    "cannot listen on 127.0.0.1:{port} for the host's loopback ({e}); reach it as host.ags.internal:{port} through the proxy"
                );
            }
        }
    }
    let _ = writeln!(out, "{READY}");
    let _ = out.flush();
    let socket = socket.to_string();
    let mut threads = Vec::new();
    for (listener, port) in listeners {
        let socket = socket.clone();
        threads.push(std::thread::spawn(move || accept(&listener, &socket, port)));
    }
    for t in threads {
        let _ = t.join();
    }
    Ok(())
}

/// Accept connections and relay each (through `CONNECT 127.0.0.1:PORT` for a forwarded port).
fn accept(listener: &TcpListener, socket: &str, port: Option<u16>) {
    for conn in listener.incoming() {
        let Ok(client) = conn else { continue };
        let socket = socket.to_string();
        std::thread::spawn(move || relay(client, &socket, port));
    }
}

/// Relay one connection both ways until each side has finished sending. For a forwarded port
/// the proxy is first asked for a tunnel; what it answers other than `200` goes to the client.
fn relay(mut client: TcpStream, socket: &str, port: Option<u16>) {
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
    if let Some(port) = port
        && !tunnel(&upstream, port, &mut client)
    {
        return;
    }
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

/// Ask the proxy for a tunnel to the host's `127.0.0.1:port`; true when it answered `200`.
/// Otherwise its answer is passed to the client (for an HTTP client, the proxy's reason).
fn tunnel(mut upstream: &UnixStream, port: u16, client: &mut TcpStream) -> bool {
    let ask = format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    if upstream.write_all(ask.as_bytes()).is_err() {
        return false;
    }
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 16 * 1024 {
        match upstream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => break,
        }
    }
    if head.starts_with(b"HTTP/1.1 200") && head.ends_with(b"\r\n\r\n") {
        return true;
    }
    let _ = client.write_all(&head);
    pump(upstream, &*client);
    false
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
                forward: Vec::new(),
                command: args(&["sh", "-c", "x"]),
            }
        );
        assert_eq!(
            parse(&args(&[
                "--serve",
                "--socket",
                "/s",
                "--forward",
                "11434",
                "--forward",
                "5432"
            ]))
            .unwrap(),
            Mode::Serve {
                socket: "/s".into(),
                forward: vec![11434, 5432]
            }
        );
        assert!(parse(&args(&["--serve", "--socket", "/s", "--forward", "0"])).is_err());
        assert!(parse(&args(&["--serve", "--socket", "/s", "--forward"])).is_err());
        assert!(parse(&args(&["--listen", "x", "--socket", "/s", "--"])).is_err());
        assert!(parse(&args(&["--bogus"])).is_err());
    }
}
