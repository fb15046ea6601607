//! Keeps `docs/prepare-hooks.md` honest: every example in it is checked against the code.
//!
//! # Convention
//!
//! Fenced code blocks carry a tag after the language in their info string
//! (```` ```json prepare-response ````). Markdown renderers use only the first word, so the tags
//! are invisible to readers.
//!
//! | info string | check |
//! |---|---|
//! | `json prepare-response` | [`parse_response`] accepts it |
//! | `json prepare-response-invalid` | [`parse_response`] refuses it; the very next block is `text prepare-error` and holds the exact `Display` of the error |
//! | `json prepare-context` | [`HookContext::parse_strict`] accepts it |
//! | `json prepare-context-invalid` | refused, followed by `text prepare-error` as above |
//! | `json run-log-record` | one JSON object with the run log's fields |
//! | `toml` | loads as the global config through [`load_with`] |
//! | `python prepare-hook-example` | run with `python3`; must print a valid response |
//! | `text resolve-error` | exact wording (whitespace-normalized) of a nesting conflict built here |
//! | `text validate-output` | `ags hooks validate` output for the first response example |
//!
//! A `json prepare-response` block may add `output-of=PATH` (an executable in this repository)
//! or `output-of=python` (the nearest `python prepare-hook-example` above it). The hook is run
//! with the nearest `json prepare-context` block above, with every absolute path of the context
//! (and every mount source of the expected answer) moved below a temporary directory; its answer,
//! with the temporary prefix removed again, must equal the block as JSON.
//!
//! Regions between `<!-- list:NAME -->` and `<!-- /list -->` must name, in backticks, exactly the
//! entries of the matching validator constant.
//!
//! Every `json` block must carry one of the tags above, so an example cannot silently escape the
//! checks, and each kind must occur often enough that a broken tag convention cannot make the
//! test pass vacuously.

use std::collections::BTreeSet;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use ags::config::{LoadOptions, Paths, load_with};
use ags::hooks::policy::{
    ALLOWED_ENV_NAMES, DESTINATION_ROOTS, PROTECTED_HOME_ENTRIES, RESERVED_ENV_NAMES, RESERVED_ENV_PREFIXES,
    RESERVED_ENV_PREFIXES_ANY_CASE, RESERVED_ENV_SUFFIXES_ANY_CASE,
};
use ags::hooks::protocol::HookContext;
use ags::hooks::resolve::{HookOutput, LaunchOverrides, Origin, resolve};
use ags::hooks::summary::validate_and_summarize;
use ags::hooks::validate::parse_response;
use serde_json::Value;

const DOC: &str = "docs/prepare-hooks.md";

/// One fenced code block.
#[derive(Debug, Clone)]
struct Block {
    /// First word of the info string.
    lang: String,
    /// The remaining words.
    tags: Vec<String>,
    /// Content, with the fence's indentation removed.
    body: String,
    /// 1-based line of the opening fence.
    line: usize,
}

impl Block {
    fn has(&self, tag: &str) -> bool {
        self.tags.iter().any(|t| t == tag)
    }

    fn kind(&self) -> Option<&str> {
        self.tags.first().map(String::as_str)
    }

    fn attr(&self, key: &str) -> Option<&str> {
        self.tags
            .iter()
            .find_map(|t| t.strip_prefix(key)?.strip_prefix('='))
    }

    fn is(&self, lang: &str, kind: &str) -> bool {
        self.lang == lang && self.kind() == Some(kind)
    }

    fn at(&self) -> String {
        format!("{DOC}:{}", self.line)
    }
}

