//! Tests of the static contribution rules.

use super::*;

fn dest(s: &str) -> String {
    match Destination::try_from(s) {
        Ok(_) => "ok".into(),
        Err(e) => e.to_string(),
    }
}

#[test]
fn env_keys() {
    assert!(EnvKey::try_from("SERVICE_URL").is_ok());
    assert!(EnvKey::try_from("_x9").is_ok());
    for allowed in [
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "OPENCODE_API_KEY",
        "AGS",
        "home",
    ] {
        assert!(EnvKey::try_from(allowed).is_ok(), "{allowed}");
    }
    for bad in ["", "9A", "A-B", "A B", "É"] {
        assert_eq!(EnvKey::try_from(bad), Err(EnvKeyError::Syntax), "{bad:?}");
    }
    assert_eq!(
        EnvKey::try_from("HOME").unwrap_err().to_string(),
        "`HOME` is reserved for AGS and the agent runtime; hooks cannot set it, choose another name"
    );
    assert_eq!(
        EnvKey::try_from("AGS_X").unwrap_err().to_string(),
        "names starting with `AGS_` are reserved for AGS and its tools; choose another name"
    );
    assert!(matches!(
        EnvKey::try_from("CLAUDE_CODE_X"),
        Err(EnvKeyError::ReservedPrefix { prefix: "CLAUDE_" })
    ));
}

#[test]
fn code_running_git_proxy_and_endpoint_keys_are_reserved() {
    for name in [
        "GIT_SSH_COMMAND",
        "GIT_EXTERNAL_DIFF",
        "GIT_CONFIG_COUNT",
        "GIT_CONFIG_KEY_0",
        "GIT_CONFIG_GLOBAL",
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_EXEC_PATH",
        "GIT_ASKPASS",
        "GIT_SSH",
        "GIT_PAGER",
        "GIT_EDITOR",
        "GIT_PROXY_COMMAND",
        "PROMPT_COMMAND",
        "GCONV_PATH",
        "GLIBC_TUNABLES",
        "JAVA_TOOL_OPTIONS",
        "NODE_OPTIONS",
        "NODE_COMPILE_CACHE",
        "NODE_COMPILE_CACHE_PORTABLE",
        "TMPDIR",
        "TMP",
        "TEMP",
        "JITI_FS_CACHE",
        "JITI_ALIAS",
        "npm_config_script_shell",
        "NPM_CONFIG_NODE_OPTIONS",
        "Npm_Config_x",
        "HTTP_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "no_proxy",
        "FTP_PROXY",
        "ANTHROPIC_BASE_URL",
        "OPENAI_BASE_URL",
        "GOOGLE_GEMINI_BASE_URL",
    ] {
        assert!(EnvKey::try_from(name).is_err(), "{name} must be reserved");
    }
    for name in [
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
        "GITHUB_TOKEN",
        "SERVICE_URL",
        "PROXYCHAINS",
        "NPM_TOKEN",
    ] {
        assert!(EnvKey::try_from(name).is_ok(), "{name} must be allowed");
    }
    assert_eq!(
        EnvKey::try_from("https_proxy").unwrap_err().to_string(),
        "names ending in `_PROXY` (in any letter case) are reserved for AGS's network egress control; \
         hooks cannot route the agent's traffic, choose another name"
    );
    assert_eq!(
        EnvKey::try_from("npm_config_script_shell").unwrap_err(),
        EnvKeyError::ReservedPrefixAnyCase {
            prefix: "NPM_CONFIG_"
        }
    );
    assert_eq!(
        EnvKey::try_from("GIT_SSH_COMMAND").unwrap_err(),
        EnvKeyError::ReservedPrefix { prefix: "GIT_" }
    );
}

#[test]
fn env_literals() {
    assert!(EnvLiteral::try_from("").is_ok());
    assert!(EnvLiteral::try_from("a b\tc ünï").is_ok());
    assert_eq!(
        EnvLiteral::try_from("s3cr3t\nx").unwrap_err().to_string(),
        "literal values must be a single line without NUL; this one contains a line feed (value not \
         shown), remove it or deliver multi-line data as a generated file"
    );
    assert!(EnvLiteral::try_from("a\rb").is_err());
    assert!(EnvLiteral::try_from("a\0b").is_err());
}

#[test]
fn op_refs() {
    for ok in [
        "op://Dev/service/password",
        "op://My Vault/it.em/sec_tion/f-i%20eld",
    ] {
        assert!(OpRef::try_from(ok).is_ok(), "{ok}");
    }
    for bad in [
        "op://a/b",
        "op://a/b/c/d/e",
        "op://a//c",
        "op://a/b/c/",
        "OP://a/b/c",
        "op://a/b/$HOME",
        "op://a/b/{c}",
        " op://a/b/c",
        "op://a/b/c\n",
    ] {
        assert_eq!(OpRef::try_from(bad), Err(OpRefError::Syntax), "{bad:?}");
    }
}

#[test]
fn destinations_accepted() {
    for ok in [
        "/tmp/x",
        "/tmp/ags",
        "/tmp/x/ags-y",
        "/workspace/service-data",
        "/home/dev/data/.env",
        "/home/dev/golang",
        "/tmp/...",
        "/tmp/a b",
    ] {
        assert_eq!(dest(ok), "ok", "{ok}");
    }
}

