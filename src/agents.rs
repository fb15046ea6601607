//! Agent profiles as data: the command each agent runs, the state it keeps under `/home/dev`,
//! and how it skips its own permission prompts when the sandbox is the boundary. One table, so
//! the CLI, the config, the hook policy (protected home entries), the plan, the docs and
//! scripts/test-agents agree. A leaf data module: every stage may read it.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::LazyLock;

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
    /// What "the sandbox is the boundary" mode (`--yolo`, `[agent.NAME] skip_permissions`) adds.
    pub skip_permissions: SkipPermissions,
    /// The file holding the agent's own login, relative to the home directory — the same on
    /// the host and in the container (inside a state directory), for `ags login import`.
    pub login_file: Option<&'static str>,
    /// A settings file `ags login import` writes beside the login when the state volume has
    /// none (name in the login file's directory, text): the agent then uses the login without
    /// asking how to log in.
    pub login_settings: Option<(&'static str, &'static str)>,
}

/// The agent's own switch for running without permission prompts (docs/agents.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SkipPermissions {
    /// Arguments placed right after the agent's command (or after one of `subcommands`).
    pub args: &'static [&'static str],
    /// Environment the switch needs.
    pub env: &'static [(&'static str, &'static str)],
    /// Subcommands that take `args` themselves: when the arguments after `--` start with one,
    /// `args` go right after it (opencode accepts `run --auto`, but `--auto run` prints its help).
    pub subcommands: &'static [&'static str],
}

/// No switch: the agent has no permission prompts to skip.
const NO_PROMPTS: SkipPermissions = SkipPermissions {
    args: &[],
    env: &[],
    subcommands: &[],
};

/// The built-in agent image (built by `ags image build`; every agent of the table is in it).
pub const DEFAULT_IMAGE: &str = "localhost/ags-agent:latest";

/// The home directory inside the container (`HOME` of every agent).
pub const CONTAINER_HOME: &str = "/home/dev";

/// Entries directly under [`CONTAINER_HOME`] holding credentials, settings or caches besides the
/// agents' state directories (files an agent keeps in the home root, shared tool state).
#[rustfmt::skip]
pub const OTHER_HOME_ENTRIES: &[&str] = &[
    ".claude.json", ".gitconfig", ".npmrc", ".opencode", ".cargo", ".cache", ".ssh", ".npm-global",
    "go", ".bashrc", ".bash_profile", ".profile",
];

/// The entries directly under [`CONTAINER_HOME`] that hooks may not mount over, into or around:
/// the first component of every agent's state directories, then [`OTHER_HOME_ENTRIES`], each
/// once (the hook policy and the prepare-output schema read this).
pub static PROTECTED_HOME_ENTRIES: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    let mut entries: Vec<&'static str> = Vec::new();
    let state = AGENTS.iter().flat_map(|a| a.state.iter());
    let firsts = state.filter_map(|dir| {
        dir.strip_prefix(CONTAINER_HOME)?
            .strip_prefix('/')?
            .split('/')
            .next()
    });
    for entry in firsts.chain(OTHER_HOME_ENTRIES.iter().copied()) {
        if !entries.contains(&entry) {
            entries.push(entry);
        }
    }
    entries
});

/// The `shell` agent's default command: bash when the image has it, else sh.
pub const SHELL_SCRIPT: &str = "command -v bash >/dev/null 2>&1 && exec bash \"$@\"; exec sh \"$@\"";

