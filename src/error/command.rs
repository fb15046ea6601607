//! The failures of the subcommands themselves: a value the user gave that breaks a rule no stage
//! owns, a file they named that cannot be read, a question that cannot be asked, a hook name or
//! hash that selects nothing or too much. Each message names the input, the rule and what to do;
//! failures of a stage keep that stage's own error type.

use std::io;

/// A failure of `commands/` (exit code 125, like every failure of `ags` itself).
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// A value of the command line or configuration breaks a rule: `input` names it (`--hash
    /// "12"`), `rule` says what is wrong and what to do.
    #[error("{input}: {rule}")]
    Invalid { input: String, rule: String },
    /// A file or directory the user named (or `ags`'s own log, or `ags` itself) could not be read.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: io::Error,
    },
    /// A path checked at the start resolves elsewhere when it is used.
    #[error(
        "{what} {before} now resolves to {now}: it changed while ags was starting (a symlink was \
         swapped in?); nothing was created, check the path and launch again"
    )]
    PathChanged {
        what: String,
        before: String,
        now: String,
    },
    /// A confirmation is needed and there is no terminal to ask on.
    #[error("{command}: no terminal to ask on: rerun on a terminal, or pass --yes to {consent}")]
    NoTerminal {
        command: &'static str,
        consent: &'static str,
    },
    /// The terminal question itself failed.
    #[error("cannot ask: {0}")]
    CannotAsk(#[source] crate::prompt::PromptError),
    /// No active hook of this name has an approval hash starting with the given prefix.
    #[error(
        "no active hook named {name:?} has an approval hash starting with {prefix:?}; its hashes: {hashes}"
    )]
    NoHashMatch {
        name: String,
        prefix: String,
        hashes: String,
    },
    /// No active hook has this name.
    #[error(
        "no active {event}hook is named {name:?}; declared: {declared}. Check --config, --workdir and --event"
    )]
    NoSuchHook {
        name: String,
        event: String,
        declared: String,
    },
    /// Several active hooks have this name.
    #[error(
        "{count} active hooks are named {name:?}: {hooks}; pick one with --hash PREFIX (or --event), or give them \
         unique names"
    )]
    AmbiguousHook {
        name: String,
        count: usize,
        hooks: String,
    },
    /// `ags hooks revoke TARGET`: neither a hook name nor a hash prefix.
    #[error(
        "no active hook is named {target:?}, and it is not an approval hash or a prefix of one (at least \
         {min} lowercase hex digits, as `ags hooks log` and `ags hooks list` print)"
    )]
    NotARevokeTarget { target: String, min: usize },
    /// No stored approval starts with this prefix.
    #[error("no approval hash starts with {0}; `ags hooks list` shows the hashes of the active hooks")]
    NoApproval(String),
    /// Several stored approvals start with this prefix.
    #[error("{} approvals start with {prefix} ({}); give more digits", hashes.len(), hashes.join(", "))]
    AmbiguousApproval { prefix: String, hashes: Vec<String> },
    /// `ags hooks approve` refused: the cause says why.
    #[error("{0}; nothing was approved")]
    NotApproved(#[source] Box<CommandError>),
}

impl CommandError {
    /// A value that breaks a rule.
    pub fn invalid(input: impl Into<String>, rule: impl Into<String>) -> Self {
        CommandError::Invalid {
            input: input.into(),
            rule: rule.into(),
        }
    }

    /// A read or system call about `what` that failed.
    pub fn io(what: impl Into<String>) -> impl FnOnce(io::Error) -> Self {
        let what = what.into();
        move |source| CommandError::Io { what, source }
    }
}
