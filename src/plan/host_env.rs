//! Environment the user hands to the agent from the host: `--env KEY=VALUE`, `--env KEY` (the
//! value from `ags`'s own environment), `--env-file PATH` (dotenv syntax, [`parse_dotenv`]),
//! `[sandbox] env_passthrough` and `[agent.NAME] env`. Pure: the caller reads the files and
//! hands in a lookup of `ags`'s environment.
//!
//! Every value travels like a hook literal: staged in the launch's tmpfs volume, never in argv,
//! the container spec or a message. Names taken from the host (passthrough, `--env KEY`,
//! env files) must not be reserved ([`crate::hooks::policy::EnvKey`], the same rule hooks obey):
//! the host's `PATH`, `LD_PRELOAD` or `SSH_AUTH_SOCK` mean nothing good inside the container.
//! The agents' endpoint overrides (`ANTHROPIC_BASE_URL`, …) are the exception for the user's own
//! sources, `--env KEY` and the global passthrough: an LLM gateway is set in the user's shell.
//! An explicit `--env KEY=VALUE` keeps its old freedom (the user typed the value).

use std::collections::BTreeMap;
use std::ffi::OsString;

use super::Origin;
use crate::hooks::policy::{ENDPOINT_ENV_NAMES, EnvKey, EnvKeyError, EnvLiteral};
use crate::secret::Secret;

/// Largest env file accepted, in bytes.
pub const MAX_ENV_FILE_BYTES: usize = 1 << 20;

/// The resolved user environment, each list in increasing precedence.
#[derive(Debug, Clone, Default)]
pub struct HostEnv {
    /// From the command line (`--env-file`s, then `--env`s), each with where it came from
    /// (`Origin::EnvFile` or `Origin::Cli`): beats every hook.
    pub cli: Vec<(String, Secret, Origin)>,
    /// From the global config (passthrough, then `[agent.NAME] env`): hooks beat it.
    pub config: Vec<(String, Secret)>,
}

/// What [`resolve`] needs.
pub struct HostEnvInput<'a> {
    /// `--env` arguments as given.
    pub env_args: &'a [String],
    /// `--env-file` paths as given (for messages) with their text, in command-line order.
    pub env_files: &'a [(String, String)],
    /// `[sandbox] env_passthrough`.
    pub passthrough: &'a [String],
    /// `[agent.NAME] env` of the launched agent.
    pub agent_env: &'a BTreeMap<String, String>,
    /// `ags`'s own environment.
    pub lookup: &'a dyn Fn(&str) -> Option<OsString>,
}

/// Why the user environment cannot be used. Values are never part of a message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostEnvError {
    /// A malformed `--env` argument.
    #[error(
        "--env {key:?}: {rule}; use --env KEY=VALUE or --env KEY with KEY matching [A-Za-z_][A-Za-z0-9_]*"
    )]
    BadArg {
        /// The name part.
        key: String,
        /// The rule broken.
        rule: &'static str,
    },
    /// `--env KEY` names a variable `ags` does not have.
    #[error("--env {key}: {key} is not set in ags's environment; export it first, or pass --env {key}=VALUE")]
    Unset {
        /// The name.
        key: String,
    },
    /// A name taken from the host is reserved.
    #[error(
        "{origin}: {key}: {} (ags does not take it from the host; pass --env {key}=VALUE to set it anyway)",
        host_reason(reason)
    )]
    Reserved {
        /// Where the name came from.
        origin: String,
        /// The name.
        key: String,
        /// The policy's reason.
        reason: EnvKeyError,
    },
    /// A value is not usable (multi-line, NUL, not UTF-8, too long).
    #[error("{origin}: the value of {key} {rule} (value not shown); fix the value or drop the variable")]
    BadValue {
        /// Where it came from.
        origin: String,
        /// The name.
        key: String,
        /// The rule broken.
        rule: String,
    },
    /// An env file line does not parse.
    #[error(
        "--env-file {path}, line {line}: {rule} (line not shown); see docs/configuration.md, \"Env files\""
    )]
    File {
        /// The file as given.
        path: String,
        /// 1-based line number.
        line: usize,
        /// The rule broken.
        rule: &'static str,
    },
}

