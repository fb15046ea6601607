//! Tests of `parse_response`: the committed fixtures with their full error messages, and the
//! rules between entries of one response.

use super::*;

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/responses/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn error_of(bytes: &[u8]) -> String {
    parse_response(bytes).unwrap_err().to_string()
}

#[test]
fn spec_example_parses() {
    let c = parse_response(&fixture("valid-spec-example.json")).unwrap();
    let keys: Vec<(&str, &str)> = c.env.iter().map(|(k, v)| (k.as_str(), v.kind_name())).collect();
    assert_eq!(
        keys,
        [("SERVICE_URL", "literal"), ("SERVICE_TOKEN", "op reference")]
    );
    match &c.env[1].1 {
        EnvValue::Op(r) => assert_eq!(r.as_str(), "op://Development/service/password"),
        other => panic!("{other:?}"),
    }
    assert_eq!(c.files.len(), 1);
    assert_eq!(c.files[0].destination.as_str(), "/tmp/development-client.json");
    assert_eq!(c.files[0].content, "{\"timeout\":10}\n");
    assert_eq!(
        c.mounts,
        [HookMount {
            source: HostSource::try_from("/absolute/host/generated-data").unwrap(),
            destination: Destination::try_from("/workspace/service-data").unwrap(),
            mode: MountMode::Ro,
        }]
    );
}

#[test]
fn minimal_response_is_empty() {
    assert_eq!(
        parse_response(&fixture("valid-minimal.json")).unwrap(),
        Contribution::default()
    );
}

#[test]
fn later_entries_win_and_mounts_come_after_files() {
    let c = parse_response(&fixture("valid-later-entries-win.json")).unwrap();
    assert_eq!(c.files.len(), 1);
    assert_eq!(c.files[0].destination.as_str(), "/tmp/a.json");
    assert_eq!(c.files[0].content, "{\"later\":true}");
    assert_eq!(c.mounts.len(), 1);
    assert_eq!(c.mounts[0].destination.as_str(), "/workspace/shared");
    assert!(matches!(&c.env[0].1, EnvValue::Literal(l) if l.as_str().is_empty()));
}

#[test]
fn invalid_fixtures_render_full_messages() {
    let cases = [
        (
            "invalid-extra-field.json",
            "$.files[0].mode: unknown field; allowed here: `destination`, `content`",
        ),
        (
            "invalid-duplicate-nested-key.json",
            "$.env.SERVICE_URL: duplicate object key; every key may appear only once per object",
        ),
        (
            "invalid-trailing-garbage.json",
            "$: invalid JSON: trailing characters at line 2 column 1; print exactly one JSON document",
        ),
        (
            "invalid-version-2.json",
            "$.version: unsupported protocol version; this ags speaks version 1, print \"version\": 1",
        ),
        (
            "invalid-reserved-key-home.json",
            "$.env.HOME: `HOME` is reserved for AGS and the agent runtime; hooks cannot set it, choose \
             another name",
        ),
        (
            "invalid-reserved-prefix-ags.json",
            "$.env.AGS_X: names starting with `AGS_` are reserved for AGS and its tools; choose another name",
        ),
        (
            "invalid-multiline-value.json",
            "$.env.CERT: literal values must be a single line without NUL; this one contains a line feed \
             (value not shown), remove it or deliver multi-line data as a generated file",
        ),
        (
            "invalid-bad-op-ref.json",
            "$.env.TOKEN.op: not a 1Password reference (value not shown): use op://VAULT/ITEM/FIELD or \
             op://VAULT/ITEM/SECTION/FIELD, each segment non-empty and made of ASCII letters, digits, \
             space, `_`, `-`, `.` or `%`",
        ),
        (
            "invalid-destination-home-ssh.json",
            "$.files[0].destination: destination overlaps the protected agent configuration path \
             /home/dev/.ssh; choose a data path",
        ),
        (
            "invalid-destination-tmp-ags.json",
            "$.files[0].destination: destinations under /tmp/ags-* are AGS runtime resources; choose \
             another /tmp name",
        ),
        (
            "invalid-destination-etc-passwd.json",
            "$.mounts[0].destination: destination must be strictly below /tmp, /workspace or /home/dev; \
             choose a data path there",
        ),
        (
            "invalid-destination-dotdot.json",
            "$.mounts[0].destination: destination must be normalized: a `..` segment; write the path \
             without it",
        ),
        (
            "invalid-nested-destinations.json",
            "$.files[0].destination: destination /workspace/data/config.json is nested inside destination \
             /workspace/data of $.mounts[0].destination; give each file and mount an independent \
             (non-nested) destination",
        ),
        (
            "invalid-null-section.json",
            "$.env: wrong type: found null, expected an object",
        ),
    ];
    for (name, message) in cases {
        assert_eq!(error_of(&fixture(name)), message, "{name}");
    }
}

#[test]
fn every_fixture_is_covered() {
    let dir = format!("{}/tests/fixtures/responses", env!("CARGO_MANIFEST_DIR"));
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let parsed = parse_response(&fixture(&name));
        assert_eq!(parsed.is_ok(), name.starts_with("valid-"), "{name}: {parsed:?}");
    }
}

