use super::*;
use crate::egress::plan::PlanAllow;

fn policy(entries: &[&str]) -> Policy {
    let rule = |e: &&str| PlanAllow {
        entry: crate::config::AllowEntry::parse(e).unwrap(),
        origin: crate::config::EgressOrigin::Config,
        at: Some("/c.toml:3".into()),
    };
    Policy::new(entries.iter().map(rule).collect())
}

#[test]
fn connect_and_absolute_uri_heads_parse() {
    let r = parse_head(b"CONNECT api.anthropic.com:443 HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    assert_eq!(
        (r.kind, r.host, r.port),
        ("connect", Host::Name("api.anthropic.com".into()), 443)
    );
    let r = parse_head(b"CONNECT [::1]:8443 HTTP/1.1\r\n\r\n").unwrap();
    assert_eq!(r.host, Host::Ip("::1".parse().unwrap()));
    let r = parse_head(b"GET http://Example.com/a?b HTTP/1.1\r\nHost: evil.org\r\nProxy-Connection: keep-alive\r\nAccept: */*\r\n\r\n").unwrap();
    assert_eq!((r.kind, r.port), ("http", 80));
    let head = String::from_utf8(r.upstream_head.unwrap().to_vec()).unwrap();
    // The Host header is the target's: no sending another name to an allowed address.
    assert_eq!(
        head,
        "GET /a?b HTTP/1.1\r\nHost: Example.com\r\nAccept: */*\r\nConnection: close\r\n\r\n"
    );
    for bad in [
        &b"GET / HTTP/1.1\r\n\r\n"[..],
        b"GET https://x.com/ HTTP/1.1\r\n\r\n",
        b"CONNECT x.com HTTP/1.1\r\n\r\n",
        b"CONNECT u:p@x.com:443 HTTP/1.1\r\n\r\n",
        b"CONNECT x\x1b[31m.com:443 HTTP/1.1\r\n\r\n",
        b"CONNECT x.com:443 HTTP/1.1\r\n",
    ] {
        assert!(parse_head(bad).is_err(), "{}", String::from_utf8_lossy(bad));
    }
}

#[test]
fn admission_needs_a_matching_entry() {
    let p = policy(&["api.anthropic.com:443", "*.example.org", "127.0.0.1:8080"]);
    assert!(p.admit(&Host::Name("api.anthropic.com".into()), 443).is_ok());
    assert!(p.admit(&Host::Name("api.anthropic.com".into()), 80).is_err());
    assert!(p.admit(&Host::Name("a.example.org".into()), 80).is_ok());
    assert!(p.admit(&Host::Name("evil.com".into()), 443).is_err());
    assert!(p.admit(&Host::Ip("127.0.0.1".parse().unwrap()), 8080).is_ok());
    let Refusal(why) = p.admit(&Host::Ip("1.2.3.4".parse().unwrap()), 443).unwrap_err();
    assert!(why.contains("raw IP"), "{why}");
}

#[test]
fn internal_addresses_need_an_explicit_entry() {
    let p = policy(&["*.corp.example", "db.corp.example:5432", "10.1.0.0/16:443"]);
    let private = [SocketAddr::from(([10, 9, 0, 1], 443))];
    let Refusal(why) = p.usable("www.corp.example", 443, &private).unwrap_err();
    assert!(why.contains("internal address"), "{why}");
    // The exact host entry names it; a CIDR entry covers the address.
    assert!(
        p.usable(
            "db.corp.example",
            5432,
            &[SocketAddr::from(([10, 9, 0, 1], 5432))]
        )
        .is_ok()
    );
    assert!(
        p.usable("www.corp.example", 443, &[SocketAddr::from(([10, 1, 2, 3], 443))])
            .is_ok()
    );
    // Public addresses are fine; a mix keeps only the usable ones.
    let mixed = [
        SocketAddr::from(([127, 0, 0, 1], 443)),
        SocketAddr::from(([93, 184, 216, 34], 443)),
    ];
    assert_eq!(p.usable("www.corp.example", 443, &mixed).unwrap(), [mixed[1]]);
}