/// Resolve every host-sourced variable of a launch.
pub fn resolve(input: &HostEnvInput<'_>) -> Result<HostEnv, HostEnvError> {
    let mut cli = Vec::new();
    for (path, text) in input.env_files {
        let origin = format!("--env-file {path}");
        for (key, value) in parse_dotenv(path, text)? {
            check_name(&origin, &key, false)?;
            check_value(&origin, &key, &value)?;
            cli.push((key, Secret::new(value), Origin::EnvFile(path.clone())));
        }
    }
    for arg in input.env_args {
        let (key, value) = match parse_env_arg(arg)? {
            EnvArg::Literal(key, value) => (key.to_string(), value.to_string()),
            EnvArg::Inherit(key) => {
                check_name("--env", key, true)?;
                let value = (input.lookup)(key).ok_or_else(|| HostEnvError::Unset { key: key.into() })?;
                (key.to_string(), host_value("--env", key, value)?)
            }
        };
        check_value("--env", &key, &value)?;
        cli.push((key, Secret::new(value), Origin::Cli));
    }
    let mut config = Vec::new();
    for key in input.passthrough {
        let origin = "[sandbox] env_passthrough";
        check_name(origin, key, true)?;
        if let Some(value) = (input.lookup)(key) {
            let value = host_value(origin, key, value)?;
            check_value(origin, key, &value)?;
            config.push((key.clone(), Secret::new(value)));
        }
    }
    for (key, value) in input.agent_env {
        check_value("[agent] env", key, value)?;
        config.push((key.clone(), Secret::new(value.clone())));
    }
    Ok(HostEnv { cli, config })
}

/// One `--env` argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvArg<'a> {
    /// `KEY=VALUE`.
    Literal(&'a str, &'a str),
    /// `KEY`: take the value from `ags`'s environment.
    Inherit(&'a str),
}

/// Split and check one `--env` argument. The value is never echoed in errors.
pub fn parse_env_arg(arg: &str) -> Result<EnvArg<'_>, HostEnvError> {
    let (key, value) = match arg.split_once('=') {
        Some((k, v)) => (k, Some(v)),
        None => (arg, None),
    };
    if !crate::config::env_name_syntax(key) {
        return Err(HostEnvError::BadArg {
            key: crate::hooks::policy::display_escaped(key),
            rule: "invalid variable name",
        });
    }
    Ok(match value {
        Some(v) => EnvArg::Literal(key, v),
        None => EnvArg::Inherit(key),
    })
}

/// Why a name is not taken from the host, in words about the host (the policy's own reasons
/// speak to hooks: "hooks cannot set it, choose another name").
fn host_reason(reason: &EnvKeyError) -> String {
    match reason {
        EnvKeyError::Reserved { name } => format!("`{name}` is reserved for ags and the agent runtime"),
        EnvKeyError::ReservedPrefix { prefix } => {
            format!("names starting with `{prefix}` are reserved for ags and its tools")
        }
        EnvKeyError::ReservedPrefixAnyCase { prefix } => {
            format!("names starting with `{prefix}` (in any letter case) configure a tool to run other code")
        }
        EnvKeyError::ReservedSuffix { suffix } => format!(
            "names ending in `{suffix}` (in any letter case) are reserved for ags's network egress control"
        ),
        EnvKeyError::Syntax => reason.to_string(),
    }
}

/// `key` may be taken from the host for `origin`. `own_host` says the origin is the user's own
/// (`--env KEY`, the global passthrough), which may also hand over the agents' endpoint
/// overrides ([`ENDPOINT_ENV_NAMES`]); an env file may lie where the agent writes, so it may not.
fn check_name(origin: &str, key: &str, own_host: bool) -> Result<(), HostEnvError> {
    if own_host && ENDPOINT_ENV_NAMES.contains(&key) {
        return Ok(());
    }
    match EnvKey::try_from(key) {
        Ok(_) => Ok(()),
        Err(EnvKeyError::Syntax) => Err(HostEnvError::BadArg {
            key: crate::hooks::policy::display_escaped(key),
            rule: "invalid variable name",
        }),
        Err(reason) => Err(HostEnvError::Reserved {
            origin: origin.into(),
            key: key.into(),
            reason,
        }),
    }
}

