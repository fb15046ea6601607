use super::*;

fn e(s: &str) -> AllowEntry {
    AllowEntry::parse(s).unwrap_or_else(|err| panic!("{s}: {err}"))
}

#[test]
fn entries_parse_and_normalize() {
    assert_eq!(e("API.Anthropic.com.").entry, "api.anthropic.com");
    assert_eq!(e("api.anthropic.com").ports, [443, 80]);
    assert_eq!(e("*.githubusercontent.com:443").ports, [443]);
    assert_eq!(
        e("10.88.0.1:8080").target,
        Target::Net {
            addr: "10.88.0.1".parse().unwrap(),
            prefix: 32
        }
    );
    assert_eq!(e("10.1.2.3/8").entry, "10.0.0.0/8");
    assert_eq!(e("[::1]:8080").entry, "[::1]:8080");
    assert_eq!(e("fd00::/8").entry, "fd00::/8");
    for bad in [
        "",
        "a b",
        "*.com",
        "x:0",
        "x:70000",
        "-a.com",
        "a..b",
        "[::1",
        "1.2.3.4/33",
        "*",
        "a\\b",
        "h:p",
    ] {
        assert!(AllowEntry::parse(bad).is_err(), "{bad:?} accepted");
    }
}

#[test]
fn names_match_exactly_or_strictly_below_a_suffix() {
    let s = e("*.example.com");
    assert!(s.allows_name("a.example.com", 443) && s.allows_name("a.b.example.com", 80));
    assert!(!s.allows_name("example.com", 443) && !s.allows_name("badexample.com", 443));
    assert!(!s.allows_name("a.example.com", 8443));
    let h = e("api.openai.com:443");
    assert!(h.allows_name("api.openai.com", 443) && !h.allows_name("api.openai.com", 80));
    assert!(h.names_exactly("api.openai.com", 443) && !s.names_exactly("a.example.com", 443));
    // A raw IP never matches a name entry, and names never match IP entries.
    assert!(!e("1.2.3.4").allows_name("1.2.3.4", 443));
    assert!(e("10.0.0.0/8:22").allows_addr("10.9.8.7".parse().unwrap(), 22));
    assert!(e("127.0.0.1:9").allows_addr("::ffff:127.0.0.1".parse().unwrap(), 9));
    assert!(!e("127.0.0.1:9").allows_addr("127.0.0.2".parse().unwrap(), 9));
}

#[test]
fn internal_addresses_are_recognized() {
    for ip in [
        "127.0.0.2",
        "10.1.1.1",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "224.0.0.1",
        "255.255.255.255",
        "::1",
        "fe80::1",
        "fd00::1",
        "ff02::1",
        "::ffff:10.0.0.1",
        "::",
        "::127.0.0.1",
        "::10.0.0.1",
        "2002:7f00:1::",
        "2002:a9fe:a9fe::1",
    ] {
        assert!(is_internal(ip.parse().unwrap()), "{ip}");
    }
    for ip in [
        "1.1.1.1",
        "160.79.104.10",
        "2606:4700::1111",
        "::1.1.1.1",
        "2002:101:101::",
    ] {
        assert!(!is_internal(ip.parse().unwrap()), "{ip}");
    }
}

#[test]
fn modes_order_by_strictness() {
    assert!(Network::Open < Network::Allowlist && Network::Allowlist < Network::None);
    assert_eq!(Network::parse("default"), Some(Network::Open));
    assert_eq!(Network::parse("allowlist"), Some(Network::Allowlist));
    assert_eq!(Network::parse("bridge"), None);
}

fn file(mode: Option<&str>, allow: Option<&[&str]>, agent_hosts: Option<bool>) -> NetworkFile {
    NetworkFile {
        mode: mode.map(Into::into),
        allow: allow.map(|a| a.iter().map(|s| sp(s)).collect()),
        agent_hosts,
        host_loopback: None,
        deny: None,
        source: None,
    }
}

fn sp(s: &str) -> toml::Spanned<String> {
    toml::Spanned::new(0..0, s.to_string())
}