#[test]
fn only_the_opened_ports_of_the_hosts_loopback_are_reached() {
    let local = |p: &Policy, h: Host, port| p.host_loopback(&h, port).map(|a| a.to_string());
    let name = |n: &str| Host::Name(n.into());
    for p in [Policy::open(None), policy(&["example.com"])] {
        let p = p.with_host_ports(vec![11434]);
        for host in [
            name("host.ags.internal"),
            name("localhost"),
            Host::Ip("127.0.0.1".parse().unwrap()),
        ] {
            assert_eq!(local(&p, host.clone(), 11434).as_deref(), Some("127.0.0.1:11434"));
            assert!(p.admit(&host, 11434).is_ok());
            assert_eq!(local(&p, host, 22), None);
        }
        // Every spelling reaches the host's 127.0.0.1 (session-21 attack F3).
        assert_eq!(
            local(&p, Host::Ip("::1".parse().unwrap()), 11434).as_deref(),
            Some("127.0.0.1:11434")
        );
        assert_eq!(
            local(&p, Host::Ip("::ffff:127.0.0.1".parse().unwrap()), 11434).as_deref(),
            Some("127.0.0.1:11434")
        );
        assert_eq!(local(&p, name("example.com"), 11434), None);
        assert_eq!(local(&p, Host::Ip("127.0.0.2".parse().unwrap()), 11434), None);
        // The name never resolves elsewhere: a port not opened is refused, with the fix.
        let msg = p.admit(&name("host.ags.internal"), 22).unwrap_err().0;
        assert!(
            msg.contains("host_loopback = [22]") && msg.contains("127.0.0.1:22"),
            "{msg}"
        );
        assert!(open_usable("127.0.0.1", &["127.0.0.1:22".parse().unwrap()]).is_err());
    }
}

#[test]
fn a_deny_entry_beats_every_allow_entry() {
    use crate::config::EgressOrigin;
    let deny = |e: &str| PlanAllow {
        entry: crate::config::AllowEntry::parse(e).unwrap(),
        origin: EgressOrigin::ProjectConfig,
        at: None,
    };
    let p = policy(&["*.example.org", "10.0.0.0/8:443"])
        .with_deny(vec![deny("bad.example.org"), deny("10.1.0.0/16")]);
    assert!(p.admit(&Host::Name("good.example.org".into()), 443).is_ok());
    let msg = p.admit(&Host::Name("bad.example.org".into()), 443).unwrap_err().0;
    assert!(
        msg.contains("deny entry bad.example.org (project config)"),
        "{msg}"
    );
    assert!(p.admit(&Host::Ip("10.1.2.3".parse().unwrap()), 443).is_err());
    assert!(p.admit(&Host::Ip("10.2.2.3".parse().unwrap()), 443).is_ok());
    // A name resolving into a denied network is refused after resolution.
    let addrs = ["10.1.2.3:443".parse().unwrap()];
    let p = p.with_host_ports(vec![]);
    let allowed = policy(&["db.example.org:443"]).with_deny(vec![deny("10.1.0.0/16")]);
    assert!(allowed.usable("db.example.org", 443, &addrs).is_err());
    let both = [
        "10.1.2.3:443".parse().unwrap(),
        "93.184.216.34:443".parse().unwrap(),
    ];
    assert_eq!(
        allowed.usable("db.example.org", 443, &both).unwrap(),
        vec![both[1]]
    );
    // Open mode obeys deny entries too.
    let open = Policy::open(None).with_deny(vec![deny("bad.example.org")]);
    assert!(open.admit(&Host::Name("bad.example.org".into()), 8080).is_err());
    drop(p);
}

