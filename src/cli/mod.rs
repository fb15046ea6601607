//! Stage 0: the command line, as clap derive structs. No I/O and no logic here: the structs are
//! resolved into settings by `config` and the orchestration functions in `commands`.

mod hooks;
mod image;
mod parse;
mod records;
mod setup;
mod suggest;
mod unit;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

pub use hooks::{EventArg, HookTestArgs, HooksArgs, HooksCommand, SchemaSide};
pub use image::{DoctorArgs, ImageArgs, ImageBuildArgs, ImageCommand, ImageImportArgs};
pub use parse::{parse, parse_duration};
pub use records::{LogArgs, VerifyArgs};
pub use setup::{OciHooksArgs, SetupArgs, SetupCommand};
pub use unit::{UnitCheckArgs, UnitPhase};

/// Run AI coding agents in rootless Podman containers.
///
/// Without a subcommand `ags` launches an agent: `ags --agent shell -- CMD…`.
#[derive(Debug, Parser)]
#[command(name = "ags", version, subcommand_negates_reqs = true)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub run: RunArgs,
    /// Launch options given before the subcommand (`ags --agent claude plan`), by long name;
    /// filled by [`parse`], which knows where each value came from.
    #[arg(skip)]
    pub run_given: Vec<String>,
}

/// Options every subcommand understands.
#[derive(Debug, Clone, Args)]
pub struct GlobalArgs {
    /// Podman service URL (unix:///path/podman.sock, tcp://host:port or
    /// ssh://[user@]host[:port]/path/podman.sock). Default: --connection, CONTAINER_HOST,
    /// CONTAINER_CONNECTION, then $XDG_RUNTIME_DIR/podman/podman.sock, then /run/podman/podman.sock.
    #[arg(long, global = true, value_name = "URL", conflicts_with = "connection")]
    pub url: Option<String>,
    /// A named Podman connection (`podman system connection list`): its URL and identity.
    #[arg(long, global = true, value_name = "NAME")]
    pub connection: Option<String>,
    /// SSH identity file for an ssh:// service (default: CONTAINER_SSHKEY, then the
    /// connection's own, then OpenSSH's configuration).
    #[arg(long, global = true, value_name = "PATH")]
    pub identity: Option<PathBuf>,
    /// Primary config file instead of $XDG_CONFIG_HOME/ags/config.toml.
    #[arg(long, global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Do not load the project overlay (<git root>/.ags/config.toml).
    #[arg(long, global = true)]
    pub no_repo_config: bool,
}

/// `--url` where it means nothing: `ags hooks …` and `ags setup …` never contact Podman. Still
/// accepted (and ignored) there so that existing scripts keep working, but hidden from their
/// help. It shadows the global `--url` (same id), which clap then does not propagate.
#[derive(Debug, Clone, Default, Args)]
pub struct UnusedUrl {
    /// Ignored: this command never contacts Podman.
    #[arg(long = "url", id = "url", global = true, hide = true, value_name = "URL")]
    pub unused_url: Option<String>,
    /// Ignored: this command never contacts Podman.
    #[arg(
        long = "connection",
        id = "connection",
        global = true,
        hide = true,
        value_name = "NAME"
    )]
    pub unused_connection: Option<String>,
    /// Ignored: this command never contacts Podman.
    #[arg(
        long = "identity",
        id = "identity",
        global = true,
        hide = true,
        value_name = "PATH"
    )]
    pub unused_identity: Option<PathBuf>,
}

