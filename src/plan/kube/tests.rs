use std::path::PathBuf;

use serde_json::{Value, json};

use super::*;
use crate::config::{Config, Paths};
use crate::plan::{HookLayer, LaunchIdentity, PlanInput, RunSettings, UserMount, build};

fn config(network: Network) -> Config {
    let home = PathBuf::from("/home/u");
    Config {
        paths: Paths {
            config_home: home.join(".config"),
            state_home: home.join(".local/state"),
            cache_home: home.join(".cache"),
            runtime_dir: None,
            home,
        },
        workdir: "/src/proj".into(),
        project: "/src/proj".into(),
        image: "localhost/img:1".into(),
        pids_limit: 4096,
        network,
        egress: Default::default(),
        prepare_hooks: vec![],
        started_hooks: vec![],
        finished_hooks: vec![],
        agent_hooks: Default::default(),
        primary: None,
        overlay: None,
        warnings: vec![],
        user: Default::default(),
    }
}

const SECRET: &str = "s3cret-'value'";

fn hooks() -> HookLayer {
    HookLayer {
        env: vec![(
            "TOKEN".into(),
            EnvSource::Staged {
                value: crate::secret::Secret::new(SECRET.into()),
            },
            Origin::GlobalHook("creds".into()),
        )],
        files: vec![PlanFile {
            destination: "/home/dev/notes/cfg.json".into(),
            content: crate::secret::Secret::new("{\"k\": \"file-secret\"}".into()),
            bytes: 20,
            origin: Origin::GlobalHook("creds".into()),
            host_path: PathBuf::new(),
        }],
        mounts: vec![],
    }
}

fn plan(run: &RunSettings, hooks: &HookLayer, network: Network) -> LaunchPlan {
    build(&PlanInput {
        host_memory: None,
        config: &config(network),
        run,
        identity: &LaunchIdentity {
            launch_id: "ags-7-42".into(),
            suffix: "0a1b2c3d".into(),
            pid: 7,
            start_time: 9,
            host: "h".into(),
        },
        rootless: true,
        selinux: false,
        remote: false,
        exported: true,
        user: (1000, 1001),
        host_stage_dir: std::path::Path::new("/run/user/1000/ags/stage-x"),
        hooks,
    })
    .unwrap()
}

fn shell() -> RunSettings {
    RunSettings {
        agent: "shell".into(),
        command: vec!["sh".into(), "-c".into(), "exit 7".into()],
        labels: vec!["io.ags.test=t1".into()],
        ..Default::default()
    }
}

fn export_json(plan: &LaunchPlan, env: Option<&[u8]>, git: Option<&GitSource>) -> Vec<Value> {
    let out = export(&KubeInput {
        plan,
        env_file: env,
        workspace_from_git: git,
        redact: false,
        host_kinds: &Default::default(),
    })
    .unwrap();
    // The rendering is a `---`-separated stream of JSON documents.
    out.render()
        .split("\n---\n")
        .map(|d| serde_json::from_str(d).unwrap_or_else(|e| panic!("{e}: {d}")))
        .collect()
}

fn agent(pod: &Value) -> &Value {
    &pod["spec"]["containers"][0]
}

#[test]
fn the_agent_hook_record_socket_is_not_exported() {
    let run = RunSettings {
        agent_hooks: true,
        ..shell()
    };
    let plan = plan(&run, &HookLayer::default(), Network::Open);
    assert!(plan.agent_hook_record.is_some());
    let text = serde_json::to_string(&export_json(&plan, None, None)).unwrap();
    assert!(
        !text.contains("-hooks") && !text.contains(crate::agent_hooks::SOCKET_DIR),
        "{text}"
    );
}

