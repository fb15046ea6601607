//! Stage 4 (final handoff): 1Password lookups through the user's own `op` CLI.
//!
//! Input: the surviving hook references (`Resolved::op_env`), the `--op-secret-set` names, an
//! [`OpEnv`] and an [`Interrupt`]. Output: [`Secret`] values by environment key, for the
//! in-memory env file only. I/O: `op` child processes, started through the one spawn primitive
//! of `ags` (`crate::process`): own process group, stdin bytes then EOF, capped
//! stdout/stderr, a timeout, cancellation by the interrupt, and a group kill at the end.
//!
//! Decisions:
//! - **Which `op`**: `[op] path` of the global config, else the first executable `op` in an
//!   absolute directory of the `PATH` in [`OpEnv`] (relative and empty entries are skipped),
//!   resolved once per launch by [`OpCli::resolve`]: entries inside a directory the agent can
//!   write are passed over, and the file found is refused unless only root or the user can
//!   change it (`workspace::host_programs`). No environment variable overrides it.
//! - **Environment**: `op` is the user's own credential tool, not approved hook code, so it gets
//!   `ags`'s complete environment ([`OpEnv::inherit`]): `OP_SERVICE_ACCOUNT_TOKEN`,
//!   `OP_SESSION_*`, `OP_ACCOUNT`, `HOME`, `XDG_*`, the desktop-app integration sockets…. Hooks
//!   never see it. `op` runs without a terminal (stdin is the template, its own process group), so
//!   it cannot prompt: sign in beforehand, use the app integration or a service account.
//! - **Capability**: [`OpCli::check_capability`] runs `op inject --help` (no account access) and
//!   requires success and the `--in-file`/`--out-file` flags of the v2 `inject` command, whose
//!   stdin-template / stdout-result mode is what is used here.
//! - **References**: deduplicated, one `op inject` call for all of them, template built only from
//!   validated references (see `op::template`); values must be single-line, NUL-free UTF-8.
//! - **Secret sets** (`--op-secret-set VAULT/ITEM`): one `op item get ITEM --vault VAULT
//!   --format json` per set; the Secure Note's env-named fields become variables (see `op::item`).
//!   Their field names are unknown until the final handoff, so they cannot prune hook lookups;
//!   they have final-process overwrite precedence: applied after everything else, they replace a
//!   same-key hook literal, resolved reference AND CLI `--env` value, and a later set replaces an
//!   earlier one. Use `--env KEY=VALUE` to eliminate a hook reference.
//! - **Redaction**: no error carries a value or `op`'s stdout; `op`'s stderr is shown with
//!   control characters escaped and at most [`SHOWN_STDERR_CHARS`] characters.

mod error;
mod item;
mod template;

use std::borrow::Borrow;
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

pub use error::OpError;
pub use item::{MAX_SET_SEGMENT_BYTES, SecretSet, SecretSetName, SkipReason, SkippedField};

use crate::containment::WritableRoot;
use crate::hooks::policy::OpRef;
use crate::process::{self, Ending, Interrupt, StderrSink, signal_name};
use crate::workspace::host_programs::{self, Wanted};
use template::{Template, check_value};
use zeroize::Zeroizing;

/// Default limit on one `op` call.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// Most stdout accepted from one `op` call (4 MiB).
pub const STDOUT_CAP: usize = 4 * 1024 * 1024;
/// Most stderr kept from one `op` call (16 KiB).
pub const STDERR_CAP: usize = 16 * 1024;
/// Most characters of `op`'s stderr shown in an error.
pub const SHOWN_STDERR_CHARS: usize = 2000;
const DRAIN_GRACE: Duration = Duration::from_secs(2);

pub use crate::secret::Secret;

/// What [`host_programs::resolve`] looks for.
const OP: Wanted<'static> = Wanted {
    name: "op",
    key: "[op] path",
    install: "https://developer.1password.com/docs/cli/get-started/",
};

/// Where `op` comes from and where it may not.
#[derive(Debug, Clone, Default)]
pub struct OpPolicy {
    /// `[op] path` of the global config; `None`: the first `op` on `PATH` outside
    /// [`OpPolicy::agent_writable`].
    pub configured: Option<PathBuf>,
    /// Host directories the agent can write: the launch's read-write mounts, those of running
    /// launches, the project directory.
    pub agent_writable: Vec<WritableRoot>,
}