/// Options of a launch (also accepted by `ags plan`).
#[derive(Debug, Clone, Default, Args)]
pub struct RunArgs {
    /// Agent to run: pi, claude, codex, gemini, opencode or shell.
    #[arg(long, default_value = "shell", value_name = "NAME")]
    pub agent: String,
    /// Project directory mounted into the container (default: the current directory).
    #[arg(long, value_name = "PATH")]
    pub workdir: Option<PathBuf>,
    /// Container image (overrides [sandbox] image).
    #[arg(long, value_name = "IMAGE")]
    pub image: Option<String>,
    /// Allocate a terminal: auto (when stdin and stdout are terminals), true or false.
    #[arg(long, value_enum, default_value_t = TtyMode::Auto, num_args = 0..=1,
          default_missing_value = "true", require_equals = true, value_name = "WHEN")]
    pub tty: TtyMode,
    /// Set an environment variable in the container: KEY=VALUE, or KEY alone to take the value
    /// from ags's own environment (kept out of argv). Beats every hook.
    #[arg(long = "env", short = 'e', value_name = "KEY[=VALUE]")]
    pub env: Vec<String>,
    /// Read environment variables from a dotenv file (KEY=VALUE lines; see
    /// docs/configuration.md). `--env` beats it; it beats every hook.
    #[arg(long = "env-file", value_name = "PATH")]
    pub env_files: Vec<PathBuf>,
    /// Mount another host directory at its canonical path: read-write, or read-only with `:ro`.
    #[arg(long = "add-dir", value_name = "PATH[:ro]")]
    pub add_dirs: Vec<PathBuf>,
    /// Load every field of a 1Password Secure Note as environment (VAULT/ITEM).
    #[arg(long = "op-secret-set", value_name = "VAULT/ITEM")]
    pub op_secret_sets: Vec<String>,
    /// Add a label to the container and staging volume (KEY=VALUE; io.ags.* keys are reserved).
    #[arg(long = "label", value_name = "KEY=VALUE")]
    pub labels: Vec<String>,
    /// Refuse host bind mounts and 1Password references from hooks; tmpfs /tmp, /var/tmp, /run.
    #[arg(long)]
    pub lockdown: bool,
    /// Network for this launch: open (Podman's default), allowlist (only the allowlisted hosts,
    /// through ags's egress proxy) or none. Cannot go below a project overlay's mode.
    #[arg(long, value_enum, value_name = "MODE")]
    pub network: Option<NetworkMode>,
    /// Add a destination to the allowlist for this launch (HOST[:PORT], *.DOMAIN, IP or CIDR,
    /// as in [network] allow); applies in allowlist mode.
    #[arg(long = "allow", value_name = "HOST[:PORT]")]
    pub allow: Vec<String>,
    /// After the launch, write a JSON report (launch id, image, exit code, phase timings, hook
    /// runs, leftovers) to PATH, atomically, or to standard output with `-` (docs/ci.md).
    #[arg(long, value_name = "PATH")]
    pub report: Option<PathBuf>,
    /// Refuse to launch unless the plan's digest (printed by `ags plan`) is DIGEST: a CI job
    /// pins what it reviewed (docs/ci.md).
    #[arg(long, value_name = "DIGEST")]
    pub expect_plan: Option<String>,
    /// The sandbox is the boundary: add the agent's own flag that skips its permission prompts
    /// (claude --dangerously-skip-permissions, codex --dangerously-bypass-approvals-and-sandbox,
    /// gemini --yolo, opencode --auto). See docs/agents.md.
    #[arg(long)]
    pub yolo: bool,
    /// Forward the host's ssh-agent (`SSH_AUTH_SOCK`) so that git can push and fetch over SSH;
    /// private keys stay on the host. Also `[git] ssh_agent = true` (docs/configuration.md).
    #[arg(long)]
    pub ssh_agent: bool,
    /// Container name (default: ags-<project>-<random>); a name already in use is refused.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Stop the agent after DURATION (SIGTERM, then SIGKILL 10 s later) and exit 124, like
    /// timeout(1). DURATION: a number with an optional unit s, m, h or d (default s).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub timeout: Option<std::time::Duration>,
    /// Memory limit of the container: SIZE (512m, 2g, plain bytes), auto (half of the memory of
    /// the machine that runs it, at most 8g: the default) or none. Beats [sandbox] memory.
    #[arg(long, value_name = "SIZE", value_parser = crate::limits::parse_memory)]
    pub memory: Option<crate::limits::Memory>,
    /// CPU limit of the container, in CPUs (2, 1.5, 0.5); default none. Beats [sandbox] cpus.
    #[arg(long, value_name = "CPUS", value_parser = crate::limits::parse_cpus)]
    pub cpus: Option<crate::limits::Cpus>,
    /// Publish a container port on the host: [[IP:]HOST_PORT:]CONTAINER_PORT[/tcp|udp]
    /// (e.g. `-p 1455:1455` for a browser login callback).
    #[arg(long = "publish", short = 'p', value_name = "PORT")]
    pub publish: Vec<String>,
    /// Run the agent directly as PID 1 instead of under Podman's init process (which forwards
    /// signals and reaps zombies).
    #[arg(long)]
    pub no_init: bool,
    /// Command and arguments for the agent (after `--`).
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// When to allocate a terminal for the container.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum TtyMode {
    /// A terminal when stdin and stdout are both terminals.
    #[default]
    Auto,
    /// Always a terminal.
    True,
    /// Never a terminal.
    False,
}