#[test]
fn destinations_refused_with_rule() {
    let cases = [
        (
            "/etc/passwd",
            "destination must be strictly below /tmp, /workspace or /home/dev; choose a data path there",
        ),
        (
            "/tmp",
            "destination must be strictly below /tmp, /workspace or /home/dev; choose a data path there",
        ),
        (
            "/home/dev",
            "destination must be strictly below /tmp, /workspace or /home/dev; choose a data path there",
        ),
        (
            "/home/x",
            "destination must be strictly below /tmp, /workspace or /home/dev; choose a data path there",
        ),
        ("tmp/x", "destination must be an absolute path starting with `/`"),
        (
            "/workspace/../etc",
            "destination must be normalized: a `..` segment; write the path without it",
        ),
        (
            "/workspace/./x",
            "destination must be normalized: a `.` segment; write the path without it",
        ),
        (
            "/workspace//x",
            "destination must be normalized: an empty segment (`//`); write the path without it",
        ),
        (
            "/workspace/x/",
            "destination must be normalized: a trailing `/`; write the path without it",
        ),
        (
            "/tmp/a:b",
            "destination must not contain NUL, line breaks or `:`; this one contains a colon",
        ),
        (
            "/tmp/a\nb",
            "destination must not contain NUL, line breaks or `:`; this one contains a line feed",
        ),
        (
            "/tmp/ags-runtime/x",
            "destinations under /tmp/ags-* are AGS runtime resources; choose another /tmp name",
        ),
        (
            "/home/dev/.ssh/x",
            "destination overlaps the protected agent configuration path /home/dev/.ssh; choose a data path",
        ),
        (
            "/home/dev/go",
            "destination overlaps the protected agent configuration path /home/dev/go; choose a data path",
        ),
        (
            "/home/dev/.env",
            "hidden entries directly under /home/dev are agent/home settings; choose a non-hidden path",
        ),
    ];
    for (input, message) in cases {
        assert_eq!(dest(input), message, "{input:?}");
    }
    let long = format!("/tmp/{}", "a".repeat(256));
    assert!(dest(&long).contains("too long"));
}

#[test]
fn host_sources() {
    assert!(HostSource::try_from("/").is_ok());
    assert!(HostSource::try_from("/absolute/host/generated-data").is_ok());
    assert_eq!(
        HostSource::try_from("relative").unwrap_err().to_string(),
        "mount source must be an absolute path starting with `/`"
    );
    assert!(HostSource::try_from("/a:b").is_err());
    assert!(HostSource::try_from("/a/../b").is_err());
    assert!(HostSource::try_from("/a/").is_err());
}

#[test]
fn escaping_for_display() {
    assert_eq!(display_escaped("/tmp/a\u{1b}[31m"), "/tmp/a\\u{1b}[31m");
    assert_eq!(display_escaped("/tmp/plain ü"), "/tmp/plain ü");
}

#[test]
fn published_roots_match_the_rule() {
    for root in DESTINATION_ROOTS {
        assert_eq!(dest(root), dest("/etc"), "{root} itself is refused");
        assert_eq!(dest(&format!("{root}/data")), "ok", "{root}/data is allowed");
    }
    for entry in PROTECTED_HOME_ENTRIES.iter() {
        for path in [
            format!("{CONTAINER_HOME}/{entry}"),
            format!("{CONTAINER_HOME}/{entry}/x"),
        ] {
            assert!(
                dest(&path).contains("protected agent configuration path"),
                "{path}"
            );
        }
    }
}

#[test]
fn component_order_and_nesting() {
    let mut paths = vec!["/t/a-b", "/t/a/c", "/t", "/t/a", "/", "/t/a/c/d", "/s"];
    paths.sort_by(|a, b| component_cmp(a, b));
    assert_eq!(paths, ["/", "/s", "/t", "/t/a", "/t/a/c", "/t/a/c/d", "/t/a-b"]);
    assert!(is_strictly_inside("/t/a", "/t") && is_strictly_inside("/t", "/"));
    assert!(
        !is_strictly_inside("/t", "/t") && !is_strictly_inside("/ta", "/t") && !is_strictly_inside("/", "/")
    );
    let find = |paths: &[&'static str], hooks: &[bool]| {
        let mut sorted: Vec<(&str, bool)> = paths.iter().copied().zip(hooks.iter().copied()).collect();
        sorted.sort_by(|a, b| component_cmp(a.0, b.0));
        let only: Vec<&str> = sorted.iter().map(|(p, _)| *p).collect();
        find_nesting(&only, |a, d| sorted[a].1 || sorted[d].1).map(|(a, d)| (only[a], only[d]))
    };
    assert_eq!(
        find(&["/t/a", "/t/a-b", "/t/a/c"], &[true; 3]),
        Some(("/t/a", "/t/a/c"))
    );
    assert_eq!(find(&["/t/a", "/t/ab", "/t/b"], &[true; 3]), None);
    // A non-counting pair (/w, /w/a) sits between the counting ancestor and its descendant.
    assert_eq!(
        find(&["/w", "/w/a", "/w/x"], &[false, false, true]),
        Some(("/w", "/w/x"))
    );
    assert_eq!(
        find(&["/w", "/w/a", "/w/a/b"], &[false, false, true]),
        Some(("/w/a", "/w/a/b"))
    );
    assert_eq!(find(&["/w", "/w/a", "/x"], &[false, false, true]), None);
}
