//! What tests/offline/script_tools.rs reads: the repository's scripts and hooks, the programs its Rust
//! code spawns, the packages scripts install, and dpkg's view of this machine.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn read(rel: &str) -> String {
    std::fs::read_to_string(repo().join(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
}

pub fn files_in(dir: &str) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(repo().join(dir))
        .unwrap_or_else(|e| panic!("read {dir}: {e}"))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.is_file())
        .map(|p| {
            p.strip_prefix(repo())
                .expect("in repo")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    out.sort();
    out
}

/// The shell scripts run on the host: scripts/*, containers/*/{build-rootfs,lib.sh}, .ci/run.
pub fn host_scripts() -> Vec<String> {
    let mut out = files_in("scripts");
    for dir in files_dirs("containers") {
        for name in ["build-rootfs", "lib.sh"] {
            let rel = format!("{dir}/{name}");
            if repo().join(&rel).is_file() {
                out.push(rel);
            }
        }
    }
    out.push(".ci/run".into());
    out
}

pub fn files_dirs(dir: &str) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(repo().join(dir))
        .expect("containers/")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.is_dir())
        .map(|p| {
            p.strip_prefix(repo())
                .expect("in repo")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    out.sort();
    out
}

pub const PINP_INIT: &str = "containers/pinp/rootfs/usr/local/bin/ags-pinp-init";

/// The words of bash array `name=( … )` in `script` (comments dropped).
pub fn array_words(script: &str, name: &str) -> BTreeSet<String> {
    let Some(start) = script.find(&format!("\n{name}=(")) else {
        return BTreeSet::new();
    };
    let body = &script[start + name.len() + 3..];
    let body = &body[..body.find(')').expect("array closes")];
    body.lines()
        .map(|l| l.split('#').next().unwrap_or(""))
        .flat_map(str::split_whitespace)
        .filter(|w| !w.contains(['"', '\'', '$']))
        .map(str::to_string)
        .collect()
}

/// The Debian packages a script installs itself: `apt-get … install` and `install_missing` lines,
/// and its `INCLUDE` array (test-fresh's pristine rootfs).
pub fn own_installs(script: &str) -> BTreeSet<String> {
    let mut out = array_words(script, "INCLUDE");
    for line in script.lines() {
        // Quoted text is a message ("apt-get install debootstrap" in a hint), not an install.
        let l = unquoted(line);
        let l = l.trim_start();
        let installs = (l.contains("apt-get ") && l.contains(" install "))
            || l.starts_with("install_missing ")
            || l.contains(" install_missing ");
        if installs && !l.starts_with('#') {
            out.extend(
                l.split_whitespace()
                    .map(|w| w.trim_matches(['"', '(', ')', ';']))
                    .filter(|w| is_package_name(w))
                    .map(str::to_string),
            );
        }
    }
    out
}

/// `line` without its quoted parts.
pub fn unquoted(line: &str) -> String {
    let mut out = String::new();
    let mut quote = None;
    for c in line.chars() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, c) => out.push(c),
            _ => {}
        }
    }
    out
}

/// The program of a `#!` line (`env`'s argument for `#!/usr/bin/env NAME`).
pub fn interpreter(text: &str) -> Option<String> {
    let line = text.lines().next()?.strip_prefix("#!")?;
    let mut words = line.split_whitespace();
    let mut prog = words.next()?;
    if prog.ends_with("/env") {
        prog = words.next()?;
    }
    Some(prog.rsplit('/').next().unwrap_or(prog).to_string())
}

pub fn is_package_name(w: &str) -> bool {
    w.len() > 1
        && w.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && w.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "+.-".contains(c))
}

