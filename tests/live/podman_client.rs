//! Live tests of `ags::podman` against a real Podman API service.
//!
//! The socket comes from `AGS_TEST_PODMAN_URL` (default `unix:///run/podman/podman.sock`); when
//! it does not answer, each test prints a loud `SKIP:` line and returns (CI always provides
//! one). Every container, volume and image gets a unique `ags-test-` name and the
//! `io.ags.test=1` label, and a [`Guard`] removes them at the end, even when the test fails.
//! Only the resources a test created are removed: other tests may run against the same service.
//!
//! Needs the image `localhost/ags-busybox:latest` (busybox with `sh` and PATH set) and a static
//! `/bin/busybox` on the host (for the import test).

#[macro_use]
mod support;

mod attach;
mod images;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use ags::podman::{
    AttachOptions, ExecFailure, Mount, NamedVolume, Namespace, NsMode, PidsLimit, PodmanError, ResourceLimits,
};

use support::{Guard, POLL, run, spec, tar_of, test_labels, unique};

#[tokio::test]
async fn ping_version_info() {
    let client = client_or_skip!();
    client.ping().await.unwrap();
    let v = client.version().await.unwrap();
    assert!(!v.version.is_empty(), "{v:?}");
    let info = client.info().await.unwrap();
    assert!(!info.host.oci_runtime.name.is_empty(), "{info:?}");
    assert!(info.host.cgroup_version.starts_with('v'), "{info:?}");
    assert_eq!(info.version.version, v.version);
    // The ping recorded the version (from its Libpod-Api-Version header); a client that never
    // pinged asks /version once.
    let recorded = client.known_version().expect("the ping records the version");
    assert_eq!(
        Some(recorded),
        ags::podman::ServerVersion::parse(&v.version),
        "{v:?}"
    );
    let fresh = ags::podman::Client::new(client.endpoint().clone());
    assert_eq!(fresh.known_version(), None);
    assert_eq!(fresh.server_version().await.unwrap(), Some(recorded));
    assert_eq!(fresh.clone().known_version(), Some(recorded));
    eprintln!(
        "Podman {} rootless={} runtime={} cgroup={}",
        v.version, info.host.security.rootless, info.host.oci_runtime.name, info.host.cgroup_version
    );
    assert!(client.is_unix() == client.url().starts_with("unix://"));
}

#[tokio::test]
async fn explicit_url_that_fails_is_reported_alone() {
    let e = ags::podman::connect(&ags::podman::Target::url("unix:///nonexistent/ags-test.sock"))
        .await
        .unwrap_err();
    let PodmanError::NoService { tried, .. } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(tried.len(), 1, "{e}");
    assert!(
        e.to_string()
            .contains("unix:///nonexistent/ags-test.sock (from --url): the socket does not exist")
    );
}