/// `--network` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum NetworkMode {
    /// Podman's default network.
    Open,
    /// Only allowlisted destinations, through the egress proxy of `ags`.
    Allowlist,
    /// No network (loopback only).
    None,
}

/// Subcommands.
// Parsed once per process: the size of `plan`'s options costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the effective launch plan without creating anything.
    Plan(PlanArgs),
    /// Would the network policy of a launch here let the agent reach HOST[:PORT], and which
    /// rule decides: exit 0 when allowed, 1 when refused (docs/network.md).
    Explain(ExplainArgs),
    /// Grant a destination to running allowlist-mode launches without a restart, for a time
    /// (`--for 30m`) or for one launch (`--launch ID`); `--list` and `--revoke ID` manage grants
    /// (docs/network.md).
    Allow(AllowArgs),
    /// Inspect, test and manage hooks (prepare, started, finished).
    Hooks(HooksArgs),
    /// Remove containers and volumes left behind by `ags` processes that are gone, and run the
    /// finished hooks those launches still owe.
    Gc(GcArgs),
    /// Build or import images through the Podman API.
    Image(ImageArgs),
    /// Check the Podman service, the image and ags's files; print a fix for each problem.
    Doctor(DoctorArgs),
    /// Install optional host integration (OCI hooks).
    Setup(SetupArgs),
    /// Show the agent hook record: every hook event and handler run of the agents, from the
    /// log the launches append to (`--egress` for the egress proxy's log instead; the host
    /// hook run log is `ags hooks log`).
    Log(LogArgs),
    /// Agent logins: `import AGENT` copies your host login of that agent (e.g.
    /// `~/.claude/.credentials.json`) into this project's state volume for it.
    Login(LoginArgs),
    /// Print a shell completion script (bash, zsh or fish) to standard output.
    Completions(CompletionsArgs),
    /// Print the manual page (roff) to standard output: `ags man | man -l -`.
    Man,
    /// The workspace check a Quadlet unit runs around its container (`before`, `after`), as a
    /// launch does around its agent (docs/quadlet.md).
    UnitCheck(UnitCheckArgs),
    /// Check a launch's run receipt and its records in the host logs: exit 0 when intact, 1
    /// with each change found (docs/receipts.md).
    Verify(VerifyArgs),
}

/// `ags explain`.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// The destination: HOST[:PORT], IP[:PORT] or [IPv6]:PORT (port 443 when left out); or a
    /// request, "METHOD HOST[:PORT]/PATH", to ask the method and path rules too; or an egress
    /// record's id (LAUNCH.N, from a 403 or `ags log --egress`) to show why it was decided.
    #[arg(value_name = "HOST[:PORT]")]
    pub target: String,
    /// The agent whose launch is asked about (its own API hosts join the allowlist).
    #[arg(long, default_value = "shell", value_name = "NAME")]
    pub agent: String,
    /// The network mode asked about, as `--network` of a launch.
    #[arg(long, value_enum, value_name = "MODE")]
    pub network: Option<NetworkMode>,
    /// Entries added as `--allow` of a launch would add them.
    #[arg(long = "allow", value_name = "HOST[:PORT]")]
    pub allow: Vec<String>,
    /// The project directory (default: the current directory).
    #[arg(long, value_name = "PATH")]
    pub workdir: Option<PathBuf>,
}

