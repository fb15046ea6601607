//! Unit tests of `keep_id`: Podman's arithmetic and rules, reproduced. (That a real service
//! builds the same container from the result is `tests/live/keep_id.rs`.)

use super::*;
use crate::podman::{Mount, NamedVolume};

fn account() -> KeepId {
    KeepId {
        name: "dev".into(),
        uid: 1000,
        passwd_gid: 1000,
        gid: 1000,
        full_name: "Dev Eloper".into(),
        home: "/home/dev".into(),
        group_name: "devs".into(),
        subuids: 65536,
        subgids: 65536,
    }
}

fn keep_id_spec() -> SpecGenerator {
    SpecGenerator {
        image: "img".into(),
        userns: Some(Namespace::new(NsMode::KeepId)),
        user: Some("1000:1000".into()),
        work_dir: Some("/home/dev/project".into()),
        mounts: vec![Mount::bind("/home/dev/project", "/home/dev/project", &["rbind"])],
        ..SpecGenerator::default()
    }
}

fn map(container_id: u32, host_id: u32, size: u32) -> IdMap {
    IdMap {
        container_id,
        host_id,
        size,
    }
}

#[test]
fn mapping_is_podmans_keep_id_mapping() {
    // `podman run --userns=keep-id` of uid 1000 with 100000:65536 shows this /proc/self/uid_map
    // (in the service's namespace: 0 is the user, 1..=65536 the subordinate ids).
    assert_eq!(
        keep_id_map(1000, 65536),
        [map(0, 1, 1000), map(1000, 0, 1), map(1001, 1001, 64536)]
    );
    // An id above every subordinate id: no range above it.
    assert_eq!(keep_id_map(70000, 65536), [map(0, 1, 65536), map(70000, 0, 1)]);
    assert_eq!(keep_id_map(65536, 65536), [map(0, 1, 65536), map(65536, 0, 1)]);
}

#[test]
fn apply_spells_out_keep_id() {
    let mut spec = keep_id_spec();
    assert!(account().apply(&mut spec));
    assert_eq!(spec.userns, Some(Namespace::new(NsMode::Private)));
    let maps = spec.idmappings.clone().unwrap();
    assert_eq!(maps.uid_map, keep_id_map(1000, 65536));
    assert_eq!(maps.gid_map, keep_id_map(1000, 65536));
    // The home is not mounted (only a directory below it): the working directory.
    assert_eq!(
        spec.passwd_entry.as_deref(),
        Some("dev:*:1000:1000:Dev Eloper:/home/dev/project:/bin/sh")
    );
    assert_eq!(spec.group_entry.as_deref(), Some("devs:x:1000:dev"));
    assert_eq!(spec.user.as_deref(), Some("1000:1000"), "the user stays");
}

#[test]
fn home_is_used_when_it_or_a_parent_is_mounted() {
    let home = |mounts: Vec<Mount>, volumes: Vec<NamedVolume>| {
        let mut spec = keep_id_spec();
        spec.mounts.extend(mounts);
        spec.volumes = volumes;
        passwd_home("/home/dev", &spec)
    };
    let w = Some("/home/dev/project".to_string());
    let h = Some("/home/dev".to_string());
    assert_eq!(home(vec![], vec![]), w);
    assert_eq!(home(vec![Mount::bind("/x", "/home/dev", &[])], vec![]), h);
    assert_eq!(home(vec![Mount::bind("/x", "/home", &[])], vec![]), h);
    assert_eq!(home(vec![Mount::tmpfs("/home", &[])], vec![]), h);
    assert_eq!(
        home(vec![Mount::bind("/x", "/", &[])], vec![]),
        w,
        "/ does not count"
    );
    assert_eq!(home(vec![Mount::bind("/x", "/home/de", &[])], vec![]), w);
    let volume = |dest: &str| NamedVolume {
        name: "v".into(),
        dest: dest.into(),
        options: vec![],
        sub_path: None,
    };
    assert_eq!(home(vec![], vec![volume("/home/dev")]), h);
    assert_eq!(
        home(vec![], vec![volume("/home")]),
        w,
        "a volume counts only at the home"
    );
    let mut no_workdir = keep_id_spec();
    no_workdir.work_dir = None;
    assert_eq!(passwd_home("/home/dev", &no_workdir).as_deref(), Some("/"));
}

#[test]
fn what_cannot_be_reproduced_keeps_keep_id() {
    let refused = |f: &dyn Fn(&mut KeepId, &mut SpecGenerator)| {
        let (mut k, mut spec) = (account(), keep_id_spec());
        f(&mut k, &mut spec);
        let before = spec.clone();
        assert!(!k.apply(&mut spec), "{k:?}");
        assert_eq!(spec, before, "unchanged");
    };
    refused(&|_, s| s.user = Some("1000:1001".into()));
    refused(&|_, s| s.user = None);
    refused(&|_, s| s.userns = Some(Namespace::new(NsMode::Private)));
    refused(&|_, s| {
        s.userns = Some(Namespace {
            nsmode: NsMode::KeepId,
            value: Some("uid=1".into()),
        })
    });
    refused(&|k, s| {
        k.gid = 0;
        s.user = Some("1000:0".into())
    });
    refused(&|k, _| k.subuids = 0);
    for home in [
        "/run/user/1000",
        "/dev/x",
        "/proc",
        "home",
        "/home/dev/",
        "/home//dev",
        "/home/../x",
        "/",
    ] {
        refused(&|k, _| k.home = home.into());
    }
    refused(&|k, _| k.full_name = "a$NAME".into());
    refused(&|k, _| k.group_name = "a:b".into());
    refused(&|_, s| s.work_dir = Some("/w:x".into()));
}

#[test]
fn subordinate_ids_are_counted_like_libsubid() {
    let text = "other:1:5\ndev:100000:65536\n# comment\nbroken line\n1000:200000:10\ndev:x:1\ndev:300000:4\n";
    assert_eq!(subid_total(text, "dev", 1000), Some(65550));
    assert_eq!(subid_total(text, "nobody", 4242), None);
    assert_eq!(subid_total("dev:0:4294967295\n", "dev", 1), None, "too many");
}

#[test]
fn only_files_as_the_subid_source() {
    assert!(subids_from_files(""));
    assert!(subids_from_files("passwd: files systemd\nsubid: files\n"));
    assert!(subids_from_files("# subid: sss\n"));
    assert!(!subids_from_files("subid:   sss   # FreeIPA\n"));
}