/// Every SpecGenerator field `ags` sends, observed from inspect and from inside the container.
#[tokio::test]
async fn spec_fields_take_effect() {
    let client = client_or_skip!();
    let mut g = Guard::new(&client);
    let bind = tempfile::tempdir().unwrap();
    std::fs::write(bind.path().join("f"), "bound\n").unwrap();
    let (name, vol) = (g.container("spec"), g.volume());
    let script = "grep -E '^(CapEff|CapBnd|NoNewPrivs)' /proc/self/status; \
        cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max; \
        grep -E ' /(b|t|v) ' /proc/mounts | cut -d' ' -f2,4; id -u; pwd; hostname; echo FOO=$FOO; cat /b/f";
    let mut s = spec(&name, &[script]);
    s.entrypoint = Some(vec!["sh".into(), "-c".into()]);
    s.env = BTreeMap::from([("FOO".into(), "bar".into())]);
    s.work_dir = Some("/tmp".into());
    s.hostname = Some("agsbox".into());
    s.annotations = BTreeMap::from([("io.ags.test.annotation".into(), "yes".into())]);
    s.cap_drop = vec!["all".into()];
    s.no_new_privileges = true;
    s.userns = Some(Namespace::new(NsMode::Host));
    s.mounts = vec![
        Mount::bind(
            bind.path().to_str().unwrap(),
            "/b",
            &["ro", "rbind", "nosuid", "nodev"],
        ),
        Mount::tmpfs("/t", &["rw", "nosuid", "nodev", "noexec"]),
    ];
    s.volumes = vec![NamedVolume {
        name: vol.clone(),
        dest: "/v".into(),
        options: vec!["ro".into()],
        sub_path: None,
    }];
    s.resource_limits = Some(ResourceLimits {
        pids: Some(PidsLimit { limit: 123 }),
        ..Default::default()
    });
    s.user = Some("1000:1000".into());
    let r = run(&client, &s, None, None).await;
    let out = r.out();
    assert_eq!(r.exit_code, 0, "{out} {}", String::from_utf8_lossy(&r.stderr));
    for want in [
        "CapEff:\t0000000000000000",
        "CapBnd:\t0000000000000000",
        "NoNewPrivs:\t1",
        "\n123\n",
        "/b ro,nosuid,nodev",
        "/t rw,nosuid,nodev,noexec",
        "/v ro,nosuid,nodev",
        "\n1000\n/tmp\nagsbox\nFOO=bar\nbound\n",
    ] {
        assert!(out.contains(want), "missing {want:?} in:\n{out}");
    }
    let c = client.inspect(&name).await.unwrap();
    assert_eq!(c.name, name);
    assert!(
        c.host_config.cap_drop.contains(&"CAP_SYS_CHROOT".to_owned()),
        "{:?}",
        c.host_config.cap_drop
    );
    assert!(
        c.host_config
            .security_opt
            .contains(&"no-new-privileges".to_owned())
    );
    assert_eq!(c.host_config.pids_limit, 123);
    assert_eq!(c.host_config.network_mode, "none");
    assert!(c.host_config.tmpfs.contains_key("/t"));
    assert_eq!(
        (c.config.user.as_str(), c.config.working_dir.as_str()),
        ("1000:1000", "/tmp")
    );
    assert_eq!(c.config.labels.get("io.ags.test").map(String::as_str), Some("1"));
    assert_eq!(
        c.config
            .annotations
            .get("io.ags.test.annotation")
            .map(String::as_str),
        Some("yes")
    );
    assert!(c.config.env.contains(&"FOO=bar".to_owned()));
    let volume = c
        .mounts
        .iter()
        .find(|m| m.destination == "/v")
        .expect("volume mount");
    assert_eq!(
        (volume.kind.as_str(), volume.name.as_str(), volume.rw),
        ("volume", vol.as_str(), false)
    );
    let bound = c
        .mounts
        .iter()
        .find(|m| m.destination == "/b")
        .expect("bind mount");
    assert_eq!((bound.kind.as_str(), bound.rw), ("bind", false));
}

/// `userns` reaches Podman: keep-id is refused by a rootful service (a misspelled field would
/// be ignored silently and the create would succeed).
#[tokio::test]
async fn userns_keep_id_reaches_podman() {
    let client = client_or_skip!();
    let mut g = Guard::new(&client);
    let mut s = spec(&g.container("keepid"), &["true"]);
    s.userns = Some(Namespace::new(NsMode::KeepId));
    let rootless = client.info().await.unwrap().host.security.rootless;
    let version = client.server_version().await.unwrap().unwrap();
    let rootful_accepts = version.accepts_rootful_keep_id();
    match client.create(&s).await {
        Ok(_) => assert!(
            rootless || rootful_accepts,
            "keep-id accepted by a rootful {version} service"
        ),
        Err(e) => {
            assert!(!rootless, "{e}");
            assert!(
                e.to_string()
                    .contains("keep-id is only supported in rootless mode"),
                "{e}"
            );
            assert!(!e.is_keep_id_subuid_failure(), "not worth a retry: {e}");
        }
    }
}

#[tokio::test]
async fn resize_before_init_conflicts() {
    let client = client_or_skip!();
    let mut g = Guard::new(&client);
    let mut s = spec(&g.container("resize"), &["true"]);
    s.terminal = true;
    let id = client.create(&s).await.unwrap();
    let e = client.resize(&id, 10, 20).await.unwrap_err();
    assert!(e.is_conflict(), "{e}");
    assert!(
        e.to_string()
            .contains("can only resize created or running containers"),
        "{e}"
    );
    client.init(&id).await.unwrap();
    client.resize(&id, 10, 20).await.unwrap();
}

