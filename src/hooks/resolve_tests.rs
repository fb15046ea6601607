//! Tests of `resolve` and `lockdown_check`.

use std::collections::BTreeSet;

use super::*;
use crate::hooks::policy::{EnvLiteral, OpRef};
use crate::hooks::protocol::MountMode;
use crate::hooks::validate::parse_response;

impl Resolved {
    /// The distinct op references still needed (one `op inject` batch).
    pub fn surviving_op_refs(&self) -> BTreeSet<&OpRef> {
        self.op_env().into_values().collect()
    }

    /// Surviving keys whose value is an op reference.
    pub fn op_env(&self) -> BTreeMap<&EnvKey, &OpRef> {
        self.env
            .iter()
            .filter_map(|(k, (v, _))| match v {
                EnvValue::Op(r) => Some((k, r)),
                EnvValue::Literal(_) => None,
            })
            .collect()
    }

    /// Surviving keys with literal values.
    pub fn literal_env(&self) -> BTreeMap<&EnvKey, &EnvLiteral> {
        self.env
            .iter()
            .filter_map(|(k, (v, _))| match v {
                EnvValue::Literal(l) => Some((k, l)),
                EnvValue::Op(_) => None,
            })
            .collect()
    }
}

fn global(name: &str, index: usize) -> Origin {
    Origin::GlobalHook {
        name: name.into(),
        index,
    }
}

fn project(name: &str, index: usize) -> Origin {
    Origin::ProjectHook {
        name: name.into(),
        index,
    }
}

fn out(origin: Origin, json: &str) -> HookOutput {
    HookOutput {
        origin,
        contribution: parse_response(json.as_bytes()).unwrap(),
    }
}