/// Every known agent, in the order shown to users.
pub const AGENTS: &[AgentProfile] = &[
    AgentProfile {
        name: "pi",
        command: &["pi"],
        state: &["/home/dev/.pi"],
        env: &[],
        egress: &["api.anthropic.com:443"],
        // pi asks no permission before running a tool.
        skip_permissions: NO_PROMPTS,
        login_file: None,
        login_settings: None,
    },
    AgentProfile {
        name: "claude",
        command: &["claude"],
        state: &["/home/dev/.claude"],
        // Also moves `.claude.json` (otherwise in the home root) into the kept directory.
        env: &[("CLAUDE_CONFIG_DIR", "/home/dev/.claude")],
        egress: &["api.anthropic.com:443"],
        // Claude refuses the flag as root (a rootful launch by root) unless IS_SANDBOX=1.
        skip_permissions: SkipPermissions {
            args: &["--dangerously-skip-permissions"],
            env: &[("IS_SANDBOX", "1")],
            subcommands: &[],
        },
        login_file: Some(".claude/.credentials.json"),
        login_settings: None,
    },
    AgentProfile {
        name: "codex",
        command: &["codex"],
        state: &["/home/dev/.codex"],
        env: &[("CODEX_HOME", "/home/dev/.codex")],
        egress: &["api.openai.com:443", "chatgpt.com:443", "auth.openai.com:443"],
        // Also switches off codex's own bwrap sandbox, which cannot start in the container.
        skip_permissions: SkipPermissions {
            args: &["--dangerously-bypass-approvals-and-sandbox"],
            env: &[],
            subcommands: &[],
        },
        login_file: Some(".codex/auth.json"),
        login_settings: None,
    },
    AgentProfile {
        name: "gemini",
        command: &["gemini"],
        state: &["/home/dev/.gemini"],
        env: &[],
        egress: &["generativelanguage.googleapis.com:443"],
        skip_permissions: SkipPermissions {
            args: &["--yolo"],
            env: &[],
            subcommands: &[],
        },
        login_file: Some(".gemini/oauth_creds.json"),
        // gemini asks how to log in unless its settings select the Google login.
        login_settings: Some((
            "settings.json",
            r#"{"security":{"auth":{"selectedType":"oauth-personal"}}}"#,
        )),
    },
    AgentProfile {
        name: "opencode",
        command: &["opencode"],
        state: &["/home/dev/.local/share/opencode", "/home/dev/.config/opencode"],
        env: &[],
        egress: &["opencode.ai:443", "*.opencode.ai:443"],
        // Accepted by the TUI and by `opencode run`.
        skip_permissions: SkipPermissions {
            args: &["--auto"],
            env: &[],
            subcommands: &["run"],
        },
        login_file: Some(".local/share/opencode/auth.json"),
        login_settings: None,
    },
    AgentProfile {
        name: "shell",
        // An interactive shell: bash where the image has it (the agent image does), else sh.
        command: &["/bin/sh", "-c", SHELL_SCRIPT, "sh"],
        state: &[],
        env: &[],
        egress: &[],
        skip_permissions: NO_PROMPTS,
        login_file: None,
        login_settings: None,
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

    /// The argv to run: the agent's command, its permission-skipping arguments when
    /// `skip_permissions`, the configured `args`, then `extra` (the arguments after `--`). For
    /// `shell`, a non-empty `extra` is the whole command.
    pub fn argv(&self, skip_permissions: bool, args: &[String], extra: &[String]) -> Vec<String> {
        if self.name == "shell" && !extra.is_empty() {
            return extra.to_vec();
        }
        let skip: &[&str] = if skip_permissions {
            self.skip_permissions.args
        } else {
            &[]
        };
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let mut argv = strings(self.command);
        match extra.split_first() {
            Some((sub, rest)) if self.skip_permissions.subcommands.contains(&sub.as_str()) => {
                argv.extend(args.iter().cloned());
                argv.push(sub.clone());
                argv.extend(strings(skip));
                argv.extend(rest.iter().cloned());
            }
            _ => {
                argv.extend(strings(skip));
                argv.extend(args.iter().cloned());
                argv.extend(extra.iter().cloned());
            }
        }
        argv
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skip_arguments_follow_a_subcommand_that_takes_them() {
        let opencode = AGENTS.iter().find(|a| a.name == "opencode").unwrap();
        let s = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            opencode.argv(true, &s(&["--model", "m"]), &s(&["run", "hi"])),
            s(&["opencode", "--model", "m", "run", "--auto", "hi"])
        );
        assert_eq!(
            opencode.argv(true, &[], &s(&["--continue"])),
            s(&["opencode", "--auto", "--continue"])
        );
        assert_eq!(
            opencode.argv(false, &[], &s(&["run", "hi"])),
            s(&["opencode", "run", "hi"])
        );
    }

    #[test]
    fn login_files_lie_directly_in_a_state_directory() {
        for agent in AGENTS {
            let Some(file) = agent.login_file else { continue };
            let path = std::path::Path::new(CONTAINER_HOME).join(file);
            let dir = path.parent().unwrap();
            assert!(
                agent.state.iter().any(|s| std::path::Path::new(s) == dir),
                "{}: {file}",
                agent.name
            );
        }
    }

    #[test]
    fn hooks_may_not_touch_any_agent_state() {
        for agent in AGENTS {
            for dir in agent.state {
                let first = dir["/home/dev/".len()..].split('/').next().unwrap();
                assert!(PROTECTED_HOME_ENTRIES.contains(&first), "{}: {dir}", agent.name);
            }
        }
        let mut all = PROTECTED_HOME_ENTRIES.clone();
        all.sort_unstable();
        #[rustfmt::skip]
        let expected = [
            ".bash_profile", ".bashrc", ".cache", ".cargo", ".claude", ".claude.json", ".codex", ".config",
            ".gemini", ".gitconfig", ".local", ".npm-global", ".npmrc", ".opencode", ".pi", ".profile",
            ".ssh", "go",
        ];
        assert_eq!(all, expected);
    }

    #[test]
    fn shell_replaces_agents_append() {
        let extra = vec!["-c".to_string(), "true".to_string()];
        let shell = find("shell").unwrap();
        assert_eq!(shell.argv(false, &[], &[]), ["/bin/sh", "-c", SHELL_SCRIPT, "sh"]);
        assert_eq!(shell.argv(true, &[], &["true".into()]), ["true"]);
        assert_eq!(
            shell.argv(false, &["-l".into()], &[]),
            ["/bin/sh", "-c", SHELL_SCRIPT, "sh", "-l"]
        );
        let claude = find("claude").unwrap();
        assert_eq!(claude.argv(false, &[], &extra), ["claude", "-c", "true"]);
        let args = ["--model".to_string(), "opus".into()];
        assert_eq!(
            claude.argv(true, &args, &extra),
            [
                "claude",
                "--dangerously-skip-permissions",
                "--model",
                "opus",
                "-c",
                "true"
            ]
        );
        assert_eq!(find("pi").unwrap().argv(true, &[], &[]), ["pi"]);
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
