//! The 1Password integration against a fake `op` (tests/fixtures/op/op) found through the
//! `PATH` of an explicit [`OpEnv`]: real processes, no change to this process's environment.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ags::hooks::policy::{EnvKey, OpRef};
use ags::hooks::runner::{Interrupt, interrupt_channel};
use ags::op::{OpCli, OpEnv, OpError, Secret, SecretSetName, SkipReason};
use serde_json::{Value, json};

const SENTINEL: &str = "SENTINEL-c0ffee-5ecret";

/// A fake `op` with its database, call log and extra environment.
struct Fake {
    dir: tempfile::TempDir,
    extra: Vec<(String, String)>,
}

impl Fake {
    fn new(db: Value) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("db.json"), db.to_string()).unwrap();
        Self {
            dir,
            extra: Vec::new(),
        }
    }

    fn with(mut self, key: &str, value: &str) -> Self {
        self.extra.push((key.into(), value.into()));
        self
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn env_with_path(&self, path: &str) -> OpEnv {
        let mut vars = vec![
            ("PATH".to_string(), path.to_string()),
            (
                "AGS_FAKE_OP_DB".into(),
                self.path("db.json").display().to_string(),
            ),
            (
                "AGS_FAKE_OP_LOG".into(),
                self.path("calls.jsonl").display().to_string(),
            ),
            (
                "AGS_FAKE_OP_PIDFILE".into(),
                self.path("pid").display().to_string(),
            ),
            ("OP_SERVICE_ACCOUNT_TOKEN".into(), format!("ops_{SENTINEL}")),
        ];
        vars.extend(self.extra.iter().cloned());
        OpEnv::from_vars(vars)
    }

    /// The fake `op`, copied out of the source tree: `ags` passes over an `op` inside a
    /// directory an earlier launch could write, and a machine where `ags` was launched in its
    /// own checkout (the README's first command does that) has the tree on that list.
    fn cli(&self) -> OpCli {
        let bin = self.path("bin");
        if !bin.join("op").exists() {
            std::fs::create_dir_all(&bin).unwrap();
            let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/op/op");
            std::fs::copy(fixture, bin.join("op")).unwrap();
            // Owner-only write whatever the checkout's modes (`git archive` makes it 0775, and
            // ags refuses an `op` others can write).
            let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
            std::fs::set_permissions(bin.join("op"), mode).unwrap();
        }
        OpCli::new(self.env_with_path(&format!("{}:/usr/bin:/bin", bin.display())))
    }

    /// Every logged invocation: `{"argv": [...], "stdin": "..."}`.
    fn calls(&self) -> Vec<Value> {
        match std::fs::read_to_string(self.path("calls.jsonl")) {
            Ok(text) => text.lines().map(|l| serde_json::from_str(l).unwrap()).collect(),
            Err(_) => Vec::new(),
        }
    }

    fn pid(&self) -> i32 {
        std::fs::read_to_string(self.path("pid"))
            .unwrap()
            .parse()
            .unwrap()
    }
}

fn db() -> Value {
    json!({
        "refs": {
            "op://Dev/db/password": format!("pw-{SENTINEL}"),
            "op://Dev/api/section one/token": "tok with 'quotes' and $HOME",
            "op://Dev/tls/key": format!("line1-{SENTINEL}\nline2"),
        },
        "items": {
            "Dev/agent env": {
                "id": "x1", "title": "agent env", "category": "SECURE_NOTE",
                "vault": {"id": "v1", "name": "Dev"},
                "fields": [
                    {"id": "notesPlain", "type": "STRING", "purpose": "NOTES", "label": "notesPlain",
                     "value": format!("note {SENTINEL}")},
                    {"id": "a", "type": "CONCEALED", "label": "API_KEY", "value": format!("k-{SENTINEL}")},
                    {"id": "b", "type": "STRING", "label": "SHARED", "value": "from-set"},
                    {"id": "c", "type": "STRING", "label": "bad label", "value": "x"},
                    {"id": "d", "type": "STRING", "label": "HOME", "value": "/nope"}
                ]
            },
            "Dev/broken": {
                "id": "x2", "title": "broken", "category": "SECURE_NOTE",
                "fields": [{"id": "a", "type": "STRING", "label": "K", "value": format!("{SENTINEL}\r\n")}]
            },
            "Dev/later": {
                "id": "x3", "title": "later", "category": "SECURE_NOTE",
                "fields": [{"id": "a", "type": "STRING", "label": "SHARED", "value": "from-later"}]
            }
        }
    })
}