#[test]
fn a_deny_of_the_hosts_loopback_covers_every_spelling_and_grants_carry_their_deadline() {
    use crate::config::EgressOrigin;
    let deny = |e: &str| PlanAllow {
        entry: crate::config::AllowEntry::parse(e).unwrap(),
        origin: EgressOrigin::Config,
        at: None,
    };
    // Session-21 attack F2: a name deny entry for the loopback refuses its IP spellings too.
    for d in ["localhost", "host.ags.internal", "127.0.0.1:18080", "[::1]"] {
        let p = policy(&["127.0.0.1:18080", "localhost:18080"]).with_deny(vec![deny(d)]);
        for h in ["127.0.0.1", "::1", "::ffff:127.0.0.1"] {
            assert!(p.admit(&Host::Ip(h.parse().unwrap()), 18080).is_err(), "{d} {h}");
        }
        for n in ["localhost", "host.ags.internal"] {
            assert!(p.admit(&Host::Name(n.into()), 18080).is_err(), "{d} {n}");
        }
    }
    // Session-21 attack F1: a name a rule admits, usable only through a grant, carries the
    // grant's deadline.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("state/grants");
    let entry = crate::config::AllowEntry::parse("127.0.0.1:18083").unwrap();
    let g = crate::egress::grants::Grant::new(&entry, None, Some(Duration::from_secs(60)), "u".into());
    crate::egress::grants::write(&dir, &g).unwrap();
    let p = policy(&["*.atk.test:18083"]).with_grants(dir.clone(), "ags-1-2".into());
    let (reason, until) = p.admit_until(&Host::Name("a.atk.test".into()), 18083).unwrap();
    assert!(until.is_none() && reason.contains("*.atk.test"), "{reason}");
    let (ok, until) = p
        .usable_until("a.atk.test", 18083, &["127.0.0.1:18083".parse().unwrap()])
        .unwrap();
    assert_eq!((ok.len(), until), (1, g.deadline()));
    // A grant of a loopback port opens it under the name too, with its deadline.
    let p = policy(&[]).with_grants(dir, "ags-1-2".into());
    let (_, until) = p
        .admit_until(&Host::Name("host.ags.internal".into()), 18083)
        .unwrap();
    assert_eq!(until, g.deadline());
    assert_eq!(
        p.host_loopback(&Host::Name("host.ags.internal".into()), 18083),
        Some("127.0.0.1:18083".parse().unwrap())
    );
}

fn with_deny(p: Policy, deny: &[&str]) -> Policy {
    let rule = |e: &&str| PlanAllow {
        entry: crate::config::AllowEntry::parse(e).unwrap(),
        origin: crate::config::EgressOrigin::Config,
        at: Some("/c.toml:9".into()),
    };
    p.with_deny(deny.iter().map(rule).collect())
}

#[test]
fn method_and_path_rules_decide_each_request() {
    let gh = Host::Name("github.com".into());
    let p = with_deny(
        policy(&["GET github.com/myorg/*", "api.example.org"]),
        &["POST api.example.org/admin/*"],
    );
    // The destination is admitted for its requests only, and its tunnels are read.
    let (why, _) = p.admit_until(&gh, 443).unwrap();
    assert!(
        why.contains("only requests matching GET github.com/myorg/* (config, /c.toml:3)"),
        "{why}"
    );
    assert!(p.by_requests(&gh, 443) && p.inspects(&gh, 443));
    let ok = p
        .check_request(&gh, 443, ("GET", "/myorg/repo/info/refs?x=1", false))
        .unwrap();
    assert!(ok.unwrap().contains("allowed by GET github.com/myorg/*"));
    for (method, target) in [
        ("POST", "/myorg/repo"),
        ("GET", "/other/repo"),
        ("GET", "/myorg/../other/repo"),
        ("GET", "/myorg/%2e%2e/other"),
        ("GET", "/myorg%2fx"),
    ] {
        assert!(
            p.check_request(&gh, 443, (method, target, false)).is_err(),
            "{method} {target}"
        );
    }
    // A deny rule reads a whole-destination entry's requests too, without regard to case.
    let api = Host::Name("api.example.org".into());
    assert!(p.inspects(&api, 443) && !p.by_requests(&api, 443));
    let Refusal(why) = p
        .check_request(&api, 443, ("POST", "/ADMIN/users", false))
        .unwrap_err();
    assert!(why.contains("deny entry POST api.example.org/admin/*"), "{why}");
    assert!(p.check_request(&api, 443, ("GET", "/admin/users", false)).is_ok());
    // No rule reaches it: the destination decides alone, and nothing is read.
    let other = Host::Name("b.example.org".into());
    assert_eq!(p.check_request(&other, 443, ("POST", "/x", false)), Ok(None));
    assert!(!p.inspects(&Host::Name("b.example.org".into()), 443));
}