#[tokio::test]
async fn create_init_archive_start_inspect() {
    let client = client_or_skip!();
    let mut g = Guard::new(&client);
    let name = g.container("archive");
    let id = client
        .create(&spec(&name, &["sh", "-c", "cat /tmp/in/hello.txt; exit 5"]))
        .await
        .unwrap();
    assert_eq!(client.inspect(&name).await.unwrap().id, id);
    client.init(&id).await.unwrap();
    assert_eq!(client.inspect(&id).await.unwrap().state.status, "initialized");
    client
        .put_archive(&id, "/tmp", tar_of(&[("in/hello.txt", b"from tar\n", 0o644)]))
        .await
        .unwrap();
    client.start(&id).await.unwrap();
    client.start(&id).await.unwrap(); // 304 (already started) or 204 once exited: both Ok
    let state = client.wait_exited(&id, POLL).await.unwrap();
    assert_eq!((state.exit_code, state.running), (5, false));
    assert!(!state.finished_at.is_empty() && !state.started_at.is_empty());
    let e = client.kill(&id, "KILL").await.unwrap_err();
    assert!(e.is_state_improper(), "{e}");
}

#[tokio::test]
async fn list_by_label_and_delete_404() {
    let client = client_or_skip!();
    let mut g = Guard::new(&client);
    let run_label = unique("run");
    let filter = format!("io.ags.test.run={run_label}");
    for _ in 0..2 {
        let mut s = spec(&g.container("list"), &["true"]);
        s.labels.insert("io.ags.test.run".into(), run_label.clone());
        client.create(&s).await.unwrap();
    }
    let found = client.list(&["io.ags.test=1", &filter]).await.unwrap();
    let mut names: Vec<_> = found.iter().flat_map(|c| c.names.clone()).collect();
    names.sort();
    let mut want = g.containers.clone();
    want.sort();
    assert_eq!(names, want);
    assert!(found.iter().all(|c| c.state == "created"));
    client.delete(&g.containers[0], true, true).await.unwrap();
    assert_eq!(client.list(&[&filter]).await.unwrap().len(), 1);
    let e = client.delete(&g.containers[0], true, true).await.unwrap_err();
    assert!(e.is_not_found(), "{e}");
    // 4.3 says "name or ID", 5.x "ID or name".
    let text = e.to_string();
    assert!(
        text.contains("no container with name or ID") || text.contains("no container with ID or name"),
        "{e}"
    );
    assert!(client.inspect(&g.containers[0]).await.unwrap_err().is_not_found());
}

#[tokio::test]
async fn remove_flag_removes_after_exit() {
    let client = client_or_skip!();
    let mut g = Guard::new(&client);
    let mut s = spec(&g.container("rm"), &["true"]);
    s.remove = true;
    let id = client.create(&s).await.unwrap();
    assert!(client.inspect(&id).await.unwrap().host_config.auto_remove);
    client.start(&id).await.unwrap();
    // Podman's cleanup process removes it: a whole podman start-up, slow on a loaded machine.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        match client.inspect(&id).await {
            Err(e) if e.is_not_found() => break,
            _ if Instant::now() > deadline => panic!("container with remove=true still exists"),
            _ => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}

