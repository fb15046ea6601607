//! Agent profiles as data: the command each agent runs and the state it keeps under
//! `/home/dev`. One table, so the CLI, the plan and the docs agree.

use serde::Serialize;

/// What `ags` knows about one agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AgentProfile {
    /// Name used with `--agent` and in the hook context.
    pub name: &'static str,
    /// Command run when no `-- CMD` is given (arguments after `--` are appended for agents other
    /// than `shell`, and replace the command for `shell`).
    pub command: &'static [&'static str],
}

/// Every known agent, in the order shown to users.
pub const AGENTS: &[AgentProfile] = &[
    AgentProfile {
        name: "pi",
        command: &["pi"],
    },
    AgentProfile {
        name: "claude",
        command: &["claude"],
    },
    AgentProfile {
        name: "codex",
        command: &["codex"],
    },
    AgentProfile {
        name: "gemini",
        command: &["gemini"],
    },
    AgentProfile {
        name: "opencode",
        command: &["opencode"],
    },
    AgentProfile {
        name: "shell",
        command: &["/bin/sh"],
    },
];

/// Look up an agent by name.
pub fn find(name: &str) -> Option<&'static AgentProfile> {
    AGENTS.iter().find(|a| a.name == name)
}

/// The known names, comma separated (for error messages).
pub fn names() -> String {
    AGENTS.iter().map(|a| a.name).collect::<Vec<_>>().join(", ")
}

impl AgentProfile {
    /// The argv to run for `extra` (the arguments after `--`).
    pub fn argv(&self, extra: &[String]) -> Vec<String> {
        if self.name == "shell" && !extra.is_empty() {
            return extra.to_vec();
        }
        self.command
            .iter()
            .map(|s| s.to_string())
            .chain(extra.iter().cloned())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_replaces_agents_append() {
        let extra = vec!["-c".to_string(), "true".to_string()];
        assert_eq!(find("shell").unwrap().argv(&[]), ["/bin/sh"]);
        assert_eq!(find("shell").unwrap().argv(&["true".into()]), ["true"]);
        assert_eq!(find("claude").unwrap().argv(&extra), ["claude", "-c", "true"]);
        assert!(find("vim").is_none());
        assert_eq!(names(), "pi, claude, codex, gemini, opencode, shell");
    }
}
