//! The hook matrix as data: for every agent of the agent table that has hooks and every
//! normalised [`Event`], the agent's own event name and how it is delivered, or why the cell
//! stays empty; per agent, where `ags` puts its wiring and whether the agent can still silence
//! it. `docs/agent-hooks.md` is rendered from this table (by `ags`'s test `agent_hooks::matrix_tests`,
//! which fails when the page differs), `ags`'s per-agent wiring files are generated from it, the
//! dispatcher maps native names back with [`normalise`], and `tests/live/agent_hooks_cli.rs` checks
//! every claimed native event against the pinned CLI in the agent image.

use crate::Event;

/// How an agent receives hooks at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mechanism {
    /// A command run with the native hook JSON on stdin (claude, codex, gemini).
    Command,
    /// An in-process plugin hook or bus event, forwarded by a generated JS shim (opencode).
    OpencodePlugin,
    /// An in-process extension event, forwarded by a generated extension (pi).
    PiExtension,
}

/// One cell of the matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cell {
    /// The agent's own event that `ags` wires to this normalised event.
    Native {
        /// The native event name, exactly as the agent spells it (and as the dispatcher gets it
        /// in `--event`).
        name: &'static str,
        /// A note for the docs (how it fires, what differs from the normalised meaning); may be
        /// empty.
        note: &'static str,
    },
    /// The agent has no such event.
    Empty {
        /// Why the cell stays empty.
        reason: &'static str,
    },
}

/// The hook row of one agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentHooks {
    /// Agent name, as in the agent table (`src/plan/agents.rs`).
    pub agent: &'static str,
    /// How it receives hooks.
    pub mechanism: Mechanism,
    /// Where `ags` puts the generated wiring and why there.
    pub wiring: &'static str,
    /// Whether the agent (or a file it can write) can still silence the wiring, and how `ags`
    /// notices.
    pub silence: &'static str,
    /// One cell per event of [`Event::ALL`], in that order.
    pub cells: [Cell; 8],
}

impl AgentHooks {
    /// The cell of `event`.
    pub fn cell(&self, event: Event) -> Cell {
        let i = Event::ALL.iter().position(|e| *e == event).unwrap_or(0);
        self.cells[i]
    }