fn check_value(origin: &str, key: &str, value: &str) -> Result<(), HostEnvError> {
    if key.len() + 1 + value.len() > crate::hooks::policy::MAX_ENV_ENTRY_BYTES {
        return Err(HostEnvError::BadValue {
            origin: origin.into(),
            key: key.into(),
            rule: format!(
                "is too long: KEY=VALUE may have at most {} bytes (the Linux limit of one environment entry)",
                crate::hooks::policy::MAX_ENV_ENTRY_BYTES
            ),
        });
    }
    EnvLiteral::try_from(value)
        .map(drop)
        .map_err(|e| HostEnvError::BadValue {
            origin: origin.into(),
            key: key.into(),
            rule: format!("is not usable: {e}"),
        })
}

fn host_value(origin: &str, key: &str, value: OsString) -> Result<String, HostEnvError> {
    value.into_string().map_err(|_| HostEnvError::BadValue {
        origin: origin.into(),
        key: key.into(),
        rule: "is not valid UTF-8".into(),
    })
}

/// Parse an env file (docs/configuration.md, "Env files"):
///
/// - lines end with LF (a CR before it is dropped); blank lines and lines whose first
///   non-blank character is `#` are skipped;
/// - `[export ]KEY=VALUE`, blanks allowed around `KEY` and `=`; `KEY` matches
///   `[A-Za-z_][A-Za-z0-9_]*`; a line without `=` is refused (names are taken from the host
///   only on the command line or in the global config);
/// - VALUE unquoted: up to the end of the line or a blank followed by `#`, trailing blanks
///   removed; `'…'`: literal; `"…"`: `\\` and `\"` are the only escapes (any other backslash
///   sequence is refused); after a closing quote only blanks and a `#` comment may follow;
///   quotes must close on the same line (values are single-line);
/// - no `$VAR` expansion; the last of several equal keys wins.
pub fn parse_dotenv(path: &str, text: &str) -> Result<Vec<(String, String)>, HostEnvError> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (i, raw) in text.split('\n').enumerate() {
        let err = |rule| HostEnvError::File {
            path: path.into(),
            line: i + 1,
            rule,
        };
        let line = raw.strip_suffix('\r').unwrap_or(raw).trim_start_matches(BLANK);
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = line
            .strip_prefix("export")
            .filter(|rest| rest.starts_with(BLANK))
            .map_or(line, |rest| rest.trim_start_matches(BLANK));
        let (key, rest) = line
            .split_once('=')
            .ok_or_else(|| err("expected KEY=VALUE (a bare KEY is only accepted as --env KEY)"))?;
        let key = key.trim_end_matches(BLANK);
        if !crate::config::env_name_syntax(key) {
            return Err(err("the name must match [A-Za-z_][A-Za-z0-9_]*"));
        }
        let value = parse_value(rest.trim_start_matches(BLANK)).map_err(err)?;
        out.retain(|(k, _)| k != key);
        out.push((key.to_string(), value));
    }
    Ok(out)
}

const BLANK: [char; 2] = [' ', '\t'];

fn parse_value(s: &str) -> Result<String, &'static str> {
    let (value, rest) = match s.chars().next() {
        Some('\'') => {
            let end = s[1..]
                .find('\'')
                .ok_or("the single quote is not closed on this line")?;
            (s[1..1 + end].to_string(), &s[end + 2..])
        }
        Some('"') => double_quoted(&s[1..])?,
        _ => {
            let end = s
                .char_indices()
                .find(|&(i, c)| c == '#' && i > 0 && s[..i].ends_with(BLANK))
                .map_or(s.len(), |(i, _)| i);
            return Ok(s[..end].trim_end_matches(BLANK).to_string());
        }
    };
    let rest = rest.trim_start_matches(BLANK);
    if rest.is_empty() || rest.starts_with('#') {
        Ok(value)
    } else {
        Err("only blanks and a # comment may follow a quoted value")
    }
}

/// The value of a `"…"` (after the opening quote) and the text after the closing quote.
fn double_quoted(s: &str) -> Result<(String, &str), &'static str> {
    let mut value = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Ok((value, &s[i + 1..])),
            '\\' => match chars.next() {
                Some((_, c @ ('\\' | '"'))) => value.push(c),
                _ => return Err("only \\\\ and \\\" are escapes in a double-quoted value"),
            },
            c => value.push(c),
        }
    }
    Err("the double quote is not closed on this line")
}

#[cfg(test)]
#[path = "host_env_tests.rs"]
mod tests;
