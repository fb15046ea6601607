//! The shape of `src/` (issue #11), checked on every `cargo test`: the module import graph has no
//! cycle, and no pipeline stage imports a later one.
//!
//! How: the module tree is walked from `src/lib.rs` the way rustc does (`mod x;`, `#[path]`,
//! inline `mod x { … }`); every `crate::…`, `super::…` and `self::…` path of every file (in `use`
//! trees and in code, comments and string literals excluded) is resolved to the file module it
//! names. That gives one edge per (file, file). A module may name its own ancestors (it is part of
//! them, `use super::*` in tests); every other edge counts. Then:
//!
//! 1. the file-level graph has no cycle (`no_import_cycles`);
//! 2. each top-level module has a layer in [`LAYERS`]; an edge between two top-level modules
//!    must go from a later layer to an earlier-or-equal one, a leaf/data module (layer 0) imports
//!    only leaf/data modules, and the graph between top-level modules has no cycle either
//!    (`stages_import_only_earlier_stages`);
//! 3. the README's Layout block names every top-level module of `src/`, and no other
//!    (`the_readme_layout_names_every_top_level_module`).
//!
//! Each failure prints the offending edge with the file and line of the reference. A new
//! top-level module must be added to [`LAYERS`] (the test says so). `AGS_ARCH_DUMP=1` prints the
//! top-level graph.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Every top-level module of `src/` and its layer. Layer 0: leaf and data modules, importable
/// by every module, importing only each other. Then the pipeline, in order:
/// cli → config → hooks → plan → (op, image, spool…) → podman → launch → error → session →
/// commands. A module may import its own layer and earlier ones (never a cycle). An entry may
/// name a path inside a module (`git::model`): that part then has its own layer, the longest
/// entry wins (docs/decisions/0009-capability-folders.md).
const LAYERS: &[(&str, u32)] = &[
    // Leaf and data modules.
    ("agents", 0),             // the agent table (CLI, config, hook policy, plan)
    ("agent_hooks", 0),        // agent hooks: events, matrix, wiring, `[[agent_hook]]` config as data
    ("containment", 0),        // host path containment checks
    ("exit", 0),               // exit codes like `podman run`
    ("fsutil", 0),             // atomic writes, private directories
    ("git::model", 0),         // git's rules and the host's git setup as data
    ("egress::model", 0),      // `[network]`: the mode and the allowlist syntax
    ("credentials::model", 0), // `[[credential]]` and the agents' provider keys as data
    ("hardening", 0),          // process-wide self-protection (no core dumps, no ptrace)
    ("json", 0),               // strict JSON decoding
    ("limits", 0),             // resource limit syntax and defaults (memory, CPUs, tmpfs sizes)
    ("logfile", 0),            // the host's JSONL logs: appending, rotation, per-launch budgets
    ("process", 0),            // the one spawn primitive
    ("procfs", 0),             // /proc readers
    ("prompt", 0),             // terminal prompts
    ("safepath", 0),           // path validation
    ("secret", 0),             // the secret wrapper
    ("socket_server", 0),      // the per-launch unix-socket servers' accept loop and handle
    ("text", 0),               // control-character escaping
    ("time", 0),               // RFC 3339 timestamps
    ("trace", 0),              // AGS_TRACE timing
    // The pipeline.
    ("cli", 1),
    ("config", 2),
    ("workspace", 2), // the boundary: every read of agent-writable state (issue 22)
    // The plan's data, and what each capability adds to it (pure functions of the config).
    ("plan::types", 2),
    ("git::plan", 2),
    ("egress::plan", 2),
    ("credentials::plan", 2),
    ("agent_hooks::plan", 2),
    ("hooks", 3),
    ("plan", 4),
    ("image", 4),            // the agent image build context (from config)
    ("events::spool", 4),    // launch records for crash recovery (from config)
    ("op", 5),               // 1Password lookups of the plan's references (final handoff)
    ("egress", 5),           // the allowlist proxy, its log, the forwarder
    ("credentials", 5),      // placeholders, the launch CA, the substituting relay (issue 25)
    ("agent_hooks::log", 5), // the agent hook record socket and log (issue #14)
    ("ssh_agent", 5),        // the filter in front of the forwarded ssh-agent (issue 22)
    ("events::oci", 5),      // the OCI hooks that record container starts and stops
    ("podman", 6),
    ("launch", 7),
    ("receipt", 7), // the run receipt: the launch bound to its records' chains (issue 29)
    ("git", 7),     // the guard's missing pieces and the check around a launch
    ("error", 8),   // the crate error: one variant per stage
    ("events", 9),  // started/finished session state and crash recovery
    ("commands", 10),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    Ident,
    Str,
    Punct(char),
    PathSep,
}

