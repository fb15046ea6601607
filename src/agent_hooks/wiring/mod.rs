//! The generated hook wiring of each agent: the files `ags` mounts read-only at the agent's
//! highest-precedence hook location (docs/agent-hooks.md), and the arguments it adds, every
//! entry calling the dispatcher as `DISPATCHER_PATH --agent AGENT --event NATIVE_EVENT`. Pure
//! data from the hook matrix: the plan places the files, the launch stages them like every
//! generated file (docs/decisions/0002).

mod js;
mod switches;

pub use switches::{SWITCH_OFF_ENV, SwitchOff, check_agent, check_args, check_env};

use serde_json::{Value, json};

use super::DISPATCHER_PATH;
use super::matrix::{self, AgentHooks, Mechanism};

/// The generated opencode plugin (the plugin and the extension live outside
/// [`super::CONTAINER_DIR`], which belongs to the dispatcher).
pub const OPENCODE_PLUGIN: &str = "/etc/ags-agent-hooks/opencode-plugin.js";
/// The generated pi extension.
pub const PI_EXTENSION: &str = "/etc/ags-agent-hooks/pi-extension.js";
/// claude's managed settings file.
pub const CLAUDE_MANAGED: &str = "/etc/claude-code/managed-settings.json";
/// claude's managed-settings drop-in directory: shadowed empty and read-only. In a rootful
/// launch the agent runs as uid 0 and could add a drop-in with `disableAllHooks`, which claude
/// applies at once (session-12 attack F5).
pub const CLAUDE_DROP_INS: &str = "/etc/claude-code/managed-settings.d";
/// codex's system hooks file.
pub const CODEX_HOOKS: &str = "/etc/codex/hooks.json";
/// pi's added arguments: no extension discovery (project `.pi/extensions`, the user's
/// `~/.pi/agent/extensions`, settings `extensions` and `packages`: all of it writable by the
/// agent, and an extension runs in pi's own process, where it could disarm the generated one),
/// then the generated extension, which `--no-extensions` leaves loaded.
pub const PI_ARGS: &[&str] = &["--no-extensions", "-e", PI_EXTENSION];
/// pi's default agent directory's `bin` (the state volume), first on the bash tool's `PATH`:
/// shadowed empty and read-only (session-13 attack M3), so neither the agent nor pi's own
/// download of `fd`/`rg` puts a program there.
pub const PI_BIN: &str = "/home/dev/.pi/agent/bin";

/// opencode's directories of code it loads into its own process from the agent's home
/// (`{plugin,plugins}/*.{js,ts}` and the custom tools of `{tool,tools}/*.{js,ts}`, imported at
/// start: session-12 attack F3) of its global config directory, a state volume, and of
/// `~/.opencode`: shadowed empty and read-only. The workdir's `.opencode/` is the workspace
/// boundary's (`workspace::protected`).
pub const OPENCODE_PLUGIN_DIRS: &[&str] = &[
    "/home/dev/.config/opencode/plugin",
    "/home/dev/.config/opencode/plugins",
    "/home/dev/.config/opencode/tool",
    "/home/dev/.config/opencode/tools",
    "/home/dev/.opencode/plugin",
    "/home/dev/.opencode/plugins",
    "/home/dev/.opencode/tool",
    "/home/dev/.opencode/tools",
];

/// Environment values claude's managed settings pin (the managed `env` is applied last, so a
/// user or project settings `env` cannot set them): `CLAUDE_CODE_SIMPLE` is bare mode, which
/// skips `SessionStart` hooks; `CLAUDE_CODE_SHELL_PREFIX` names a program every Bash call runs
/// through, after the guard saw the command (session-12 attack F9).
pub const CLAUDE_PINNED_ENV: &[(&str, &str)] =
    &[("CLAUDE_CODE_SIMPLE", "0"), ("CLAUDE_CODE_SHELL_PREFIX", "")];