fn read_doc() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(DOC);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Split markdown into fenced blocks (``` fences, possibly indented inside list items).
fn blocks(md: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<(Block, usize)> = None;
    for (i, raw) in md.lines().enumerate() {
        let trimmed = raw.trim_start();
        let indent = raw.len() - trimmed.len();
        match open.take() {
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    let mut words = info.split_whitespace().map(String::from);
                    let lang = words.next().unwrap_or_default();
                    let block = Block {
                        lang,
                        tags: words.collect(),
                        body: String::new(),
                        line: i + 1,
                    };
                    open = Some((block, indent));
                }
            }
            Some((mut block, fence_indent)) => {
                if trimmed == "```" {
                    out.push(block);
                } else {
                    let cut = raw.len().min(fence_indent);
                    let keep = if raw[..cut].trim().is_empty() {
                        &raw[cut..]
                    } else {
                        raw
                    };
                    block.body.push_str(keep);
                    block.body.push('\n');
                    open = Some((block, fence_indent));
                }
            }
        }
    }
    assert!(open.is_none(), "{DOC}: unterminated code fence");
    out
}

fn doc_blocks() -> Vec<Block> {
    blocks(&read_doc())
}

const JSON_KINDS: &[&str] = &[
    "prepare-response",
    "prepare-response-invalid",
    "prepare-context",
    "prepare-context-invalid",
    "run-log-record",
];

#[test]
fn every_json_block_is_tagged() {
    for b in doc_blocks().iter().filter(|b| b.lang == "json") {
        let kind = b.kind().unwrap_or("");
        assert!(
            JSON_KINDS.contains(&kind),
            "{}: json block tagged {kind:?}; use one of {JSON_KINDS:?}",
            b.at()
        );
    }
}

#[test]
fn enough_examples_of_each_kind() {
    let all = doc_blocks();
    let count = |lang: &str, kind: &str| all.iter().filter(|b| b.is(lang, kind)).count();
    for (lang, kind, min) in [
        ("json", "prepare-response", 5),
        ("json", "prepare-response-invalid", 15),
        ("json", "prepare-context", 2),
        ("json", "prepare-context-invalid", 1),
        ("json", "run-log-record", 1),
        ("python", "prepare-hook-example", 1),
        ("text", "resolve-error", 1),
        ("text", "validate-output", 1),
    ] {
        let n = count(lang, kind);
        assert!(
            n >= min,
            "{DOC}: {n} `{lang} {kind}` blocks, expected at least {min}"
        );
    }
    let tomls = all.iter().filter(|b| b.lang == "toml").count();
    assert!(tomls >= 3, "{DOC}: only {tomls} toml blocks");
}

#[test]
fn valid_responses_are_accepted() {
    for b in doc_blocks().iter().filter(|b| b.is("json", "prepare-response")) {
        if let Err(e) = parse_response(b.body.as_bytes()) {
            panic!("{}: documented as valid, refused: {e}", b.at());
        }
    }
}

#[test]
fn valid_contexts_are_accepted() {
    for b in doc_blocks().iter().filter(|b| b.is("json", "prepare-context")) {
        if let Err(e) = HookContext::parse_strict(b.body.as_bytes()) {
            panic!("{}: documented as valid, refused: {e}", b.at());
        }
    }
}

/// Each invalid example, paired with the error block right after it.
fn invalid_pairs(kind: &str) -> Vec<(Block, String)> {
    let all = doc_blocks();
    let mut out = Vec::new();
    for (i, b) in all.iter().enumerate() {
        if !b.is("json", kind) {
            continue;
        }
        let Some(next) = all.get(i + 1).filter(|n| n.is("text", "prepare-error")) else {
            panic!(
                "{}: a `json {kind}` block must be followed by a `text prepare-error` block",
                b.at()
            );
        };
        out.push((b.clone(), next.body.trim().to_owned()));
    }
    out
}

#[test]
fn invalid_responses_fail_with_the_documented_message() {
    for (b, expected) in invalid_pairs("prepare-response-invalid") {
        match parse_response(b.body.as_bytes()) {
            Ok(_) => panic!("{}: documented as invalid, accepted", b.at()),
            Err(e) => assert_eq!(e.to_string(), expected, "{}: wrong message", b.at()),
        }
    }
}