/// The complete environment `op` runs with (and whose `PATH` locates it).
#[derive(Clone, Default)]
pub struct OpEnv {
    vars: Vec<(OsString, OsString)>,
}

impl OpEnv {
    /// `ags`'s own environment, as is.
    pub fn inherit() -> Self {
        Self::from_vars(std::env::vars_os())
    }

    /// Exactly these variables (tests; callers that build the environment themselves).
    pub fn from_vars<K: Into<OsString>, V: Into<OsString>>(vars: impl IntoIterator<Item = (K, V)>) -> Self {
        Self {
            vars: vars.into_iter().map(|(k, v)| (k.into(), v.into())).collect(),
        }
    }

    fn get(&self, key: &str) -> Option<&OsStr> {
        self.vars
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_os_str())
    }
}

impl fmt::Debug for OpEnv {
    /// Names only: values include credentials such as `OP_SERVICE_ACCOUNT_TOKEN`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.vars.iter().map(|(k, _)| k)).finish()
    }
}

/// The user's 1Password CLI, as `ags` calls it.
#[derive(Debug, Clone)]
pub struct OpCli {
    env: OpEnv,
    timeout: Duration,
    /// The checked, canonical `op` fixed by [`OpCli::resolve`]; `None`: located on each call.
    program: Option<PathBuf>,
}

/// A finished `op` call (it exited by itself; its group is gone).
struct Ran {
    program: PathBuf,
    status: ExitStatus,
    stdout: Vec<u8>,
    stderr: Vec<String>,
}

impl OpCli {
    /// Use `env` for locating and running `op`, with [`DEFAULT_TIMEOUT`] per call.
    pub fn new(env: OpEnv) -> Self {
        Self {
            env,
            timeout: DEFAULT_TIMEOUT,
            program: None,
        }
    }

    /// The `op` fixed by [`OpCli::resolve`], if any.
    pub fn program(&self) -> Option<PathBuf> {
        self.program.clone()
    }

    /// Fix the `op` to run for every later call: `policy.configured`, else the first on `PATH`
    /// outside every agent-writable directory (`workspace::host_programs`), refused
    /// ([`OpError::Untrusted`]) when it or its directory can be written by group or others, or
    /// by a user other than root and you. Blocking (a few metadata calls).
    pub fn resolve(mut self, policy: &OpPolicy) -> Result<Self, OpError> {
        let uid = nix::unistd::geteuid().as_raw();
        let found = host_programs::resolve(
            OP,
            policy.configured.as_deref(),
            self.env.get("PATH"),
            &policy.agent_writable,
            uid,
        )
        .map_err(|e| match e {
            // Nothing passed over: plainly not installed.
            host_programs::HostProgramError::NotFound { ref skipped, .. } if skipped.is_empty() => {
                OpError::NotInstalled
            }
            e => e.into(),
        })?;
        for s in found.skipped() {
            eprintln!("ags: note: passed over {s} on PATH when looking for op");
        }
        self.program = Some(found.path().to_path_buf());
        Ok(self)
    }

    /// Limit each `op` call to `timeout`.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The `op` that would run: the first executable `op` in an absolute `PATH` directory.
    pub fn locate(&self) -> Result<PathBuf, OpError> {
        let path = self.env.get("PATH").ok_or(OpError::NotInstalled)?;
        std::env::split_paths(path)
            .filter(|dir| dir.is_absolute())
            .map(|dir| dir.join("op"))
            .find(|p| is_executable_file(p))
            .ok_or(OpError::NotInstalled)
    }

    /// Credential-free check that the installed `op` has a usable `op inject`.
    pub async fn check_capability(&self, interrupt: &Interrupt) -> Result<(), OpError> {
        let action = "op inject --help";
        let ran = self
            .run(action, &["inject", "--help"], Vec::new(), interrupt)
            .await?;
        let unsupported = |detail: String| OpError::Unsupported {
            program: ran.program.clone(),
            detail,
        };
        if !ran.status.success() {
            return Err(unsupported(format!(
                "`{action}` ended with {}",
                describe(ran.status)
            )));
        }
        let help = format!(
            "{}\n{}",
            String::from_utf8_lossy(&ran.stdout),
            ran.stderr.join("\n")
        );
        let missing: Vec<&str> = ["--in-file", "--out-file"]
            .into_iter()
            .filter(|flag| !help.contains(flag))
            .collect();
        if !missing.is_empty() {
            return Err(unsupported(format!(
                "`{action}` does not mention {}",
                missing.join(" and ")
            )));
        }
        Ok(())
    }