#[derive(Debug, Clone)]
struct Token {
    kind: Tok,
    text: String,
    line: usize,
}

/// Tokens of a Rust file without comments; string/char literals become one `Str` token.
fn tokenize(src: &str) -> Vec<Token> {
    let b: Vec<char> = src.chars().collect();
    let (mut i, mut line, mut out) = (0, 1, Vec::new());
    let count_lines = |s: &[char]| s.iter().filter(|c| **c == '\n').count();
    while i < b.len() {
        let c = b[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && b.get(i + 1) == Some(&'/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && b.get(i + 1) == Some(&'*') {
            let (start, mut depth) = (i, 0);
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            line += count_lines(&b[start..i]);
        } else if let Some(end) = raw_string_end(&b, i) {
            let text: String = b[i..end].iter().collect();
            line += count_lines(&b[i..end]);
            out.push(Token {
                kind: Tok::Str,
                text,
                line,
            });
            i = end;
        } else if c == '"' || (c == 'b' && b.get(i + 1) == Some(&'"')) {
            let start = i;
            i += if c == 'b' { 2 } else { 1 };
            while i < b.len() && b[i] != '"' {
                i += if b[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            let text: String = b[start + 1..i - 1].iter().collect();
            out.push(Token {
                kind: Tok::Str,
                text: text.trim_start_matches('"').into(),
                line,
            });
            line += count_lines(&b[start..i]);
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{1b}') or a lifetime ('a).
            if b.get(i + 1) == Some(&'\\') {
                i += 3;
                while i < b.len() && b[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if b.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
            }
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < b.len() && (b[i].is_alphanumeric() || b[i] == '_') {
                i += 1;
            }
            let text: String = b[start..i].iter().collect();
            let text = text.strip_prefix("r#").map(str::to_string).unwrap_or(text);
            out.push(Token {
                kind: Tok::Ident,
                text,
                line,
            });
        } else if c == ':' && b.get(i + 1) == Some(&':') {
            out.push(Token {
                kind: Tok::PathSep,
                text: "::".into(),
                line,
            });
            i += 2;
        } else {
            out.push(Token {
                kind: Tok::Punct(c),
                text: c.to_string(),
                line,
            });
            i += 1;
        }
    }
    out
}

/// End of a raw (byte) string literal starting at `i` (`r"…"`, `r#"…"#`, `br"…"`), if one does.
fn raw_string_end(b: &[char], i: usize) -> Option<usize> {
    if i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_') {
        return None;
    }
    let mut j = i;
    if b.get(j) == Some(&'b') {
        j += 1;
    }
    if b.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let mut hashes = 0;
    while b.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    if b.get(j) != Some(&'"') {
        return None;
    }
    j += 1;
    while j < b.len() {
        if b[j] == '"' && (1..=hashes).all(|k| b.get(j + k) == Some(&'#')) {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(b.len())
}

/// One module file: its module path and source.
struct ModFile {
    path: Vec<String>,
    file: PathBuf,
    tokens: Vec<Token>,
}

/// A reference from one file module to another.
#[derive(Debug, Clone)]
struct Edge {
    from: String,
    to: String,
    at: String,
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// All module files reachable from `src/lib.rs`.
fn module_files() -> Vec<ModFile> {
    let mut out = Vec::new();
    load(&src_dir().join("lib.rs"), Vec::new(), true, &mut out);
    out
}

fn load(file: &Path, path: Vec<String>, mod_rs: bool, out: &mut Vec<ModFile>) {
    let src = fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let tokens = tokenize(&src);
    let dir = file.parent().unwrap().to_path_buf();
    // Children of a non-mod-rs file `a/b.rs` live in `a/b/`.
    let child_dir = if mod_rs {
        dir.clone()
    } else {
        dir.join(file.file_stem().unwrap())
    };
    let mut depth_inline = 0usize;
    let mut braces = 0usize;
    let mut inline_at: Vec<usize> = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        match t.kind {
            Tok::Punct('{') => braces += 1,
            Tok::Punct('}') => {
                braces -= 1;
                if inline_at.last() == Some(&braces) {
                    inline_at.pop();
                    depth_inline -= 1;
                }
            }
            Tok::Ident if t.text == "mod" => {
                let (Some(name), Some(next)) = (tokens.get(i + 1), tokens.get(i + 2)) else {
                    continue;
                };
                if name.kind != Tok::Ident {
                    continue;
                }
                if next.kind == Tok::Punct('{') {
                    inline_at.push(braces);
                    depth_inline += 1;
                    continue;
                }
                if next.kind != Tok::Punct(';') {
                    continue;
                }
                assert_eq!(
                    depth_inline,
                    0,
                    "{}: `mod {};` inside an inline module is not supported",
                    file.display(),
                    name.text
                );
                let mut child_path = path.clone();
                child_path.push(name.text.clone());
                let (child, child_mod_rs) = match path_attr(&tokens[..i]) {
                    Some(p) => (dir.join(p), false),
                    None => {
                        let flat = child_dir.join(format!("{}.rs", name.text));
                        if flat.exists() {
                            (flat, false)
                        } else {
                            (child_dir.join(&name.text).join("mod.rs"), true)
                        }
                    }
                };
                load(&child, child_path, child_mod_rs, out);
            }
            _ => {}
        }
    }
    out.push(ModFile {
        path,
        file: file.to_path_buf(),
        tokens,
    });
}

/// The `#[path = "…"]` attribute right before a `mod` item (other attributes and `pub` may sit in
/// between).
fn path_attr(before: &[Token]) -> Option<String> {
    let mut i = before.len();
    // Skip visibility (`pub`, `pub(crate)`).
    while i > 0 {
        let t = &before[i - 1];
        match t.kind {
            Tok::Ident if t.text == "pub" || t.text == "crate" || t.text == "super" => i -= 1,
            Tok::Punct('(') | Tok::Punct(')') => i -= 1,
            _ => break,
        }
    }
    // Walk back over attributes `# [ … ]`.
    while i > 0 && before[i - 1].kind == Tok::Punct(']') {
        let end = i - 1;
        let mut j = end;
        let mut depth = 0;
        loop {
            match before[j].kind {
                Tok::Punct(']') => depth += 1,
                Tok::Punct('[') => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
            j -= 1;
        }
        let attr = &before[j + 1..end];
        if attr.len() == 3
            && attr[0].text == "path"
            && attr[1].kind == Tok::Punct('=')
            && attr[2].kind == Tok::Str
        {
            return Some(attr[2].text.clone());
        }
        i = j.saturating_sub(1); // the `#`
    }
    None
}

/// The paths (as segment lists) of a `use` tree starting at `tokens[i]`; returns them and the
/// index after the tree.
fn use_tree(tokens: &[Token], mut i: usize, prefix: &[String], out: &mut Vec<(Vec<String>, usize)>) -> usize {
    let mut path = prefix.to_vec();
    loop {
        let Some(t) = tokens.get(i) else { return i };
        match t.kind {
            Tok::Ident if t.text == "self" && !path.is_empty() => i += 1,
            Tok::Ident if t.text == "as" => {
                out.push((path, t.line));
                return i + 2;
            }
            Tok::Ident => {
                path.push(t.text.clone());
                i += 1;
            }
            Tok::PathSep => i += 1,
            Tok::Punct('*') => {
                out.push((path, t.line));
                return i + 1;
            }
            Tok::Punct('{') => {
                i += 1;
                loop {
                    match tokens.get(i).map(|t| t.kind) {
                        Some(Tok::Punct('}')) => return i + 1,
                        Some(Tok::Punct(',')) => i += 1,
                        None => return i,
                        _ => i = use_tree(tokens, i, &path, out),
                    }
                }
            }
            _ => {
                out.push((path, t.line));
                return i;
            }
        }
    }
}

/// Every `crate::`/`super::`/`self::` path of a file, with its line and the inline-module
/// nesting it appears in.
fn references(f: &ModFile) -> Vec<(Vec<String>, usize)> {
    let t = &f.tokens;
    let mut out = Vec::new();
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut braces = 0usize;
    let mut i = 0;
    while i < t.len() {
        let tok = &t[i];
        match tok.kind {
            Tok::Punct('{') => braces += 1,
            Tok::Punct('}') => {
                braces -= 1;
                if inline.last().map(|(_, d)| *d) == Some(braces) {
                    inline.pop();
                }
            }
            Tok::Ident if tok.text == "mod" && t.get(i + 2).map(|n| n.kind) == Some(Tok::Punct('{')) => {
                inline.push((t[i + 1].text.clone(), braces));
                braces += 1;
                i += 3;
                continue;
            }
            _ => {}
        }
        let mut base = f.path.clone();
        base.extend(inline.iter().map(|(n, _)| n.clone()));
        if tok.kind == Tok::Ident && tok.text == "use" {
            let mut trees = Vec::new();
            i = use_tree(t, i + 1, &[], &mut trees);
            for (p, line) in trees {
                if let Some(abs) = absolute(&base, &p) {
                    out.push((abs, line));
                }
            }
            continue;
        }
        let starts_path = tok.kind == Tok::Ident
            && matches!(tok.text.as_str(), "crate" | "super" | "self")
            && t.get(i + 1).map(|n| n.kind) == Some(Tok::PathSep)
            && (i == 0 || t[i - 1].kind != Tok::PathSep);
        if starts_path {
            let mut p = vec![tok.text.clone()];
            let mut j = i + 1;
            while t.get(j).map(|n| n.kind) == Some(Tok::PathSep)
                && t.get(j + 1).map(|n| n.kind) == Some(Tok::Ident)
            {
                p.push(t[j + 1].text.clone());
                j += 2;
            }
            if let Some(abs) = absolute(&base, &p) {
                out.push((abs, tok.line));
            }
            i = j;
            continue;
        }
        i += 1;
    }
    out
}

/// `p` from module `base` as a path from the crate root; `None` for paths of other crates or of
/// a module's own children (`use child::x`).
fn absolute(base: &[String], p: &[String]) -> Option<Vec<String>> {
    let first = p.first()?;
    let mut abs: Vec<String> = match first.as_str() {
        "crate" => Vec::new(),
        "super" | "self" => base.to_vec(),
        _ => return None,
    };
    let mut rest = &p[1..];
    if first == "super" {
        abs.pop();
    }
    while let Some(s) = rest.first() {
        match s.as_str() {
            "super" => {
                abs.pop();
            }
            "self" => {}
            _ => break,
        }
        rest = &rest[1..];
    }
    abs.extend(rest.iter().cloned());
    Some(abs)
}

fn name(path: &[String]) -> String {
    if path.is_empty() {
        "crate".into()
    } else {
        path.join("::")
    }
}

/// The file-level edges of `src/`.
fn edges() -> (Vec<String>, Vec<Edge>) {
    let files = module_files();
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| f.path.clone()).collect();
    let mut edges = BTreeMap::new();
    for f in &files {
        for (target, line) in references(f) {
            let Some(to) = (0..=target.len())
                .rev()
                .map(|n| &target[..n])
                .find(|p| modules.contains(*p))
            else {
                continue;
            };
            // A module may name itself and its ancestors.
            if f.path.starts_with(to) {
                continue;
            }
            let rel = f.file.strip_prefix(src_dir().parent().unwrap()).unwrap();
            edges
                .entry((name(&f.path), name(to)))
                .or_insert_with(|| format!("{}:{line}", rel.display()));
        }
    }
    let edges = edges
        .into_iter()
        .map(|((from, to), at)| Edge { from, to, at })
        .collect();
    (modules.iter().map(|m| name(m)).collect(), edges)
}

/// Strongly connected components with more than one node (Tarjan).
fn cycles(nodes: &[String], edges: &[(String, String)]) -> Vec<Vec<String>> {
    struct St<'a> {
        adj: BTreeMap<&'a str, Vec<&'a str>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut St<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on.insert(v);
        for w in s.adj.get(v).cloned().unwrap_or_default() {
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on.remove(w);
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let mut s = St {
        adj: BTreeMap::new(),
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for (a, b) in edges {
        s.adj.entry(a.as_str()).or_default().push(b.as_str());
    }
    for v in nodes {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v.as_str());
        }
    }
    s.out
}

fn describe_cycles(comps: &[Vec<String>], edges: &[Edge], key: impl Fn(&str) -> String) -> String {
    let mut msg = String::new();
    for comp in comps {
        msg.push_str(&format!("cycle between {}:\n", comp.join(", ")));
        let mut shown = BTreeSet::new();
        for e in edges {
            let (a, b) = (key(&e.from), key(&e.to));
            if comp.contains(&a) && comp.contains(&b) && a != b && shown.insert((a, b)) {
                msg.push_str(&format!("  {} -> {}  ({})\n", e.from, e.to, e.at));
            }
        }
    }
    msg
}

fn top(module: &str) -> String {
    module.split("::").next().unwrap().to_string()
}

#[test]
fn no_import_cycles() {
    let (nodes, edges) = edges();
    assert!(
        edges.len() > 100,
        "the import graph looks empty ({} edges): is the parser broken?",
        edges.len()
    );
    let pairs: Vec<_> = edges.iter().map(|e| (e.from.clone(), e.to.clone())).collect();
    let comps = cycles(&nodes, &pairs);
    assert!(
        comps.is_empty(),
        "import cycles in src/:\n{}",
        describe_cycles(&comps, &edges, str::to_string)
    );
}

/// The unit of `module` in `layers`: the longest entry that is a prefix of its path (so
/// `git::model` may have another layer than the rest of `git`), else its top-level module.
fn unit(module: &str, layers: &[(&str, u32)]) -> String {
    let segs: Vec<&str> = module.split("::").collect();
    (1..=segs.len())
        .rev()
        .map(|n| segs[..n].join("::"))
        .find(|p| layers.iter().any(|(k, _)| k == p))
        .unwrap_or_else(|| top(module))
}

/// The layer rules over the file-level graph: every top-level module has a layer, an edge
/// between two units goes to an earlier or equal layer, a layer-0 unit imports only layer 0,
/// and the units' graph has no cycle.
fn layer_problems(nodes: &[String], edges: &[Edge], layers: &[(&str, u32)]) -> Vec<String> {
    let layer: BTreeMap<&str, u32> = layers.iter().copied().collect();
    let mut problems = Vec::new();
    let tops: BTreeSet<String> = nodes.iter().filter(|n| *n != "crate").map(|n| top(n)).collect();
    for t in &tops {
        if !layer.contains_key(t.as_str()) {
            problems.push(format!(
                "src/{t}: not in LAYERS of tests/offline/architecture.rs; give it its layer"
            ));
        }
    }
    let mut unit_edges = BTreeSet::new();
    for e in edges {
        let (a, b) = (unit(&e.from, layers), unit(&e.to, layers));
        if a == b || e.from == "crate" {
            continue;
        }
        unit_edges.insert((a.clone(), b.clone()));
        let (Some(&la), Some(&lb)) = (layer.get(a.as_str()), layer.get(b.as_str())) else {
            continue;
        };
        if la == 0 && lb != 0 {
            problems.push(format!(
                "leaf/data module {a} imports stage {b}: {} -> {} ({})",
                e.from, e.to, e.at
            ));
        } else if lb > la {
            problems.push(format!(
                "{a} (layer {la}) imports the later {b} (layer {lb}): {} -> {} ({})",
                e.from, e.to, e.at
            ));
        }
    }
    let pairs: Vec<_> = unit_edges.into_iter().collect();
    let units: BTreeSet<String> = pairs.iter().flat_map(|(a, b)| [a.clone(), b.clone()]).collect();
    let comps = cycles(&units.into_iter().collect::<Vec<_>>(), &pairs);
    if !comps.is_empty() {
        problems.push(format!(
            "cycles between units of LAYERS:\n{}",
            describe_cycles(comps.as_slice(), edges, |m| unit(m, layers))
        ));
    }
    if std::env::var_os("AGS_ARCH_DUMP").is_some() {
        for (a, b) in &pairs {
            eprintln!("{a} -> {b}");
        }
    }
    problems
}

#[test]
fn stages_import_only_earlier_stages() {
    let (nodes, edges) = edges();
    let problems = layer_problems(&nodes, &edges, LAYERS);
    assert!(
        problems.is_empty(),
        "import rules broken in src/:\n{}",
        problems.join("\n")
    );
}

/// The checks can fail: a cycle, a backwards import and an import across per-path layers
/// planted in a synthetic graph are found.
#[test]
fn the_checks_find_planted_problems() {
    let nodes: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
    let edges = [("a", "b"), ("b", "c"), ("c", "a")].map(|(x, y)| (x.to_string(), y.to_string()));
    assert_eq!(cycles(&nodes, &edges), vec![nodes.clone()]);
    assert!(cycles(&nodes, &edges[..2]).is_empty());
    let src = "use crate::{a::b, c::{self, d as e}};\nfn f() { super::x::y(); let s = \"crate::z\"; } // crate::w\nmod tests { use super::*; }";
    let f = ModFile {
        path: vec!["m".into(), "n".into()],
        file: PathBuf::new(),
        tokens: tokenize(src),
    };
    let refs: Vec<String> = references(&f).into_iter().map(|(p, _)| p.join("::")).collect();
    assert_eq!(refs, ["a::b", "c", "c::d", "m::x::y", "m::n"]);
    // Per-path layers: `g::model` (layer 0) may not import the rest of `g` (layer 7), which
    // may import it; without the `g::model` entry, both are one unit and nothing is wrong.
    let edge = |from: &str, to: &str| Edge {
        from: from.into(),
        to: to.into(),
        at: "planted".into(),
    };
    let nodes: Vec<String> = ["g::model", "g::run"].map(String::from).to_vec();
    let fine = [edge("g::run", "g::model")];
    let bad = [edge("g::model::rules", "g::run")];
    let split: &[(&str, u32)] = &[("g", 7), ("g::model", 0)];
    assert!(layer_problems(&nodes, &fine, split).is_empty());
    let found = layer_problems(&nodes, &bad, split);
    assert!(
        found.len() == 1 && found[0].contains("leaf/data module g::model imports stage g"),
        "{found:?}"
    );
    assert!(layer_problems(&nodes, &bad, &[("g", 7)]).is_empty());
}

/// The README's Layout block (its code block).
fn readme_layout() -> String {
    let readme = fs::read_to_string(src_dir().join("../README.md")).expect("README.md");
    let start = readme
        .find("## Layout")
        .expect("README.md has a ## Layout section");
    let block = &readme[start..];
    let open = block.find("```").expect("the Layout section has a code block") + 3;
    let close = open + block[open..].find("```").expect("the code block ends");
    block[open..close].to_string()
}

/// Every `src/NAME` and `src/NAME.rs` the README's Layout block names.
fn readme_layout_names() -> BTreeSet<String> {
    let block = readme_layout();
    let mut names = BTreeSet::new();
    for (i, _) in block.match_indices("src/") {
        let rest = &block[i + 4..];
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
            .unwrap_or(rest.len());
        names.insert(rest[..end].trim_end_matches('.').to_string());
    }
    names
}

/// The README's Layout block names every top-level module of `src/` (a directory or a `.rs`
/// file; `lib.rs`, `main.rs` and test files aside), and nothing that is not there.
#[test]
fn the_readme_layout_names_every_top_level_module() {
    let mut actual = BTreeSet::new();
    for entry in fs::read_dir(src_dir()).expect("src/") {
        let name = entry
            .expect("a src/ entry")
            .file_name()
            .to_string_lossy()
            .into_owned();
        let test = name.ends_with("_tests.rs") || name == "tests.rs";
        if !test && name != "lib.rs" && name != "main.rs" {
            actual.insert(name);
        }
    }
    let named = readme_layout_names();
    let missing: Vec<_> = actual.difference(&named).collect();
    let stale: Vec<_> = named.difference(&actual).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "README.md's Layout: add a line for {missing:?} (src/NAME or src/NAME.rs, what it owns); \
         remove {stale:?}, which src/ does not have"
    );
}

/// The README's Layout block names every crate of the workspace (`crates/NAME/`).
#[test]
fn the_readme_layout_names_every_crate() {
    let block = readme_layout();
    let crates = src_dir().join("../crates");
    for entry in fs::read_dir(&crates).expect("crates/") {
        let name = entry
            .expect("a crates/ entry")
            .file_name()
            .to_string_lossy()
            .into_owned();
        assert!(
            block.contains(&format!("{name}/")),
            "README.md's Layout: name crates/{name}/ under crates/ (what the program does)"
        );
    }
}