#[test]
fn invalid_contexts_fail_with_the_documented_message() {
    for (b, expected) in invalid_pairs("prepare-context-invalid") {
        match HookContext::parse_strict(b.body.as_bytes()) {
            Ok(_) => panic!("{}: documented as invalid, accepted", b.at()),
            Err(e) => assert_eq!(e.to_string(), expected, "{}: wrong message", b.at()),
        }
    }
}

#[test]
fn every_error_block_belongs_to_an_invalid_example() {
    let all = doc_blocks();
    for (i, b) in all.iter().enumerate() {
        if b.is("text", "prepare-error") {
            let prev = i.checked_sub(1).map(|p| &all[p]);
            let ok = prev.is_some_and(|p| {
                p.is("json", "prepare-response-invalid") || p.is("json", "prepare-context-invalid")
            });
            assert!(
                ok,
                "{}: prepare-error block without an invalid example before it",
                b.at()
            );
        }
    }
}

#[test]
fn run_log_records_have_the_logged_fields() {
    // Mirrors `hooks::log::Record` (required first, then optional fields).
    const REQUIRED: &[&str] = &[
        "launch_id",
        "name",
        "scope",
        "hash",
        "started_at",
        "duration_ms",
        "outcome",
        "stdout_bytes",
        "stderr_bytes",
        "keys",
        "destinations",
    ];
    const OPTIONAL: &[&str] = &["project", "exit_code", "signal"];
    for b in doc_blocks().iter().filter(|b| b.is("json", "run-log-record")) {
        let v: Value = serde_json::from_str(&b.body).unwrap_or_else(|e| panic!("{}: {e}", b.at()));
        let obj = v
            .as_object()
            .unwrap_or_else(|| panic!("{}: not an object", b.at()));
        for key in obj.keys() {
            assert!(
                REQUIRED.contains(&key.as_str()) || OPTIONAL.contains(&key.as_str()),
                "{}: the run log has no field {key}",
                b.at()
            );
        }
        for key in REQUIRED {
            assert!(obj.contains_key(*key), "{}: missing field {key}", b.at());
        }
        assert!(
            b.body.lines().filter(|l| !l.trim().is_empty()).count() == 1,
            "{}: a run log record is one line",
            b.at()
        );
    }
}

/// A throwaway HOME with the XDG directories below it.
fn temp_paths(root: &Path) -> Paths {
    let home = root.join("home");
    Paths {
        config_home: home.join(".config"),
        state_home: home.join(".local/state"),
        cache_home: home.join(".cache"),
        runtime_dir: None,
        home,
    }
}

#[test]
fn toml_examples_load_as_config() {
    for b in doc_blocks().iter().filter(|b| b.lang == "toml") {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let paths = temp_paths(&root);
        let config = paths.global_config();
        std::fs::create_dir_all(config.parent().unwrap()).unwrap();
        std::fs::write(&config, &b.body).unwrap();
        let workdir = root.join("project");
        std::fs::create_dir_all(&workdir).unwrap();
        let opts = LoadOptions {
            workdir: Some(workdir),
            ..LoadOptions::default()
        };
        match load_with(paths, &opts) {
            Ok(cfg) => assert!(!cfg.prepare_hooks.is_empty(), "{}: declares no hook", b.at()),
            Err(e) => panic!("{}: does not load: {e}", b.at()),
        }
    }
}

/// The backticked words of every `<!-- list:NAME -->` region, by name.
fn doc_lists(md: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut rest = md;
    while let Some(start) = rest.find("<!-- list:") {
        let after = &rest[start + "<!-- list:".len()..];
        let name_end = after.find(" -->").expect("list marker ends with ` -->`");
        let name = after[..name_end].to_owned();
        let body_start = name_end + " -->".len();
        let end = after[body_start..]
            .find("<!-- /list -->")
            .unwrap_or_else(|| panic!("{DOC}: list {name} is not closed"));
        let body = &after[body_start..body_start + end];
        let words = body.split('`').skip(1).step_by(2).map(String::from).collect();
        out.push((name, words));
        rest = &after[body_start + end..];
    }
    out
}

