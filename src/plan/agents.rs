//! Agent profiles as data: the command each agent runs and the state it keeps under
//! `/home/dev`. One table, so the CLI, the plan and the docs agree.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use serde::Serialize;
use sha2::{Digest, Sha256};

/// What `ags` knows about one agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct AgentProfile {
    /// Name used with `--agent` and in the hook context.
    pub name: &'static str,
    /// Command run when no `-- CMD` is given (arguments after `--` are appended for agents other
    /// than `shell`, and replace the command for `shell`).
    pub command: &'static [&'static str],
    /// Directories under the container home where the agent keeps its state (login, settings,
    /// sessions). Each is a named volume kept across launches, one per project by default
    /// (`ags-state-<agent>-<dir>-<workdir hash>`, see [`AgentProfile::state_volume`]).
    pub state: &'static [&'static str],
    /// Environment the agent gets so its state lands in those directories.
    pub env: &'static [(&'static str, &'static str)],
    /// Allowlist entries its own model API needs, added in allowlist mode unless
    /// `[network] agent_hosts = false` (docs/network.md).
    pub egress: &'static [&'static str],
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
        egress: &["api.anthropic.com:443"],
    },
    AgentProfile {
        name: "claude",
        command: &["claude"],
        state: &["/home/dev/.claude"],
        // Also moves `.claude.json` (otherwise in the home root) into the kept directory.
        env: &[("CLAUDE_CONFIG_DIR", "/home/dev/.claude")],
        egress: &["api.anthropic.com:443"],
    },
    AgentProfile {
        name: "codex",
        command: &["codex"],
        state: &["/home/dev/.codex"],
        env: &[("CODEX_HOME", "/home/dev/.codex")],
        egress: &["api.openai.com:443", "chatgpt.com:443", "auth.openai.com:443"],
    },
    AgentProfile {
        name: "gemini",
        command: &["gemini"],
        state: &["/home/dev/.gemini"],
        env: &[],
        egress: &["generativelanguage.googleapis.com:443"],
    },
    AgentProfile {
        name: "opencode",
        command: &["opencode"],
        state: &["/home/dev/.local/share/opencode", "/home/dev/.config/opencode"],
        env: &[],
        egress: &["opencode.ai:443", "*.opencode.ai:443"],
    },
    AgentProfile {
        name: "shell",
        command: &["/bin/sh"],
        state: &[],
        env: &[],
        egress: &[],
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
    /// The named volume that keeps state directory `dir` of this agent for the project whose
    /// canonical workdir is `workdir`: `ags-state-<agent>-<dir>-<first 12 hex digits of the
    /// SHA-256 of the workdir path>`. With `workdir` `None` (`[sandbox] shared_state`), one
    /// volume for every project: `ags-state-<agent>-<dir>`. Separate volumes keep what an agent
    /// writes into its configuration in one project (a settings hook, say) out of the others.
    pub fn state_volume(&self, dir: &str, workdir: Option<&Path>) -> String {
        let rel = dir.trim_start_matches(CONTAINER_HOME).trim_matches('/');
        let slug: String = rel
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let shared = format!("ags-state-{}-{}", self.name, slug.trim_matches('-'));
        match workdir {
            None => shared,
            Some(w) => {
                let digest = Sha256::digest(w.as_os_str().as_bytes());
                format!("{shared}-{}", &hex::encode(digest)[..12])
            }
        }
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
            oc.state_volume("/home/dev/.local/share/opencode", None),
            "ags-state-opencode-local-share-opencode"
        );
        let claude = find("claude").unwrap();
        assert_eq!(
            claude.state_volume("/home/dev/.claude", None),
            "ags-state-claude-claude"
        );
        let a = claude.state_volume("/home/dev/.claude", Some(Path::new("/src/a")));
        let b = claude.state_volume("/home/dev/.claude", Some(Path::new("/src/b")));
        assert!(
            a.starts_with("ags-state-claude-claude-") && a.len() == "ags-state-claude-claude-".len() + 12
        );
        assert_ne!(a, b);
        assert_eq!(
            a,
            claude.state_volume("/home/dev/.claude", Some(Path::new("/src/a")))
        );
        for a in AGENTS {
            for dir in a.state {
                assert!(dir.starts_with("/home/dev/."), "{dir}");
            }
        }
    }
}
