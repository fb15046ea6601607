//! What switches an agent's hook wiring off from outside the wiring files: the agent's
//! arguments (`[agent.NAME] args` and those after `--`, in every spelling the CLI accepts), the
//! environment the launch gives it (`--env`, `--env-file`, passthrough, `[agent.NAME] env`,
//! prepare hooks), and a user namespace in which the agent does not trust the wiring file. Pure
//! data and checks; the plan refuses or warns (docs/agent-hooks.md, "What switches the wiring
//! off").

use super::super::Event;

/// A launch setting that would switch the wiring off, or part of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SwitchOff {
    /// Refused: the setting drops every hook of the wiring, or the guard with it.
    Refuse(String),
    /// Allowed with a warning: it drops some events.
    Warn(String),
}

/// Environment variables that switch an agent's wiring off, with the agent that reads them and
/// what they do. The pinned CLIs read them at start-up (found in their sources, probed in the
/// agent image).
pub const SWITCH_OFF_ENV: &[(&str, &str, &str)] = &[
    (
        "CLAUDE_CODE_SIMPLE",
        "claude",
        "bare mode, which skips SessionStart hooks",
    ),
    (
        "CLAUDE_CODE_SHELL_PREFIX",
        "claude",
        "runs every Bash command through a program of its choice, after the guard saw the command",
    ),
    (
        "OPENCODE_PURE",
        "opencode",
        "pure mode, which loads no plugins: no agent hook runs",
    ),
    (
        "GEMINI_CLI_SYSTEM_SETTINGS_PATH",
        "gemini",
        "moves gemini's system settings away from ags's wiring file: no agent hook runs",
    ),
];

/// The flag part of an argument: `--pure=true` is `--pure`.
fn flag(arg: &str) -> &str {
    match arg.split_once('=') {
        Some((f, _)) if f.starts_with("--") => f,
        _ => arg,
    }
}

/// Check the agent's arguments for switches that drop the wiring: opencode `--pure` (no plugins
/// at all) is refused, claude `--bare` (skips `SessionStart` hooks only) warned about, in every
/// spelling (`--pure`, `--pure=true`, `--pure=…`). pi's `--no-extensions` is ags's own.
pub fn check_args<'a>(agent: &str, args: impl IntoIterator<Item = &'a String>) -> Vec<SwitchOff> {
    let mut out = Vec::new();
    for a in args {
        match (agent, flag(a)) {
            ("opencode", "--pure") => out.push(SwitchOff::Refuse(format!(
                "agent argument {a:?}: opencode --pure loads no plugins, so ags's agent hooks (the \
                 [agent_guard] and every [[agent_hook]]) would not run and nothing would be \
                 recorded; remove it from the agent's arguments ([agent.opencode] args or after --)"
            ))),
            ("claude", "--bare") => out.push(SwitchOff::Warn(format!(
                "agent argument {a:?}: claude --bare skips SessionStart hooks: this launch records \
                 no {} event (the other agent hooks still run)",
                Event::SessionStart
            ))),
            _ => {}
        }
    }
    out
}

/// Check the names of the launch's environment: a variable of [`SWITCH_OFF_ENV`] read by
/// `agent` is refused, whatever set it.
pub fn check_env<'a>(agent: &str, names: impl IntoIterator<Item = &'a str>) -> Vec<SwitchOff> {
    names
        .into_iter()
        .filter_map(|n| SWITCH_OFF_ENV.iter().find(|(v, a, _)| *v == n && *a == agent))
        .map(|(name, agent, what)| {
            SwitchOff::Refuse(format!(
                "environment variable {name}: {agent} reads it as {what}, so ags's agent hooks \
                 (the [agent_guard] and every [[agent_hook]]) would not all run; remove {name} \
                 from --env, --env-file, [sandbox] env_passthrough, [agent.{agent}] env and the \
                 prepare hooks"
            ))
        })
        .collect()
}

/// What no launch setting can close: opencode loads every plugin its user config lists (the
/// `plugin` key of `~/.config/opencode/opencode.json`, in the agent's state volume, which the
/// agent can write), in its own process, where it could disarm the generated plugin. Warned
/// about when a guard or handler is configured.
pub fn check_agent(agent: &str, handlers: bool) -> Option<SwitchOff> {
    (agent == "opencode" && handlers).then(|| {
        SwitchOff::Warn(
            "--agent opencode: opencode loads the plugins its user config lists \
             (~/.config/opencode/opencode.json in the agent's state volume, which the agent can \
             write), and such a plugin could disarm the [agent_guard] and [[agent_hook]]s; check \
             that file's `plugin` key between sessions (docs/agent-hooks.md)"
                .into(),
        )
    })
}
