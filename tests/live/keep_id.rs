//! A rootless launch spells `keep-id` out (issue 16, item 4): explicit id mappings and
//! passwd/group entries instead of `userns=keep-id`, so the service never reads /etc/subuid
//! through libsubid (not thread-safe) and creates need not take turns. The agent must not be
//! able to tell: three containers run the same probe on the rootless service —
//! Podman's own `keep-id` (the reference), the spec `ags::podman::spell_out_keep_id` makes of it,
//! and a real `ags` launch — and report their ids, id maps, groups, HOME, /etc/passwd,
//! /etc/group and the host owner of a file each creates in the workspace. All must be equal,
//! except where Podman before 4.5 ignores `group_entry` (the group is then named by its number;
//! asserted exactly). Rootful launches use no user namespace, so the test is rootless only.

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use ags::podman::{
    Client, Endpoint, Mount, Namespace, NsMode, ServerVersion, SpecGenerator, spell_out_keep_id,
};

use common::launch::run_agent;
use common::{Mode, TestEnv, api, each_mode, show};

/// Writes `## section` blocks to the file `$1` (relative to the workspace), creating `$1.file`.
const PROBE: &str = r#"out=$1; {
echo '## id'; id
echo '## uid_map'; cat /proc/self/uid_map
echo '## gid_map'; cat /proc/self/gid_map
echo '## groups'; grep '^Groups' /proc/self/status
echo '## home'; echo "$HOME"
echo '## passwd'; cat /etc/passwd
echo '## group'; cat /etc/group
echo '## owner inside'; touch "$out.file"; stat -c '%u %g' "$out.file"
} >"$out" 2>&1"#;

#[test]
fn spelled_out_keep_id_is_keep_id_for_the_agent() {
    each_mode(|env| {
        let _turn = common::keep_id_turn(env);
        if env.mode() != Mode::Rootless {
            println!("rootful launches use no user namespace: nothing to compare");
            return;
        }
        let version = api::call(env.mode(), "GET", "/version", None).json()["Version"]
            .as_str()
            .and_then(ServerVersion::parse)
            .expect("the service's version");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let client = Client::new(Endpoint::Unix(env.mode().socket()));
        let reference = rt.block_on(run_probe(env, &client, "ref", false));
        let spelled = rt.block_on(run_probe(env, &client, "spelled", true));
        let out = run_agent(env, &[], &["sh", "-c", PROBE, "sh", "ags"]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let launched = sections(env, "ags");

        let (uid, gid) = (env.uid(), env.gid());
        let account = &env.account().name;
        let group = nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(gid))
            .unwrap()
            .expect("the user's group")
            .name;
        for (name, probe) in [("ref", &reference), ("spelled", &spelled), ("ags", &launched)] {
            let owner = std::fs::metadata(env.work_dir().join(format!("{name}.file"))).unwrap();
            use std::os::unix::fs::MetadataExt;
            assert_eq!(
                (owner.uid(), owner.gid()),
                (uid, gid),
                "{name}: host owner of its file"
            );
            assert_eq!(probe["owner inside"], format!("{uid} {gid}\n"), "{name}");
            assert_eq!(probe["home"], "/home/dev\n", "{name}");
        }
        let mut expected = reference.clone();
        if !version.honours_group_entry() {
            // Podman {version} ignores group_entry: its own numeric entry for the user's group.
            let named = format!("{group}:x:{gid}:{account}\n");
            let numeric = format!("{gid}:x:{gid}:{uid}\n");
            assert!(expected["group"].ends_with(&named), "{}", expected["group"]);
            let g = expected["group"].replace(&named, &numeric);
            expected.insert("group".into(), g);
            let id = expected["id"]
                .replace(&format!("gid={gid}({group})"), &format!("gid={gid}({gid})"))
                .replace(&format!("groups={gid}({group})"), &format!("groups={gid}({gid})"));
            expected.insert("id".into(), id);
        }
        assert_eq!(
            spelled, expected,
            "spelled-out keep-id vs keep-id (Podman {version})"
        );
        assert_eq!(launched, spelled, "ags launch vs spelled-out keep-id");
        assert!(
            reference["uid_map"].lines().count() >= 2,
            "keep-id maps more than the user: {:?}",
            reference["uid_map"]
        );
        env.assert_no_leftovers();
    });
}

/// Run [`PROBE`] in a container like a launch's (the workspace bound at its own path as the
/// working directory, the user's ids, HOME) with `userns=keep-id`, spelled out or not; returns
/// its sections.
async fn run_probe(env: &TestEnv, client: &Client, name: &str, spell_out: bool) -> BTreeMap<String, String> {
    let work = env.work_dir().to_string_lossy().into_owned();
    let (key, value) = env
        .label()
        .split_once('=')
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .unwrap();
    let mut spec = SpecGenerator {
        name: Some(env.unique_name(name)),
        image: env.image(),
        command: ["sh", "-c", PROBE, "sh", name].map(String::from).to_vec(),
        env: BTreeMap::from([("HOME".to_string(), "/home/dev".to_string())]),
        work_dir: Some(work.clone()),
        labels: BTreeMap::from([(key, value)]),
        userns: Some(Namespace::new(NsMode::KeepId)),
        netns: Some(Namespace::new(NsMode::None)),
        user: Some(format!("{}:{}", env.uid(), env.gid())),
        mounts: vec![Mount::bind(&work, &work, &["rbind", "rw"])],
        ..SpecGenerator::default()
    };
    if spell_out {
        assert!(
            spell_out_keep_id(client, &mut spec),
            "a local rootless service of the user"
        );
        assert_eq!(spec.userns, Some(Namespace::new(NsMode::Private)));
    }
    let id = client
        .create(&spec)
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    client.start(&id).await.unwrap();
    let state = tokio::time::timeout(
        Duration::from_secs(60),
        client.wait_exited(&id, Duration::from_millis(20)),
    )
    .await
    .expect("the probe exits")
    .unwrap();
    assert_eq!(state.exit_code, 0, "{name}");
    client.delete(&id, true, true).await.unwrap();
    sections(env, name)
}

/// The `## name` sections of the probe output `name` in the workspace.
fn sections(env: &TestEnv, name: &str) -> BTreeMap<String, String> {
    let path = env.work_dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = BTreeMap::new();
    let mut current = None;
    for line in text.split_inclusive('\n') {
        if let Some(title) = line.strip_prefix("## ") {
            current = Some(title.trim_end().to_string());
            out.insert(title.trim_end().to_string(), String::new());
        } else if let Some(c) = &current {
            out.get_mut(c).unwrap().push_str(line);
        } else {
            panic!("{name}: output before the first section: {text}");
        }
    }
    assert_eq!(out.len(), 8, "{name}: {text}");
    out
}