/// codex's `$CODEX_HOME/.env` (the state volume), which codex loads into its own environment
/// at start, over what the launch set, and passes to the shell that runs each hook: a
/// `BASH_ENV` or `LD_PRELOAD` there ran agent code before the dispatcher and rewrote what the
/// guard saw (session-12 attack F1). Shadowed by an empty read-only file.
pub const CODEX_DOTENV: &str = "/home/dev/.codex/.env";
/// gemini's `~/.gemini/.env` (the state volume), loaded like codex's (session-12 attack F2);
/// the workdir's `.env` is switched off in the system settings (`advanced.ignoreLocalEnv`), its
/// `.gemini/.env` is a protected path (`workspace::protected`).
pub const GEMINI_DOTENV: &str = "/home/dev/.gemini/.env";
/// gemini's user extensions (the state volume): an extension's hooks run after the settings'
/// ones, ags's included, so one could rewrite a command the guard allowed. Shadowed empty and
/// read-only; the workdir's `.gemini/` is protected.
pub const GEMINI_EXTENSIONS: &str = "/home/dev/.gemini/extensions";
/// What the shadowing `.env` files say.
const DOTENV_SHADOW: &str = "# Shadowed by ags while agent hooks are wired (docs/agent-hooks.md).\n";

/// codex's managed requirements (pins the hooks feature on).
pub const CODEX_REQUIREMENTS: &str = "/etc/codex/requirements.toml";
/// gemini's system settings.
pub const GEMINI_SYSTEM: &str = "/etc/gemini-cli/settings.json";
/// Wiring files an agent loads only when uid 0 owns them and their directory inside the
/// container, each with the variable that points the agent at another place for it. The
/// launch's own files are the invoking user's: not uid 0 inside under rootless `keep-id`, or on
/// a rootful service used by another user. Those launches stage such a file owned by uid 0
/// instead (`agent_hooks::plan`), and ags sets the variable (which the launch may not set).
pub const ROOT_OWNED: &[(&str, &str)] = &[(GEMINI_SYSTEM, "GEMINI_CLI_SYSTEM_SETTINGS_PATH")];
/// opencode's system config.
pub const OPENCODE_SYSTEM: &str = "/etc/opencode/opencode.json";

/// How long an agent waits for one dispatcher run, in seconds. The dispatcher enforces each
/// handler's own `timeout_seconds`; this only bounds a dispatcher that itself hangs.
pub const AGENT_TIMEOUT_SECONDS: u64 = 600;

/// opencode's wired events that arrive as bus events through the plugin's `event` hook (the
/// others are plugin hooks of their own name).
pub const OPENCODE_BUS_EVENTS: &[&str] = &["session.created", "session.idle"];

/// One generated file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WiringFile {
    /// Path inside the container.
    pub destination: &'static str,
    /// Content.
    pub content: String,
}

/// The wiring of one launch.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Wiring {
    /// Files to mount read-only.
    pub files: Vec<WiringFile>,
    /// Arguments placed right after the agent's command.
    pub args: Vec<String>,
    /// Directories shadowed by an empty read-only tmpfs: where the agent would discover code
    /// that runs in its own process (and could disarm the wiring) in its writable state.
    pub empty_dirs: Vec<&'static str>,
}

/// The dispatcher command line of one native event.
pub fn command(agent: &str, native: &str) -> String {
    format!("{DISPATCHER_PATH} --agent {agent} --event {native}")
}

/// The wiring for `agent` (none for `shell` or an agent without a matrix row). `tag` is unique
/// per launch and unpredictable (the launch's random suffix): gemini's hooks are named with it,
/// so a `hooksConfig.disabled` list written before this launch cannot name them.
pub fn generate(agent: &str, tag: &str) -> Option<Wiring> {
    let row = matrix::agent(agent)?;
    let file = |destination, content| WiringFile { destination, content };
    Some(match (row.agent, row.mechanism) {
        ("claude", _) => Wiring {
            files: vec![file(CLAUDE_MANAGED, pretty(&claude(row)))],
            args: vec![],
            empty_dirs: vec![CLAUDE_DROP_INS],
        },
        ("codex", _) => Wiring {
            files: vec![
                file(CODEX_HOOKS, pretty(&claude_like(row, None))),
                file(CODEX_REQUIREMENTS, CODEX_REQUIREMENTS_TOML.to_string()),
                file(CODEX_DOTENV, DOTENV_SHADOW.to_string()),
            ],
            args: vec![],
            empty_dirs: vec![],
        },
        ("gemini", _) => Wiring {
            files: vec![
                file(GEMINI_SYSTEM, pretty(&gemini(row, tag))),
                file(GEMINI_DOTENV, DOTENV_SHADOW.to_string()),
            ],
            args: vec![],
            empty_dirs: vec![GEMINI_EXTENSIONS],
        },
        (_, Mechanism::OpencodePlugin) => Wiring {
            files: vec![
                file(
                    OPENCODE_SYSTEM,
                    pretty(&json!({ "plugin": [format!("file://{OPENCODE_PLUGIN}")] })),
                ),
                file(OPENCODE_PLUGIN, js::opencode_plugin(row)),
            ],
            args: vec![],
            empty_dirs: OPENCODE_PLUGIN_DIRS.to_vec(),
        },
        (_, Mechanism::PiExtension) => Wiring {
            files: vec![file(PI_EXTENSION, js::pi_extension(row))],
            args: PI_ARGS.iter().map(|a| a.to_string()).collect(),
            empty_dirs: vec![PI_BIN],
        },
        (_, Mechanism::Command) => return None,
    })
}

