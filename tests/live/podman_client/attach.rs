//! Live attach tests: stream separation, exit codes, stdin EOF, tty, resize.

use ags::podman::{AttachOptions, StreamKind};
use tokio::io::AsyncWriteExt;

use crate::podman_client::support::{Guard, run, spec};

#[tokio::test]
async fn exit_code_and_stream_separation() {
    let client = client_or_skip!();
    let mut g = Guard::new(&client);
    let r = run(
        &client,
        &spec(
            &g.container("exit"),
            &["sh", "-c", "echo out; echo err >&2; exit 7"],
        ),
        None,
        None,
    )
    .await;
    assert_eq!(
        (r.out().as_str(), r.stderr.as_slice(), r.exit_code),
        ("out\n", &b"err\n"[..], 7)
    );
}

#[tokio::test]
async fn stdin_eof_reaches_cat() {
    let client = client_or_skip!();
    let mut g = Guard::new(&client);
    let mut s = spec(&g.container("cat"), &["cat"]);
    s.stdin = true;
    let r = run(&client, &s, Some(b"hello\n"), None).await;
    assert_eq!((r.out().as_str(), r.exit_code), ("hello\n", 0));

    let mut s = spec(&g.container("wc"), &["sh", "-c", "wc -c; read x; echo rc=$?"]);
    s.stdin = true;
    let big: Vec<u8> = (0..300_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    let r = run(&client, &s, Some(&big), None).await;
    assert_eq!((r.out().trim(), r.exit_code), ("300000\nrc=1", 0));
}

/// Without `stdin: true` in the spec, the container's stdin is /dev/null: input is dropped.
#[tokio::test]
async fn stdin_needs_the_spec_flag() {
    let client = client_or_skip!();
    let mut g = Guard::new(&client);
    let s = spec(&g.container("nostdin"), &["cat"]);
    let id = client.create(&s).await.unwrap();
    let opts = AttachOptions {
        stdin: true,
        stdout: true,
        stderr: true,
        tty: false,
    };
    let (mut demux, mut input) = client.attach(&id, opts).await.unwrap();
    client.start(&id).await.unwrap();
    let _ = input.write_all(b"dropped\n").await;
    let _ = input.shutdown().await;
    let mut out = Vec::new();
    loop {
        match demux.read_frame().await {
            Ok(Some((StreamKind::Stdout, data))) => out.extend_from_slice(&data),
            // Podman may report the failed stdin copy on stderr:
            // "Error: write unixpacket @->/proc/self/fd/13/attach: write: broken pipe".
            Ok(Some(_)) => {}
            Ok(None) => break,
            // Closing a socket with unread input in it sends a reset instead of EOF.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(out, b"");
}

#[tokio::test]
async fn input_closed_before_start_still_arrives() {
    let client = client_or_skip!();
    let mut g = Guard::new(&client);
    let mut s = spec(&g.container("early"), &["cat"]);
    s.stdin = true;
    let id = client.create(&s).await.unwrap();
    let opts = AttachOptions {
        stdin: true,
        stdout: true,
        stderr: true,
        tty: false,
    };
    let (mut demux, mut input) = client.attach(&id, opts).await.unwrap();
    input.write_all(b"early\n").await.unwrap();
    input.shutdown().await.unwrap();
    client.start(&id).await.unwrap();
    let mut out = Vec::new();
    while let Some((_, data)) = demux.read_frame().await.unwrap() {
        out.extend_from_slice(&data);
    }
    assert_eq!(out, b"early\n");
}

#[tokio::test]
async fn tty_is_raw_and_resize_is_seen() {
    let client = client_or_skip!();
    let mut g = Guard::new(&client);
    let mut s = spec(
        &g.container("tty"),
        &["sh", "-c", "stty size; read x; echo got:$x; exit 3"],
    );
    s.terminal = true;
    s.stdin = true;
    let early = client.resize(&g.containers[0], 10, 10).await.unwrap_err();
    assert!(early.is_not_found(), "{early}");
    // ctrl-p ctrl-q would detach with Podman's default detach keys; attach disables them.
    let r = run(&client, &s, Some(b"\x10\x11hi\n"), Some((33, 101))).await;
    let out = r.out();
    // The tty echoes the input (^P shown as "^P"); ^Q is eaten by the tty's flow control.
    assert!(out.contains("33 101\r\n"), "{out:?}");
    assert!(
        out.contains("got:\u{10}hi\r\n"),
        "ctrl-p must reach the container: {out:?}"
    );
    assert_eq!(r.exit_code, 3, "{out:?}");
}

/// With a tty, half-closing the input does not end `cat` (observed: it keeps running); EOF is
/// the terminal's ^D.
#[tokio::test]
async fn tty_eof_is_ctrl_d() {
    let client = client_or_skip!();
    let mut g = Guard::new(&client);
    let mut s = spec(&g.container("ttyeof"), &["cat"]);
    s.terminal = true;
    s.stdin = true;
    let r = run(&client, &s, Some(b"abc\n\x04"), None).await;
    assert_eq!((r.out().as_str(), r.exit_code), ("abc\r\nabc\r\n", 0));
}