#[test]
fn documented_lists_match_the_validator() {
    let lists = doc_lists(&read_doc());
    let expected: [(&str, &[&str]); 7] = [
        ("reserved-env-names", RESERVED_ENV_NAMES),
        ("reserved-env-prefixes", RESERVED_ENV_PREFIXES),
        ("reserved-env-prefixes-any-case", RESERVED_ENV_PREFIXES_ANY_CASE),
        ("reserved-env-suffixes-any-case", RESERVED_ENV_SUFFIXES_ANY_CASE),
        ("allowed-env-names", ALLOWED_ENV_NAMES),
        ("destination-roots", DESTINATION_ROOTS),
        ("protected-home-entries", PROTECTED_HOME_ENTRIES.as_slice()),
    ];
    for (name, constant) in expected {
        let Some((_, words)) = lists.iter().find(|(n, _)| n == name) else {
            panic!("{DOC}: no list:{name} region");
        };
        let doc: BTreeSet<&str> = words.iter().map(String::as_str).collect();
        assert_eq!(doc.len(), words.len(), "{DOC}: list {name} repeats an entry");
        let code: BTreeSet<&str> = constant.iter().copied().collect();
        let missing: Vec<_> = code.difference(&doc).collect();
        let extra: Vec<_> = doc.difference(&code).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "{DOC}: list {name}: missing {missing:?}, not in the code {extra:?}"
        );
    }
    for (name, _) in &lists {
        assert!(
            expected.iter().any(|(n, _)| n == name),
            "{DOC}: unknown list {name}"
        );
    }
}

