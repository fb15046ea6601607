//! The hook matrix against the pinned agent CLIs in the agent image (issue 14): every native
//! event a cell of `crates/agent-hook/src/matrix.rs` claims must exist in the CLI the image ships.
//! What each CLI accepts is read from the CLI itself, in a container of the agent image started
//! through `ags` (`--agent shell`, no network):
//!
//! - claude: the hook event lists compiled into its binary (JSON arrays that start with
//!   `"PreToolUse","PostToolUse"`);
//! - codex: its own JSON schema (`codex app-server generate-json-schema`), the properties of
//!   `ManagedHooksRequirements` (one per hook event);
//! - gemini: the `HookEventName` enum of its bundle;
//! - opencode: the plugin hooks its binary triggers (`trigger("…"`) and the bus events it
//!   defines (`({type:"…"`), for the events its plugin gets through the `event` hook;
//! - pi: the `on(event: "…")` overloads of its extension API type declarations.
//!
//! A cell naming an event missing from that list fails the test, and so does a list that comes
//! out empty (the way of reading it broke with a new CLI version). Runs where the service has
//! the agent image (`localhost/ags-agent:latest`, rootful store here); skipped with a note
//! elsewhere.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};

use ags::agent_hooks::matrix::{self, MATRIX};
use ags::agent_hooks::wiring::OPENCODE_BUS_EVENTS;
use common::launch::stdout;
use common::{each_mode, show};

const AGENT_IMAGE: &str = "localhost/ags-agent:latest";