#[test]
fn a_plain_launch_is_one_pod_with_the_same_process_and_hardening() {
    let plan = plan(&shell(), &HookLayer::default(), Network::Open);
    let docs = export_json(&plan, None, None);
    assert_eq!(docs.len(), 1, "no Secret without staged values: {docs:?}");
    let pod = &docs[0];
    assert_eq!(pod["kind"], "Pod");
    assert_eq!(pod["metadata"]["name"], plan.container_name);
    assert_eq!(pod["spec"]["restartPolicy"], "Never");
    assert_eq!(pod["spec"]["automountServiceAccountToken"], false);
    assert_eq!(pod["spec"]["enableServiceLinks"], false);
    let a = agent(pod);
    assert_eq!(a["image"], "localhost/img:1");
    assert_eq!(a["command"], json!(plan.container_command));
    assert_eq!(a["workingDir"], "/src/proj");
    let sc = &a["securityContext"];
    assert_eq!(sc["capabilities"]["drop"], json!(["ALL"]));
    assert_eq!(sc["allowPrivilegeEscalation"], false);
    assert_eq!(sc["privileged"], false);
    assert_eq!(
        (sc["runAsUser"].clone(), sc["runAsGroup"].clone()),
        (json!(1000), json!(1001))
    );
    assert_eq!(sc["runAsNonRoot"], true);
    assert_eq!(sc["seccompProfile"]["type"], "RuntimeDefault");
    assert_eq!(pod["spec"]["securityContext"]["runAsUser"], 1000);
    // The workdir is a hostPath directory of the node, read-write, at the same path.
    let vols = pod["spec"]["volumes"].as_array().unwrap();
    let ws = vols
        .iter()
        .find(|v| v["hostPath"]["path"] == "/src/proj")
        .unwrap();
    assert_eq!(ws["hostPath"]["type"], "Directory");
    let m = a["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == ws["name"])
        .unwrap();
    assert_eq!(
        (m["mountPath"].as_str(), m["readOnly"].as_bool()),
        (Some("/src/proj"), Some(false))
    );
    // HOME and the other literals ags chooses are plain env.
    assert!(a["env"].as_array().unwrap().iter().any(|e| e["name"] == "HOME"));
    // The memory limit of the plan (the 8g default on an unknown machine); no CPU limit.
    assert_eq!(a["resources"], json!({"limits": {"memory": "8589934592"}}));
    let mut run = shell();
    run.limits.cpus = Some(crate::limits::parse_cpus("1.5").unwrap());
    run.limits.memory = crate::limits::Memory::Unlimited;
    let limited = &export_json(
        &self::plan(&run, &HookLayer::default(), Network::Open),
        None,
        None,
    )[0];
    assert_eq!(agent(limited)["resources"], json!({"limits": {"cpu": "1500m"}}));
}

#[test]
fn labels_are_the_launch_not_the_local_owner() {
    let plan = plan(&shell(), &HookLayer::default(), Network::Open);
    let pod = &export_json(&plan, None, None)[0];
    let labels = pod["metadata"]["labels"].as_object().unwrap();
    assert_eq!(labels[LABEL_LAUNCH_ID], "ags-7-42");
    assert_eq!(labels[LABEL_AGENT], "shell");
    assert_eq!(labels["io.ags.test"], "t1");
    assert_eq!(labels[LABEL_EXPORT], "kube");
    // `ags gc` must never take a played pod for the orphan of a local launch.
    for local in [
        LABEL_MANAGED,
        LABEL_OWNER_PID,
        LABEL_OWNER_START,
        LABEL_OWNER_HOST,
    ] {
        assert!(!labels.contains_key(local), "{local} in {labels:?}");
    }
    assert_eq!(pod["metadata"]["annotations"][LABEL_PROJECT], "/src/proj");
    // A rootless plan keeps its user mapping when Podman plays it.
    assert_eq!(
        pod["metadata"]["annotations"][ANNOTATION_PODMAN_USERNS],
        "keep-id"
    );
    // Nor select ags's OCI hooks (which would record into this host's spool).
    let annotations = pod["metadata"]["annotations"].as_object().unwrap();
    for local in [ANNOTATION_LAUNCH, ANNOTATION_SPOOL, ANNOTATION_STAGE] {
        assert!(!annotations.contains_key(local), "{local} in {annotations:?}");
    }
}

#[test]
fn staged_values_go_to_the_secret_and_are_mounted_read_only() {
    let plan = plan(&shell(), &hooks(), Network::Open);
    let env = b"export TOKEN='s3cret-'\\''value'\\'''\n";
    let docs = export_json(&plan, Some(env), None);
    let (secret, pod) = (&docs[0], &docs[1]);
    assert_eq!(secret["kind"], "Secret");
    assert_eq!(secret["type"], "Opaque");
    assert_eq!(
        secret["metadata"]["name"],
        format!("{}-secret", plan.container_name)
    );
    assert_eq!(secret["data"][ENV_KEY], model::base64(env));
    assert_eq!(
        secret["data"]["file-0"],
        model::base64(b"{\"k\": \"file-secret\"}")
    );
    // No value in the Pod, in clear or encoded; the command loads the env file as a launch does.
    let pod_text = pod.to_string();
    for needle in [SECRET, "file-secret", &model::base64(env)] {
        assert!(!pod_text.contains(needle), "{needle} in {pod_text}");
    }
    assert!(
        agent(pod)["command"][2]
            .as_str()
            .unwrap()
            .contains(STAGING_ENV_FILE)
    );
    let mounts = agent(pod)["volumeMounts"].as_array().unwrap();
    let stage = mounts.iter().find(|m| m["mountPath"] == STAGING_MOUNT).unwrap();
    assert_eq!(stage["readOnly"], true);
    let file = mounts
        .iter()
        .find(|m| m["mountPath"] == "/home/dev/notes/cfg.json")
        .unwrap();
    assert_eq!(
        (file["subPath"].as_str(), file["readOnly"].as_bool()),
        (Some("file-0"), Some(true))
    );
    let vols = pod["spec"]["volumes"].as_array().unwrap();
    for m in [stage, file] {
        let v = vols.iter().find(|v| v["name"] == m["name"]).unwrap();
        assert_eq!(v["secret"]["secretName"], secret["metadata"]["name"]);
        assert_eq!(v["secret"]["defaultMode"], 0o444);
        assert_eq!(v["secret"]["optional"], false);
    }
    // No host path of ags's private staging directory leaks into the Pod.
    assert!(!pod_text.contains("/run/user/1000/ags"), "{pod_text}");
}

#[test]
fn a_terminal_sees_no_values() {
    let plan = plan(&shell(), &hooks(), Network::Open);
    let out = export(&KubeInput {
        plan: &plan,
        env_file: Some(b"export TOKEN='x'\n"),
        workspace_from_git: None,
        redact: true,
        host_kinds: &Default::default(),
    })
    .unwrap();
    let text = out.render();
    assert!(!text.contains(&model::base64(b"export TOKEN='x'\n")), "{}", *text);
    assert!(text.contains("\"env\": \"<redacted>\""), "{}", *text);
    assert!(!format!("{out:?}").contains("ZXhw"), "debug output redacted");
}

#[test]
fn workspace_from_git_is_an_emptydir_filled_by_a_clone() {
    let plan = plan(&shell(), &HookLayer::default(), Network::Open);
    let git = GitSource::parse("https://example.com/r.git@v1").unwrap();
    let pod = &export_json(&plan, None, Some(&git))[0];
    let init = &pod["spec"]["initContainers"][0];
    assert_eq!(init["name"], CLONE_CONTAINER);
    let cmd = init["command"].as_array().unwrap();
    assert_eq!(
        cmd[3..],
        [
            json!("ags-clone"),
            json!("https://example.com/r.git"),
            json!("/src/proj"),
            json!("v1")
        ]
    );
    assert_eq!(init["securityContext"], agent(pod)["securityContext"]);
    let ws_name = init["volumeMounts"][0]["name"].clone();
    let vols = pod["spec"]["volumes"].as_array().unwrap();
    let ws = vols.iter().find(|v| v["name"] == ws_name).unwrap();
    assert_eq!(ws["emptyDir"], json!({}));
    assert!(!pod.to_string().contains("hostPath"), "{pod}");
}

#[test]
fn network_none_is_a_deny_all_policy_and_allowlist_is_refused() {
    let plan_none = plan(&shell(), &HookLayer::default(), Network::None);
    let docs = export_json(&plan_none, None, None);
    let np = &docs[0];
    assert_eq!(np["kind"], "NetworkPolicy");
    assert_eq!(
        np["spec"]["podSelector"]["matchLabels"][LABEL_LAUNCH_ID],
        "ags-7-42"
    );
    assert_eq!(np["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
    assert!(np["spec"].get("egress").is_none(), "no rule: nothing allowed");
    let allow = plan(&shell(), &HookLayer::default(), Network::Allowlist);
    let input = KubeInput {
        plan: &allow,
        env_file: None,
        workspace_from_git: None,
        redact: false,
        host_kinds: &Default::default(),
    };
    assert!(matches!(export(&input), Err(KubeError::Allowlist { .. })));
}

#[test]
fn other_mounts_state_and_lockdown_and_names() {
    let run = RunSettings {
        agent: "claude".into(),
        mounts: vec![UserMount {
            source: "/data/ref".into(),
            destination: "/data/ref".into(),
            read_only: true,
            origin: Origin::Cli,
        }],
        lockdown: false,
        timeout: Some(std::time::Duration::from_millis(1500)),
        ..shell()
    };
    let p = plan(&run, &HookLayer::default(), Network::Open);
    let pod = &export_json(&p, None, None)[0];
    assert_eq!(pod["spec"]["activeDeadlineSeconds"], 2);
    let vols = pod["spec"]["volumes"].as_array().unwrap();
    let host = vols
        .iter()
        .find(|v| v["hostPath"]["path"] == "/data/ref")
        .unwrap();
    let m = agent(pod)["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == host["name"])
        .unwrap();
    assert_eq!(m["readOnly"], true);
    // Without a kind read on this host the type is left out; with one, a node lacking the path
    // refuses the Pod instead of creating a directory there.
    assert!(host["hostPath"].get("type").is_none(), "{host}");
    let kinds = BTreeMap::from([(std::path::PathBuf::from("/data/ref"), "File")]);
    let typed = export(&KubeInput {
        plan: &p,
        env_file: None,
        workspace_from_git: None,
        redact: false,
        host_kinds: &kinds,
    })
    .unwrap();
    let text = typed.render();
    let pod: Value = serde_json::from_str(text.split("\n---\n").next().unwrap()).unwrap();
    let typed = pod["spec"]["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["hostPath"]["path"] == "/data/ref");
    assert_eq!(typed.unwrap()["hostPath"]["type"], "File", "{pod}");
    // Agent state volumes are per-pod emptyDirs; every volume name is a DNS label unique to
    // the launch.
    assert!(vols.iter().any(|v| v.get("emptyDir").is_some()), "{vols:?}");
    for v in vols {
        let name = v["name"].as_str().unwrap();
        check_pod_name(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(name.ends_with(&tag("ags-7-42")), "{name}");
    }
    let locked = plan(
        &RunSettings {
            lockdown: true,
            ..shell()
        },
        &HookLayer::default(),
        Network::Open,
    );
    let pod = &export_json(&locked, None, None)[0];
    let tmpfs: Vec<_> = pod["spec"]["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["emptyDir"]["medium"] == "Memory")
        .map(|v| v["emptyDir"]["sizeLimit"].as_str().unwrap())
        .collect();
    assert_eq!(
        tmpfs,
        ["1073741824", "1073741824", "67108864"],
        "/tmp, /var/tmp, /run"
    );
    let named = plan(
        &RunSettings {
            name: Some("My_Box".into()),
            ..shell()
        },
        &HookLayer::default(),
        Network::Open,
    );
    let input = KubeInput {
        plan: &named,
        env_file: None,
        workspace_from_git: None,
        redact: false,
        host_kinds: &Default::default(),
    };
    assert!(matches!(export(&input), Err(KubeError::PodName { .. })));
}
