use super::*;
use std::os::unix::fs::MetadataExt;

fn mkdir(path: &Path) {
    std::fs::create_dir_all(path).unwrap();
}

fn touch(path: &Path) {
    mkdir(path.parent().unwrap());
    std::fs::write(path, "x").unwrap();
}

fn listed(records: &[Record], root: &Path) -> Vec<String> {
    records
        .iter()
        .filter(|r| matches!(r.met, Met::Listed(_)))
        .map(|r| r.path.strip_prefix(root).unwrap().display().to_string())
        .collect()
}

/// Many directories, a few of them git dirs: only those leave records, each after every
/// directory above it (the order one walk on one thread meets them in), and every entry counts.
#[test]
#[allow(clippy::unnecessary_cast)] // `stat`'s field types vary by architecture
fn only_what_is_judged_is_kept_in_depth_first_order() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    for i in 0..300 {
        touch(&root.join(format!("node_modules/p{}/d{i}/index.js", i % 7)));
    }
    for repo in ["", "node_modules/p3/d10/", "a/b/", "a/b/c/d/"] {
        touch(&root.join(format!("{repo}.git/HEAD")));
        mkdir(&root.join(format!("{repo}.git/objects/ab")));
        touch(&root.join(format!("{repo}.git/objects/ab/cdef")));
    }
    touch(&root.join("sub/.git"));
    let (records, entries) = walk(root, 0, 7);
    let mut paths = listed(&records, root);
    assert_eq!(records.len(), paths.len());
    for (i, p) in paths.iter().enumerate() {
        let above = Path::new(p).ancestors().skip(1).map(|a| a.display().to_string());
        for a in above.filter(|a| paths.contains(a)) {
            assert!(paths[..i].contains(&a), "{a} after {p}: {paths:?}");
        }
    }
    paths.sort();
    let expected = [
        ".git",
        ".git/objects/ab",
        "a/b/.git",
        "a/b/.git/objects/ab",
        "a/b/c/d/.git",
        "a/b/c/d/.git/objects/ab",
        "node_modules/p3/d10/.git",
        "node_modules/p3/d10/.git/objects/ab",
        "sub",
    ];
    assert_eq!(paths, expected);
    assert_eq!(entries, 7 + walkdir_count(root));
    let sub = records.iter().find(|r| r.path == root.join("sub")).unwrap();
    let Met::Listed(l) = &sub.met else { panic!() };
    let [entry] = &l.entries[..] else { panic!() };
    assert_eq!((&*entry.name, entry.kind), (&b".git"[..], Kind::File));
    assert!(entry.stat.is_none());
    let store = records
        .iter()
        .find(|r| r.path == root.join(".git/objects/ab"))
        .unwrap();
    let Met::Listed(l) = &store.met else { panic!() };
    let file = std::fs::symlink_metadata(root.join(".git/objects/ab/cdef")).unwrap();
    let stat = l.entries[0].stat.as_ref().unwrap();
    assert_eq!(
        (stat.st_ino as u64, stat.st_size as u64),
        (file.ino(), file.len())
    );
}

fn walkdir_count(dir: &Path) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        n += 1;
        if e.file_type().unwrap().is_dir() {
            n += walkdir_count(&e.path());
        }
    }
    n
}

/// A link to a directory is an entry, never walked into, wherever it leads.
#[test]
fn links_are_not_followed() {
    let t = tempfile::tempdir().unwrap();
    let (root, outside) = (t.path().join("root"), t.path().join("outside"));
    touch(&outside.join(".git/HEAD"));
    mkdir(&root);
    std::os::unix::fs::symlink(&outside, root.join("l")).unwrap();
    std::os::unix::fs::symlink(outside.join(".git"), root.join(".git")).unwrap();
    let (records, _) = walk(&root, 0, 0);
    assert_eq!(listed(&records, &root), [""]);
    let Met::Listed(l) = &records[0].met else { panic!() };
    assert_eq!(
        (&*l.entries[0].name, l.entries[0].kind),
        (&b".git"[..], Kind::Link)
    );
}

/// What cannot be opened as a directory, what lies too deep, and the walk past its limit of
/// entries each leave a record saying so.
#[test]
fn unlisted_deep_and_stopped_are_records() {
    let t = tempfile::tempdir().unwrap();
    let file = t.path().join("file");
    touch(&file);
    let (records, _) = walk(&file, 0, 0);
    assert!(matches!(
        records[..],
        [Record {
            met: Met::Unlisted(_),
            ..
        }]
    ));
    let deep = t.path().join("deep");
    mkdir(&deep.join("a/b"));
    let (records, _) = walk(&deep, MAX_DEPTH, 0);
    let met: Vec<_> = records.iter().map(|r| (&r.met, r.path.clone())).collect();
    assert!(matches!(met[..], [(Met::Deep, ref p)] if *p == deep.join("a")));
    let (records, _) = walk(&deep, 0, MAX_ENTRIES);
    assert!(matches!(
        records[..],
        [Record {
            met: Met::Stopped,
            ..
        }]
    ));
    let (records, entries) = walk(&deep, 0, MAX_ENTRIES + 1);
    assert!(records.is_empty() && entries == MAX_ENTRIES + 1);
}
