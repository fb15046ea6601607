//! The environment keyspace: which variable names a hook (or any source that is not the user's
//! own command line) may put into the container. Pure, no I/O; part of [`super`] (re-exported
//! from `hooks::policy`), split out to keep the files short.
//!
//! A name is refused when it is on [`RESERVED_ENV_NAMES`], starts with one of
//! [`RESERVED_ENV_PREFIXES`] (unless it is one of [`ALLOWED_ENV_NAMES`]), or starts with one of
//! [`RESERVED_ENV_PREFIXES_ANY_CASE`] / ends with one of [`RESERVED_ENV_SUFFIXES_ANY_CASE`] in any
//! letter case. docs/prepare-hooks.md lists the same data (a test keeps them in step).

/// Exact environment names a hook may not set: runtime, guard, host-auth and agent-config
/// redirectors, code injectors of shells, the C library and language runtimes (Node's compile
/// cache among them: Node checks an entry only against its source's size and checksum, so a
/// cache the agent wrote runs the agent's code in place of the guard; the temporary directory
/// too, where pi's extension loader keeps the guard's transpiled code and accepts any file
/// that ends with the source's digest), and the agents'
/// API endpoint overrides (a hook must not be able to send the agent's requests, API key
/// included, somewhere else). Provider API keys (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, …) are
/// allowed.
#[rustfmt::skip]
pub const RESERVED_ENV_NAMES: &[&str] = &[
    "HOME", "PATH", "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "CDPATH", "IFS", "PROMPT_COMMAND",
    "NODE_OPTIONS", "NODE_PATH", "NODE_COMPILE_CACHE", "NODE_COMPILE_CACHE_PORTABLE", "TMPDIR",
    "TMP", "TEMP", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PERL5OPT", "PERL5LIB", "PERLLIB",
    "RUBYOPT", "RUBYLIB", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "GCONV_PATH",
    "GLIBC_TUNABLES", "HOSTALIASES", "LOCALDOMAIN", "RES_OPTIONS", "RUSTUP_HOME", "CARGO_HOME",
    "GOPATH", "GOCACHE", "SCCACHE_DIR", "CACHEPOT_DIR", "SSH_AUTH_SOCK", "BROWSER",
    "GLIMPSE_BINARY_PATH", "DOCKER_HOST", "TESTCONTAINERS_HOST_OVERRIDE", "PSP_SESSION_ID",
    "DISABLE_AUTOUPDATER", "OPENCODE_DISABLE_AUTOUPDATE", "OPENCODE_CONFIG_CONTENT",
    "OPENCODE_CONFIG", "OPENCODE_CONFIG_DIR", "OPENCODE_TUI_CONFIG", "CODEX_HOME",
    "GEMINI_CLI_HOME", "GEMINI_CLI_SYSTEM_SETTINGS_PATH", "GEMINI_CLI_SYSTEM_DEFAULTS_PATH",
    "GEMINI_CLI_TRUSTED_FOLDERS_PATH", "PI_CODING_AGENT_DIR", "WAYLAND_DISPLAY", "XDG_CONFIG_HOME",
    "XDG_RUNTIME_DIR", "XDG_SESSION_TYPE", "ANTHROPIC_BASE_URL", "ANTHROPIC_BEDROCK_BASE_URL",
    "ANTHROPIC_VERTEX_BASE_URL", "OPENAI_BASE_URL", "OPENAI_API_BASE", "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_VERTEX_BASE_URL", "GEMINI_API_BASE_URL", "OPENROUTER_BASE_URL", "OPENCODE_BASE_URL",
];

/// The agents' endpoint overrides among [`RESERVED_ENV_NAMES`]: a hook, an overlay or an env
/// file may not set them (they decide where the prompts and the API key go), but the user's own
/// host sources may: `--env KEY` and the global config's `[sandbox] env_passthrough` (an LLM
/// gateway set in the user's shell).
#[rustfmt::skip]
pub const ENDPOINT_ENV_NAMES: &[&str] = &[
    "ANTHROPIC_BASE_URL", "ANTHROPIC_BEDROCK_BASE_URL", "ANTHROPIC_VERTEX_BASE_URL", "OPENAI_BASE_URL",
    "OPENAI_API_BASE", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_VERTEX_BASE_URL", "GEMINI_API_BASE_URL",
    "OPENROUTER_BASE_URL", "OPENCODE_BASE_URL",
];