    /// Resolve `refs` (env key → reference) with one `op inject` call: each distinct reference
    /// once, its value handed to every key that uses it. No references: no call. A later entry
    /// for the same key replaces an earlier one.
    pub async fn resolve_refs<K, R>(
        &self,
        refs: impl IntoIterator<Item = (K, R)>,
        interrupt: &Interrupt,
    ) -> Result<BTreeMap<String, Secret>, OpError>
    where
        K: AsRef<str>,
        R: Borrow<OpRef>,
    {
        let by_key: BTreeMap<String, OpRef> = refs
            .into_iter()
            .map(|(k, r)| (k.as_ref().to_owned(), r.borrow().clone()))
            .collect();
        let mut by_ref: BTreeMap<&OpRef, Vec<String>> = BTreeMap::new();
        for (key, r) in &by_key {
            by_ref.entry(r).or_default().push(key.clone());
        }
        if by_ref.is_empty() {
            return Ok(BTreeMap::new());
        }
        let template = Template::build(by_ref.keys().copied()).map_err(|i| OpError::UnsafeReference {
            key: by_ref
                .values()
                .nth(i)
                .map(|keys| keys[0].clone())
                .unwrap_or_default(),
        })?;
        let action = "op inject";
        let ran = self
            .run(
                action,
                &["inject"],
                template.text().as_bytes().to_vec(),
                interrupt,
            )
            .await?;
        let keys: Vec<&str> = by_key.keys().map(String::as_str).collect();
        let context = format!("resolving the 1Password references of {}", keys.join(", "));
        let output = Zeroizing::new(ran.success(action, context)?);
        let values = template
            .parse(&output)
            .map_err(|reason| OpError::BadOutput { reason })?;
        let mut secrets = BTreeMap::new();
        for ((r, keys), raw) in by_ref.iter().zip(values) {
            let value = check_value(raw).map_err(|problem| OpError::UnusableValue {
                keys: keys.clone(),
                reference: r.as_str().to_owned(),
                problem,
            })?;
            if keys
                .iter()
                .any(|k| k.len() + 1 + value.len() > crate::hooks::policy::MAX_ENV_ENTRY_BYTES)
            {
                return Err(OpError::UnusableValue {
                    keys: keys.clone(),
                    reference: r.as_str().to_owned(),
                    problem: "is too long: KEY=VALUE may have at most 131071 bytes (the Linux limit of one environment entry)",
                });
            }
            for key in keys {
                secrets.insert(key.clone(), Secret::new(value.to_owned()));
            }
        }
        Ok(secrets)
    }

    /// Load one Secure Note's fields with `op item get ITEM --vault VAULT --format json`.
    pub async fn load_secret_set(
        &self,
        name: &SecretSetName,
        interrupt: &Interrupt,
    ) -> Result<SecretSet, OpError> {
        let action = "op item get";
        let args = [
            "item",
            "get",
            name.item(),
            "--vault",
            name.vault(),
            "--format",
            "json",
        ];
        let ran = self.run(action, &args, Vec::new(), interrupt).await?;
        let output = Zeroizing::new(ran.success(action, format!("loading --op-secret-set {name}"))?);
        item::parse_item(name, &output)
    }

    /// Load several secret sets, one `op` call each, in order.
    pub async fn load_secret_sets(
        &self,
        names: &[SecretSetName],
        interrupt: &Interrupt,
    ) -> Result<Vec<SecretSet>, OpError> {
        let mut sets = Vec::with_capacity(names.len());
        for name in names {
            sets.push(self.load_secret_set(name, interrupt).await?);
        }
        Ok(sets)
    }

    /// The `op` program: the one named, else found as `ags` finds it (off the async executor).
    async fn program_to_run(&self) -> Result<PathBuf, OpError> {
        if let Some(p) = &self.program {
            return Ok(p.clone());
        }
        let this = self.clone();
        tokio::task::spawn_blocking(move || {
            this.resolve(&OpPolicy::default())
                .map(|op| op.program.unwrap_or_default())
        })
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
    }