#[test]
fn entries_are_named_by_file_and_line() {
    let text = "# c\n[network]\nmode = \"allowlist\"\nallow = [\n  \"a.com\",\n  \"b.com:8443\",\n]\ndeny = [\"c.com\"]\n";
    // Parsed from the whole file's text, as the config loader does.
    #[derive(serde::Deserialize)]
    struct Whole {
        network: NetworkFile,
    }
    let mut whole: Whole = toml::from_str(text).unwrap();
    whole.network.source = Some(Source::new(std::path::Path::new("/h/config.toml"), text));
    let (_, s) = resolve((Some(&whole.network), None), None).unwrap();
    let at: Vec<&str> = s
        .allow
        .iter()
        .chain(&s.deny)
        .map(|r| r.at.as_deref().unwrap())
        .collect();
    assert_eq!(at, ["/h/config.toml:5", "/h/config.toml:6", "/h/config.toml:8"]);
    assert_eq!(s.allow[1].shown(), "b.com:8443 (config, /h/config.toml:6)");
}

#[test]
fn deny_entries_add_up_and_a_bare_one_matches_every_port() {
    let mut g = file(Some("allowlist"), Some(&["a.com"]), None);
    g.deny = Some(vec![sp("*.tracker.example")]);
    let mut o = file(None, None, None);
    o.deny = Some(vec![sp("a.com:8443")]);
    let (_, s) = resolve((Some(&g), None), Some(&o)).unwrap();
    let shown: Vec<(&str, &EgressOrigin)> = s
        .deny
        .iter()
        .map(|r| (r.entry.entry.as_str(), &r.origin))
        .collect();
    assert_eq!(
        shown,
        [
            ("*.tracker.example", &EgressOrigin::Config),
            ("a.com:8443", &EgressOrigin::ProjectConfig)
        ]
    );
    let e = &s.deny[0].entry;
    assert!(e.denies_name("x.tracker.example", 22) && e.denies_name("x.tracker.example", 443));
    let e = &s.deny[1].entry;
    assert!(e.denies_name("a.com", 8443) && !e.denies_name("a.com", 443));
    o.deny = Some(vec![sp("bad host")]);
    let (in_overlay, (key, _)) = resolve((Some(&g), None), Some(&o)).unwrap_err();
    assert!(in_overlay && key == "network.deny[0]");
}

#[test]
fn host_loopback_ports_come_from_the_global_config_and_loopback_entries() {
    let mut g = file(None, None, None);
    g.host_loopback = Some(vec![11434, 5432]);
    let (_, s) = resolve((Some(&g), None), None).unwrap();
    assert_eq!(s.host_loopback, vec![11434, 5432]);
    // An overlay may not open the host's loopback.
    let mut o = file(None, None, None);
    o.host_loopback = Some(vec![22]);
    let (in_overlay, (key, msg)) = resolve((Some(&g), None), Some(&o)).unwrap_err();
    assert!(in_overlay && key == "network.host_loopback", "{msg}");
    g.host_loopback = Some(vec![0]);
    assert!(resolve((Some(&g), None), None).is_err());
    g.host_loopback = Some((1..=17).collect());
    assert!(resolve((Some(&g), None), None).is_err());
    // Entries with a port naming the host's loopback open that port; others do not.
    let port = |e: &str| AllowEntry::parse(e).unwrap().host_port();
    for (entry, want) in [
        ("127.0.0.1:11434", Some(11434)),
        ("[::1]:8080", Some(8080)),
        ("localhost:3000", Some(3000)),
        ("host.ags.internal:5432", Some(5432)),
        ("127.0.0.1", None),
        ("127.0.0.0/8:80", None),
        ("10.0.0.1:80", None),
        ("example.com:80", None),
    ] {
        assert_eq!(port(entry), want, "{entry}");
    }
}

#[test]
fn overlay_narrows_never_widens() {
    let g = file(Some("allowlist"), Some(&["a.com", "b.com:443"]), None);
    // Narrower mode and a subset of the entries: accepted, the overlay's list wins.
    let o = file(Some("none"), Some(&["b.com:443"]), Some(false));
    let (mode, s) = resolve((Some(&g), None), Some(&o)).unwrap();
    assert_eq!(mode, Network::None);
    assert_eq!(s.floor, Some(Network::None));
    assert_eq!(s.mode_origin, EgressOrigin::ProjectConfig);
    assert_eq!(s.allow.len(), 1);
    assert_eq!(s.allow[0].origin, EgressOrigin::ProjectConfig);
    assert!(!s.agent_hosts);
    // Wider mode, a new destination, agent hosts back on: refused, naming the key.
    let (in_overlay, (key, _)) =
        resolve((Some(&g), None), Some(&file(Some("open"), None, None))).unwrap_err();
    assert!(in_overlay && key == "network.mode");
    let (_, (key, msg)) =
        resolve((Some(&g), None), Some(&file(None, Some(&["evil.com"]), None))).unwrap_err();
    assert_eq!(key, "network.allow[0]");
    assert!(msg.contains("may not add"), "{msg}");
    let g2 = file(None, None, Some(false));
    let (_, (key, _)) = resolve((Some(&g2), None), Some(&file(None, None, Some(true)))).unwrap_err();
    assert_eq!(key, "network.agent_hosts");
    // From an open global config with no list, any overlay list narrows.
    let (mode, s) = resolve(
        (None, None),
        Some(&file(Some("allowlist"), Some(&["x.org"]), None)),
    )
    .unwrap();
    assert_eq!((mode, s.allow.len()), (Network::Allowlist, 1));
}