fn normalize_ws(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn resolve_error_wording_matches() {
    let contribution = parse_response(
        br#"{"version":1,"files":[{"destination":"/workspace/webshop/fixtures.json","content":"[]"}]}"#,
    )
    .unwrap();
    let layer = HookOutput {
        origin: Origin::ProjectHook {
            name: "seed".into(),
            index: 0,
        },
        contribution,
    };
    let overrides = LaunchOverrides {
        fixed_destinations: vec![PathBuf::from("/workspace/webshop")],
        ..LaunchOverrides::default()
    };
    let err = resolve(vec![layer], &overrides).unwrap_err().to_string();
    let all = doc_blocks();
    let block = all
        .iter()
        .find(|b| b.is("text", "resolve-error"))
        .expect("a resolve-error block");
    assert_eq!(normalize_ws(&block.body), normalize_ws(&err), "{}", block.at());
}

#[test]
fn validate_output_matches_the_summary() {
    let all = doc_blocks();
    let first = all
        .iter()
        .find(|b| b.is("json", "prepare-response"))
        .expect("a response example");
    let summary = validate_and_summarize(first.body.as_bytes()).unwrap();
    for b in all.iter().filter(|b| b.is("text", "validate-output")) {
        let mut lines = b.body.lines().filter(|l| !l.starts_with("$ "));
        let header = lines.next().unwrap_or_default();
        assert!(
            header.ends_with(": valid prepare response"),
            "{}: first output line is {header:?}",
            b.at()
        );
        let rest: String = lines.map(|l| format!("{l}\n")).collect();
        assert_eq!(rest, summary.to_string(), "{}", b.at());
    }
}

/// Move every absolute path string of the context below `root`, creating project and workdir.
fn relocate_context(context: &str, root: &Path) -> Vec<u8> {
    let mut v: Value = serde_json::from_str(context).unwrap();
    for field in ["project", "workdir"] {
        let p = v[field].as_str().expect("context paths are strings");
        let moved = format!("{}{p}", root.display());
        std::fs::create_dir_all(&moved).unwrap();
        v[field] = Value::String(moved);
    }
    serde_json::to_vec(&v).unwrap()
}

fn python3_available() -> bool {
    Command::new("python3")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Run `program` as `ags` would (scrubbed environment, cwd = workdir, context on stdin) and
/// return its stdout with `root` removed from every path.
fn run_hook(program: &Path, context: &[u8], root: &Path) -> String {
    let ctx: Value = serde_json::from_slice(context).unwrap();
    let workdir = ctx["workdir"].as_str().unwrap();
    let mut child = Command::new(program)
        .current_dir(workdir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", root.join("home"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", program.display()));
    child.stdin.take().unwrap().write_all(context).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{} failed: {}\nstdout: {}\nstderr: {}",
        program.display(),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    parse_response(&out.stdout).unwrap_or_else(|e| panic!("{}: invalid response: {e}", program.display()));
    String::from_utf8(out.stdout)
        .unwrap()
        .replace(&root.display().to_string(), "")
}

#[test]
fn documented_hook_outputs_match_real_runs() {
    let all = doc_blocks();
    let mut checked = 0;
    for (i, b) in all.iter().enumerate() {
        let Some(target) = b.attr("output-of") else {
            continue;
        };
        assert!(
            b.has("prepare-response"),
            "{}: output-of on a non-response block",
            b.at()
        );
        let context = all[..i]
            .iter()
            .rev()
            .find(|c| c.is("json", "prepare-context"))
            .unwrap_or_else(|| panic!("{}: no context block above", b.at()));
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let expected: Value = serde_json::from_str(&b.body).unwrap();
        for m in expected["mounts"].as_array().into_iter().flatten() {
            let source = m["source"].as_str().unwrap();
            std::fs::create_dir_all(format!("{}{source}", root.display())).unwrap();
        }
        let program = if target == "python" {
            if !python3_available() {
                eprintln!("{}: python3 not found, skipping this example", b.at());
                continue;
            }
            let source = all[..i]
                .iter()
                .rev()
                .find(|s| s.is("python", "prepare-hook-example"))
                .unwrap_or_else(|| panic!("{}: no python example above", b.at()));
            let path = root.join("example-hook");
            std::fs::write(&path, &source.body).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
            path
        } else {
            Path::new(env!("CARGO_MANIFEST_DIR")).join(target)
        };
        let stdout = run_hook(&program, &relocate_context(&context.body, &root), &root);
        let actual: Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(actual, expected, "{}: the hook answers differently", b.at());
        checked += 1;
    }
    assert!(checked >= 1, "{DOC}: no output-of example was run");
}

#[test]
fn the_parser_finds_indented_fences() {
    let md = "x\n- item\n\n  ```text validate-output\n  $ a\n  b\n  ```\n";
    let found = blocks(md);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].lang, "text");
    assert_eq!(found[0].body, "$ a\nb\n");
    assert_eq!(found[0].line, 4);
}

#[test]
fn security_doc_names_the_real_labels() {
    use ags::plan::{
        LABEL_AGENT, LABEL_LAUNCH_ID, LABEL_MANAGED, LABEL_OWNER_HOST, LABEL_OWNER_PID, LABEL_OWNER_START,
        LABEL_PROJECT,
    };
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/security.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let known = [
        LABEL_MANAGED,
        LABEL_LAUNCH_ID,
        LABEL_OWNER_PID,
        LABEL_OWNER_START,
        LABEL_OWNER_HOST,
        LABEL_AGENT,
        LABEL_PROJECT,
    ];
    let named: BTreeSet<&str> = text
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|w| w.starts_with("io.ags."))
        .collect();
    for label in &named {
        assert!(
            known.contains(label),
            "docs/security.md names unknown label {label}"
        );
    }
    for label in [
        LABEL_MANAGED,
        LABEL_OWNER_PID,
        LABEL_OWNER_START,
        LABEL_OWNER_HOST,
    ] {
        assert!(named.contains(label), "docs/security.md does not explain {label}");
    }
    assert!(
        !text.contains("```json"),
        "docs/security.md: json examples belong in prepare-hooks.md, where they are checked"
    );
}