/// `ags allow`.
#[derive(Debug, Args)]
pub struct AllowArgs {
    /// The entry granted (as in [network] allow: HOST[:PORT], *.DOMAIN, IP or CIDR).
    #[arg(value_name = "HOST[:PORT]", required_unless_present_any = ["list", "revoke"])]
    pub entry: Option<String>,
    /// How long the grant lasts (a number with s, m, h or d); without it, until the launch
    /// named by --launch ends.
    #[arg(long = "for", value_name = "DURATION", value_parser = parse::parse_duration)]
    pub duration: Option<std::time::Duration>,
    /// Only this launch (its id, `ags-PID-NANOS`, as the proxy's refusal and `ags log --egress`
    /// show it); without it, every launch of yours.
    #[arg(long, value_name = "ID")]
    pub launch: Option<String>,
    /// List the grants that still hold.
    #[arg(long, conflicts_with_all = ["entry", "duration", "launch", "revoke"])]
    pub list: bool,
    /// Remove the grant GRANT (its id, as `--list` shows it).
    #[arg(long, value_name = "GRANT", conflicts_with_all = ["entry", "duration", "launch"])]
    pub revoke: Option<String>,
}

/// `ags completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// Shells `ags completions` writes scripts for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Shell {
    /// Bash (source it, or put it in ~/.local/share/bash-completion/completions/ags).
    Bash,
    /// Zsh (as `_ags` in a directory of $fpath).
    Zsh,
    /// Fish (as ~/.config/fish/completions/ags.fish).
    Fish,
}

/// `ags login`.
#[derive(Debug, Args)]
pub struct LoginArgs {
    #[command(subcommand)]
    pub command: LoginCommand,
}

/// `ags login` subcommands.
#[derive(Debug, Subcommand)]
pub enum LoginCommand {
    /// Copy your host login of AGENT into this project's state volume for that agent (the
    /// volume the next `ags --agent AGENT` in this workdir mounts): claude
    /// `~/.claude/.credentials.json`, codex `~/.codex/auth.json`, gemini
    /// `~/.gemini/oauth_creds.json`, opencode `~/.local/share/opencode/auth.json`. The content
    /// goes through the Podman API into the volume only (mode 0600, owned by the agent's user).
    Import(LoginImportArgs),
}

/// `ags login import`.
#[derive(Debug, Args)]
pub struct LoginImportArgs {
    /// The agent whose login to import.
    #[arg(value_name = "AGENT")]
    pub agent: String,
    /// Project directory whose state volume receives it (default: the current directory).
    #[arg(long, value_name = "PATH")]
    pub workdir: Option<PathBuf>,
    /// The host login file to copy (default: the agent's usual one under your home).
    #[arg(long, value_name = "FILE")]
    pub from: Option<PathBuf>,
    /// Image of the short-lived container that writes the volume (default: the image the
    /// launch would use; any image with /bin/sh will do).
    #[arg(long, value_name = "IMAGE")]
    pub image: Option<String>,
}

/// What `ags plan` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlanFormat {
    /// A table.
    Text,
    /// The plan as JSON (values of hooks redacted).
    Json,
    /// Kubernetes manifests of the same launch: a Secret with the staged values (running the
    /// prepare hooks and 1Password lookups like a launch) and a Pod (docs/kube.md).
    Kube,
    /// A Quadlet `.container` unit and its `.volume` units, for systemd (docs/quadlet.md).
    Quadlet,
}