    /// Run `op ARGS` with `stdin` until it exits; a timeout, an interrupt or too much output kill
    /// its group and become errors. The exit status is left to the caller.
    async fn run(
        &self,
        action: &str,
        args: &[&str],
        stdin: Vec<u8>,
        interrupt: &Interrupt,
    ) -> Result<Ran, OpError> {
        let program = self.program_to_run().await?;
        let interrupted = |signal| OpError::Interrupted {
            action: action.to_owned(),
            signal,
            signal_name: signal_name(signal),
        };
        if let Some(signal) = interrupt.fired() {
            return Err(interrupted(signal));
        }
        let (lines, sink) = stderr_lines();
        let io = process::Io {
            stdin: stdin.into(),
            stdout_cap: STDOUT_CAP,
            stderr_name: "op".into(),
            stderr_cap: STDERR_CAP,
            stderr_sink: sink,
            timeout: self.timeout,
            drain_grace: DRAIN_GRACE,
        };
        let spec = process::Spawn {
            program: program.clone(),
            args: args.iter().map(OsString::from).collect(),
            cwd: None,
            env: self.env.vars.clone(),
        };
        let mut interrupt = interrupt.clone();
        let done = process::run(spec, &io, async move { interrupt.wait().await })
            .await
            .map_err(|source| OpError::Spawn {
                program: program.clone(),
                source,
            })?;
        let io_error = |what, source| OpError::Io {
            action: action.to_owned(),
            what,
            source,
        };
        match done.ending {
            Ending::Exited if done.stdout.overflow => {}
            Ending::Exited => {
                let status = done.status.map_err(|e| io_error("waiting for it", e))?;
                if let Some(e) = done.stdout.error {
                    return Err(io_error("reading its output", e));
                }
                if let Some(e) = done.write_error {
                    return Err(io_error("writing its input", e));
                }
                let stderr = std::mem::take(&mut *lines.lock().unwrap_or_else(PoisonError::into_inner));
                return Ok(Ran {
                    program,
                    status,
                    stdout: done.stdout.bytes,
                    stderr,
                });
            }
            Ending::Overflow => {}
            Ending::Timeout => {
                return Err(OpError::Timeout {
                    action: action.to_owned(),
                    timeout: self.timeout,
                });
            }
            Ending::Aborted(signal) => return Err(interrupted(signal)),
        }
        Err(OpError::OutputTooLarge {
            action: action.to_owned(),
            cap: STDOUT_CAP,
        })
    }
}

impl Ran {
    /// Stdout of a successful call, or [`OpError::Failed`] with the escaped, capped stderr.
    fn success(self, action: &str, context: String) -> Result<Vec<u8>, OpError> {
        if self.status.success() {
            return Ok(self.stdout);
        }
        Err(OpError::Failed {
            action: action.to_owned(),
            status: describe(self.status),
            context,
            stderr: shown_stderr(&self.stderr),
        })
    }
}

/// `exit status 1`, `killed by SIGSEGV`.
fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(signal)) => format!("killed by {}", signal_name(signal)),
        (None, None) => "an unknown status".into(),
    }
}

/// Stderr lines (already escaped by the reader), indented, at most [`SHOWN_STDERR_CHARS`].
fn shown_stderr(lines: &[String]) -> String {
    let all = lines
        .iter()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n");
    let total = all.chars().count();
    if total <= SHOWN_STDERR_CHARS {
        return all;
    }
    let kept: String = all.chars().take(SHOWN_STDERR_CHARS).collect();
    format!(
        "{kept}\n    [… {} more characters not shown]",
        total - SHOWN_STDERR_CHARS
    )
}

fn is_executable_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A sink for `op`'s stderr that keeps its lines (without `op`'s `[op] ` prefix).
fn stderr_lines() -> (Arc<Mutex<Vec<String>>>, StderrSink) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let kept = lines.clone();
    let sink: StderrSink = Arc::new(move |line: &str| {
        let line = line.strip_prefix("[op] ").unwrap_or(line).to_owned();
        kept.lock().unwrap_or_else(PoisonError::into_inner).push(line);
    });
    (lines, sink)
}