/// Environment name prefixes a hook may not use (case-sensitive, like the names themselves).
/// `JITI_` configures the loader pi starts extensions with, ags's guard included (its alias
/// table and its cache of transpiled code).
/// `GIT_` covers every variable that makes Git run a program or read other config or
/// repositories (`GIT_SSH_COMMAND`, `GIT_EXTERNAL_DIFF`, `GIT_CONFIG_*`, `GIT_DIR`,
/// `GIT_EXEC_PATH`, `GIT_ASKPASS`, `GIT_PROXY_COMMAND`, …), except [`ALLOWED_ENV_NAMES`].
#[rustfmt::skip]
pub const RESERVED_ENV_PREFIXES: &[&str] = &[
    "AGS_", "OP_", "PNPM_", "MISE_", "LD_", "DCG_", "PI_GUARD_", "GIT_", "CLAUDE_", "JITI_",
];

/// Environment name prefixes reserved in any letter case (`npm_config_*` is read by npm in
/// either case and can run code: `npm_config_script_shell`, `npm_config_node_options`, …).
pub const RESERVED_ENV_PREFIXES_ANY_CASE: &[&str] = &["NPM_CONFIG_"];

/// Environment name suffixes reserved in any letter case: proxy settings (`HTTP_PROXY`,
/// `https_proxy`, `ALL_PROXY`, `NO_PROXY`, `FTP_PROXY`, …) decide where the agent's traffic goes
/// and belong to `ags`'s egress control.
pub const RESERVED_ENV_SUFFIXES_ANY_CASE: &[&str] = &["_PROXY"];

/// Names a hook may set although they start with a reserved prefix: Git's identity variables,
/// which only change the name and e-mail address recorded in commits.
pub const ALLOWED_ENV_NAMES: &[&str] = &[
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
];

/// Longest `KEY=VALUE` environment entry, in bytes: Linux refuses to `exec` a program with a
/// longer environment string (`MAX_ARG_STRLEN`, 32 pages = 128 KiB, including the NUL), so the
/// agent would not even start (exit 126).
pub const MAX_ENV_ENTRY_BYTES: usize = 128 * 1024 - 1;

/// Why a name cannot be a hook environment key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvKeyError {
    /// Not `^[A-Za-z_][A-Za-z0-9_]*$`.
    #[error("environment names must match ^[A-Za-z_][A-Za-z0-9_]*$; rename the variable")]
    Syntax,
    /// On the reserved list.
    #[error("`{name}` is reserved for AGS and the agent runtime; hooks cannot set it, choose another name")]
    Reserved {
        /// The reserved name.
        name: &'static str,
    },
    /// Starts with a reserved prefix.
    #[error("names starting with `{prefix}` are reserved for AGS and its tools; choose another name")]
    ReservedPrefix {
        /// The reserved prefix.
        prefix: &'static str,
    },
    /// Starts with a prefix reserved in any letter case.
    #[error(
        "names starting with `{prefix}` (in any letter case) are reserved: they configure a tool \
         to run other code; choose another name"
    )]
    ReservedPrefixAnyCase {
        /// The reserved prefix (upper case).
        prefix: &'static str,
    },
    /// Ends with a suffix reserved in any letter case.
    #[error(
        "names ending in `{suffix}` (in any letter case) are reserved for AGS's network egress \
         control; hooks cannot route the agent's traffic, choose another name"
    )]
    ReservedSuffix {
        /// The reserved suffix (upper case).
        suffix: &'static str,
    },
}

/// The one rule of the environment keyspace: whether `name` is a syntactically valid variable
/// name that is not reserved for `ags`, the agent runtime or the tools in the container. Hook
/// responses go through it (via [`super::EnvKey`]); so must every other way for configuration or the
/// host environment to put variables into the container. (A user's explicit `--env` is not
/// checked: the user may override anything.)
pub fn check_env_key(s: &str) -> Result<(), EnvKeyError> {
    let mut bytes = s.bytes();
    let first_ok = matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_');
    if !first_ok || !bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err(EnvKeyError::Syntax);
    }
    if let Some(name) = RESERVED_ENV_NAMES.iter().find(|n| **n == s) {
        return Err(EnvKeyError::Reserved { name });
    }
    let upper = s.to_ascii_uppercase();
    if let Some(prefix) = RESERVED_ENV_PREFIXES_ANY_CASE
        .iter()
        .find(|p| upper.starts_with(**p))
    {
        return Err(EnvKeyError::ReservedPrefixAnyCase { prefix });
    }
    if let Some(suffix) = RESERVED_ENV_SUFFIXES_ANY_CASE
        .iter()
        .find(|x| upper.ends_with(**x))
    {
        return Err(EnvKeyError::ReservedSuffix { suffix });
    }
    if ALLOWED_ENV_NAMES.contains(&s) {
        return Ok(());
    }
    match RESERVED_ENV_PREFIXES.iter().find(|p| s.starts_with(**p)) {
        Some(prefix) => Err(EnvKeyError::ReservedPrefix { prefix }),
        None => Ok(()),
    }
}