fn op_ref(s: &str) -> OpRef {
    OpRef::try_from(s).unwrap()
}

fn exposed(m: &BTreeMap<String, Secret>) -> BTreeMap<&str, &str> {
    m.iter().map(|(k, v)| (k.as_str(), v.expose())).collect()
}

fn assert_redacted(what: &str) {
    assert!(!what.contains(SENTINEL), "a secret leaked: {what}");
}

fn pid_gone(pid: i32) -> bool {
    use nix::sys::signal::kill;
    use nix::unistd::Pid;
    kill(Pid::from_raw(pid), None) == Err(nix::errno::Errno::ESRCH)
}

#[tokio::test]
async fn capability_check_accepts_op_v2() {
    let fake = Fake::new(db());
    fake.cli().check_capability(&Interrupt::never()).await.unwrap();
    let calls = fake.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["argv"], json!(["inject", "--help"]));
}

#[tokio::test]
async fn capability_check_without_op_says_install() {
    let fake = Fake::new(db());
    let empty = tempfile::tempdir().unwrap();
    std::fs::write(empty.path().join("op"), "#!/bin/sh\n").unwrap(); // not executable
    let relative = "tests/fixtures/op"; // relative PATH entries are never searched
    let path = format!("{}:{relative}:", empty.path().display());
    let cli = OpCli::new(fake.env_with_path(&path));
    let e = cli.check_capability(&Interrupt::never()).await.unwrap_err();
    assert!(matches!(e, OpError::NotInstalled), "{e:?}");
    assert!(
        e.to_string().contains("install or update the 1Password CLI (op)"),
        "{e}"
    );
    assert!(fake.calls().is_empty());
}