/// Prints `== SECTION` then that section's raw material, for each source named above.
const PROBE: &str = r#"set -u
root=$(npm root -g)
echo "== claude"
grep -aoE '\["PreToolUse","PostToolUse"[^]]*\]' "$root/@anthropic-ai/claude-code/bin/claude.exe" | sort -u
echo "== codex"
d=$(mktemp -d)
codex app-server generate-json-schema --out "$d" >/dev/null 2>&1
tr -d '\n' <"$d/v2/ConfigRequirementsReadResponse.json"; echo
echo "== gemini"
grep -ohE 'HookEventName[0-9]*\["[A-Za-z]+"\] = "[A-Za-z]+"' "$root"/@google/gemini-cli/bundle/*.js | sort -u
echo "== opencode-hooks"
grep -aoE 'trigger\("[a-z.]+"' "$root/opencode-ai/bin/opencode.exe" | sort -u
echo "== opencode-bus"
grep -aoE '\(\{type:"[a-z.]+"' "$root/opencode-ai/bin/opencode.exe" | sort -u
echo "== pi"
grep -ohE 'on\(event: "[a-z_]+"' "$root/@mariozechner/pi-coding-agent/dist/core/extensions/types.d.ts" | sort -u
echo "== js"
for f in "$@"; do node --check "$f" >/dev/null 2>&1 && echo "ok $f" || echo "bad $f"; done
echo "== end"
"#;

/// The raw output split into sections.
fn sections(out: &str) -> BTreeMap<String, Vec<String>> {
    let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current = String::new();
    for line in out.lines() {
        if let Some(name) = line.strip_prefix("== ") {
            current = name.trim().to_string();
            map.entry(current.clone()).or_default();
        } else if !current.is_empty() && !line.trim().is_empty() {
            map.entry(current.clone()).or_default().push(line.to_string());
        }
    }
    map
}

/// The quoted names in `lines` after `prefix` (e.g. `trigger("` → `tool.execute.before`).
fn quoted_after(lines: &[String], prefix: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for l in lines {
        let mut rest = l.as_str();
        while let Some(i) = rest.find(prefix) {
            rest = &rest[i + prefix.len()..];
            if let Some(end) = rest.find('"') {
                out.insert(rest[..end].to_string());
                rest = &rest[end..];
            }
        }
    }
    out
}

/// What each CLI accepts, per agent (opencode's as `hook:NAME` and `bus:NAME`).
fn accepted(s: &BTreeMap<String, Vec<String>>) -> BTreeMap<&'static str, BTreeSet<String>> {
    let get = |k: &str| s.get(k).cloned().unwrap_or_default();
    let claude: BTreeSet<String> = get("claude")
        .iter()
        .filter_map(|l| serde_json::from_str::<Vec<String>>(l).ok())
        .flatten()
        .collect();
    let codex: BTreeSet<String> = get("codex")
        .first()
        .and_then(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .and_then(|v| {
            v["definitions"]["ManagedHooksRequirements"]["properties"]
                .as_object()
                .map(|o| {
                    o.keys()
                        .filter(|k| k.starts_with(char::is_uppercase))
                        .cloned()
                        .collect()
                })
        })
        .unwrap_or_default();
    let gemini = quoted_after(&get("gemini"), "] = \"");
    let mut opencode: BTreeSet<String> = quoted_after(&get("opencode-hooks"), "trigger(\"")
        .into_iter()
        .map(|h| format!("hook:{h}"))
        .collect();
    opencode.extend(
        quoted_after(&get("opencode-bus"), "({type:\"")
            .into_iter()
            .map(|b| format!("bus:{b}")),
    );
    let pi = quoted_after(&get("pi"), "on(event: \"");
    BTreeMap::from([
        ("claude", claude),
        ("codex", codex),
        ("gemini", gemini),
        ("opencode", opencode),
        ("pi", pi),
    ])
}

/// The name a cell's native event has in [`accepted`]'s list of `agent`.
fn key(agent: &str, native: &str) -> String {
    match agent {
        "opencode" if OPENCODE_BUS_EVENTS.contains(&native) => format!("bus:{native}"),
        "opencode" => format!("hook:{native}"),
        _ => native.to_string(),
    }
}

/// Every claimed native event missing from its CLI's list, as `agent: event (native)`.
fn missing(accepted: &BTreeMap<&str, BTreeSet<String>>) -> Vec<String> {
    let mut out = Vec::new();
    for row in MATRIX {
        let list = accepted.get(row.agent).cloned().unwrap_or_default();
        for (event, native) in row.wired() {
            if !list.contains(&key(row.agent, native)) {
                out.push(format!("{}: {event} ({native})", row.agent));
            }
        }
    }
    out
}

#[test]
fn every_native_event_of_the_matrix_exists_in_the_pinned_cli() {
    each_mode(|env| {
        if !common::api::image_exists(&env.mode().socket(), AGENT_IMAGE).unwrap_or(false) {
            println!("SKIP: {}: no {AGENT_IMAGE} in this service", env.mode());
            return;
        }
        // The generated JavaScript parses with the image's Node.js.
        let label = env.label();
        let mut js = Vec::new();
        for agent in ["opencode", "pi"] {
            let w = ags::agent_hooks::wiring::generate(agent, "t").expect(agent);
            for f in w.files.iter().filter(|f| f.destination.ends_with(".js")) {
                let path = env.work_dir().join(format!("{agent}.mjs"));
                env.write_file(&path, &f.content, 0o644);
                js.push(path.display().to_string());
            }
        }
        let mut args: Vec<String> = [
            "--tty=false",
            "--image",
            AGENT_IMAGE,
            "--network",
            "none",
            "--label",
            &label,
            "--agent",
            "shell",
            "--",
            "sh",
            "-c",
            PROBE,
            "probe",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.extend(js.iter().cloned());
        let out = env.run(&args);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let text = stdout(&out);
        let sections = sections(&text);
        assert!(sections.contains_key("end"), "probe cut short: {}", show(&out));
        let checked = sections.get("js").cloned().unwrap_or_default();
        assert_eq!(checked.len(), 2, "{text}");
        assert!(
            checked.iter().all(|l| l.starts_with("ok ")),
            "generated JavaScript: {checked:?}"
        );
        let accepted = accepted(&sections);
        for (agent, list) in &accepted {
            assert!(
                list.len() >= 5,
                "{agent}: the probe found only {list:?}; the way this test reads the CLI broke \
                 (a new version?): {text}"
            );
        }
        let missing = missing(&accepted);
        assert!(
            missing.is_empty(),
            "cells of crates/agent-hook/src/matrix.rs claim events the pinned CLI does not have: \
             {missing:?}\nwhat the CLIs accept: {accepted:#?}"
        );
        // The check has teeth: another agent's event names are not accepted.
        let mut wrong = accepted.clone();
        wrong.insert("gemini", accepted["claude"].clone());
        assert!(
            missing_of(&wrong, "gemini").contains(&"gemini: pre_tool (BeforeTool)".to_string()),
            "{wrong:?}"
        );
        assert_eq!(
            matrix::native("gemini", ags::agent_hooks::Event::PreTool),
            Some("BeforeTool")
        );
    });
}

fn missing_of(accepted: &BTreeMap<&str, BTreeSet<String>>, agent: &str) -> Vec<String> {
    missing(accepted)
        .into_iter()
        .filter(|m| m.starts_with(&format!("{agent}:")))
        .collect()
}
