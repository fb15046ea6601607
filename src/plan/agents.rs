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
    /// Directories under the container home where the agent keeps its state (login, settings,
    /// sessions). Each is a named volume kept across launches (`ags-state-<agent>-<dir>`).
    pub state: &'static [&'static str],
    /// Environment the agent gets so its state lands in those directories.
    pub env: &'static [(&'static str, &'static str)],
}

/// The home directory inside the container (`HOME` of every agent).
pub const CONTAINER_HOME: &str = "/home/dev";

/// Every known agent, in the order shown to users.
pub const AGENTS: &[AgentProfile] = &[
    AgentProfile {
        name: "pi",
        command: &["pi"],
        state: &["/home/dev/.pi"],
        env: &[],
    },
    AgentProfile {
        name: "claude",
        command: &["claude"],
        state: &["/home/dev/.claude"],
        // Also moves `.claude.json` (otherwise in the home root) into the kept directory.
        env: &[("CLAUDE_CONFIG_DIR", "/home/dev/.claude")],
    },
    AgentProfile {
        name: "codex",
        command: &["codex"],
        state: &["/home/dev/.codex"],
        env: &[("CODEX_HOME", "/home/dev/.codex")],
    },
    AgentProfile {
        name: "gemini",
        command: &["gemini"],
        state: &["/home/dev/.gemini"],
        env: &[],
    },
    AgentProfile {
        name: "opencode",
        command: &["opencode"],
        state: &["/home/dev/.local/share/opencode", "/home/dev/.config/opencode"],
        env: &[],
    },
    AgentProfile {
        name: "shell",
        command: &["/bin/sh"],
        state: &[],
        env: &[],
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
    /// The named volume that keeps state directory `dir` of this agent.
    pub fn state_volume(&self, dir: &str) -> String {
        let rel = dir.trim_start_matches(CONTAINER_HOME).trim_matches('/');
        let slug: String = rel
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        format!("ags-state-{}-{}", self.name, slug.trim_matches('-'))
    }

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

    #[test]
    fn state_volumes_are_named_per_agent_and_directory() {
        let oc = find("opencode").unwrap();
        assert_eq!(
            oc.state_volume("/home/dev/.local/share/opencode"),
            "ags-state-opencode-local-share-opencode"
        );
        assert_eq!(
            find("claude").unwrap().state_volume("/home/dev/.claude"),
            "ags-state-claude-claude"
        );
        for a in AGENTS {
            for dir in a.state {
                assert!(dir.starts_with("/home/dev/."), "{dir}");
            }
        }
    }
}
