//! `ags hooks …` arguments.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

/// `ags hooks`.
#[derive(Debug, Args)]
pub struct HooksArgs {
    #[command(flatten)]
    pub unused_url: super::UnusedUrl,
    #[command(subcommand)]
    pub command: HooksCommand,
}

/// Hook events `ags` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EventArg {
    /// Runs before the container is created; contributes env, files and mounts.
    Prepare,
    /// Runs once the agent's container has started, alongside the agent; contributes nothing.
    Started,
    /// Runs once the agent's exit status is known; contributes nothing.
    Finished,
}

/// Which side of the protocol a schema describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SchemaSide {
    /// The JSON context a hook reads on stdin.
    Input,
    /// The JSON response a hook prints on stdout.
    Output,
}

/// `ags hooks` subcommands.
#[derive(Debug, Subcommand)]
pub enum HooksCommand {
    /// Explain an event: when it runs, what a hook receives and may return.
    Describe {
        #[arg(value_enum)]
        event: EventArg,
    },
    /// Print the JSON Schema of an event's input or output.
    Schema {
        #[arg(value_enum)]
        event: EventArg,
        #[arg(value_enum)]
        side: SchemaSide,
    },
    /// Validate a response file ('-' for stdin) without running anything.
    Validate {
        /// Response file, or '-' for standard input.
        file: PathBuf,
    },
    /// EXECUTE one hook (after approval) and print a redacted summary of its contribution.
    Test(HookTestArgs),
    /// List the active declarations with scope, hash and approval state.
    List {
        /// Working directory used to find the project overlay.
        #[arg(long, value_name = "PATH")]
        workdir: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Approve the active hook NAME for exactly the pinned hash, without running it (for
    /// provisioning CI images); refused when its current hash differs.
    Approve {
        /// Hook name.
        name: String,
        /// The full approval hash (64 lowercase hex digits, as `ags hooks list` prints).
        #[arg(long, value_name = "SHA256")]
        hash: String,
        /// The event of the hook, when names repeat across events (default: prepare first).
        #[arg(long, value_enum, value_name = "EVENT")]
        event: Option<EventArg>,
        /// Working directory used to find the project overlay.
        #[arg(long, value_name = "PATH")]
        workdir: Option<PathBuf>,
    },
    /// Revoke an approval by hook name or by hash.
    Revoke {
        /// Hook name (active declarations), approval hash, or a unique start of one (at least 6
        /// hex digits, e.g. the 12 that `ags hooks log` prints).
        target: String,
        /// Working directory used to find the project overlay.
        #[arg(long, value_name = "PATH")]
        workdir: Option<PathBuf>,
    },
    /// Show the hook run log.
    Log {
        /// Show the last N records.
        #[arg(short = 'n', default_value_t = 20)]
        n: usize,
        /// Print the raw JSON lines.
        #[arg(long)]
        json: bool,
    },
}

/// `ags hooks test`.
#[derive(Debug, Args)]
pub struct HookTestArgs {
    /// Name of the hook to run.
    pub name: String,
    /// Agent named in the context (default shell).
    #[arg(long, value_name = "NAME", conflicts_with = "context")]
    pub agent: Option<String>,
    /// Working directory for the context and for finding the project overlay (default: the
    /// current directory, also with --context).
    #[arg(long, value_name = "PATH", conflicts_with = "context")]
    pub workdir: Option<PathBuf>,
    /// A JSON context file to feed the hook instead of a generated one.
    #[arg(long, value_name = "FILE")]
    pub context: Option<PathBuf>,
    /// The event of the hook to run, when names repeat across events (default: any).
    #[arg(long, value_enum, value_name = "EVENT")]
    pub event: Option<EventArg>,
    /// Pick the declaration whose approval hash starts with PREFIX, when names repeat.
    #[arg(long, value_name = "PREFIX")]
    pub hash: Option<String>,
}
