use super::*;
use CandidateSource::*;

fn urls(list: &[Candidate]) -> Vec<(&str, CandidateSource)> {
    list.iter().map(|c| (c.url.as_str(), c.source)).collect()
}

#[test]
fn explicit_wins_alone() {
    let list = candidates(Some("tcp://h:1"), Some("unix:///x"), Some("/run/user/1000"), 1000);
    assert_eq!(urls(&list), [("tcp://h:1", Explicit)]);
}

#[test]
fn container_host_is_the_only_candidate() {
    let list = candidates(None, Some("unix:///x.sock"), Some("/run/user/1000"), 1000);
    assert_eq!(urls(&list), [("unix:///x.sock", ContainerHost)]);
}

#[test]
fn defaults_for_a_user() {
    let list = candidates(None, None, Some("/run/user/1000/"), 1000);
    assert_eq!(
        urls(&list),
        [
            ("unix:///run/user/1000/podman/podman.sock", RuntimeDir),
            ("unix:///run/podman/podman.sock", System)
        ]
    );
    let list = candidates(Some(""), Some(""), None, 1000);
    assert_eq!(
        urls(&list),
        [
            ("unix:///run/user/1000/podman/podman.sock", RuntimeDir),
            ("unix:///run/podman/podman.sock", System)
        ]
    );
}

#[test]
fn defaults_for_root() {
    assert_eq!(
        urls(&candidates(None, None, None, 0)),
        [("unix:///run/podman/podman.sock", System)]
    );
    let list = candidates(None, None, Some("/run/user/0"), 0);
    assert_eq!(
        urls(&list),
        [
            ("unix:///run/user/0/podman/podman.sock", RuntimeDir),
            ("unix:///run/podman/podman.sock", System)
        ]
    );
    // No duplicate when the runtime dir is /run.
    assert_eq!(
        urls(&candidates(None, None, Some("/run"), 0)),
        [("unix:///run/podman/podman.sock", RuntimeDir)]
    );
}

#[test]
fn hints_name_the_command() {
    assert!(
        hint(0, false, false).contains("podman system service --time=0 unix:///run/podman/podman.sock &")
    );
    assert!(hint(1000, false, true).contains("systemctl --user start podman.socket"));
    assert!(hint(1000, true, true).starts_with("check the URL"));
    let unset = hint(1000, false, false);
    assert!(unset.contains("XDG_RUNTIME_DIR is not set"), "{unset}");
    assert!(
        unset.contains("install -d -m 0700 -o 1000 /run/user/1000"),
        "{unset}"
    );
}

#[tokio::test]
async fn missing_sockets_are_all_listed() {
    let dir = tempfile::tempdir().unwrap();
    let a = format!("unix://{}/a.sock", dir.path().display());
    let b = format!("unix://{}/b.sock", dir.path().display());
    let list = vec![
        Candidate {
            url: a.clone(),
            source: RuntimeDir,
        },
        Candidate {
            url: b.clone(),
            source: System,
        },
    ];
    let e = connect_candidates(&list, 1000).await.unwrap_err();
    let PodmanError::NoService { tried, hint } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(tried.len(), 2);
    assert_eq!(tried[0].url, a);
    assert_eq!(tried[0].reason, "the socket does not exist");
    assert!(hint.contains("podman system service --time=0"), "{hint}");
    assert!(
        e.to_string()
            .contains(&format!("{b} (from system socket): the socket does not exist")),
        "{e}"
    );
}