/// `ags plan`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// Print JSON instead of a table (the same as `--format json`).
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// What to print: `text`, `json`, or `kube` (a Secret and a Pod for `kubectl apply -f -`;
    /// the Secret holds the hooks' values, unredacted, on standard output only).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<PlanFormat>,
    /// With `--format kube`: the workspace is a fresh clone of URL (at REF, a branch, tag or
    /// commit) made by an init container into an `emptyDir`, instead of the workdir as a
    /// `hostPath` of the node.
    #[arg(long, value_name = "URL[@REF]")]
    pub workspace_from_git: Option<String>,
    /// Do not run prepare hooks (their contributions are then missing from the plan).
    #[arg(long)]
    pub no_hooks: bool,
    /// With `--format quadlet`: write the units into DIR (e.g. ~/.config/containers/systemd)
    /// instead of printing them.
    #[arg(long, value_name = "DIR")]
    pub quadlet_dir: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub run: RunArgs,
}

/// `ags gc`.
#[derive(Debug, Args)]
pub struct GcArgs {
    /// Also remove the agents' state volumes (logins, sessions, history) of projects whose
    /// directory no longer exists on this machine: lists them, then asks.
    #[arg(long)]
    pub state: bool,
    /// With --state: only projects under this directory.
    #[arg(long, value_name = "DIR", requires = "state")]
    pub under: Option<std::path::PathBuf>,
    /// With --state: remove without asking (needed without a terminal).
    #[arg(long, requires = "state")]
    pub yes: bool,
    /// Also remove leftovers of this launch id even if its owner looks alive.
    #[arg(long, value_name = "LAUNCH_ID", hide = true)]
    pub launch: Option<String>,
    /// Only forget DIR in the record of directories launches mounted read-write, once you have
    /// reviewed what an agent left there: programs in it may then run from PATH again
    /// (repeatable; nothing else is done).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["state", "launch"])]
    pub forget: Vec<std::path::PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn trailing_command_after_double_dash() {
        let cli = Cli::try_parse_from([
            "ags",
            "--agent",
            "shell",
            "--tty=false",
            "--",
            "sh",
            "-c",
            "exit 7",
        ])
        .unwrap();
        assert!(cli.command.is_none());
        assert_eq!(cli.run.tty, TtyMode::False);
        assert_eq!(cli.run.command, ["sh", "-c", "exit 7"]);
    }

    #[test]
    fn bare_tty_flag_means_true() {
        let cli = Cli::try_parse_from(["ags", "--tty"]).unwrap();
        assert_eq!(cli.run.tty, TtyMode::True);
    }

    #[test]
    fn url_is_in_the_help_of_commands_that_contact_podman_only() {
        let mut cmd = Cli::command();
        cmd.build();
        let mut help = |path: &[&str]| {
            let mut c = &mut cmd;
            for name in path {
                c = c.find_subcommand_mut(name).expect("subcommand exists");
            }
            c.render_help().to_string()
        };
        for path in [&["plan"][..], &["gc"], &["doctor"], &["image", "build"], &[]] {
            assert!(help(path).contains("--url"), "{path:?}");
        }
        for path in [
            &["hooks"][..],
            &["hooks", "test"],
            &["hooks", "list"],
            &["setup", "oci-hooks"],
        ] {
            for flag in ["--url", "--connection", "--identity"] {
                assert!(!help(path).contains(flag), "{path:?} {flag}");
            }
        }
        // Still accepted there (ignored), before or after the subcommand.
        for args in [
            &["ags", "hooks", "list", "--url", "unix:///x"][..],
            &["ags", "--url", "unix:///x", "hooks", "log"],
            &["ags", "setup", "oci-hooks", "--url", "unix:///x"],
        ] {
            assert!(Cli::try_parse_from(args).is_ok(), "{args:?}");
        }
        let cli = Cli::try_parse_from(["ags", "--url", "unix:///y", "plan"]).unwrap();
        assert_eq!(cli.global.url.as_deref(), Some("unix:///y"));
    }
}
