use super::*;
use crate::plan::{LaunchPlan, SelinuxLabel};

fn plan_json(selinux: bool, init: bool) -> serde_json::Value {
    let plan = plan_of(selinux, init, false, &Default::default());
    let want = if selinux {
        SelinuxLabel::Disabled
    } else {
        SelinuxLabel::NotEnabled
    };
    assert_eq!(plan.security.selinux_label, want);
    serde_json::to_value(spec_from_plan(&plan)).unwrap()
}

fn plan_of(selinux: bool, init: bool, remote: bool, hooks: &crate::plan::HookLayer) -> LaunchPlan {
    let home = std::path::PathBuf::from("/home/u");
    let config = crate::config::Config {
        paths: crate::config::Paths {
            config_home: home.join(".config"),
            state_home: home.join(".local/state"),
            cache_home: home.join(".cache"),
            runtime_dir: None,
            home: home.clone(),
        },
        workdir: home.join("project"),
        project: home.join("project"),
        image: "localhost/img:1".into(),
        pids_limit: 4096,
        network: Network::Open,
        prepare_hooks: vec![],
        started_hooks: vec![],
        finished_hooks: vec![],
        agent_hooks: Default::default(),
        primary: None,
        overlay: None,
        warnings: vec![],
        user: Default::default(),
        egress: Default::default(),
    };
    let run = crate::plan::RunSettings {
        agent: "claude".into(),
        mounts: vec![crate::plan::UserMount {
            source: "/home/u/other".into(),
            destination: "/home/u/other".into(),
            read_only: false,
            origin: crate::plan::Origin::Cli,
        }],
        no_init: !init,
        ..Default::default()
    };
    crate::plan::build(&crate::plan::PlanInput {
        host_memory: None,
        config: &config,
        run: &run,
        identity: &crate::plan::LaunchIdentity {
            launch_id: "ags-1-2".into(),
            suffix: "abc".into(),
            pid: 1,
            start_time: 2,
            host: "h".into(),
        },
        rootless: true,
        selinux,
        remote,
        exported: false,
        user: (1000, 1000),
        host_stage_dir: std::path::Path::new("/run/user/1000/ags/stage-abc"),
        hooks,
    })
    .unwrap()
}

#[test]
fn remote_files_are_volume_subpaths_filled_through_a_keeper() {
    let hooks = crate::plan::HookLayer {
        files: vec![crate::plan::PlanFile {
            destination: "/home/dev/gen.txt".into(),
            content: crate::secret::Secret::new("x".into()),
            bytes: 1,
            origin: crate::plan::Origin::GlobalHook("h".into()),
            host_path: Default::default(),
        }],
        ..Default::default()
    };
    let plan = plan_of(false, true, true, &hooks);
    let spec = serde_json::to_value(spec_from_plan(&plan)).unwrap();
    let volume = &plan.staging.as_ref().unwrap().volume;
    let file = spec["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["Dest"] == "/home/dev/gen.txt")
        .expect("a volume mount at the file's destination");
    let want = serde_json::json!({"Name": volume, "Dest": "/home/dev/gen.txt",
        "Options": ["ro", "nosuid", "nodev", "noexec"], "SubPath": "files/0"});
    assert_eq!(file, &want);
    assert!(
        !spec["mounts"].to_string().contains("/home/dev/gen.txt"),
        "{spec}"
    );
    // The keeper: the staging volume only, no network, no capabilities, never the launch id
    // (it is not the agent's container), the agent's user namespace and user.
    let keeper = serde_json::to_value(keeper_spec(&plan, "k").unwrap()).unwrap();
    assert_eq!(keeper["volumes"].as_array().unwrap().len(), 1, "{keeper}");
    assert_eq!(keeper["volumes"][0]["Dest"], "/run/ags");
    assert!(keeper.get("mounts").is_none(), "{keeper}");
    assert_eq!(keeper["netns"]["nsmode"], "none");
    assert_eq!(keeper["cap_drop"], serde_json::json!(["ALL"]));
    assert_eq!(keeper["userns"]["nsmode"], "keep-id");
    assert_eq!(keeper["user"], "1000:1000");
    assert_eq!(keeper["labels"]["io.ags.managed"], "true");
    // It runs, bounded: Podman kills and removes it.
    assert_eq!(keeper["timeout"], KEEPER_SECONDS);
    assert_eq!(keeper["remove"], true);
    assert_eq!(keeper["stdin"], true);
    assert!(keeper["labels"].get("io.ags.launch-id").is_none(), "{keeper}");
    assert!(keeper.get("annotations").is_none(), "{keeper}");
    // A local plan stages no volume for files and has no keeper.
    assert!(keeper_spec(&plan_of(false, true, false, &hooks), "k").is_none());
}

#[test]
fn selinux_enabled_disables_labelling_and_relabels_nothing() {
    let on = plan_json(true, true);
    assert_eq!(on["selinux_opts"], serde_json::json!(["disable"]));
    let off = plan_json(false, true);
    assert!(off.get("selinux_opts").is_none(), "{off}");
    // Either way no bind is relabelled (`z`/`Z` would rewrite host file labels).
    for spec in [&on, &off] {
        for m in spec["mounts"].as_array().unwrap() {
            let opts: Vec<&str> = m["options"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| o.as_str().unwrap())
                .collect();
            assert!(!opts.iter().any(|o| *o == "z" || *o == "Z"), "{m}");
        }
    }
}

#[test]
fn limits_become_resource_limits_without_extra_swap() {
    let spec = plan_json(false, true);
    let want = serde_json::json!({"pids": {"limit": 4096},
        "memory": {"limit": 8u64 << 30, "swap": 8u64 << 30}});
    assert_eq!(spec["resource_limits"], want);
}

#[test]
fn init_is_requested_unless_disabled() {
    assert_eq!(plan_json(false, true)["init"], true);
    assert!(plan_json(false, false).get("init").is_none());
}