#[tokio::test]
async fn capability_check_refuses_op_without_inject() {
    let fake = Fake::new(db()).with("AGS_FAKE_OP_NO_INJECT", "1");
    let e = fake
        .cli()
        .check_capability(&Interrupt::never())
        .await
        .unwrap_err();
    assert!(matches!(e, OpError::Unsupported { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(msg.contains("install or update the 1Password CLI (op)"), "{msg}");
    assert!(msg.contains("--in-file and --out-file"), "{msg}");
}

#[tokio::test]
async fn shared_references_are_resolved_once_in_one_call() {
    let fake = Fake::new(db());
    let refs = BTreeMap::from([
        ("DB_PASSWORD".to_string(), op_ref("op://Dev/db/password")),
        ("TOKEN".to_string(), op_ref("op://Dev/api/section one/token")),
        ("PGPASSWORD".to_string(), op_ref("op://Dev/db/password")),
    ]);
    let got = fake.cli().resolve_refs(&refs, &Interrupt::never()).await.unwrap();
    let pw = format!("pw-{SENTINEL}");
    assert_eq!(
        exposed(&got),
        BTreeMap::from([
            ("DB_PASSWORD", pw.as_str()),
            ("PGPASSWORD", pw.as_str()),
            ("TOKEN", "tok with 'quotes' and $HOME"),
        ])
    );
    assert_redacted(&format!("{got:?}"));
    let calls = fake.calls();
    assert_eq!(calls.len(), 1, "exactly one op call: {calls:?}");
    assert_eq!(calls[0]["argv"], json!(["inject"]));
    let template = calls[0]["stdin"].as_str().unwrap();
    let lines: Vec<&str> = template.lines().collect();
    assert_eq!(lines.len(), 3, "two references and the end marker: {template:?}");
    let marker = &lines[2][..lines[2].len() - "end".len()];
    assert!(
        marker.starts_with("ags-") && marker.len() == "ags-.".len() + 32,
        "{marker}"
    );
    assert_eq!(
        lines[0],
        format!("{marker}0:{{{{ op://Dev/api/section one/token }}}}")
    );
    assert_eq!(lines[1], format!("{marker}1:{{{{ op://Dev/db/password }}}}"));
    assert!(!template.contains('$'));
}

#[tokio::test]
async fn accepts_resolved_op_env_shape_and_skips_op_without_references() {
    let fake = Fake::new(db());
    let (key, r) = (
        EnvKey::try_from("TOKEN").unwrap(),
        op_ref("op://Dev/api/section one/token"),
    );
    let op_env: BTreeMap<&EnvKey, &OpRef> = BTreeMap::from([(&key, &r)]);
    let got = fake
        .cli()
        .resolve_refs(op_env, &Interrupt::never())
        .await
        .unwrap();
    assert_eq!(got["TOKEN"].expose(), "tok with 'quotes' and $HOME");
    let none = BTreeMap::<String, OpRef>::new();
    assert!(
        fake.cli()
            .resolve_refs(&none, &Interrupt::never())
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(fake.calls().len(), 1, "no references: no op call");
}

#[tokio::test]
async fn a_multi_line_value_is_refused_naming_keys_and_reference_only() {
    let fake = Fake::new(db());
    let refs = [
        ("TLS_KEY", op_ref("op://Dev/tls/key")),
        ("ALSO_KEY", op_ref("op://Dev/tls/key")),
        ("DB", op_ref("op://Dev/db/password")),
    ];
    let e = fake
        .cli()
        .resolve_refs(refs.clone(), &Interrupt::never())
        .await
        .unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, OpError::UnusableValue { .. }), "{e:?}");
    assert!(
        msg.contains("ALSO_KEY, TLS_KEY") && msg.contains("op://Dev/tls/key"),
        "{msg}"
    );
    assert!(msg.contains("line feed"), "{msg}");
    assert!(!msg.contains("line1") && !msg.contains("line2"), "{msg}");
    assert_redacted(&msg);
    assert_redacted(&format!("{e:?}"));
}

#[tokio::test]
async fn an_unknown_reference_fails_with_ops_escaped_stderr_and_no_values() {
    let fake = Fake::new(db()).with("AGS_FAKE_OP_STDERR", "\u{1b}[31mwarning\u{1b}[0m\rX");
    let refs = [
        ("DB", op_ref("op://Dev/db/password")),
        ("MISSING", op_ref("op://Dev/nope/field")),
    ];
    let e = fake
        .cli()
        .resolve_refs(refs, &Interrupt::never())
        .await
        .unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, OpError::Failed { .. }), "{e:?}");
    assert!(msg.contains("exit status 1"), "{msg}");
    assert!(msg.contains("DB, MISSING"), "{msg}");
    assert!(
        msg.contains("could not resolve secret reference \"op://Dev/nope/field\""),
        "{msg}"
    );
    assert!(
        msg.contains("\\u{1b}[31mwarning") && msg.contains("\\rX"),
        "{msg}"
    );
    assert!(!msg.contains('\u{1b}') && !msg.contains('\r'), "{msg:?}");
    assert_redacted(&msg);
}

#[tokio::test]
async fn long_stderr_is_capped_in_the_message() {
    let noise = "n".repeat(10_000);
    let fake = Fake::new(db()).with("AGS_FAKE_OP_FAIL", &noise);
    let e = fake
        .cli()
        .resolve_refs([("DB", op_ref("op://Dev/db/password"))], &Interrupt::never())
        .await
        .unwrap_err();
    let msg = e.to_string();
    assert!(msg.len() < 3_000, "{} bytes", msg.len());
    assert!(msg.contains("more characters not shown"), "{msg}");
}