#[test]
fn a_tunnel_only_rules_admit_needs_a_name_and_the_launch_ca() {
    let head = |h: &str| parse_head(h.as_bytes()).unwrap();
    let p = policy(&["GET github.com/myorg/*", "GET 10.0.0.5/api/*"]);
    // No CA (no vault): the tunnel cannot be read, so it is refused.
    let Refusal(why) = decide(&p, &head("CONNECT github.com:443 HTTP/1.1\r\n\r\n")).unwrap_err();
    assert!(why.contains("no CA"), "{why}");
    let Refusal(why) = decide(&p, &head("CONNECT 10.0.0.5:443 HTTP/1.1\r\n\r\n")).unwrap_err();
    assert!(why.contains("not inside a tunnel to an address"), "{why}");
    // Plain HTTP is read here: the request line decides.
    let (why, _, inspect) = decide(&p, &head("GET http://10.0.0.5/api/v1 HTTP/1.1\r\n\r\n")).unwrap();
    // Read by the rules: only this request's bytes go on.
    assert!(why.contains("allowed by GET 10.0.0.5/api/*") && inspect, "{why}");
    assert!(decide(&p, &head("POST http://10.0.0.5/api/v1 HTTP/1.1\r\n\r\n")).is_err());
    assert!(decide(&p, &head("GET http://10.0.0.5/api/../admin HTTP/1.1\r\n\r\n")).is_err());
}

#[test]
fn attacks_on_the_rules_are_refused() {
    let head = |h: &[u8]| parse_head(h);
    // F1: a bare LF (or CR) inside the head would end it earlier for some servers.
    assert!(
        head(b"GET http://127.0.0.1:9/ok/x HTTP/1.1\r\nX-A: 1\n\nDELETE /admin HTTP/1.1\r\n\r\n").is_err()
    );
    assert!(head(b"GET http://127.0.0.1:9/ok/x HTTP/1.1\r\nX-A: 1\rX-B: 2\r\n\r\n").is_err());
    assert!(head(b"GET http://127.0.0.1:9/ok/x HTTP/1.1\r\nno colon here\r\n\r\n").is_err());
    assert!(head(b"GET http://127.0.0.1:9/ok/x HTTP/1.1\r\nBad Name: 1\r\n\r\n").is_err());
    assert!(head(b"GET http://127.0.0.1:9/ok/x HTTP/1.1\r\nX-A: a\tb\r\n\r\n").is_ok());
    let ip = Host::Ip("127.0.0.1".parse().unwrap());
    // F2, F4: a deny rule on an address, with or without a port, refuses tunnels there.
    for deny in ["POST 127.0.0.1:9/*", "POST 127.0.0.1/*"] {
        let p = with_deny(policy(&["127.0.0.1:9"]), &[deny]);
        assert!(p.tunnel_refusal(&ip, 9).is_some(), "{deny}");
        assert!(
            p.check_request(&ip, 9, ("POST", "/admin", false)).is_err(),
            "{deny}"
        );
        assert!(
            p.check_request(&ip, 9, ("GET", "/admin", false))
                .unwrap()
                .is_some(),
            "{deny}"
        );
    }
    let named = with_deny(policy(&["example.org:8443"]), &["POST example.org/*"]);
    assert!(named.inspects(&Host::Name("example.org".into()), 8443));
    // F3: a deny rule's method in any case; F5: every spelling of the host's loopback.
    let lo = with_deny(policy(&["localhost:9"]), &["POST localhost:9/admin/*"]);
    for host in [
        Host::Name("localhost".into()),
        Host::Name(crate::egress::model::HOST_NAME.into()),
        ip.clone(),
        Host::Ip("::1".parse().unwrap()),
    ] {
        for method in ["POST", "post", "Post"] {
            assert!(
                lo.check_request(&host, 9, (method, "/admin/x", false)).is_err(),
                "{host:?} {method}"
            );
        }
        // F7: the prefix's directory itself, and its trailing-slash twin.
        assert!(
            lo.check_request(&host, 9, ("POST", "/ADMIN", false)).is_err(),
            "{host:?}"
        );
    }
    // F6, F7: '#', ';' and a '%' left after decoding are refused where rules read requests.
    let gh = Host::Name("github.com".into());
    let p = policy(&["GET github.com/myorg/*"]);
    for target in [
        "/myorg/#/../../admin",
        "/myorg/..;/other",
        "/myorg/%252e%252e/other",
        "/myorg/x;y",
    ] {
        assert!(
            p.check_request(&gh, 443, ("GET", target, false)).is_err(),
            "{target}"
        );
    }
    // F8: a header that overrides the method or path.
    assert!(p.check_request(&gh, 443, ("GET", "/myorg/x", true)).is_err());
    let r = head(b"GET http://10.0.0.5/api/v1 HTTP/1.1\r\nX-HTTP-Method-Override: DELETE\r\n\r\n").unwrap();
    assert!(r.overrides);
    let exact = with_deny(
        policy(&["api.example.org"]),
        &["DELETE api.example.org/repos/o/r"],
    );
    let api = Host::Name("api.example.org".into());
    assert!(
        exact
            .check_request(&api, 443, ("DELETE", "/repos/o/r/", false))
            .is_err()
    );
}