#[test]
fn old_sandbox_network_still_works_but_not_with_network_mode() {
    assert_eq!(resolve((None, Some("default")), None).unwrap().0, Network::Open);
    assert_eq!(resolve((None, Some("none")), None).unwrap().0, Network::None);
    let g = file(Some("none"), None, None);
    let (_, (key, _)) = resolve((Some(&g), Some("none")), None).unwrap_err();
    assert_eq!(key, "network.mode");
    let (_, (key, msg)) = resolve((Some(&file(Some("bridge"), None, None)), None), None).unwrap_err();
    assert!(key == "network.mode" && msg.contains("allowlist"), "{msg}");
    let (_, (key, _)) = resolve(
        (Some(&file(None, Some(&["ok.com", "bad host"]), None)), None),
        None,
    )
    .unwrap_err();
    assert_eq!(key, "network.allow[1]");
}

#[test]
fn method_and_path_rules_parse_and_show_as_written() {
    let r = e("GET github.com/myorg/*");
    assert_eq!(r.entry, "GET github.com/myorg/*");
    assert_eq!(r.target, Target::Host("github.com".into()));
    assert_eq!(r.ports, DEFAULT_PORTS);
    let q = r.request.clone().unwrap();
    assert_eq!(
        (q.method.as_deref(), q.path.as_str(), q.prefix),
        (Some("GET"), "/myorg/", true)
    );
    // A rule never admits its destination wholesale; its destination is still named.
    assert!(!r.allows_name("github.com", 443) && r.reaches_name("github.com", 443));
    assert!(!r.denies_name("github.com", 443) && r.host_port().is_none());
    assert_eq!(e("POST API.github.com").entry, "POST api.github.com");
    assert_eq!(
        e("example.org:8080/v1/status").entry,
        "example.org:8080/v1/status"
    );
    assert_eq!(
        e("10.0.0.5:80/api/*").target,
        Target::Net {
            addr: "10.0.0.5".parse().unwrap(),
            prefix: 32
        }
    );
    assert_eq!(e("[fd00::1]:80/x").entry, "[fd00::1]:80/x");
    // A CIDR is still a CIDR, not a path.
    assert!(e("10.0.0.0/8").request.is_none());
    assert!(e("fd00::/8").request.is_none());
    for bad in [
        "get github.com/x",
        "GET  github.com/x",
        "GET github.com/a/../b",
        "github.com/a/./b",
        "github.com/a//b",
        "github.com/a%2fb",
        "github.com/a*b",
        "github.com/a?x=1",
        "GET 10.0.0.0/8/x",
        "GET\tgithub.com/x",
    ] {
        assert!(AllowEntry::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn a_request_path_is_read_once_and_refused_when_it_could_mean_two() {
    assert_eq!(
        request_path("/myorg/repo.git/info/refs?service=x").unwrap(),
        "/myorg/repo.git/info/refs"
    );
    assert_eq!(request_path("/my%6Frg/a%20b").unwrap(), "/myorg/a b");
    for bad in [
        "/myorg/../other",
        "/myorg/%2e%2e/other",
        "/a%2Fb",
        "/a%5cb",
        "//x",
        "/a/./b",
        "x",
        "/a%zz",
        "/a%0ab",
    ] {
        assert!(request_path(bad).is_err(), "{bad}");
    }
    let q = e("GET github.com/myorg/*").request.unwrap();
    assert!(q.matches("GET", "/myorg/x", false));
    assert!(!q.matches("POST", "/myorg/x", false));
    assert!(!q.matches("GET", "/MyOrg/x", false) && q.matches("GET", "/MyOrg/x", true));
    assert!(!q.matches("GET", "/myorgx", false));
    let exact = e("example.org/v1/status").request.unwrap();
    assert!(exact.matches("DELETE", "/v1/status", false) && !exact.matches("GET", "/v1/status/x", false));
}
