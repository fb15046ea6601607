//! The size of the house (issue 24): every production file stays under 500 lines and every
//! function under 80, and the production line count is measured the way docs/BENCHMARKS.md
//! reports it (`cargo test --test offline size:: -- --nocapture` prints it per folder).
//!
//! Production code: every `.rs` under `src/`, `oci/` and `crates/*/src`, without test files
//! (`tests.rs`, `*_tests.rs`, the dispatcher's `fixtures.rs`) and without `#[cfg(test)]` items;
//! blank and comment lines count. The files are rustfmt-formatted, so an item ends at the first
//! line that closes it at its own indentation.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

const MAX_FILE_LINES: usize = 500;
const MAX_FN_LINES: usize = 80;

/// The production files and their lines without `#[cfg(test)]` items.
fn production_files() -> Vec<(PathBuf, Vec<String>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = vec![root.join("src"), root.join("oci")];
    for krate in fs::read_dir(root.join("crates")).expect("crates/").flatten() {
        dirs.push(krate.path().join("src"));
    }
    let mut files = Vec::new();
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .flatten()
        {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                dirs.push(path);
            } else if name.ends_with(".rs") && !is_test_file(&name) {
                let text = fs::read_to_string(&path).expect("read a source file");
                files.push((
                    path.strip_prefix(root).unwrap().to_path_buf(),
                    without_test_items(&text),
                ));
            }
        }
    }
    files.sort();
    files
}

fn is_test_file(name: &str) -> bool {
    name == "tests.rs" || name.ends_with("_tests.rs") || name == "fixtures.rs"
}

/// `text`'s lines without the `#[cfg(test)]` items (an attribute line, the item's first line and,
/// for an item with a body, every line up to the one that closes it at the same indentation).
fn without_test_items(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim() != "#[cfg(test)]" {
            out.push(lines[i].to_string());
            i += 1;
            continue;
        }
        let indent = indentation(lines[i]);
        i += 1;
        // Further attributes, then the item itself.
        while i < lines.len() && lines[i].trim_start().starts_with("#[") {
            i += 1;
        }
        if i < lines.len() && lines[i].trim_end().ends_with('{') {
            i += 1;
            while i < lines.len()
                && !(indentation(lines[i]) == indent && lines[i].trim_start().starts_with('}'))
            {
                i += 1;
            }
        }
        i += 1;
    }
    out
}

fn indentation(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// The functions of `lines` longer than [`MAX_FN_LINES`]: (first line number, name, length).
fn long_functions(lines: &[String]) -> Vec<(usize, String, usize)> {
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(name) = fn_name(line) else { continue };
        if line.trim_end().ends_with('}') {
            continue; // a one-line function
        }
        let indent = indentation(line);
        // The signature may wrap; the body closes with `}` at the `fn` line's indentation.
        let Some(end) = lines[i..]
            .iter()
            .position(|l| indentation(l) == indent && l.trim_start().starts_with('}'))
        else {
            continue;
        };
        if lines[i..=i + end]
            .iter()
            .any(|l| l.trim_end().ends_with(';') && indentation(l) == indent)
        {
            continue; // a declaration without a body (a trait method)
        }
        if end + 1 > MAX_FN_LINES {
            out.push((i + 1, name, end + 1));
        }
    }
    out
}

/// The name of the function whose `fn` line this is.
fn fn_name(line: &str) -> Option<String> {
    let t = line.trim_start();
    if t.starts_with("//") {
        return None;
    }
    let at = t.find("fn ")?;
    let before = &t[..at];
    let qualifiers = [
        "pub",
        "pub(crate)",
        "pub(super)",
        "async",
        "const",
        "unsafe",
        "extern",
    ];
    if !before
        .split_whitespace()
        .all(|w| qualifiers.contains(&w) || w.starts_with("pub("))
    {
        return None;
    }
    let name: String = t[at + 3..]
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

#[test]
fn no_production_file_over_500_lines_and_no_function_over_80() {
    let mut problems = Vec::new();
    for (path, lines) in production_files() {
        if lines.len() > MAX_FILE_LINES {
            problems.push(format!(
                "{}: {} lines (at most {MAX_FILE_LINES})",
                path.display(),
                lines.len()
            ));
        }
        for (at, name, len) in long_functions(&lines) {
            problems.push(format!(
                "{}: fn {name} (line {at} without test items) has {len} lines (at most {MAX_FN_LINES})",
                path.display()
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "split these (a module per concern, a function per step):\n{}",
        problems.join("\n")
    );
}

#[test]
fn production_lines_per_folder() {
    let mut per: BTreeMap<String, usize> = BTreeMap::new();
    let mut total = 0;
    for (path, lines) in production_files() {
        let parts: Vec<String> = path.iter().map(|p| p.to_string_lossy().into_owned()).collect();
        let key = if parts.len() > 2 {
            parts[..2].join("/")
        } else {
            parts.join("/")
        };
        *per.entry(key).or_default() += lines.len();
        total += lines.len();
    }
    let mut rows: Vec<_> = per.into_iter().collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.1));
    println!("production lines: {total}");
    for (folder, n) in rows {
        println!("{n:>7} {folder}");
    }
    assert!(total > 0);
}

#[test]
fn the_checks_find_planted_problems() {
    let long_fn = format!("fn f() {{\n{}}}\n", "    x();\n".repeat(MAX_FN_LINES));
    let lines = without_test_items(&long_fn);
    assert_eq!(long_functions(&lines), [(1, "f".to_string(), MAX_FN_LINES + 2)]);
    let with_tests =
        "fn a() {}\n#[cfg(test)]\nmod tests {\n    fn b() {\n    }\n}\n#[cfg(test)]\nuse x;\nfn c() {}\n";
    assert_eq!(without_test_items(with_tests), ["fn a() {}", "fn c() {}"]);
    let trait_decl = "trait T {\n    fn a(&self);\n}\n";
    assert!(long_functions(&without_test_items(trait_decl)).is_empty());
}