/// tmpfs volume: create → container mounting it ro → init → upload → start keeps the upload.
#[tokio::test]
async fn tmpfs_volume_upload_after_init() {
    let client = client_or_skip!();
    let mut g = Guard::new(&client);
    let vol = g.volume();
    let opts = BTreeMap::from([
        ("type".to_owned(), "tmpfs".to_owned()),
        ("device".to_owned(), "tmpfs".to_owned()),
        ("o".to_owned(), "mode=0700".to_owned()),
    ]);
    let created = client.volume_create(&vol, test_labels(), opts).await.unwrap();
    assert_eq!(
        (
            created.name.as_str(),
            created.options.get("type").map(String::as_str)
        ),
        (vol.as_str(), Some("tmpfs"))
    );
    let listed = client.volume_list(&["io.ags.test=1"]).await.unwrap();
    assert!(
        listed
            .iter()
            .any(|v| v.name == vol && v.labels.contains_key("io.ags.test"))
    );

    let mut s = spec(
        &g.container("vol"),
        &[
            "sh",
            "-c",
            "cat /data/secret.txt; touch /data/x 2>/dev/null || echo ro",
        ],
    );
    s.volumes = vec![NamedVolume {
        name: vol.clone(),
        dest: "/data".into(),
        options: vec!["ro".into()],
        sub_path: None,
    }];
    let id = client.create(&s).await.unwrap();
    client.init(&id).await.unwrap();
    client
        .put_archive(&id, "/data", tar_of(&[("secret.txt", b"in tmpfs\n", 0o600)]))
        .await
        .unwrap();
    let opts = AttachOptions {
        stdin: false,
        stdout: true,
        stderr: true,
        tty: false,
    };
    let (mut demux, _input) = client.attach(&id, opts).await.unwrap();
    client.start(&id).await.unwrap();
    let mut out = Vec::new();
    while let Some((_, data)) = demux.read_frame().await.unwrap() {
        out.extend_from_slice(&data);
    }
    assert_eq!(String::from_utf8_lossy(&out), "in tmpfs\nro\n");
    client.delete(&id, true, true).await.unwrap();
    client.volume_delete(&vol).await.unwrap();
    assert!(client.volume_delete(&vol).await.unwrap_err().is_not_found());
}