/// A server that ignores `Connection: close`: it records every byte it is sent and answers
/// the first request; the bytes of a second request behind it must never arrive.
#[tokio::test]
async fn a_ruled_plain_request_sends_on_its_own_bytes_only() {
    use std::sync::Mutex;
    let upstream = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = upstream.local_addr().unwrap().port();
    let got: Arc<Mutex<Vec<u8>>> = Arc::default();
    let seen = got.clone();
    tokio::spawn(async move {
        let (mut tcp, _) = upstream.accept().await.unwrap();
        let mut buf = [0u8; 4096];
        let mut answered = false;
        while let Ok(Ok(n)) = tokio::time::timeout(Duration::from_millis(500), tcp.read(&mut buf)).await {
            if n == 0 {
                break;
            }
            seen.lock().unwrap().extend_from_slice(&buf[..n]);
            if !answered {
                answered = true;
                let _ = tcp
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                    .await;
            }
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let private = dir.path().join("p");
    std::fs::create_dir(&private).unwrap();
    std::fs::set_permissions(&private, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let sock = private.join("proxy.sock");
    let listener = tokio::net::UnixListener::bind(&sock).unwrap();
    let log = Arc::new(EgressLog::new(private.join("egress.jsonl"), "ags-1-2".into()));
    let (_stop, stopped) = watch::channel(false);
    let p = policy(&[&format!("POST 127.0.0.1:{port}/ok/*")]);
    tokio::spawn(serve(listener, Arc::new(p), log, stopped));
    let mut c = UnixStream::connect(&sock).await.unwrap();
    let smuggled = format!(
        "POST http://127.0.0.1:{port}/ok/x HTTP/1.1\r\nContent-Length: 2\r\n\r\nhiDELETE /admin HTTP/1.1\r\nHost: x\r\n\r\n"
    );
    c.write_all(smuggled.as_bytes()).await.unwrap();
    let mut out = vec![0u8; 256];
    let n = tokio::time::timeout(Duration::from_secs(5), c.read(&mut out))
        .await
        .unwrap()
        .unwrap();
    assert!(String::from_utf8_lossy(&out[..n]).starts_with("HTTP/1.1 200"));
    tokio::time::sleep(Duration::from_millis(700)).await;
    let sent = String::from_utf8_lossy(&got.lock().unwrap()).into_owned();
    assert!(
        sent.starts_with("POST /ok/x HTTP/1.1") && sent.ends_with("\r\n\r\nhi"),
        "{sent:?}"
    );
    assert!(!sent.contains("DELETE"), "{sent:?}");
    // A body framed by Transfer-Encoding cannot be bounded: refused where rules decide.
    let chunked = format!("POST http://127.0.0.1:{port}/ok/x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
    let r = parse_head(chunked.as_bytes()).unwrap();
    let Refusal(why) = decide(&policy(&[&format!("POST 127.0.0.1:{port}/ok/*")]), &r).unwrap_err();
    assert!(why.contains("Content-Length"), "{why}");
    assert!(
        parse_head(b"POST http://h/ok HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n").is_err()
    );
}