fn env_doc(pairs: &[(&str, &str)]) -> String {
    let body: Vec<String> = pairs
        .iter()
        .map(|(k, v)| match v.strip_prefix("op:") {
            Some(r) => format!(r#""{k}":{{"op":"op:{r}"}}"#),
            None => format!(r#""{k}":"{v}""#),
        })
        .collect();
    format!(r#"{{"version":1,"env":{{{}}}}}"#, body.join(","))
}

fn file_doc(dest: &str) -> String {
    format!(r#"{{"version":1,"files":[{{"destination":"{dest}","content":"c"}}]}}"#)
}

fn mount_doc(dest: &str) -> String {
    format!(r#"{{"version":1,"mounts":[{{"source":"/srv/d","destination":"{dest}","mode":"ro"}}]}}"#)
}

fn no_overrides() -> LaunchOverrides {
    LaunchOverrides::default()
}

fn winner(r: &Resolved, key: &str) -> (String, Origin) {
    let (value, origin) = &r.env[&EnvKey::try_from(key).unwrap()];
    let text = match value {
        EnvValue::Literal(l) => l.as_str().to_owned(),
        EnvValue::Op(o) => o.as_str().to_owned(),
    };
    (text, origin.clone())
}

#[test]
fn precedence_defaults_global_project() {
    let layers = vec![
        out(project("p", 0), &env_doc(&[("A", "project")])),
        out(Origin::Default, &env_doc(&[("A", "default"), ("B", "default")])),
        out(global("g", 0), &env_doc(&[("A", "global"), ("B", "global")])),
    ];
    let r = resolve(layers, &no_overrides()).unwrap();
    assert_eq!(winner(&r, "A"), ("project".into(), project("p", 0)));
    assert_eq!(winner(&r, "B"), ("global".into(), global("g", 0)));
    let lost: Vec<(&str, &Origin, &Origin)> = r
        .eliminated
        .iter()
        .map(|e| (e.target.as_str(), &e.loser, &e.winner))
        .collect();
    assert_eq!(
        lost,
        [
            ("A", &Origin::Default, &global("g", 0)),
            ("B", &Origin::Default, &global("g", 0)),
            ("A", &global("g", 0), &project("p", 0)),
        ]
    );
}

#[test]
fn later_declaration_wins_regardless_of_completion_order() {
    // Completion order: #2 finished first, then #0, then #1.
    let layers = vec![
        out(project("same", 2), &env_doc(&[("A", "two")])),
        out(project("same", 0), &env_doc(&[("A", "zero")])),
        out(project("other", 1), &env_doc(&[("A", "one")])),
    ];
    let r = resolve(layers, &no_overrides()).unwrap();
    assert_eq!(winner(&r, "A"), ("two".into(), project("same", 2)));
    assert_eq!(r.eliminated.len(), 2);
}

#[test]
fn literals_and_references_share_one_keyspace() {
    let layers = vec![
        out(global("g", 0), &env_doc(&[("TOKEN", "op://v/i/f")])),
        out(project("p", 0), &env_doc(&[("TOKEN", "literal")])),
    ];
    let r = resolve(layers, &no_overrides()).unwrap();
    assert!(r.surviving_op_refs().is_empty());
    assert_eq!(r.literal_env().len(), 1);
    assert_eq!(r.eliminated[0].kind, EntryKind::OpReference);
}

#[test]
fn cli_env_eliminates_hook_references_before_lookup() {
    let layers = vec![
        out(
            global("g", 0),
            &env_doc(&[("TOKEN", "op://v/i/f"), ("OTHER", "op://v/i/f")]),
        ),
        out(project("p", 0), &env_doc(&[("THIRD", "op://v/i/g")])),
    ];
    let overrides = LaunchOverrides {
        cli_env: BTreeMap::from([("TOKEN".to_owned(), "from-cli".to_owned())]),
        ..LaunchOverrides::default()
    };
    let r = resolve(layers, &overrides).unwrap();
    assert!(!r.env.contains_key(&EnvKey::try_from("TOKEN").unwrap()));
    let refs: Vec<&str> = r.surviving_op_refs().into_iter().map(OpRef::as_str).collect();
    assert_eq!(refs, ["op://v/i/f", "op://v/i/g"], "deduplicated");
    assert_eq!(r.op_env().len(), 2);
    assert_eq!(
        r.eliminated,
        [Eliminated {
            target: "TOKEN".into(),
            kind: EntryKind::OpReference,
            loser: global("g", 0),
            winner: Origin::Cli,
        }]
    );
}

#[test]
fn files_and_mounts_share_destinations_and_losers_disappear() {
    let layers = vec![
        out(global("g", 0), &file_doc("/workspace/data")),
        out(project("p", 0), &mount_doc("/workspace/data")),
        out(project("p", 1), &file_doc("/tmp/other")),
    ];
    let r = resolve(layers, &no_overrides()).unwrap();
    assert!(
        r.files
            .iter()
            .all(|(f, _)| f.destination.as_str() != "/workspace/data")
    );
    assert_eq!(r.files.len(), 1);
    assert_eq!(r.mounts.len(), 1);
    assert_eq!(r.mounts[0].1, project("p", 0));
    assert_eq!(r.mounts[0].0.mode, MountMode::Ro);
    assert_eq!(r.eliminated[0].kind, EntryKind::File);
}

#[test]
fn nested_hook_destinations_name_both_hooks() {
    let layers = vec![
        out(global("services", 0), &mount_doc("/workspace/data")),
        out(project("config", 3), &file_doc("/workspace/data/config.json")),
    ];
    assert_eq!(
        resolve(layers, &no_overrides()).unwrap_err().to_string(),
        "the file from project hook `config` (#3) at /workspace/data/config.json is nested inside the \
         mount from global hook `services` (#0) at /workspace/data; nesting is an ambiguous overlap, not \
         an overlay: choose an independent destination"
    );
}

#[test]
fn an_exact_replacement_can_remove_a_nesting() {
    let layers = vec![
        out(global("g", 0), &file_doc("/tmp/a/b")),
        out(global("g", 1), &file_doc("/tmp/a")),
    ];
    assert!(resolve(layers, &no_overrides()).is_err());
    let overrides = LaunchOverrides {
        cli_mounts: vec![PathBuf::from("/tmp/a/b")],
        ..LaunchOverrides::default()
    };
    let layers = vec![
        out(global("g", 0), &file_doc("/tmp/a/b")),
        out(global("g", 1), &file_doc("/tmp/x")),
    ];
    let r = resolve(layers, &overrides).unwrap();
    assert_eq!(r.files.len(), 1);
    assert_eq!(r.eliminated[0].winner, Origin::Cli);
    assert_eq!(r.eliminated[0].target, "/tmp/a/b");
}

#[test]
fn nesting_in_the_workdir_mount_is_refused() {
    let overrides = LaunchOverrides {
        fixed_destinations: vec![
            PathBuf::from("/workspace/project/"),
            PathBuf::from("/home/dev/.pi"),
        ],
        ..LaunchOverrides::default()
    };
    let layers = vec![out(
        project("svc", 0),
        &mount_doc("/workspace/project/service-data"),
    )];
    assert_eq!(
        resolve(layers, &overrides).unwrap_err().to_string(),
        "the mount from project hook `svc` (#0) at /workspace/project/service-data is nested inside the \
         launch plan's own mount at /workspace/project; nesting is an ambiguous overlap, not an overlay: \
         choose an independent destination"
    );
    let layers = vec![out(project("svc", 0), &file_doc("/workspace/project"))];
    assert_eq!(
        resolve(layers, &overrides).unwrap_err().to_string(),
        "the file from project hook `svc` (#0) at /workspace/project would replace a mount of the launch \
         plan itself (workdir, agent configuration or AGS runtime); choose an independent destination"
    );
    let layers = vec![out(project("svc", 0), &file_doc("/workspace/elsewhere"))];
    assert!(resolve(layers, &overrides).is_ok());
}

#[test]
fn hook_destination_containing_a_plan_or_cli_mount_is_refused() {
    let overrides = LaunchOverrides {
        cli_mounts: vec![PathBuf::from("/workspace/extra/dir")],
        fixed_destinations: vec![PathBuf::from("/tmp/x/staging")],
        ..LaunchOverrides::default()
    };
    let err = resolve(
        vec![out(global("g", 0), &mount_doc("/workspace/extra"))],
        &overrides,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the command-line mount at /workspace/extra/dir is nested inside the mount from global hook `g` \
         (#0) at /workspace/extra; nesting is an ambiguous overlap, not an overlay: choose an independent \
         destination"
    );
    let err = resolve(vec![out(global("g", 0), &file_doc("/tmp/x"))], &overrides).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("the launch plan's own mount at /tmp/x/staging is nested")
    );
}

#[test]
fn plan_and_cli_overlaps_without_hooks_are_not_this_stage_s_business() {
    let overrides = LaunchOverrides {
        cli_mounts: vec![PathBuf::from("/work/p/sub")],
        fixed_destinations: vec![PathBuf::from("/work/p"), PathBuf::from("/work/p")],
        ..LaunchOverrides::default()
    };
    assert_eq!(resolve(Vec::new(), &overrides).unwrap(), Resolved::default());
}

#[test]
fn lockdown_refuses_references_and_mounts_only() {
    let layers = vec![
        out(
            global("g", 0),
            &env_doc(&[("TOKEN", "op://v/i/f"), ("URL", "http://x")]),
        ),
        out(project("p", 1), &mount_doc("/workspace/data")),
        out(project("p", 2), &file_doc("/tmp/config.json")),
    ];
    let r = resolve(layers, &no_overrides()).unwrap();
    assert_eq!(
        lockdown_check(&r).unwrap_err().to_string(),
        "--lockdown refuses 2 hook contribution(s): env TOKEN is a 1Password reference from global hook \
         `g` (#0); mount /workspace/data is a host bind mount from project hook `p` (#1); override the \
         keys with --env KEY=VALUE, drop them from the hook's response, or launch without --lockdown"
    );
    let overrides = LaunchOverrides {
        cli_env: BTreeMap::from([("TOKEN".to_owned(), "x".to_owned())]),
        ..LaunchOverrides::default()
    };
    let layers = vec![
        out(
            global("g", 0),
            &env_doc(&[("TOKEN", "op://v/i/f"), ("URL", "http://x")]),
        ),
        out(project("p", 2), &file_doc("/tmp/config.json")),
    ];
    assert_eq!(lockdown_check(&resolve(layers, &overrides).unwrap()), Ok(()));
}

#[test]
fn origin_from_declaration() {
    let decl = HookDecl {
        event: crate::config::HookEvent::Prepare,
        name: "svc".into(),
        executable: "/bin/true".into(),
        args: Vec::new(),
        timeout_seconds: 30,
        scope: HookScope::Project { root: "/p".into() },
        config_path: "/p/.ags/config.toml".into(),
    };
    assert_eq!(Origin::for_decl(&decl, 4), project("svc", 4));
    assert_eq!(project("svc", 4).to_string(), "project hook `svc` (#4)");
    assert_eq!(
        serde_json::to_string(&global("g", 1)).unwrap(),
        r#"{"layer":"global_hook","name":"g","index":1}"#
    );
}