/// The keeper of remote staging (`podman::keeper_spec`, `launch::remote::fill_staging`):
/// initialised, filled, started; `stdin`, `remove` and `timeout` make it hold the tmpfs volume
/// mounted until Podman kills it after `timeout` seconds and removes it; the volume's content
/// is gone with it (the tmpfs is unmounted).
#[tokio::test]
async fn a_keeper_is_killed_after_its_timeout_and_removed_and_its_tmpfs_goes() {
    let client = client_or_skip!();
    let mut g = Guard::new(&client);
    let vol = g.volume();
    let opts = BTreeMap::from([
        ("type".to_owned(), "tmpfs".to_owned()),
        ("device".to_owned(), "tmpfs".to_owned()),
        ("o".to_owned(), "mode=0700".to_owned()),
    ]);
    client.volume_create(&vol, test_labels(), opts).await.unwrap();
    let mount = |options: &[&str]| NamedVolume {
        name: vol.clone(),
        dest: "/data".into(),
        options: options.iter().map(|o| o.to_string()).collect(),
        sub_path: None,
    };
    let (keeper, r1, r2) = (g.container("keeper"), g.container("r1"), g.container("r2"));
    let mut k = spec(&keeper, &["/bin/sh", "-c", "read _"]);
    k.stdin = true;
    k.remove = true;
    k.timeout = Some(10);
    k.volumes = vec![mount(&["ro"])];
    let id = client.create(&k).await.unwrap();
    client.init(&id).await.unwrap();
    client
        .put_archive(&id, "/data", tar_of(&[("secret.txt", b"held\n", 0o600)]))
        .await
        .unwrap();
    client.start(&id).await.unwrap();
    let c = client.inspect(&id).await.unwrap();
    assert!(
        c.state.running,
        "the keeper waits on its standard input: {:?}",
        c.state
    );
    let reader = |n: &str| {
        let mut r = spec(n, &["sh", "-c", "cat /data/* 2>/dev/null; echo END"]);
        r.volumes = vec![mount(&["ro"])];
        r
    };
    let first = run(&client, &reader(&r1), None, None).await;
    if client.container_exists(&keeper).await.unwrap() {
        assert_eq!(first.out(), "held\nEND\n", "while the keeper runs");
    }
    // Removed now: its cleanup (which unmounts the volume) may otherwise still be pending when
    // the keeper is gone, and the tmpfs stays mounted for the second reader.
    client.delete(&r1, true, false).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while client.container_exists(&keeper).await.unwrap() {
        assert!(Instant::now() < deadline, "the keeper is still there");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let after = run(&client, &reader(&r2), None, None).await;
    assert_eq!(after.out(), "END\n", "the content outlived the keeper");
    client.delete(&r2, true, false).await.unwrap();
    client.volume_delete(&vol).await.unwrap();
}

#[tokio::test]
async fn api_errors_keep_podmans_message() {
    let client = client_or_skip!();
    let mut g = Guard::new(&client);
    let mut s = spec(&g.container("noimg"), &["true"]);
    s.image = "localhost/ags-test-no-such-image:latest".into();
    let e = client.create(&s).await.unwrap_err();
    let PodmanError::Api {
        status,
        message,
        method,
        path,
        ..
    } = &e
    else {
        panic!("{e:?}")
    };
    // 4.3 answers 500, 5.x 404; both keep the cause.
    assert!(matches!(*status, 404 | 500), "{e}");
    assert_eq!(
        (method.as_str(), path.as_str()),
        ("POST", "/v4.0.0/libpod/containers/create")
    );
    assert!(message.contains("image not known"), "{e}");
    assert!(e.is_image_missing() && !e.is_name_in_use(), "{e}");

    let mut s = spec(&g.container("nobind"), &["true"]);
    s.mounts = vec![Mount::bind("/nonexistent/ags-test", "/x", &["ro"])];
    let e = client.create(&s).await.unwrap_err();
    assert!(
        e.to_string()
            .contains("statfs /nonexistent/ags-test: no such file or directory"),
        "{e}"
    );
}

/// The predicates of `PodmanError` recognise this service's real answers: a taken name, an
/// existing volume, a command that is missing or cannot be run, a kill after exit.
#[tokio::test]
async fn error_predicates_read_real_answers() {
    let client = client_or_skip!();
    let mut g = Guard::new(&client);
    let name = g.container("taken");
    client.create(&spec(&name, &["true"])).await.unwrap();
    let e = client.create(&spec(&name, &["true"])).await.unwrap_err();
    assert!(e.is_name_in_use() && !e.is_image_missing(), "{e}");

    let vol = g.volume();
    client
        .volume_create(&vol, test_labels(), BTreeMap::new())
        .await
        .unwrap();
    let e = client
        .volume_create(&vol, test_labels(), BTreeMap::new())
        .await
        .unwrap_err();
    assert!(e.is_already_exists() && !e.is_name_in_use(), "{e}");

    for (cmd, want) in [
        ("ags-test-no-such-command", ExecFailure::NotFound),
        ("/nonexistent/ags-test", ExecFailure::NotFound),
        ("/etc/passwd", ExecFailure::CannotInvoke),
    ] {
        let id = client.create(&spec(&g.container("exec"), &[cmd])).await.unwrap();
        let e = client.start(&id).await.unwrap_err();
        assert_eq!(e.exec_failure(), Some(want), "{cmd}: {e}");
        assert_eq!(e.runtime_setup_failure(), None, "{cmd}: {e}");
    }

    let id = client
        .create(&spec(&g.container("exited"), &["true"]))
        .await
        .unwrap();
    client.start(&id).await.unwrap();
    client.wait_exited(&id, POLL).await.unwrap();
    let e = client.kill(&id, "TERM").await.unwrap_err();
    assert!(e.is_state_improper() && e.exec_failure().is_none(), "{e}");
}

/// Measures create → attach → start → exit code (inspect poll) for `true`, network none, and
/// the delete after it. Run with `cargo test --test live -- podman_client:: --ignored --nocapture`.
#[tokio::test]
#[ignore = "timing measurement, run by hand"]
async fn measure_launch_latency() {
    let client = client_or_skip!();
    let mut g = Guard::new(&client);
    let (mut launch, mut delete) = (Vec::new(), Vec::new());
    for _ in 0..21 {
        let s = spec(&g.container("timing"), &["true"]);
        let t0 = Instant::now();
        let r = run(&client, &s, None, None).await;
        launch.push(t0.elapsed());
        assert_eq!(r.exit_code, 0);
        let t1 = Instant::now();
        client
            .delete(s.name.as_deref().unwrap(), true, true)
            .await
            .unwrap();
        delete.push(t1.elapsed());
    }
    launch.sort();
    delete.sort();
    eprintln!(
        "create→attach→start→exit code: median {:?} (min {:?}, max {:?})",
        launch[10], launch[0], launch[20]
    );
    eprintln!("delete: median {:?}", delete[10]);
}