/// Program names spawned by Rust code (`Command::new("x")`, the suite's `tool("x")`,
/// `.command("x"`) under src/, tests/, examples/ and benches/.
pub fn rust_spawned() -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut stack: Vec<PathBuf> = ["src", "tests", "examples", "benches"]
        .iter()
        .map(|d| repo().join(d))
        .collect();
    while let Some(p) = stack.pop() {
        if p.is_dir() {
            stack.extend(
                std::fs::read_dir(&p)
                    .expect("dir")
                    .map(|e| e.expect("entry").path()),
            );
        } else if p.extension().is_some_and(|e| e == "rs") && !p.to_string_lossy().contains("script_tools") {
            let text = std::fs::read_to_string(&p).expect("rust file");
            for pat in ["Command::new(\"", "tool(\"", ".command(\""] {
                for (i, _) in text.match_indices(pat) {
                    let rest = &text[i + pat.len()..];
                    let name = &rest[..rest.find('"').unwrap_or(0)];
                    if !name.is_empty() && !name.contains('/') {
                        let rel = p
                            .strip_prefix(repo())
                            .expect("in repo")
                            .to_string_lossy()
                            .into_owned();
                        out.entry(rel).or_default().insert(name.to_string());
                    }
                }
            }
        }
    }
    out
}

/// The interpreters (`#!/bin/sh`, `#!/usr/bin/env python3`) of the hooks quickstart and the
/// suite run: examples/hooks and tests/fixtures.
pub fn hook_interpreters() -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut stack = vec![repo().join("examples/hooks"), repo().join("tests/fixtures")];
    while let Some(p) = stack.pop() {
        if p.is_dir() {
            stack.extend(
                std::fs::read_dir(&p)
                    .expect("dir")
                    .map(|e| e.expect("entry").path()),
            );
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&p) else {
            continue;
        };
        let Some(name) = interpreter(&text) else { continue };
        let rel = p
            .strip_prefix(repo())
            .expect("in repo")
            .to_string_lossy()
            .into_owned();
        out.entry(rel).or_default().insert(name);
    }
    out
}

pub fn dpkg(args: &[&str]) -> String {
    let out = Command::new("dpkg-query")
        .args(args)
        .output()
        .expect("dpkg-query runs (Debian only)");
    // -S exits 1 when some path has no owner, and prints the owners of the others.
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Debian's required packages installed here (all of them are on every Debian system).
pub fn required_packages() -> BTreeSet<String> {
    dpkg(&["-W", "-f=${Package} ${Priority}\n"])
        .lines()
        .filter_map(|l| l.strip_suffix(" required"))
        .map(str::to_string)
        .collect()
}

/// The symlink chain from `path` (alternatives), each step also as its other /usr-merge name
/// (/bin ↔ /usr/bin, /sbin ↔ /usr/sbin).
pub fn chain(path: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut p = path.to_path_buf();
    for _ in 0..10 {
        let s = p.to_string_lossy().into_owned();
        let alt = match s.strip_prefix("/usr") {
            Some(rest) => rest.to_string(),
            None => format!("/usr{s}"),
        };
        out.extend([s, alt]);
        match std::fs::read_link(&p) {
            Ok(target) => p = p.parent().expect("parent").join(target),
            Err(_) => break,
        }
    }
    out
}

/// path → the packages owning it, for every path given (one dpkg-query call).
pub fn owners(paths: &[String]) -> BTreeMap<String, BTreeSet<String>> {
    let mut args = vec!["-S"];
    args.extend(paths.iter().map(String::as_str));
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in dpkg(&args).lines().filter(|l| !l.starts_with("diversion")) {
        let Some((pkgs, path)) = line.split_once(": ") else {
            continue;
        };
        out.entry(path.to_string()).or_default().extend(
            pkgs.split(", ")
                .map(|q| q.split(':').next().unwrap_or(q).to_string()),
        );
    }
    out
}

pub fn debian_path(command: &str) -> Option<PathBuf> {
    ["/usr/sbin", "/usr/bin", "/sbin", "/bin"]
        .iter()
        .map(|d| Path::new(d).join(command))
        .find(|p| p.exists())
}