#[test]
fn choose_follows_podman_remote() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("c.json");
    std::fs::write(
        &json,
        r#"{"Connection":{"Connections":{"prod":{"URI":"ssh://u@h/run/p.sock","Identity":"/k/prod"}}}}"#,
    )
    .unwrap();
    let json_s = json.display().to_string();
    let vars = |extra: &[(&'static str, &'static str)]| {
        let mut v: Vec<(String, String)> = vec![
            ("PODMAN_CONNECTIONS_CONF".into(), json_s.clone()),
            ("CONTAINERS_CONF".into(), "/nonexistent.conf".into()),
        ];
        v.extend(extra.iter().map(|(k, x)| (k.to_string(), x.to_string())));
        v
    };
    let pick = |t: &Target, v: &[(String, String)]| {
        let env = |k: &str| v.iter().find(|(n, _)| n == k).map(|(_, x)| x.clone());
        choose(t, &env, 1000)
    };
    let by_name = Target {
        connection: Some("prod".into()),
        ..Target::default()
    };
    let c = pick(&by_name, &vars(&[("CONTAINER_HOST", "tcp://other:1")]))
        .unwrap()
        .unwrap();
    assert_eq!(
        (c.candidate.url.as_str(), c.candidate.source),
        ("ssh://u@h/run/p.sock", Connection)
    );
    assert_eq!(c.identity.as_deref(), Some(std::path::Path::new("/k/prod")));
    // CONTAINER_SSHKEY beats the connection's key; --identity beats both.
    let c = pick(&by_name, &vars(&[("CONTAINER_SSHKEY", "/k/env")]))
        .unwrap()
        .unwrap();
    assert_eq!(c.identity.as_deref(), Some(std::path::Path::new("/k/env")));
    let t = Target {
        identity: Some("/k/cli".into()),
        ..by_name.clone()
    };
    let c = pick(&t, &vars(&[("CONTAINER_SSHKEY", "/k/env")]))
        .unwrap()
        .unwrap();
    assert_eq!(c.identity.as_deref(), Some(std::path::Path::new("/k/cli")));
    // CONTAINER_HOST beats CONTAINER_CONNECTION; --url beats --connection.
    let v = vars(&[("CONTAINER_HOST", "tcp://h:1"), ("CONTAINER_CONNECTION", "prod")]);
    let c = pick(&Target::default(), &v).unwrap().unwrap();
    assert_eq!(c.candidate.source, ContainerHost);
    let c = pick(&Target::default(), &vars(&[("CONTAINER_CONNECTION", "prod")]))
        .unwrap()
        .unwrap();
    assert_eq!(c.candidate.source, ContainerConnection);
    let t = Target {
        url: Some("unix:///x.sock".into()),
        ..by_name.clone()
    };
    assert_eq!(pick(&t, &vars(&[])).unwrap().unwrap().candidate.source, Explicit);
    assert_eq!(pick(&Target::default(), &vars(&[])).unwrap(), None);
    let missing = Target {
        connection: Some("nope".into()),
        ..Target::default()
    };
    let e = pick(&missing, &vars(&[])).unwrap_err();
    assert!(
        e.to_string().contains("no Podman connection named \"nope\""),
        "{e}"
    );
}

#[tokio::test]
async fn explicit_invalid_url_is_an_error() {
    let e = connect_candidates(&candidates(Some("http://x"), None, None, 0), 0)
        .await
        .unwrap_err();
    assert!(matches!(e, PodmanError::InvalidUrl { .. }), "{e:?}");
}

#[tokio::test]
async fn refused_socket_has_a_clear_reason() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sock");
    // connect(2) to a path that is not a listening socket fails with ECONNREFUSED.
    std::fs::write(&path, b"").unwrap();
    let list = vec![Candidate {
        url: format!("unix://{}", path.display()),
        source: Explicit,
    }];
    let e = connect_candidates(&list, 1000).await.unwrap_err();
    let PodmanError::NoService { tried, .. } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(tried.len(), 1);
    assert!(tried[0].reason.contains("refused"), "{}", tried[0].reason);
}

/// A service that accepts the connection and never answers: alone it gets a minute, one of
/// several ten seconds (paused time: the runtime skips ahead while it waits).
#[tokio::test(start_paused = true)]
async fn a_silent_service_gets_longer_when_it_is_the_only_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sock");
    let _listener = tokio::net::UnixListener::bind(&path).unwrap();
    let one = Candidate {
        url: format!("unix://{}", path.display()),
        source: Explicit,
    };
    for (list, within) in [(vec![one.clone()], "60 s"), (vec![one.clone(), one], "10 s")] {
        let e = connect_candidates(&list, 1000).await.unwrap_err();
        let PodmanError::NoService { tried, .. } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(tried.len(), list.len());
        for t in tried {
            assert_eq!(t.reason, format!("no answer within {within}"));
        }
    }
}
