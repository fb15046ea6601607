//! Errors of the 1Password integration. Every message is redacted by construction: no variant
//! holds a resolved value or anything `op` printed on stdout. What they may show: environment
//! keys, references and secret-set names (they say where a secret lives, not what it is),
//! field labels, and `op`'s stderr with control characters escaped and its length capped.

use std::io;
use std::path::PathBuf;

/// What went wrong talking to the 1Password CLI.
#[derive(Debug, thiserror::Error)]
pub enum OpError {
    /// No executable `op` on `PATH`.
    #[error(
        "the 1Password CLI (op) was not found on PATH: install or update the 1Password CLI (op), see \
         https://developer.1password.com/docs/cli/get-started/, and make sure `op` is on the PATH \
         ags runs with"
    )]
    NotInstalled,
    /// The `op` found (or configured) could have been written by the agent, or none outside
    /// its reach was found (`workspace::host_programs`).
    #[error(
        "refusing to run the 1Password CLI: {0}. ags runs op with your full environment, 1Password \
         credentials included, so it must be a file the agent cannot have written"
    )]
    Untrusted(#[from] crate::workspace::host_programs::HostProgramError),
    /// `op` exists but has no usable `op inject`.
    #[error(
        "{} does not support `op inject` ({detail}): install or update the 1Password CLI (op) to \
         version 2 or later, see https://developer.1password.com/docs/cli/get-started/",
        program.display()
    )]
    Unsupported {
        /// The `op` that was found.
        program: PathBuf,
        /// What the credential-free help check saw.
        detail: String,
    },
    /// `op` could not be started.
    #[error("cannot run {}: {source}; check that it is an executable 1Password CLI", program.display())]
    Spawn {
        /// The `op` that was found.
        program: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// `op` ran longer than allowed and was killed.
    #[error(
        "`{action}` did not finish within {timeout:?} and was killed: if it waits for sign-in, sign in \
         first (`op signin`, an unlocked 1Password app with CLI integration, or \
         OP_SERVICE_ACCOUNT_TOKEN) and try again"
    )]
    Timeout {
        /// The command, e.g. `op inject`.
        action: String,
        /// The limit.
        timeout: std::time::Duration,
    },
    /// The user interrupted the launch while `op` ran; it was killed.
    #[error("`{action}` was interrupted by {signal_name}; nothing was resolved")]
    Interrupted {
        /// The command, e.g. `op inject`.
        action: String,
        /// The signal number.
        signal: i32,
        /// Its name.
        signal_name: String,
    },
    /// `op` failed (non-zero exit or death by signal).
    #[error(
        "`{action}` failed ({status}) {context}: check the names in 1Password and that `op whoami` \
         works in this shell{}",
        stderr_block(stderr)
    )]
    Failed {
        /// The command, e.g. `op inject`.
        action: String,
        /// `exit status 1`, `killed by SIGSEGV`, ….
        status: String,
        /// What it was doing, e.g. `resolving the references of API_KEY, DB_URL`.
        context: String,
        /// `op`'s stderr, control characters escaped, capped.
        stderr: String,
    },
    /// `op` wrote more than ags accepts.
    #[error("`{action}` wrote more than {cap} bytes of output (not shown); nothing was resolved")]
    OutputTooLarge {
        /// The command.
        action: String,
        /// The cap in bytes.
        cap: usize,
    },
    /// Talking to `op` failed.
    #[error("`{action}`: {what} failed: {source}")]
    Io {
        /// The command.
        action: String,
        /// What was being done.
        what: &'static str,
        /// The OS error.
        source: io::Error,
    },
    /// `op inject`'s output does not fit the template ags sent.
    #[error(
        "`op inject` answered with output that does not match the template ags sent (output not \
         shown: {reason}); update the 1Password CLI (op)"
    )]
    BadOutput {
        /// What did not match (never output content).
        reason: &'static str,
    },
    /// A reference did not pass the template safety check (a bug: references are validated).
    #[error(
        "the 1Password reference of {key} contains characters that are not allowed in an `op inject` \
         template; this is a bug in ags, please report it"
    )]
    UnsafeReference {
        /// The env key.
        key: String,
    },
    /// A resolved value cannot be delivered through the env file.
    #[error(
        "the 1Password value of {} ({reference}) {problem} (value not shown): environment values must \
         be single-line UTF-8 without NUL bytes; store it without line breaks, or reference another \
         field",
        keys.join(", ")
    )]
    UnusableValue {
        /// Every env key that uses the reference.
        keys: Vec<String>,
        /// The reference.
        reference: String,
        /// `contains a line feed`, `is not valid UTF-8`, ….
        problem: &'static str,
    },
    /// `--op-secret-set` is not `VAULT/ITEM`.
    #[error("--op-secret-set {given}: {problem}; use --op-secret-set VAULT/ITEM (an item ID works too)")]
    SecretSetSyntax {
        /// What was given, control characters escaped.
        given: String,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// `op item get` did not return a readable item.
    #[error(
        "--op-secret-set {set}: `op item get` returned {problem} (output not shown); update the \
             1Password CLI (op)"
    )]
    ItemJson {
        /// `VAULT/ITEM`.
        set: String,
        /// What is wrong (never content).
        problem: String,
    },
    /// The item is not a Secure Note.
    #[error(
        "--op-secret-set {set}: the item is a {category}, not a Secure Note: only Secure Note fields are \
         loaded as environment; move the variables into a Secure Note"
    )]
    NotSecureNote {
        /// `VAULT/ITEM`.
        set: String,
        /// The item's category, escaped.
        category: String,
    },
    /// Two fields of one secret set carry the same label.
    #[error(
        "--op-secret-set {set}: two fields are labelled {label}: rename one, the variable would be \
         ambiguous"
    )]
    DuplicateField {
        /// `VAULT/ITEM`.
        set: String,
        /// The label.
        label: String,
    },
    /// A secret-set field value cannot be delivered through the env file.
    #[error(
        "--op-secret-set {set}: the value of field {label} {problem} (value not shown): environment \
         values must be single-line without NUL bytes; store it without line breaks"
    )]
    UnusableField {
        /// `VAULT/ITEM`.
        set: String,
        /// The field label (a valid env name).
        label: String,
        /// `contains a line feed`, ….
        problem: &'static str,
    },
}

/// A new line `op said:` followed by the (already indented) stderr lines, or nothing.
fn stderr_block(stderr: &str) -> String {
    if stderr.is_empty() {
        String::new()
    } else {
        format!("\nop said:\n{stderr}")
    }
}
