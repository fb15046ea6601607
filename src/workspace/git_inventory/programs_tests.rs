use super::*;

#[test]
fn comments_name_no_program() {
    let text = "#!/bin/sh\n# keep docs/usage.md in sync\nexec ./tools/lint # not ./x/y\necho a#b/c\n";
    let text = uncommented(text);
    let w: Vec<_> = words(&text).filter(|w| w.contains('/')).collect();
    assert_eq!(w, ["./tools/lint", "a#b/c"]);
}

#[test]
fn scripts_name_files_after_cd_beside_themselves_in_globs_and_after_runners() {
    let dir = tempfile::tempdir().unwrap();
    let top = dir.path();
    for f in [
        "web/lint",
        "checks/a.sh",
        "checks/b.sh",
        "checks/c.txt",
        "scripts/common.sh",
    ] {
        std::fs::create_dir_all(top.join(f).parent().unwrap()).unwrap();
        std::fs::write(top.join(f), "").unwrap();
    }
    let text = "cd web && ./lint\nfor f in checks/*.sh; do sh \"$f\"; done\n. \"$(dirname \"$0\")/common.sh\"\nsource env.sh\n";
    let named = named_paths(text, top, &top.join("scripts"));
    for want in [
        "web/lint",
        "checks/a.sh",
        "checks/b.sh",
        "scripts/common.sh",
        "env.sh",
    ] {
        assert!(named.contains(&top.join(want)), "{want} not named: {named:?}");
    }
    assert!(!named.contains(&top.join("checks/c.txt")));
}

#[test]
fn a_huge_script_names_a_bounded_number_of_paths() {
    let text = "cd d\n".repeat(100) + &"a/b ".repeat(100_000);
    let named = named_paths(&text, Path::new("/t"), Path::new("/t/s"));
    assert!(named.len() <= MAX_NAMED + MAX_BASES, "{}", named.len());
}

#[test]
fn patterns_match_as_the_shell_does_in_linear_time() {
    assert!(matches(b"*.sh", b"a.sh"));
    assert!(matches(b"pre-commit.d*", b"pre-commit.d"));
    assert!(matches(b"a?[xy]c*", b"abxcdef"));
    assert!(!matches(b"*.sh", b"a.txt"));
    assert!(!matches(b"a", b""));
    let long = vec![b'a'; 5000];
    assert!(!matches(b"*a*a*a*a*a*a*a*a*b", &long));
}

#[test]
fn commands_are_known_by_their_keys() {
    assert!(names_a_command("filter.tidy.clean", "./t.sh"));
    assert!(names_a_command("alias.t", "!sh tools/t.sh"));
    assert!(!names_a_command("alias.co", "checkout"));
    assert!(names_a_command("diff.x.textconv", "x"));
    assert!(!names_a_command("user.name", "./t.sh"));
}

#[test]
fn words_drop_quotes_and_shell_punctuation() {
    let w: Vec<_> = words("exec \"./tools/lint\" --config=./c.toml; cd .. && sh 'a b'").collect();
    assert_eq!(
        w,
        [
            "exec",
            "./tools/lint",
            "--config",
            "./c.toml",
            "cd",
            "..",
            "sh",
            "a",
            "b"
        ]
    );
}