#[tokio::test]
async fn a_slow_op_is_killed_at_the_timeout() {
    let fake = Fake::new(db()).with("AGS_FAKE_OP_SLEEP", "60");
    // Long enough for the fake (python) to start and write its pid on a loaded machine.
    let cli = fake.cli().with_timeout(Duration::from_secs(5));
    let t0 = Instant::now();
    let e = cli
        .resolve_refs([("DB", op_ref("op://Dev/db/password"))], &Interrupt::never())
        .await
        .unwrap_err();
    assert!(matches!(e, OpError::Timeout { .. }), "{e:?}");
    // Well before the fake's 60 s sleep ends.
    assert!(t0.elapsed() < Duration::from_secs(45), "{:?}", t0.elapsed());
    assert!(e.to_string().contains("did not finish within 5s"), "{e}");
    assert!(pid_gone(fake.pid()), "op is still running");
}

#[tokio::test]
async fn an_interrupt_kills_op() {
    let fake = Fake::new(db()).with("AGS_FAKE_OP_SLEEP", "60");
    let (handle, interrupt) = interrupt_channel();
    let pidfile = fake.path("pid");
    tokio::spawn(async move {
        // The pid written, not only the file created: an interrupt in between killed the fake
        // before it wrote, and `fake.pid()` found an empty file (Podman 5 suite, under load).
        while std::fs::read_to_string(&pidfile).map_or(true, |s| s.trim().is_empty()) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        handle.trigger(libc::SIGINT);
    });
    let t0 = Instant::now();
    let e = fake
        .cli()
        .load_secret_set(&"Dev/agent env".parse().unwrap(), &interrupt)
        .await
        .unwrap_err();
    assert!(
        matches!(e, OpError::Interrupted { signal, .. } if signal == libc::SIGINT),
        "{e:?}"
    );
    assert!(t0.elapsed() < Duration::from_secs(45), "{:?}", t0.elapsed());
    assert!(pid_gone(fake.pid()), "op is still running");
    // An interrupt that already fired starts nothing.
    let calls = fake.calls().len();
    let e = fake.cli().check_capability(&interrupt).await.unwrap_err();
    assert!(matches!(e, OpError::Interrupted { .. }), "{e:?}");
    assert_eq!(fake.calls().len(), calls);
}

#[tokio::test]
async fn oversized_output_is_refused() {
    let mut big = db();
    big["refs"]["op://Dev/big/blob"] = json!("b".repeat(5 * 1024 * 1024));
    let fake = Fake::new(big);
    let e = fake
        .cli()
        .resolve_refs([("BLOB", op_ref("op://Dev/big/blob"))], &Interrupt::never())
        .await
        .unwrap_err();
    assert!(matches!(e, OpError::OutputTooLarge { .. }), "{e:?}");
}

