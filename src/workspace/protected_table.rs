//! The table of project files host tools run on their own ([`PROTECTED`]): path, kind, the
//! host tool, and why it runs without being asked (docs/security.md renders it; a test keeps
//! the two the same).

/// What a listed path is expected to be (a mount works for either; this is for the docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A file.
    File,
    /// A directory, protected with everything inside.
    Dir,
}

/// One protected path, relative to the top of a root.
#[derive(Debug, PartialEq, Eq)]
pub struct Entry {
    /// Relative path (`/`-separated, no `.`/`..`).
    pub path: &'static str,
    /// File or directory.
    pub kind: Kind,
    /// The host tool that runs it.
    pub tool: &'static str,
    /// When it runs, without you asking.
    pub why: &'static str,
}

const fn e(path: &'static str, kind: Kind, tool: &'static str, why: &'static str) -> Entry {
    Entry {
        path,
        kind,
        tool,
        why,
    }
}

/// The protected paths. Only files a host tool runs (or obeys as commands) without being asked:
/// ordinary build files (`Makefile`, `package.json`) run when you ask, and stay the agent's.
#[rustfmt::skip]
pub const PROTECTED: &[Entry] = &[
    e(".claude/settings.json", Kind::File, "Claude Code", "hooks, statusLine, apiKeyHelper: commands run when you start claude in the project"),
    e(".claude/settings.local.json", Kind::File, "Claude Code", "same as settings.json (claude writes it when you approve a permission)"),
    e(".claude/hooks", Kind::Dir, "Claude Code", "scripts the settings name as hooks, run on claude's events"),
    e(".claude/commands", Kind::Dir, "Claude Code", "slash commands: their ! lines run shell commands, their allowed-tools pre-approve tools"),
    e(".claude/agents", Kind::Dir, "Claude Code", "subagents claude delegates to on its own, with their tool permissions"),
    e(".claude/skills", Kind::Dir, "Claude Code", "skills (with scripts) claude invokes on its own"),
    e(".mcp.json", Kind::File, "Claude Code", "project MCP servers: commands started with every session once approved"),
    e(".gemini", Kind::Dir, "Gemini CLI", "settings.json (hooks, mcpServers, toolDiscoveryCommand) and commands, read at start"),
    e(".codex", Kind::Dir, "Codex CLI", "config.toml (mcp_servers, notify) of a trusted project, read at start"),
    e(".opencode", Kind::Dir, "opencode", "plugins, loaded and run at start; agents and commands"),
    e("opencode.json", Kind::File, "opencode", "MCP servers, formatter and LSP commands, run at start"),
    e("opencode.jsonc", Kind::File, "opencode", "same as opencode.json"),
    e(".pi", Kind::Dir, "pi", "project settings and extensions, loaded at start"),
    e(".cursor", Kind::Dir, "Cursor", "hooks.json and mcp.json, run by the editor's agent"),
    e(".vscode/tasks.json", Kind::File, "VS Code", "tasks with runOn: folderOpen run when you open the folder"),
    e(".vscode/settings.json", Kind::File, "VS Code and its extensions", "programs named in settings (interpreters, linters, terminal env) start when the folder opens"),
    e(".devcontainer", Kind::Dir, "Dev Containers", "initializeCommand runs on the host when the folder is opened"),
    e(".devcontainer.json", Kind::File, "Dev Containers", "same as .devcontainer/"),
    e(".github/workflows", Kind::Dir, "GitHub Actions", "run with the repository's secrets when you push"),
    e(".github/actions", Kind::Dir, "GitHub Actions", "local actions the workflows run"),
    e(".gitlab-ci.yml", Kind::File, "GitLab CI", "runs with the project's CI variables when you push"),
    e(".circleci", Kind::Dir, "CircleCI", "runs with the project's secrets when you push"),
    e(".envrc", Kind::File, "direnv", "runs in your shell when you cd there (after `direnv allow`, often given out of habit)"),
    e(".husky", Kind::Dir, "husky", "git hooks run by your next git commit (core.hooksPath)"),
    e(".pre-commit-config.yaml", Kind::File, "pre-commit", "local hooks run by your next git commit"),
    e(".vscode/mcp.json", Kind::File, "VS Code", "MCP servers of the workspace: their commands start with the editor's chat"),
    e(".zed", Kind::Dir, "Zed", "settings.json (language servers, context servers) and tasks.json, used when the folder opens"),
    e(".helix", Kind::Dir, "Helix", "languages.toml: language-server commands started when you open a file"),
    e(".qwen", Kind::Dir, "Qwen Code", "settings.json (hooks, mcpServers) and commands, read at start"),
    e(".aider.conf.yml", Kind::File, "aider", "lint-cmd, test-cmd and other commands aider runs on its own"),
    e("crush.json", Kind::File, "Crush", "MCP servers and language-server commands, run at start"),
    e(".crush.json", Kind::File, "Crush", "same as crush.json"),
    e(".roo", Kind::Dir, "Roo Code", "mcp.json (MCP server commands) and rules, read by the editor's agent"),
    e(".kiro", Kind::Dir, "Kiro", "hooks run on file events, MCP servers, read by the editor's agent"),
    e(".amazonq", Kind::Dir, "Amazon Q Developer", "mcp.json and agent hooks, run by its CLI and editor agent"),
    e("mise.toml", Kind::File, "mise", "[hooks] and [env] _.source run in your shell when you cd there (once trusted)"),
    e(".mise.toml", Kind::File, "mise", "same as mise.toml"),
    e("lefthook.yml", Kind::File, "lefthook", "commands its git hooks run at your next git commit"),
    e(".lefthook.yml", Kind::File, "lefthook", "same as lefthook.yml"),
    e(".lintstagedrc", Kind::File, "lint-staged", "commands run on your next git commit (from a pre-commit hook)"),
    e("lint-staged.config.js", Kind::File, "lint-staged", "JavaScript run on your next git commit (from a pre-commit hook)"),
    e("commitlint.config.js", Kind::File, "commitlint", "JavaScript loaded by the commit-msg hook at your next git commit"),
    e("lefthook.yaml", Kind::File, "lefthook", "same as lefthook.yml"),
    e(".lefthook.yaml", Kind::File, "lefthook", "same as lefthook.yml"),
    e("lefthook-local.yml", Kind::File, "lefthook", "local overrides merged over lefthook.yml, run at your next git commit"),
    e(".lefthook-local.yml", Kind::File, "lefthook", "same as lefthook-local.yml"),
    e("mise.local.toml", Kind::File, "mise", "local overrides of mise.toml, same effect"),
    e(".mise.local.toml", Kind::File, "mise", "same as mise.local.toml"),
    e(".config/mise.toml", Kind::File, "mise", "same as mise.toml"),
    e(".config/mise", Kind::Dir, "mise", "config.toml and conf.d/, same as mise.toml"),
    e(".mise", Kind::Dir, "mise", "config.toml and tasks, same as mise.toml"),
    e(".lintstagedrc.json", Kind::File, "lint-staged", "same as .lintstagedrc"),
    e(".lintstagedrc.yaml", Kind::File, "lint-staged", "same as .lintstagedrc"),
    e(".lintstagedrc.yml", Kind::File, "lint-staged", "same as .lintstagedrc"),
    e(".lintstagedrc.js", Kind::File, "lint-staged", "same as lint-staged.config.js"),
    e(".lintstagedrc.cjs", Kind::File, "lint-staged", "same as lint-staged.config.js"),
    e(".lintstagedrc.mjs", Kind::File, "lint-staged", "same as lint-staged.config.js"),
    e("lint-staged.config.cjs", Kind::File, "lint-staged", "same as lint-staged.config.js"),
    e("lint-staged.config.mjs", Kind::File, "lint-staged", "same as lint-staged.config.js"),
    e(".commitlintrc", Kind::File, "commitlint", "configuration read by the commit-msg hook at your next git commit"),
    e(".commitlintrc.json", Kind::File, "commitlint", "same as .commitlintrc"),
    e(".commitlintrc.yaml", Kind::File, "commitlint", "same as .commitlintrc"),
    e(".commitlintrc.yml", Kind::File, "commitlint", "same as .commitlintrc"),
    e(".commitlintrc.js", Kind::File, "commitlint", "same as commitlint.config.js"),
    e(".commitlintrc.cjs", Kind::File, "commitlint", "same as commitlint.config.js"),
    e(".commitlintrc.mjs", Kind::File, "commitlint", "same as commitlint.config.js"),
    e(".commitlintrc.ts", Kind::File, "commitlint", "same as commitlint.config.js"),
    e("commitlint.config.cjs", Kind::File, "commitlint", "same as commitlint.config.js"),
    e("commitlint.config.mjs", Kind::File, "commitlint", "same as commitlint.config.js"),
    e("commitlint.config.ts", Kind::File, "commitlint", "same as commitlint.config.js"),
    e(".idea", Kind::Dir, "JetBrains IDEs", "run configurations, file watchers and external tools, run by the IDE"),
    e(".clinerules", Kind::Dir, "Cline", "hooks and rules, run by the editor's agent"),
    e(".continue", Kind::Dir, "Continue", "mcpServers/ and configuration: MCP server commands started by the editor's agent"),
    e(".windsurf", Kind::Dir, "Windsurf", "hooks, workflows and MCP settings of the editor's agent"),
    e(".amp", Kind::Dir, "Amp", "settings with MCP servers and permissions, read at start"),
    e(".junie", Kind::Dir, "Junie", "guidelines and MCP settings of JetBrains' agent"),
    e(".factory", Kind::Dir, "Factory Droid", "hooks and MCP settings, read at start"),
    e(".augment", Kind::Dir, "Augment", "hooks and settings of the editor's agent"),
    e(".nvim.lua", Kind::File, "Neovim", "run when you open the folder with 'exrc' set (after you trust it)"),
    e(".exrc", Kind::File, "Vim and Neovim", "commands run when you open the folder with 'exrc' set"),
    e(".yarnrc.yml", Kind::File, "Yarn", "yarnPath: the JavaScript file run as yarn at every yarn command there"),
    e(".npmrc", Kind::File, "npm", "node-options, script-shell and git: programs npm starts at every npm command there"),
    e(".yarnrc", Kind::File, "Yarn 1", "yarn-path: the JavaScript file run as yarn at every yarn command there"),
    e(".pnpmfile.cjs", Kind::File, "pnpm", "run at every pnpm install there"),
    e("bunfig.toml", Kind::File, "Bun", "preload: scripts run before every bun run and bun test there"),
    e(".gitlab", Kind::Dir, "GitLab CI", "CI files .gitlab-ci.yml includes, run with the project's CI variables when you push"),
    e(".forgejo", Kind::Dir, "Forgejo Actions", "workflows run with the repository's secrets when you push"),
    e(".gitea", Kind::Dir, "Gitea Actions", "workflows run with the repository's secrets when you push"),
    e(".buildkite", Kind::Dir, "Buildkite", "pipelines run with the pipeline's secrets when you push"),
    e(".woodpecker", Kind::Dir, "Woodpecker CI", "pipelines run with the repository's secrets when you push"),
    e(".woodpecker.yml", Kind::File, "Woodpecker CI", "same as .woodpecker/"),
    e("Jenkinsfile", Kind::File, "Jenkins", "the pipeline run with its credentials when you push"),
    e(".travis.yml", Kind::File, "Travis CI", "runs with the repository's secrets when you push"),
    e("azure-pipelines.yml", Kind::File, "Azure Pipelines", "runs with the pipeline's secrets when you push"),
    e("bitbucket-pipelines.yml", Kind::File, "Bitbucket Pipelines", "runs with the repository's variables when you push"),
    e(".drone.yml", Kind::File, "Drone", "runs with the repository's secrets when you push"),
    e(".vimrc", Kind::File, "Vim", "read before .exrc when you open the folder with 'exrc' set"),
    e("_vimrc", Kind::File, "Vim", "same as .vimrc"),
    e(".nvimrc", Kind::File, "Neovim", "same as .nvim.lua"),
    e(".github/hooks", Kind::Dir, "GitHub Copilot CLI", "hook files whose commands run when you start copilot in the project"),
    e(".config/lefthook.yml", Kind::File, "lefthook", "same as lefthook.yml"),
    e(".config/lefthook.yaml", Kind::File, "lefthook", "same as lefthook.yml"),
    e("lefthook.json", Kind::File, "lefthook", "same as lefthook.yml"),
    e("lefthook.toml", Kind::File, "lefthook", "same as lefthook.yml"),
    e("lefthook-local.json", Kind::File, "lefthook", "same as lefthook-local.yml"),
    e("lefthook-local.toml", Kind::File, "lefthook", "same as lefthook-local.yml"),
    e("lefthook-local.yaml", Kind::File, "lefthook", "same as lefthook-local.yml"),
    e(".lefthook", Kind::Dir, "lefthook", "scripts its commands run at your next git commit"),
    e(".lefthook-local", Kind::Dir, "lefthook", "same as .lefthook"),
    e(".dir-locals.el", Kind::File, "Emacs", "eval forms run when you open a file of the folder"),
    e(".dir-locals-2.el", Kind::File, "Emacs", "same as .dir-locals.el"),
    e(".openhands", Kind::Dir, "OpenHands", "setup.sh and hooks run when a session starts there"),
    e(".hg/hgrc", Kind::File, "Mercurial", "[hooks] and aliases run by your next hg command there (a prompt showing hg status too)"),
    e(".jj/repo/config.toml", Kind::File, "Jujutsu", "aliases, diff and merge tools, fsmonitor run by your next jj command there"),
];
