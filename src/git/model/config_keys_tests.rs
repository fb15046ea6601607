use super::*;

/// The keys of [`entries`].
fn keys(text: &[u8]) -> Result<Vec<String>, ConfigError> {
    Ok(entries(text)?.into_iter().map(|(k, _)| k).collect())
}

#[test]
fn keys_are_read_as_git_reads_them() {
    let text = "\u{feff}# comment\n[core]\n\trepositoryformatversion = 0\n\tbare\n\
        [remote \"Origin\"]  url = \"a;b\" ; trailing\n\tfetch = +refs/heads/*:refs/remotes/origin/* \\\n  [core]\n\
        [Branch.main] remote = origin\n";
    assert_eq!(
        keys(text.as_bytes()).unwrap(),
        [
            "core.repositoryformatversion",
            "core.bare",
            "remote.Origin.url",
            "remote.Origin.fetch",
            "branch.main.remote"
        ]
    );
    // On one line with the header, after a continuation: still keys git reads.
    let text = "[core] fsmonitor = \"x\"\n[alias]\n\tst = \"!sh -c \\\n x\"\n";
    assert_eq!(keys(text.as_bytes()).unwrap(), ["core.fsmonitor", "alias.st"]);
}

#[test]
fn values_are_decoded_as_git_decodes_them() {
    let text = "[a]\n\tb =  x  \"y ;z\" \\\n w ; c\n\tc\n\td = \"\\t\\\"\"\n";
    let got = entries(text.as_bytes()).unwrap();
    assert_eq!(
        got,
        [
            ("a.b".to_string(), Some(b"x  y ;z  w".to_vec())),
            ("a.c".to_string(), None),
            ("a.d".to_string(), Some(b"\t\"".to_vec()))
        ]
    );
}

#[test]
fn urls_that_start_a_program_are_risky() {
    for url in [
        "ext::sh -c touch% x",
        "evil::x",
        "fd::3",
        "Evil://x/y",
        "git-remote-x://h",
        "HTTPS://h",
        "File:///x",
    ] {
        assert!(runs_a_helper(url.as_bytes()), "{url}");
    }
    for url in [
        "https://h/x::y",
        "ssh://git@h/x",
        "git@h:x",
        "/srv/x",
        "../x",
        "file:///x",
    ] {
        assert!(!runs_a_helper(url.as_bytes()), "{url}");
    }
    let text =
        "[remote \"o\"]\n\turl = evil::x\n\tpushurl = https://h\n[submodule \"s\"]\n\turl = \"ext::sh\"\n";
    assert_eq!(
        risky_keys(text.as_bytes()),
        [
            "remote.o.url (a URL git hands to a git-remote-* program)",
            "submodule.s.url (a URL git hands to a git-remote-* program)"
        ]
    );
}

#[test]
fn what_git_would_refuse_is_refused() {
    for bad in [
        "fsmonitor = x\n",
        "[core\n",
        "[core \"x]\n",
        "[core \"x\" ]\n",
        "[core]\n\tfsmonitor # x\n",
        "[core]\n\tfsmonitor = \"x\n\"\n",
        "[core]\n\tfsmonitor = \\q\n",
        "[core]\n\t-x = 1\n",
        "[]\n",
    ] {
        assert!(keys(bad.as_bytes()).is_err(), "{bad:?}");
        assert!(
            risky_keys(bad.as_bytes())[0].starts_with("(unparsable"),
            "{bad:?}"
        );
    }
}

#[test]
fn only_settings_that_never_name_a_program_are_harmless() {
    let fresh_clone = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\
        \tlogallrefupdates = true\n\tworktree = ../../../sub\n[remote \"origin\"]\n\turl = /x\n\
        \tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n\
        [submodule \"sub\"]\n\turl = /y\n\tactive = true\n[extensions]\n\tworktreeConfig = true\n";
    assert_eq!(risky_keys(fresh_clone.as_bytes()), Vec::<String>::new());
    let planted = "[core]\n\tfsmonitor = x\n\thooksPath = /tmp\n\tpager = x\n[include]\n\tpath = ../c\n\
        [submodule \"s\"]\n\tupdate = !x\n[protocol \"ext\"]\n\tallow = always\n[core \"x\"]\n\tbare = true\n\
        [diff \"x\"]\n\ttextconv = x\n[filter \"lfs\"]\n\tclean = x\n";
    assert_eq!(
        risky_keys(planted.as_bytes()),
        [
            "core.fsmonitor",
            "core.hookspath",
            "core.pager",
            "include.path",
            "submodule.s.update",
            "protocol.ext.allow",
            "core.x.bare",
            "diff.x.textconv",
            "filter.lfs.clean"
        ]
    );
}

#[test]
fn gc_settings_are_named_one_by_one_so_its_hook_is_risky() {
    // Session-14 attack F1: the command `git gc --auto` runs, reached from `git commit`.
    let planted = "[gc]\n\tauto = 1\n\tpruneExpire = now\n\trecentObjectsHook = touch x\n\trepackFilterTo = /x\n\
        [pack]\n\twindow = 9\n\tfutureKey = 1\n[advice]\n\tdetachedHead = false\n";
    assert_eq!(
        risky_keys(planted.as_bytes()),
        ["gc.recentobjectshook", "gc.repackfilterto", "pack.futurekey"]
    );
}

#[test]
fn lenient_reading_skips_only_what_git_would_refuse() {
    let text = "[core]\n\tbad \\q = x\n\tpager = less\n[bad\nname = x\n\
                [user]\n\tname = \"A\\qB\"\n\temail = a@b\n\tflag\n";
    let want = [
        ("core.pager", "less"),
        ("user.email", "a@b"),
        ("user.flag", "true"),
    ];
    let want: Vec<(String, String)> = want.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    assert_eq!(lenient(text), want);
}