#[test]
fn shape_errors() {
    assert_eq!(
        error_of(b"[]"),
        "$: wrong type: found an array, expected a prepare response object"
    );
    assert_eq!(error_of(b"{}"), "$: missing required field `version`");
    assert_eq!(
        error_of(br#"{"version":1,"files":["/tmp/x"]}"#),
        "$.files[0]: wrong type: found a string, expected a file object with `destination` and `content`"
    );
    assert_eq!(
        error_of(br#"{"version":1,"env":{"A":5}}"#),
        "$.env.A: wrong type: found a number, expected a string or an object {\"op\": \
         \"op://VAULT/ITEM/FIELD\"}"
    );
    assert_eq!(
        error_of(br#"{"version":1,"env":{"A":{"op":"op://a/b/c","x":1}}}"#),
        "$.env.A.x: unknown field; allowed here: `op`"
    );
    assert_eq!(
        error_of(br#"{"version":1,"mounts":[{"source":"/a","destination":"/tmp/a","mode":"rwx"}]}"#),
        "$.mounts[0].mode: unsupported value; allowed: `ro`, `rw`"
    );
    assert_eq!(
        error_of(br#"{"version":1,"mounts":[{"source":"rel","destination":"/tmp/a","mode":"ro"}]}"#),
        "$.mounts[0].source: mount source must be an absolute path starting with `/`"
    );
    assert_eq!(
        error_of(br#"{"version":"1"}"#),
        "$.version: wrong type: found a string, expected a non-negative integer"
    );
}

#[test]
fn nested_destinations_in_either_order_and_exact_repeats() {
    let doc = br#"{"version":1,"files":[{"destination":"/tmp/a","content":""}],
        "mounts":[{"source":"/s","destination":"/tmp/a/b/c","mode":"ro"}]}"#;
    assert_eq!(
        error_of(doc),
        "$.mounts[0].destination: destination /tmp/a/b/c is nested inside destination /tmp/a of \
         $.files[0].destination; give each file and mount an independent (non-nested) destination"
    );
    let siblings = br#"{"version":1,"files":[{"destination":"/tmp/a","content":""},
        {"destination":"/tmp/ab","content":""},{"destination":"/tmp/a","content":"x"}]}"#;
    let c = parse_response(siblings).unwrap();
    let dests: Vec<&str> = c.files.iter().map(|f| f.destination.as_str()).collect();
    assert_eq!(dests, ["/tmp/ab", "/tmp/a"]);
}

#[test]
fn file_size_bound() {
    let content = "x".repeat(MAX_FILE_BYTES - 100);
    let doc = format!(r#"{{"version":1,"files":[{{"destination":"/tmp/big","content":"{content}"}}]}}"#);
    assert_eq!(
        parse_response(doc.as_bytes()).unwrap().files[0].content.len(),
        MAX_FILE_BYTES - 100
    );
    let wire = PrepareResponse {
        version: 1,
        env: None,
        files: Some(vec![FileWire {
            destination: "/tmp/big".into(),
            content: "x".repeat(MAX_FILE_BYTES + 1),
        }]),
        mounts: None,
    };
    assert_eq!(
        validate(wire).unwrap_err().to_string(),
        "$.files[0].content: file content is 1048577 bytes, over the 1048576-byte limit; mount a host \
         file instead"
    );
}

#[test]
fn debug_output_redacts_values() {
    let doc = br#"{"version":1,"env":{"A":"s3cr3t-SENTINEL","B":{"op":"op://v/s3cr3t-SENTINEL/f"}},
        "files":[{"destination":"/tmp/f","content":"s3cr3t-SENTINEL"}]}"#;
    let debug = format!("{:?}", parse_response(doc).unwrap());
    assert!(!debug.contains("SENTINEL"), "{debug}");
    assert!(debug.contains("EnvLiteral(<redacted, 15 bytes>)"), "{debug}");
}

#[test]
fn env_entries_longer_than_linux_accepts_are_refused_naming_the_key() {
    let fits = "v".repeat(MAX_ENV_ENTRY_BYTES - "BIG=".len());
    let doc = |v: &str| format!(r#"{{"version": 1, "env": {{"BIG": "{v}"}}}}"#);
    assert!(parse_response(doc(&fits).as_bytes()).is_ok());
    let over = format!("{fits}S");
    let err = error_of(doc(&over).as_bytes());
    assert_eq!(
        err,
        "$.env.BIG: `BIG=VALUE` is 131072 bytes, over the 131071-byte limit of one environment entry \
         (Linux refuses to start a program with a longer one; value not shown); deliver large data \
         as a generated file"
    );
}

#[test]
fn mount_sources_are_normalised_not_refused() {
    let source_of = |src: &str| {
        let json = format!(
            r#"{{"version":1,"mounts":[{{"source":{},"destination":"/tmp/a","mode":"ro"}}]}}"#,
            serde_json::to_string(src).unwrap()
        );
        parse_response(json.as_bytes()).map(|c| c.mounts[0].source.as_str().to_string())
    };
    for (written, normal) in [
        ("/data/", "/data"),
        ("/a//b", "/a/b"),
        ("//a/./b//", "/a/b"),
        ("/", "/"),
        ("//", "/"),
        ("/./", "/"),
        ("/a/...", "/a/..."),
    ] {
        assert_eq!(source_of(written).unwrap(), normal, "{written}");
    }
    for refused in ["/a/../b", "/a/..", "a//b", "/a:b/"] {
        assert!(source_of(refused).is_err(), "{refused}");
    }
    assert_eq!(normalize_source("rel//x/".into()), "rel//x/");
}

#[test]
fn version_must_be_written_as_the_integer_one() {
    for bad in ["1.0", "1e0", "1.5", "2", "-1"] {
        let doc = format!(r#"{{"version":{bad}}}"#);
        assert!(parse_response(doc.as_bytes()).is_err(), "{bad}");
    }
    // JSON Schema compares numbers by value, so the schema can only say it.
    let schema = serde_json::to_value(super::super::schema::schema(
        crate::config::HookEvent::Prepare,
        crate::hooks::schema::SchemaSide::Output,
    ))
    .unwrap();
    let version = &schema["properties"]["version"];
    assert_eq!(version["const"], 1);
    assert!(
        version["description"].as_str().unwrap().contains("refuses `1.0`"),
        "{version}"
    );
}
