//! Property tests of the prepare-response validator against independent oracles:
//!
//! - every destination `Destination::try_from` accepts is judged safe by a separate, string-split
//!   oracle written from the rules in REFERENCE §3 (it does not call the validator's helpers or
//!   read its constants), and the two agree exactly;
//! - `parse_response` never panics, whatever the bytes;
//! - error messages never contain a planted secret value.

use ags::hooks::policy::Destination;
use ags::hooks::validate::parse_response;
use proptest::prelude::*;

/// The protected entries under /home/dev, copied from the reference list (not from the crate).
const ORACLE_HOME_PROTECTED: &[&str] = &[
    ".config",
    ".local",
    ".pi",
    ".claude",
    ".claude.json",
    ".gitconfig",
    ".npmrc",
    ".codex",
    ".gemini",
    ".opencode",
    ".cargo",
    ".cache",
    ".ssh",
    ".npm-global",
    "go",
    ".bashrc",
    ".bash_profile",
    ".profile",
];

/// The safety property: strictly below an allowed root, no empty/`.`/`..` segments, no
/// forbidden characters, not a protected location.
fn oracle_safe(s: &str) -> bool {
    let Some(rest) = s.strip_prefix('/') else {
        return false;
    };
    if s.chars().any(|c| matches!(c, '\0' | '\n' | '\r' | ':')) {
        return false;
    }
    let parts: Vec<&str> = rest.split('/').collect();
    if parts.iter().any(|p| p.is_empty() || *p == "." || *p == "..") {
        return false;
    }
    let below: &[&str] = match parts.as_slice() {
        ["tmp", below @ ..] | ["workspace", below @ ..] => below,
        ["home", "dev", below @ ..] => below,
        _ => return false,
    };
    let Some(first) = below.first() else { return false };
    if parts[0] == "tmp" && first.starts_with("ags-") {
        return false;
    }
    let home = parts[0] == "home";
    !(home && (first.starts_with('.') || ORACLE_HOME_PROTECTED.contains(first)))
}

/// The exact rule: the safety property plus the documented length bounds.
fn oracle_exact(s: &str) -> bool {
    oracle_safe(s) && s.len() <= 4095 && s.split('/').all(|p| p.len() <= 255)
}

fn tricky_segment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just(".".to_owned()),
        Just("..".to_owned()),
        Just("...".to_owned()),
        Just("tmp".to_owned()),
        Just("workspace".to_owned()),
        Just("home".to_owned()),
        Just("dev".to_owned()),
        Just(".ssh".to_owned()),
        Just(".config".to_owned()),
        Just(".claude.json".to_owned()),
        Just("go".to_owned()),
        Just("GO".to_owned()),
        Just("golang".to_owned()),
        Just("ags-x".to_owned()),
        Just("ags-".to_owned()),
        Just("ags".to_owned()),
        Just(".hidden".to_owned()),
        Just("x:y".to_owned()),
        Just("a\nb".to_owned()),
        Just("a\rb".to_owned()),
        Just("nul\0".to_owned()),
        Just("é ü".to_owned()),
        Just("x".repeat(256)),
        "[a-z.]{1,5}",
        "[ -~]{0,6}",
    ]
}

fn root_prefix() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        6 => prop::sample::select(vec!["/tmp", "/workspace", "/home/dev"]),
        2 => prop::sample::select(vec!["", "/", "/home", "/home/dev/.", "//tmp", "tmp", "/Tmp", "/opt"]),
    ]
}

fn tricky_destination() -> impl Strategy<Value = String> {
    let segs = prop::collection::vec(prop_oneof![2 => "[a-z]{1,4}", 3 => tricky_segment()], 0..5);
    (root_prefix(), segs, prop::bool::weighted(0.1)).prop_map(|(prefix, segs, trail)| {
        let mut s = prefix.to_owned();
        for seg in segs {
            s.push('/');
            s.push_str(&seg);
        }
        if trail {
            s.push('/');
        }
        s
    })
}

fn any_destination() -> impl Strategy<Value = String> {
    prop_oneof![4 => tricky_destination(), 1 => "\\PC{0,40}", 1 => "/[a-z/.]{0,30}"]
}

/// A syntactically valid response whose single file and mount use the given destinations.
fn response_with(file_dest: &str, mount_dest: &str) -> String {
    let (f, m) = (
        serde_json::to_string(file_dest).unwrap(),
        serde_json::to_string(mount_dest).unwrap(),
    );
    format!(
        r#"{{"version":1,"files":[{{"destination":{f},"content":"x"}}],
            "mounts":[{{"source":"/srv/data","destination":{m},"mode":"rw"}}]}}"#
    )
}