#[tokio::test]
async fn an_op_that_cannot_start_is_a_spawn_error() {
    let fake = Fake::new(db());
    let dir = tempfile::tempdir().unwrap();
    let op = dir.path().join("op");
    std::fs::write(&op, "#!/nonexistent/interpreter\n").unwrap();
    std::fs::set_permissions(&op, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let cli = OpCli::new(fake.env_with_path(&dir.path().display().to_string()));
    let e = cli.check_capability(&Interrupt::never()).await.unwrap_err();
    assert!(matches!(e, OpError::Spawn { .. }), "{e:?}");
}

#[tokio::test]
async fn a_secret_set_loads_env_named_fields() {
    let fake = Fake::new(db());
    let name: SecretSetName = "Dev/agent env".parse().unwrap();
    let set = fake
        .cli()
        .load_secret_set(&name, &Interrupt::never())
        .await
        .unwrap();
    let key = format!("k-{SENTINEL}");
    assert_eq!(
        exposed(&set.values),
        BTreeMap::from([("API_KEY", key.as_str()), ("SHARED", "from-set")])
    );
    let skipped: Vec<(&str, SkipReason)> = set.skipped.iter().map(|s| (s.label.as_str(), s.reason)).collect();
    assert_eq!(
        skipped,
        [
            ("notesPlain", SkipReason::NoteBody),
            ("bad label", SkipReason::NotAnEnvName),
            ("HOME", SkipReason::Reserved),
        ]
    );
    assert_redacted(&format!("{set:?}"));
    let calls = fake.calls();
    assert_eq!(
        calls[0]["argv"],
        json!(["item", "get", "agent env", "--vault", "Dev", "--format", "json"])
    );
}

#[tokio::test]
async fn later_secret_sets_and_sets_over_references_win() {
    let fake = Fake::new(db());
    let cli = fake.cli();
    let names: Vec<SecretSetName> = ["Dev/agent env", "Dev/later"]
        .iter()
        .map(|n| n.parse().unwrap())
        .collect();
    let sets = cli.load_secret_sets(&names, &Interrupt::never()).await.unwrap();
    let refs = cli
        .resolve_refs(
            [
                ("SHARED", op_ref("op://Dev/db/password")),
                ("DB", op_ref("op://Dev/db/password")),
            ],
            &Interrupt::never(),
        )
        .await
        .unwrap();
    let all = overlay_secret_sets(refs, &sets);
    assert_eq!(exposed(&all)["SHARED"], "from-later");
    assert_eq!(exposed(&all)["DB"], format!("pw-{SENTINEL}"));
    assert!(all.contains_key("API_KEY"));
}

#[tokio::test]
async fn secret_set_failures_are_redacted() {
    let fake = Fake::new(db());
    let cli = fake.cli();
    let broken = cli
        .load_secret_set(&"Dev/broken".parse().unwrap(), &Interrupt::never())
        .await
        .unwrap_err();
    assert!(matches!(broken, OpError::UnusableField { .. }), "{broken:?}");
    assert!(
        broken.to_string().contains("field K contains a carriage return"),
        "{broken}"
    );
    let missing = cli
        .load_secret_set(&"Dev/nothing".parse().unwrap(), &Interrupt::never())
        .await
        .unwrap_err();
    assert!(
        missing.to_string().contains("isn't an item in the \"Dev\" vault"),
        "{missing}"
    );
    for e in [&broken, &missing] {
        assert_redacted(&e.to_string());
        assert_redacted(&format!("{e:?}"));
    }
    let syntax = "Dev/a\nb".parse::<SecretSetName>().unwrap_err();
    assert!(syntax.to_string().contains("VAULT/ITEM"), "{syntax}");
}

#[tokio::test]
async fn the_sentinel_appears_in_no_error_or_debug_output() {
    let fake = Fake::new(db());
    let cli = fake.cli();
    let never = Interrupt::never();
    let mut shown = vec![format!("{cli:?}")];
    let errors = [
        cli.resolve_refs([("K", op_ref("op://Dev/tls/key"))], &never)
            .await
            .unwrap_err(),
        cli.resolve_refs(
            [("K", op_ref("op://Dev/db/password")), ("M", op_ref("op://x/y/z"))],
            &never,
        )
        .await
        .unwrap_err(),
        cli.load_secret_set(&"Dev/broken".parse().unwrap(), &never)
            .await
            .unwrap_err(),
        fake.cli()
            .with_timeout(Duration::from_millis(1))
            .resolve_refs([("K", op_ref("op://Dev/db/password"))], &never)
            .await
            .unwrap_err(),
    ];
    for e in errors {
        shown.push(e.to_string());
        shown.push(format!("{e:?}"));
        let wrapped = ags::Error::from(e);
        shown.push(format!("{wrapped} {wrapped:?}"));
    }
    let ok = cli
        .resolve_refs([("K", op_ref("op://Dev/db/password"))], &never)
        .await
        .unwrap();
    shown.push(format!("{ok:?}"));
    let set = cli
        .load_secret_set(&"Dev/agent env".parse().unwrap(), &never)
        .await
        .unwrap();
    shown.push(format!(
        "{set:?} {:?}",
        overlay_secret_sets(ok, std::slice::from_ref(&set))
    ));
    for s in &shown {
        assert_redacted(s);
    }
}

/// The secret environment in final-process order: the resolved references, then each set in
/// the order given, a later value replacing an earlier one (as the launch applies them).
fn overlay_secret_sets(
    mut resolved: BTreeMap<String, Secret>,
    sets: &[ags::op::SecretSet],
) -> BTreeMap<String, Secret> {
    for set in sets {
        resolved.extend(set.values.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    resolved
}
