use super::*;

fn lookup<'a>(workdir: &'a Path, home: &'a Path, env: &'a dyn Fn(&str) -> Option<String>) -> Lookup<'a> {
    Lookup { workdir, home, env }
}

#[test]
fn values_are_unquoted_and_comments_dropped() {
    let text = "[user]\n\tname = \"Ada  Lovelace\" # comment\n\temail=ada@example.org ; x\n\
                [Commit]\n  GpgSign\n[includeIf \"gitdir:~/Work/\"]\n path = w.inc\n\
                [core] editor = vim \\\n  -n\n";
    let got = lenient(text);
    assert_eq!(
        got,
        [
            ("user.name".into(), "Ada  Lovelace".into()),
            ("user.email".into(), "ada@example.org".into()),
            ("commit.gpgsign".into(), "true".into()),
            ("includeif.gitdir:~/Work/.path".into(), "w.inc".into()),
            ("core.editor".into(), "vim   -n".into()),
        ]
    );
}

#[test]
fn wildmatch_follows_gits_rules() {
    assert!(wildmatch(b"**/work/**", b"/home/u/work/a/.git"));
    assert!(wildmatch(b"/home/*/x", b"/home/u/x"));
    assert!(!wildmatch(b"/home/*/x", b"/home/u/v/x"));
    assert!(wildmatch(b"**/.git", b"/a/.git"));
    assert!(!wildmatch(b"/a/**/b", b"/a/c"));
}

#[test]
fn global_repository_and_conditional_includes_are_read_last_wins() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    let home = root.join("home");
    let repo = home.join("work/proj");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(repo.join("sub")).unwrap();
    std::fs::write(repo.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(
        home.join(".gitconfig"),
        "[user]\nname = Home\nemail = home@example.org\n[includeIf \"gitdir:~/work/\"]\npath = .work\n\
         [includeIf \"gitdir:~/other/\"]\npath = .other\n[credential]\nhelper = store\n",
    )
    .unwrap();
    std::fs::write(home.join(".work"), "[user]\nemail = work@example.org\n").unwrap();
    std::fs::write(home.join(".other"), "[user]\nemail = other@example.org\n").unwrap();
    let env = |_: &str| None;
    let id = resolve(&lookup(&repo.join("sub"), &home, &env), false);
    assert_eq!(id.name.as_deref(), Some("Home"));
    assert_eq!(id.email.as_deref(), Some("work@example.org"));
    // The repository's own config wins for user.*, but its includes and any key that would
    // make ags read a host file are not taken (the agent can write it).
    std::fs::write(
        repo.join(".git/config"),
        "[user]\n\tname = Repo\n\tsigningkey = /etc/x\n[gpg]\n\tformat = ssh\n\
         [includeIf \"onbranch:main\"]\n\tpath = ../branch.inc\n",
    )
    .unwrap();
    std::fs::write(repo.join("branch.inc"), "[user]\nemail = main@example.org\n").unwrap();
    let id = resolve(&lookup(&repo, &home, &env), true);
    assert_eq!(
        (id.name.as_deref(), id.email.as_deref()),
        (Some("Repo"), Some("work@example.org"))
    );
    assert_eq!((id.signing_key.as_deref(), id.note.as_deref()), (None, None));
    // The user's own includeIf onbranch matches the checked-out branch.
    std::fs::write(
        home.join(".work"),
        "[user]\nemail = work@example.org\n[includeIf \"onbranch:main\"]\npath = work/proj/branch.inc\n",
    )
    .unwrap();
    let id = resolve(&lookup(&repo, &home, &env), false);
    assert_eq!(id.email.as_deref(), Some("main@example.org"));
    // A repository config that is a symbolic link is not followed.
    std::fs::write(root.join("elsewhere"), "[user]\nname = Elsewhere\n").unwrap();
    std::fs::remove_file(repo.join(".git/config")).unwrap();
    std::os::unix::fs::symlink(root.join("elsewhere"), repo.join(".git/config")).unwrap();
    let id = resolve(&lookup(&repo, &home, &env), false);
    assert_eq!(id.name.as_deref(), Some("Home"));
    // Nothing else: the config names exactly these keys.
    assert_eq!(
        id.config().iter().map(|(k, _)| *k).collect::<Vec<_>>(),
        ["user.name", "user.email"]
    );
    // GIT_CONFIG_GLOBAL replaces the global files.
    std::fs::write(root.join("g"), "[user]\nname = G\n").unwrap();
    let g = root.join("g").display().to_string();
    let env2 = move |k: &str| (k == "GIT_CONFIG_GLOBAL").then(|| g.clone());
    let id = resolve(&lookup(&root, &home, &env2), false);
    assert_eq!((id.name.as_deref(), id.email.as_deref()), (Some("G"), None));
}

#[test]
fn ssh_signing_is_forwarded_with_the_agent_only_and_never_a_private_key() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path().canonicalize().unwrap();
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(
        home.join(".ssh/id"),
        "-----BEGIN OPENSSH PRIVATE KEY-----\nsecret\n",
    )
    .unwrap();
    std::fs::write(home.join(".ssh/id.pub"), "ssh-ed25519 AAAAC3Nz me@host\n").unwrap();
    std::fs::write(
        home.join(".gitconfig"),
        "[user]\nname = A\nsigningkey = ~/.ssh/id\n[gpg]\nformat = ssh\n[commit]\ngpgsign = true\n",
    )
    .unwrap();
    let env = |_: &str| None;
    let id = resolve(&lookup(&home, &home, &env), true);
    assert_eq!(
        id.signing_key.as_deref(),
        Some("key::ssh-ed25519 AAAAC3Nz me@host")
    );
    assert_eq!(
        (id.gpg_format.as_deref(), id.commit_gpgsign),
        (Some("ssh"), Some(true))
    );
    let id = resolve(&lookup(&home, &home, &env), false);
    assert_eq!((id.signing_key, id.commit_gpgsign), (None, None));
    assert!(id.note.unwrap().contains("--ssh-agent"));
    // A `.pub` that is really a private key is not forwarded.
    std::fs::write(home.join(".ssh/id.pub"), "-----BEGIN OPENSSH PRIVATE KEY-----\n").unwrap();
    let id = resolve(&lookup(&home, &home, &env), true);
    assert!(id.signing_key.is_none() && id.note.unwrap().contains("public key"));
    // OpenPGP signing is left out: there is no gpg-agent in the container.
    std::fs::write(
        home.join(".gitconfig"),
        "[user]\nsigningkey = ABCD\n[commit]\ngpgsign\n",
    )
    .unwrap();
    let id = resolve(&lookup(&home, &home, &env), true);
    assert!(id.commit_gpgsign.is_none() && id.note.unwrap().contains("openpgp"));
}