const SPEC_EXAMPLE: &[u8] = include_bytes!("../fixtures/responses/valid-spec-example.json");

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn accepted_destinations_are_safe(s in any_destination()) {
        let accepted = Destination::try_from(s.as_str()).is_ok();
        if accepted {
            prop_assert!(oracle_safe(&s), "validator accepted unsafe {s:?}");
        }
        prop_assert_eq!(accepted, oracle_exact(&s), "validator and oracle disagree on {:?}", s);
    }

    #[test]
    fn parsed_responses_only_hold_safe_destinations(a in any_destination(), b in any_destination()) {
        if let Ok(c) = parse_response(response_with(&a, &b).as_bytes()) {
            for d in c.files.iter().map(|f| &f.destination).chain(c.mounts.iter().map(|m| &m.destination)) {
                prop_assert!(oracle_safe(d.as_str()), "{d:?}");
            }
            let nested = b.starts_with(&(a.clone() + "/")) || a.starts_with(&(b.clone() + "/"));
            prop_assert!(!nested, "nested destinations accepted: {:?} {:?}", a, b);
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        let _ = parse_response(&bytes);
    }

    #[test]
    fn mutated_spec_example_never_panics(
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..8)
    ) {
        let mut doc = SPEC_EXAMPLE.to_vec();
        for (at, byte, op) in edits {
            let i = at.index(doc.len() + 1);
            match op {
                0 => doc.insert(i, byte),
                1 if i < doc.len() => { doc.remove(i); }
                _ if i < doc.len() => doc[i] = byte,
                _ => doc.push(byte),
            }
        }
        let _ = parse_response(&doc);
    }

    #[test]
    fn planted_secret_never_appears_in_errors(slot in 0usize..SECRET_DOCS.len(), cut in 0usize..400) {
        let doc = SECRET_DOCS[slot].replace("SECRET", SENTINEL);
        for candidate in [doc.clone(), doc[..cut.min(doc.len())].to_owned()] {
            if let Err(e) = parse_response(candidate.as_bytes()) {
                prop_assert!(!e.to_string().contains("SENTINEL"), "{e}");
                prop_assert!(!format!("{e:?}").contains("SENTINEL"), "{e:?}");
            }
        }
    }
}

const SENTINEL: &str = "s3cr3t-SENTINEL";

/// Responses that are invalid because of (or next to) a secret value.
const SECRET_DOCS: &[&str] = &[
    r#"{"version":1,"env":{"K":"SECRET\nmore"}}"#,
    r#"{"version":1,"env":{"K":"SECRET\u0000"}}"#,
    r#"{"version":1,"env":{"K":{"op":"op://vault/SECRET"}}}"#,
    r#"{"version":1,"env":{"K":{"op":"SECRET"}}}"#,
    r#"{"version":1,"env":{"K":{"op":"op://v/i/f","x":"SECRET"}}}"#,
    r#"{"version":1,"env":{"K":"SECRET","K":"other"}}"#,
    r#"{"version":1,"env":{"HOME":"SECRET"}}"#,
    r#"{"version":1,"env":"SECRET"}"#,
    r#"{"version":"SECRET"}"#,
    r#"{"version":2,"env":{"K":"SECRET"}}"#,
    r#"{"version":1,"files":[{"destination":"/etc/x","content":"SECRET"}]}"#,
    r#"{"version":1,"files":[{"destination":"/tmp/a","content":"SECRET"},{"destination":"/tmp/a/b","content":"SECRET"}]}"#,
    r#"{"version":1,"files":[{"destination":"/tmp/a","content":["SECRET"]}]}"#,
    r#"{"version":1,"files":[{"destination":"/tmp/a","content":"SECRET","mode":"SECRET"}]}"#,
    r#"{"version":1,"mounts":[{"source":"/s","destination":"/tmp/a","mode":"SECRET"}]}"#,
    r#"{"version":1,"mounts":[{"source":"SECRET","destination":"/tmp/a","mode":"ro"}]}"#,
    r#"{"version":1,"env":{"K":"SECRET"}} SECRET"#,
    r#"{"version":1,"env":{"K":"SECRET"}"#,
];

#[test]
fn secrets_in_invalid_responses_are_not_echoed() {
    for doc in SECRET_DOCS {
        let doc = doc.replace("SECRET", SENTINEL);
        let err = parse_response(doc.as_bytes()).expect_err(&doc);
        let (shown, debug) = (err.to_string(), format!("{err:?}"));
        assert!(
            !shown.contains("SENTINEL") && !debug.contains("SENTINEL"),
            "{doc}\n{shown}\n{debug}"
        );
    }
}

#[test]
fn file_content_over_the_bound_is_not_echoed() {
    let content = SENTINEL.repeat(1024 * 1024 / SENTINEL.len() + 1);
    let doc = format!(r#"{{"version":1,"files":[{{"destination":"/tmp/a","content":"{content}"}}]}}"#);
    let err = parse_response(doc.as_bytes()).unwrap_err().to_string();
    assert!(err.starts_with("$: document is "), "{err}");
    assert!(!err.contains("SENTINEL"));
}

#[test]
fn oracle_self_check() {
    for ok in ["/tmp/a", "/workspace/x/.y", "/home/dev/data", "/home/dev/golang"] {
        assert!(oracle_exact(ok), "{ok}");
    }
    for bad in [
        "/tmp",
        "/home/dev/go/x",
        "/home/dev/.x",
        "/tmp/ags-1",
        "/tmp//a",
        "/tmp/a/",
        "/opt/a",
    ] {
        assert!(!oracle_exact(bad), "{bad}");
    }
}
