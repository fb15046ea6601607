use super::*;
use std::path::Path;

/// The real git, with the untracked cache on (the tests drop it).
fn git(dir: &Path, args: &[&str]) -> String {
    let mut all = vec!["-c", "core.untrackedCache=true"];
    all.extend_from_slice(args);
    super::super::test_git::git(dir, &all)
}

#[test]
fn sha1_matches_the_standard_vectors() {
    let hex = |d: &[u8]| hex::encode(sha1(d));
    assert_eq!(hex(b""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    assert_eq!(hex(b"abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
    let two_blocks = b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    assert_eq!(hex(two_blocks), "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
    assert_eq!(hex(&[b'a'; 1000]), "291e9a6c66994949b57ba5e650361e98fc36b1ba");
}

/// The session-12 attack F4 at the index level: the old object name with the new file's stat
/// data hides a change from `git status`; a forged-free cache-tree and untracked cache are there
/// too. After [`recheck`], git sees the change, and accepts the checksum (`git fsck`).
#[test]
fn a_stat_matching_lie_is_undone_and_the_caches_dropped() {
    for version in ["2", "4"] {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path();
        git(dir, &["init", "-q"]);
        std::fs::create_dir(dir.join("sub")).unwrap();
        std::fs::write(dir.join("Makefile"), "all:\n\techo ok\n").unwrap();
        std::fs::write(dir.join("sub/x"), "x").unwrap();
        git(dir, &["add", "."]);
        git(dir, &["update-index", "--index-version", version]);
        git(dir, &["commit", "-qm", "one"]);
        git(dir, &["status", "--porcelain"]); // writes the untracked cache
        let index = dir.join(".git/index");
        let before = keys(&Parsed::new(&std::fs::read(&index).unwrap()).unwrap());
        // The lie: new content, recorded with the old object name and the new stat data.
        std::fs::write(dir.join("Makefile"), "all:\n\ttouch pwned\n").unwrap();
        // Not racily clean (git re-reads a file as new as the index).
        let touched = std::process::Command::new("touch")
            .args(["-d", "2020-01-01"])
            .arg(dir.join("Makefile"))
            .status()
            .unwrap();
        assert!(touched.success());
        let old = git(dir, &["rev-parse", "HEAD:Makefile"]);
        let attrs = dir.join("attrs");
        std::fs::write(&attrs, "Makefile filter=hide\n").unwrap();
        let clean = format!("filter.hide.clean=git cat-file blob {}", old.trim());
        let attributes = format!("core.attributesFile={}", attrs.display());
        git(dir, &["-c", &attributes, "-c", &clean, "add", "Makefile"]);
        std::fs::remove_file(&attrs).unwrap();
        assert_eq!(git(dir, &["status", "--porcelain"]), "", "the lie holds");
        let bytes = std::fs::read(&index).unwrap();
        assert!(Parsed::new(&bytes).unwrap().extension(b"TREE").is_some());
        let Recheck::Rewrite(new) = recheck(&Parsed::new(&bytes).unwrap(), &before) else {
            panic!("version {version}: not rewritten");
        };
        let parsed = Parsed::new(&new).unwrap();
        assert!(CACHES.iter().all(|c| parsed.extension(c).is_none()));
        std::fs::write(&index, &new).unwrap();
        assert_eq!(
            git(dir, &["status", "--porcelain"]),
            "M Makefile",
            "version {version}"
        );
        git(dir, &["fsck", "--no-dangling"]);
        // Unchanged since: nothing to do.
        let now = std::fs::read(&index).unwrap();
        let now = Parsed::new(&now).unwrap();
        let again = recheck(&now, &keys(&now));
        assert!(matches!(again, Recheck::Keep | Recheck::Rewrite(_)));
    }
}

#[test]
fn a_split_index_is_reported() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    git(dir, &["init", "-q"]);
    std::fs::write(dir.join("a"), "a").unwrap();
    git(dir, &["add", "a"]);
    git(dir, &["update-index", "--split-index"]);
    let bytes = std::fs::read(dir.join(".git/index")).unwrap();
    assert_eq!(
        recheck(&Parsed::new(&bytes).unwrap(), &BTreeSet::new()),
        Recheck::Split
    );
}