    /// The wired native events with their normalised event, in the order of [`Event::ALL`].
    pub fn wired(&self) -> impl Iterator<Item = (Event, &'static str)> + '_ {
        Event::ALL
            .into_iter()
            .zip(self.cells)
            .filter_map(|(e, c)| match c {
                Cell::Native { name, .. } => Some((e, name)),
                Cell::Empty { .. } => None,
            })
    }
}

const fn n(name: &'static str) -> Cell {
    Cell::Native { name, note: "" }
}

const fn nn(name: &'static str, note: &'static str) -> Cell {
    Cell::Native { name, note }
}

const fn empty(reason: &'static str) -> Cell {
    Cell::Empty { reason }
}

/// Every agent with hooks, in the order of the agent table. `shell` has none: it is a plain
/// shell, whose commands no hook sees.
pub const MATRIX: &[AgentHooks] = &[
    AgentHooks {
        agent: "pi",
        mechanism: Mechanism::PiExtension,
        wiring: "a generated extension, passed as `--no-extensions -e \
                 /etc/ags-agent-hooks/pi-extension.js` (pi has no system location; \
                 `--no-extensions` stops discovery, `-e` extensions still load)",
        silence: "No: pi discovers no extension (project `.pi/extensions`, the user's \
                  `~/.pi/agent/extensions` in the state volume, settings `extensions` and \
                  `packages` are all skipped), so no agent-written code shares the process with \
                  the generated extension, and project `.pi/settings.json` exclusions do not \
                  apply to `-e`. The user's own discovered extensions do not load either: pass \
                  them with `-e` in `[agent.pi] args`. A `shellCommandPrefix`, or a `shellPath` other \
                  than a system shell, in the agent directory's or the project's `settings.json` \
                  would run code around every bash command after the guard saw it (session-12 \
                  attack F9): the extension blocks bash calls while one is set, saying which.",
        cells: [
            n("session_start"),
            n("session_shutdown"),
            n("input"),
            nn("tool_call", "blocks with `{block: true, reason}`"),
            n("tool_result"),
            nn("agent_end", "after each prompt's agent loop"),
            empty("pi has no notification event: an extension notifies through its own UI calls"),
            n("session_before_compact"),
        ],
    },
    AgentHooks {
        agent: "claude",
        mechanism: Mechanism::Command,
        wiring: "`/etc/claude-code/managed-settings.json`, the managed settings, which user, \
                 project and `--settings` files cannot override; the drop-in directory \
                 `managed-settings.d` beside it is an empty read-only tmpfs (an image's own \
                 managed settings are shadowed)",
        silence: "No: `disableAllHooks` in user, project or `--settings` files does not reach \
                  managed hooks. Bare mode skips `SessionStart` only: `--bare` (any spelling) \
                  is warned about; `CLAUDE_CODE_SIMPLE` is refused in the launch's environment \
                  and pinned to `0` by the managed settings' `env`, which beats a user or \
                  project settings `env` (the persisted `~/.claude/settings.json` included); \
                  `CLAUDE_CODE_SHELL_PREFIX` is refused and pinned empty the same way, and \
                  `allowManagedHooksOnly` keeps user and project hooks from running beside the \
                  guard (one could rewrite the input it allowed). The agent, uid 0 in a \
                  rootful launch, cannot add a managed drop-in with `disableAllHooks`: the \
                  directory is read-only and empty. A settings `env` (user or project) can \
                  change the Bash tool's shell after the guard (`CLAUDE_ENV_FILE`, \
                  `BASH_ENV`, `SHELL`, `PATH`, …: session-13 attack M1, session-15 N1): while \
                  one names anything but claude's own and its providers' settings \
                  (`ANTHROPIC_*`, `CLAUDE_CODE_*` but the shell ones, `DISABLE_*`, `MCP_*`, \
                  `OTEL_*`, the proxy variables, …), or a settings file cannot be checked (not \
                  strict JSON, over 1 MiB), the dispatcher blocks every tool call, saying what \
                  to remove. It reads the files where the plan put claude's state and the \
                  workdir, not where a settings `CLAUDE_CONFIG_DIR` points. A skill's or slash \
                  command's `!` lines, which run inside the `Skill` tool where no shell hook \
                  sees them, are off (`disableSkillShellExecution` pinned: session-15 S15-A2).",
        cells: [
            n("SessionStart"),
            nn(
                "SessionEnd",
                "all SessionEnd hooks share a short budget unless raised",
            ),
            n("UserPromptSubmit"),
            nn("PreToolUse", "blocks with exit 2 or `permissionDecision: deny`"),
            n("PostToolUse"),
            n("Stop"),
            n("Notification"),
            n("PreCompact"),
        ],
    },
    AgentHooks {
        agent: "codex",
        mechanism: Mechanism::Command,
        wiring: "`/etc/codex/hooks.json` (the system hooks file) plus `/etc/codex/requirements.toml` \
                 pinning `[features] hooks = true` and `unified_exec = false` (managed \
                 requirements win over user and project config and `--disable hooks`)",
        silence: "No while the requirements file pins the feature: `[features] hooks = false` and \
                  `--disable hooks` are overruled. A custom image whose own \
                  `/etc/codex/requirements.toml` matters is shadowed by ags's. `~/.codex/.env` (the \
                  state volume), which codex loads over the launch's environment, is shadowed by \
                  an empty read-only file: no `LD_PRELOAD` or `BASH_ENV` the agent wrote reaches \
                  the shell that runs the hooks (session-12 attack F1). Its tool hooks fire for \
                  `exec_command` only, so a command typed into a running shell through \
                  `write_stdin` reached neither the guard nor the record (attack F4): the \
                  requirements also pin `unified_exec` off, which takes `write_stdin` away \
                  (`--enable unified_exec` and user config included). A \
                  `[shell_environment_policy]` in its `config.toml` (it sets the environment of \
                  every command: session-13 attack M2), in any spelling of the key (`\\x`, \
                  `\\u`, `\\U` escapes decoded: session-15 N2, S15-A1), or a `config.toml` over 1 MiB makes the \
                  dispatcher block every tool call, saying so.",
        cells: [
            n("SessionStart"),
            n("SessionEnd"),
            n("UserPromptSubmit"),
            nn("PreToolUse", "blocks with exit 2 or `permissionDecision: deny`"),
            n("PostToolUse"),
            n("Stop"),
            empty(
                "codex has no notification hook event; its older `notify` program setting is a \
                 separate mechanism that `ags` does not wire",
            ),
            n("PreCompact"),
        ],
    },
    AgentHooks {
        agent: "gemini",
        mechanism: Mechanism::Command,
        wiring: "`/etc/gemini-cli/settings.json`, the system settings file, merged last (it wins \
                 over user and workspace settings key by key)",
        silence: "Partly: `hooksConfig.disabled` is merged as a union, so a user or workspace \
                  settings file can list a hook's name and the system file cannot take it out. \
                  `ags` names its hooks per launch (`ags-<random launch suffix>-<event>`), so a \
                  list written in an earlier session or shipped in a repository does not match; \
                  the agent can still silence the hooks of its own running session. \
                  `hooksConfig.enabled = true` is pinned (the system file wins), and so is \
                  `security.folderTrust.enabled = false`: in a folder its user settings call \
                  untrusted gemini drops every hook, the system file's too (session-15 N3). \
                  `GEMINI_CLI_SYSTEM_SETTINGS_PATH` (it moves the system file) is refused in the \
                  launch's environment. gemini skips a system file that uid 0 does not own \
                  (with every directory above it): under rootless Podman (`keep-id`), or a \
                  rootful service used by a non-root user, `ags` stages it owned by uid 0 in \
                  the launch's staging volume and sets that variable itself. Noticed by the \
                  missing records (a \
                  session without `session_start`, tool calls without `pre_tool`). No `.env` the \
                  agent wrote is loaded (session-12 attack F2: an `LD_PRELOAD` there reached the \
                  shell that runs the hooks): the workdir's is ignored (`advanced.ignoreLocalEnv` \
                  pinned; pass variables with `--env` or `--env-file`), `~/.gemini/.env` is \
                  shadowed by an empty read-only file, the workdir's `.gemini/` is protected. \
                  A `BeforeTool` hook in user or workspace settings that rewrites the tool input \
                  (attack F8) runs before ags's: its `sequential` definition makes gemini run \
                  them in turn, so the guard judges the command that will run. An extension's \
                  hooks run after ags's: the user extensions (`~/.gemini/extensions`, the state \
                  volume) are an empty read-only tmpfs, so none loads.",
        cells: [
            n("SessionStart"),
            n("SessionEnd"),
            nn(
                "BeforeAgent",
                "after a prompt is submitted, before the agent loop",
            ),
            nn("BeforeTool", "blocks with exit 2 or `{\"decision\": \"deny\"}`"),
            n("AfterTool"),
            nn("AfterAgent", "after each prompt's agent loop"),
            n("Notification"),
            nn("PreCompress", "gemini 0.61 fires it before every model call"),
        ],
    },
    AgentHooks {
        agent: "opencode",
        mechanism: Mechanism::OpencodePlugin,
        wiring: "`/etc/opencode/opencode.json` (the system config, merged with user and project \
                 config) whose `plugin` entry loads the generated \
                 `/etc/ags-agent-hooks/opencode-plugin.js`",
        silence: "Yes, through its user config: a `plugin` entry in \
                  `~/.config/opencode/opencode.json` (the state volume, agent-writable) loads \
                  agent-written code into opencode's process, which can disarm the generated \
                  plugin; opencode has no switch that keeps the system plugin and drops the \
                  others (`--pure` drops both), so `ags` warns when a guard or handler is \
                  configured. Closed: the plugin and custom-tool directories \
                  `~/.config/opencode/{plugin,plugins,tool,tools}` and the same under \
                  `~/.opencode` are empty read-only tmpfs, the workdir's `.opencode/` \
                  is protected, a project `plugin: []` and `OPENCODE_CONFIG_CONTENT` do not \
                  remove a system plugin, and `--pure` (any spelling) and `OPENCODE_PURE` are \
                  refused.",
        cells: [
            nn("session.created", "bus event, seen by the plugin's `event` hook"),
            empty(
                "opencode has no session-end event: `session.deleted` fires only when a session \
                 is deleted, and `opencode run` just exits",
            ),
            n("chat.message"),
            nn("tool.execute.before", "blocks by throwing"),
            n("tool.execute.after"),
            nn("session.idle", "bus event: the session went idle after a prompt"),
            empty(
                "opencode announces no notification to plugins (its `tui.toast.show` is terminal \
                 output)",
            ),
            n("experimental.session.compacting"),
        ],
    },
];

/// The hook row of `agent`, if it has hooks.
pub fn agent(agent: &str) -> Option<&'static AgentHooks> {
    MATRIX.iter().find(|a| a.agent == agent)
}

/// The normalised event of `agent`'s native event `native`, if the matrix wires it.
pub fn normalise(agent: &str, native: &str) -> Option<Event> {
    self::agent(agent)?
        .wired()
        .find(|(_, name)| *name == native)
        .map(|(e, _)| e)
}

/// The native event of `agent` wired to `event`.
pub fn native(agent: &str, event: Event) -> Option<&'static str> {
    match self::agent(agent)?.cell(event) {
        Cell::Native { name, .. } => Some(name),
        Cell::Empty { .. } => None,
    }
}
