//! Criterion benchmark of hook response parsing + validation (`parse_response`): strict JSON,
//! typed decoding, the per-value rules and the rules between entries.
//!
//! Inputs, generated here (deterministic):
//! - `minimal`: `{"version": 1}`;
//! - `files_1mib`: just under the 1 MiB document cap, spread over many generated files whose
//!   content carries JSON escapes (`\n`, `\"`, `\\`, `\u00e9`) so unescaping is exercised;
//! - `env_1000`: 1 000 environment literals, plus a few op references.
//!
//! Run: `cargo bench --bench validate` (target: the 1 MiB case ≤ 10 ms, issue 6).
//! Every input is checked to validate before it is measured, so a rule change that rejects it
//! fails the benchmark instead of timing an early error.

use std::fmt::Write as _;
use std::hint::black_box;

use ags::hooks::validate::parse_response;
use ags::json::MAX_DOCUMENT_BYTES;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

/// `{"version": 1}`.
fn minimal() -> Vec<u8> {
    br#"{"version": 1}"#.to_vec()
}

/// Many files (about 1 KiB of escaped content each), as close under the 1 MiB cap as whole
/// entries allow. Returns the document and its number of files.
fn files_1mib() -> (Vec<u8>, usize) {
    // ~1 KiB of JSON-escaped text: lines with quotes, backslashes and a non-ASCII escape.
    let mut content = String::new();
    while content.len() < 1000 {
        content.push_str(r#"export SETTING=\"value \\ caf\u00e9\"\n"#);
    }
    let head = r#"{"version": 1, "files": ["#;
    let tail = "]}";
    let mut doc = String::from(head);
    let mut n = 0;
    loop {
        let entry = format!(
            r#"{}{{"destination": "/workspace/generated/d{:02}/file-{:05}.env", "content": "{content}"}}"#,
            if n == 0 { "" } else { ", " },
            n % 64,
            n
        );
        if doc.len() + entry.len() + tail.len() > MAX_DOCUMENT_BYTES {
            break;
        }
        doc.push_str(&entry);
        n += 1;
    }
    doc.push_str(tail);
    (doc.into_bytes(), n)
}

/// 1 000 environment literals and 8 op references (1 008 keys).
fn env_1000() -> Vec<u8> {
    let mut doc = String::from(r#"{"version": 1, "env": {"#);
    for i in 0..1000 {
        let sep = if i == 0 { "" } else { ", " };
        write!(
            doc,
            r#"{sep}"SETTING_{i:04}": "value-{i}-with some text \"quoted\"""#
        )
        .unwrap();
    }
    for i in 0..8 {
        write!(
            doc,
            r#", "SECRET_{i}": {{"op": "op://Engineering/service-{i}/credential"}}"#
        )
        .unwrap();
    }
    doc.push_str("}}");
    doc.into_bytes()
}

fn bench(c: &mut Criterion) {
    let (files, n_files) = files_1mib();
    let inputs = [
        ("minimal", minimal()),
        ("files_1mib", files),
        ("env_1000", env_1000()),
    ];
    let mut group = c.benchmark_group("parse_response");
    for (name, doc) in &inputs {
        eprintln!("input {name}: {} bytes", doc.len());
        let parsed = parse_response(doc).unwrap_or_else(|e| panic!("input {name} is refused: {e}"));
        match *name {
            "files_1mib" => assert_eq!(parsed.files.len(), n_files),
            "env_1000" => assert_eq!(parsed.env.len(), 1008),
            _ => assert_eq!(parsed, Default::default()),
        }
        group.throughput(Throughput::Bytes(doc.len() as u64));
        group.bench_with_input(BenchmarkId::from_parameter(name), doc, |b, doc| {
            b.iter(|| parse_response(black_box(doc)).expect("validated above"))
        });
    }
    group.finish();
    eprintln!("files_1mib holds {n_files} files");
}

criterion_group!(benches, bench);
criterion_main!(benches);
