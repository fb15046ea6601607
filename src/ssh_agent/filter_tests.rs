//! Tests of the filter's decisions, the narrowing of identities, and a session against a
//! stand-in agent that answers every message it receives (so a refused message that reached it
//! would show).

use super::*;
use crate::egress::log::read_last;

fn string(s: &[u8]) -> Vec<u8> {
    [&(s.len() as u32).to_be_bytes()[..], s].concat()
}

fn sign(key: &[u8]) -> Vec<u8> {
    [
        &[p::SIGN_REQUEST][..],
        &string(key),
        &string(b"data"),
        &[0, 0, 0, 0],
    ]
    .concat()
}

fn filter(dir: &std::path::Path, keys: Vec<String>) -> Filter {
    let log = EgressLog::new(dir.join("state/egress.jsonl"), "ags-1-1".into());
    Filter {
        upstream: dir.join("agent.sock"),
        keys,
        log: Arc::new(log),
    }
}

#[test]
fn only_listing_signing_and_session_bind_pass() {
    let dir = tempfile::tempdir().unwrap();
    let f = filter(dir.path(), Vec::new());
    assert_eq!(f.decide(&[p::REQUEST_IDENTITIES]), Verdict::Pass);
    assert_eq!(f.decide(&sign(b"k1")), Verdict::Pass);
    let bind = [&[p::EXTENSION][..], &string(p::SESSION_BIND.as_bytes()), b"rest"].concat();
    assert_eq!(f.decide(&bind), Verdict::Pass);
    let other = [&[p::EXTENSION][..], &string(b"query")].concat();
    assert!(matches!(f.decide(&other), Verdict::Refuse(w) if w.contains("\"query\"")));
    // Remove all, lock (with a passphrase), add identity, smartcard, unlock, trailing bytes.
    for msg in [
        &[19u8][..],
        &[22, 0, 0, 0, 1, b'x'],
        &[17, 1, 2],
        &[20],
        &[23],
        &[11, 0],
    ] {
        assert!(matches!(f.decide(msg), Verdict::Refuse(_)), "{msg:?}");
    }
    assert!(matches!(f.decide(&sign(b"k1")[..10]), Verdict::Refuse(_)));
}

#[test]
fn configured_keys_narrow_the_list_and_the_signing() {
    let dir = tempfile::tempdir().unwrap();
    let f = filter(dir.path(), vec![p::fingerprint(b"k1")]);
    assert_eq!(f.decide(&sign(b"k1")), Verdict::Pass);
    assert!(matches!(f.decide(&sign(b"k2")), Verdict::Refuse(w) if w.contains(&p::fingerprint(b"k2"))));
    let answer = p::identities_answer(&[(b"k1", b"one"), (b"k2", b"two")]);
    let narrowed = f.answer(p::REQUEST_IDENTITIES, answer.clone());
    assert_eq!(narrowed, p::identities_answer(&[(b"k1", b"one")]));
    // A damaged answer fails closed; other answers pass as they are.
    assert_eq!(
        f.answer(p::REQUEST_IDENTITIES, answer[..answer.len() - 1].to_vec()),
        [p::FAILURE]
    );
    assert_eq!(f.answer(p::SIGN_REQUEST, vec![14, 1]), [14, 1]);
}

#[test]
fn refused_messages_never_reach_the_agent_and_are_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let f = Arc::new(filter(dir.path(), Vec::new()));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let seen = rt.block_on(async {
        // The stand-in agent: records each message type and answers SSH_AGENT_SUCCESS (6).
        let agent = UnixListener::bind(&f.upstream).unwrap();
        let seen = tokio::spawn(async move {
            let (mut s, _) = agent.accept().await.unwrap();
            let mut seen = Vec::new();
            while let Ok(m) = p::read_frame(&mut s).await {
                seen.push(m[0]);
                p::write_frame(&mut s, &[6]).await.unwrap();
            }
            seen
        });
        let listener = UnixListener::bind(dir.path().join("filter.sock")).unwrap();
        let (stop, stopped) = watch::channel(false);
        let server = tokio::spawn(serve(listener, f.clone(), stopped));
        let mut c = UnixStream::connect(dir.path().join("filter.sock")).await.unwrap();
        let mut replies = Vec::new();
        for msg in [&[19u8][..], &[22, 0, 0, 0, 1, b'x'], &[11], &[17, 0]] {
            p::write_frame(&mut c, msg).await.unwrap();
            replies.push(p::read_frame(&mut c).await.unwrap());
        }
        assert_eq!(
            replies,
            [vec![p::FAILURE], vec![p::FAILURE], vec![6], vec![p::FAILURE]]
        );
        // An oversized frame closes the connection.
        use tokio::io::AsyncWriteExt;
        c.write_all(&((p::MAX_MESSAGE + 1) as u32).to_be_bytes())
            .await
            .unwrap();
        assert!(matches!(p::read_frame(&mut c).await, Err(FrameError::Closed)));
        stop.send(true).unwrap();
        server.await.unwrap();
        seen.await.unwrap()
    });
    assert_eq!(seen, [p::REQUEST_IDENTITIES]);
    let log = read_last(&dir.path().join("state/egress.jsonl"), 10).unwrap();
    let reasons: Vec<(&str, Decision)> = log.iter().map(|r| (r.reason.as_str(), r.decision)).collect();
    assert_eq!(log.len(), 4, "{reasons:?}");
    assert!(log.iter().all(|r| r.kind == "ssh-agent"));
    assert!(
        log[0].reason.starts_with("message 19 (remove-all-identities)"),
        "{reasons:?}"
    );
    assert!(log[1].reason.starts_with("message 22 (lock)"), "{reasons:?}");
    assert!(
        log[2].reason.starts_with("message 17 (add-identity)"),
        "{reasons:?}"
    );
    assert_eq!(log[3].decision, Decision::Invalid);
}