/// codex's managed requirements: the hooks feature pinned on, so neither `[features] hooks =
/// false` in a user or project config nor `--disable hooks` switches the system hooks off; and
/// unified exec pinned off: its `write_stdin` tool types commands into a running shell, which
/// no hook sees (session-12 attack F4); `exec_command` stays, hooked.
const CODEX_REQUIREMENTS_TOML: &str = "# Generated by ags: agent hooks stay on (docs/agent-hooks.md).\n[features]\nhooks = true\nunified_exec = false\n";

fn pretty(v: &Value) -> String {
    let mut s = serde_json::to_string_pretty(v).expect("JSON values serialize");
    s.push('\n');
    s
}

/// `{"hooks": {NATIVE: [{"matcher"?, "hooks": [{"type": "command", "command", "timeout"?}]}]}}`,
/// the shape claude and codex read. No matcher: every tool and every source matches.
fn claude_like(row: &AgentHooks, timeout: Option<u64>) -> Value {
    let mut hooks = serde_json::Map::new();
    for (_, native) in row.wired() {
        let mut handler = json!({ "type": "command", "command": command(row.agent, native) });
        if let Some(t) = timeout {
            handler["timeout"] = json!(t);
        }
        hooks.insert(native.into(), json!([{ "hooks": [handler] }]));
    }
    json!({ "hooks": hooks })
}

/// claude's managed settings: the hooks and [`CLAUDE_PINNED_ENV`].
fn claude(row: &AgentHooks) -> Value {
    let mut v = claude_like(row, Some(AGENT_TIMEOUT_SECONDS));
    let env: serde_json::Map<String, Value> = CLAUDE_PINNED_ENV
        .iter()
        .map(|(k, val)| (k.to_string(), json!(val)))
        .collect();
    v["env"] = Value::Object(env);
    // Only managed hooks run: a user or project settings hook (the agent can write both) would
    // run beside the guard and could rewrite the input it allowed (`updatedInput`, session-12
    // attack F8), or start commands no record sees (F10).
    v["allowManagedHooksOnly"] = json!(true);
    // A skill's or slash command's `!`command` lines run in a shell inside the `Skill` tool,
    // which no shell-tool hook sees: the agent plants one in its state volume's
    // `~/.claude/skills` and the guard never judges it (session-15 attack S15-A2).
    v["disableSkillShellExecution"] = json!(true);
    v
}

/// gemini's system settings: hooks named per launch, hooks pinned enabled and folder trust
/// pinned off (the system file is merged last, so `hooksConfig.enabled = false` or
/// `security.folderTrust.enabled = true` elsewhere loses). Timeouts are milliseconds.
fn gemini(row: &AgentHooks, tag: &str) -> Value {
    let mut hooks = serde_json::Map::new();
    for (_, native) in row.wired() {
        let handler = json!({
            "type": "command",
            "name": format!("ags-{tag}-{native}"),
            "command": command(row.agent, native),
            "timeout": AGENT_TIMEOUT_SECONDS * 1000,
        });
        // `sequential`: gemini then runs every BeforeTool hook in turn, each on the input the
        // ones before it rewrote, and ags's (the system file's, merged last) after the user's
        // and the workspace's: the guard judges the command that will run (session-12 attack F8).
        let sequential = native == "BeforeTool";
        hooks.insert(
            native.into(),
            json!([{ "sequential": sequential, "hooks": [handler] }]),
        );
    }
    // No project `.env` (the workdir's is the agent's to write): gemini loads one into its own
    // environment, and so into the shell that runs each hook (session-12 attack F2).
    let advanced = json!({ "ignoreLocalEnv": true });
    // Folder trust off: in a folder its user settings call untrusted, gemini drops every hook,
    // the system file's too; the agent can write those settings (session-15 attack N3).
    let security = json!({ "folderTrust": { "enabled": false } });
    json!({ "hooksConfig": { "enabled": true }, "hooks": hooks, "advanced": advanced, "security": security })
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
