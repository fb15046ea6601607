//! Stage 2 (trust): make sure every active hook (of every event) is approved before any of them
//! runs.
//!
//! Input: the [`PreparedHook`]s of a launch (bytes already read, hashes computed — no hook is
//! ever executed to compute a hash) and the [`TrustStore`]. Output: `Ok(())` or an error naming
//! every unapproved hook. I/O: reads/writes approval tokens; asks on the controlling terminal
//! (`/dev/tty`, via [`crate::prompt`]) when allowed to.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::entrypoint::PreparedHook;
use super::reapproval;
use super::trust::{ApprovalRecord, TrustError, TrustStore};
use crate::config::{HookEvent, HookScope};
use crate::prompt::{self, PromptError};
use crate::text::escape_controls;

/// Approval is missing or was refused.
#[derive(Debug, thiserror::Error)]
pub enum ApprovalError {
    /// New or changed hooks and no way to ask (non-interactive, or no controlling terminal).
    #[error("{}", unapproved_message(hooks))]
    Unapproved {
        /// Each unapproved hook with the command that approves it.
        hooks: Vec<Unapproved>,
    },
    /// The user answered no.
    #[error("{event} hook {name} ({}) was not approved (hash {hash}); nothing was run. Remove the declaration from {} or approve it to launch", executable.display(), config_path.display())]
    Denied {
        /// The hook's event.
        event: HookEvent,
        /// Hook name.
        name: String,
        /// Declared entrypoint.
        executable: std::path::PathBuf,
        /// Declaring config file.
        config_path: std::path::PathBuf,
        /// The refused hash.
        hash: String,
    },
    /// The user pressed Ctrl-C at the prompt, or `ags` received a signal while it was open: the
    /// launch stops and nothing is approved.
    #[error(
        "{event} hook {name}: interrupted at the approval prompt ({}); nothing was approved and nothing was run",
        prompt::interruption(*signal)
    )]
    Interrupted {
        /// The hook's event.
        event: HookEvent,
        /// Hook name.
        name: String,
        /// SIGINT for Ctrl-C, else the signal received.
        signal: i32,
    },
    /// Asking on the terminal failed.
    #[error("{event} hook {name}: cannot ask for approval: {source}")]
    Prompt {
        /// The hook's event.
        event: HookEvent,
        /// Hook name.
        name: String,
        /// The terminal error.
        source: PromptError,
    },
    /// The approval store failed.
    #[error(transparent)]
    Store(#[from] TrustError),
}

/// One hook that still needs approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unapproved {
    /// The hook's event.
    pub event: HookEvent,
    /// Hook name.
    pub name: String,
    /// The hash to approve.
    pub hash: String,
    /// `ags hooks test …` command that shows the approval prompt for it.
    pub command: String,
}

fn unapproved_message(hooks: &[Unapproved]) -> String {
    let mut out = format!(
        "{} {} hook(s) are new or changed and need approval on a terminal before anything runs:",
        hooks.len(),
        events_of(hooks)
    );
    for h in hooks {
        let name = match h.event {
            HookEvent::Prepare => h.name.clone(),
            event => format!("{} ({event})", h.name),
        };
        out.push_str(&format!(
            "\n  {name} (hash {}): approve with `{}`",
            h.hash, h.command
        ));
    }
    out.push_str(
        "\nor rerun this command interactively (with a terminal) using the same config. \
         Note: `ags hooks test` EXECUTES the hook after approval. Without a terminal (CI), \
         `ags hooks approve NAME --hash HASH` records a hash you reviewed without running the hook.",
    );
    out
}

/// `prepare`, or the events involved joined with `/` (`started/finished`).
fn events_of(hooks: &[Unapproved]) -> String {
    let mut events: Vec<HookEvent> = hooks.iter().map(|h| h.event).collect();
    events.sort();
    events.dedup();
    events.iter().map(|e| e.as_str()).collect::<Vec<_>>().join("/")
}

/// Require approval of every hook in `hooks` before any runs. New or changed hashes are asked
/// about one by one on the terminal when `interactive` and a controlling terminal exist;
/// otherwise the error lists each unapproved hook with the command that approves it.
///
/// `workdir` is the directory the agent's container can write: a prompt for an entrypoint in it
/// warns that a change there may be the agent's.
pub fn ensure_approved(
    store: &TrustStore,
    hooks: &[PreparedHook],
    interactive: bool,
    workdir: &Path,
) -> Result<(), ApprovalError> {
    let mut seen = HashSet::new();
    let mut missing = Vec::new();
    for hook in hooks {
        if seen.insert(hook.hash.as_str()) && !store.is_approved(&hook.hash)? {
            missing.push(hook);
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    if !interactive || !prompt::has_terminal() {
        return Err(ApprovalError::Unapproved {
            hooks: missing
                .iter()
                .map(|h| unapproved(h, name_repeats(hooks, h)))
                .collect(),
        });
    }
    for hook in missing {
        ask(store, hook, workdir)?;
    }
    Ok(())
}

fn ask(store: &TrustStore, hook: &PreparedHook, workdir: &Path) -> Result<(), ApprovalError> {
    let name = &hook.decl.name;
    let event = hook.decl.event;
    let question = format!("Approve {event} hook {name}?");
    let notes = PromptNotes {
        previous: reapproval::previous(store, hook),
        agent_writable: reapproval::inside_workdir(hook, workdir).then(|| workdir.to_path_buf()),
    };
    let yes = prompt::confirm(&prompt_text(hook, &notes), &question).map_err(|source| match source {
        PromptError::Interrupted { signal } => ApprovalError::Interrupted {
            event,
            name: name.clone(),
            signal,
        },
        source => ApprovalError::Prompt {
            event,
            name: name.clone(),
            source,
        },
    })?;
    if !yes {
        return Err(ApprovalError::Denied {
            event,
            name: name.clone(),
            executable: hook.decl.executable.clone(),
            config_path: hook.decl.config_path.clone(),
            hash: hook.hash.clone(),
        });
    }
    let record = ApprovalRecord::new(&hook.decl).with_entrypoint(&hook.entrypoint);
    store.approve(&hook.hash, &record)?;
    Ok(())
}

/// What the prompt says besides the declaration.
#[derive(Debug, Default)]
pub struct PromptNotes {
    /// The most recent earlier approval of the same hook (event and name), if any.
    pub previous: Option<ApprovalRecord>,
    /// The agent-writable workdir that holds the entrypoint, if it is in one.
    pub agent_writable: Option<PathBuf>,
}

/// The approval prompt for `hook`: whether it is new or what changed since its last approval,
/// what runs, with which authority, and what approval covers.
pub fn prompt_text(hook: &PreparedHook, notes: &PromptNotes) -> String {
    let d = &hook.decl;
    let argv = std::iter::once(d.executable.to_string_lossy().into_owned())
        .chain(d.args.iter().cloned())
        .map(|a| shell_quote(&a))
        .collect::<Vec<_>>()
        .join(" ");
    let scope = reapproval::scope_text(super::trust::project_of(&d.scope));
    // Declarations come from config files: never let them drive the terminal of the prompt.
    let shown = |s: &str| escape_controls(s).replace('\n', "\\n");
    let mut head = match &notes.previous {
        None => format!("\nNew {} hook: {}\n", d.event, shown(&d.name)),
        Some(old) => {
            let mut head = format!(
                "\nChanged {} hook: {} (approved before on {}; what changed since:)\n",
                d.event,
                shown(&d.name),
                shown(&old.approved_at)
            );
            for change in reapproval::changes(old, hook) {
                head.push_str(&format!("  * {}\n", shown(&change)));
            }
            head
        }
    };
    if let Some(workdir) = &notes.agent_writable {
        head.push_str(&format!(
            "  WARNING: the entrypoint is inside the workdir {}, which the agent can write: a change\n\
             \x20 you did not make yourself may be the agent's. Review the file before approving.\n",
            shown(&workdir.to_string_lossy())
        ));
    }
    format!(
        "{head}\
         \x20 declared in: {config}\n\
         \x20 executable:  {exe}\n\
         \x20 argv:        {argv}\n\
         \x20 scope:       {scope}\n\
         \x20 timeout:     {timeout} s\n\
         \x20 hash:        {hash}\n\n\
         Approving lets this program run on the HOST as you, with your full user authority: it can\n\
         read your credentials, modify your files, start services and use the network. It is not\n\
         sandboxed.\n\
         Approval covers only the entrypoint bytes and this declaration (name, argv, timeout,\n\
         scope). It does NOT cover interpreters, shared libraries, sourced or imported files, files\n\
         passed to an interpreter, or anything else the program loads; changes there are not noticed.\n",
        config = shown(&d.config_path.to_string_lossy()),
        exe = shown(&d.executable.to_string_lossy()),
        argv = shown(&argv),
        scope = shown(&scope),
        timeout = d.timeout_seconds,
        hash = hook.hash,
    )
}

/// Whether another hook of `hook`'s event has its name but a different hash (so that
/// `ags hooks test NAME` alone would be ambiguous).
fn name_repeats(hooks: &[PreparedHook], hook: &PreparedHook) -> bool {
    hooks
        .iter()
        .any(|h| h.decl.event == hook.decl.event && h.decl.name == hook.decl.name && h.hash != hook.hash)
}

/// How many hex digits of a hash `ags hooks test --hash` is given (as `ags hooks log` prints).
pub const SHORT_HASH: usize = 12;

fn unapproved(hook: &PreparedHook, name_repeats: bool) -> Unapproved {
    let d = &hook.decl;
    let mut command = format!(
        "ags hooks test {} --config {}",
        shell_quote(&d.name),
        shell_quote(&d.config_path.to_string_lossy())
    );
    if d.event != HookEvent::Prepare {
        command.push_str(&format!(" --event {}", d.event));
    }
    if name_repeats {
        command.push_str(&format!(" --hash {}", &hook.hash[..SHORT_HASH]));
    }
    if let HookScope::Project { root } = &d.scope {
        command.push_str(&format!(" --workdir {}", shell_quote(&root.to_string_lossy())));
    }
    Unapproved {
        event: d.event,
        name: d.name.clone(),
        hash: hook.hash.clone(),
        // Config paths come from the user's files; never let them drive the terminal.
        command: escape_controls(&command),
    }
}

/// Quote `s` for a POSIX shell when it contains anything but safe characters.
pub fn shell_quote(s: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c);
    if !s.is_empty() && s.chars().all(safe) {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::HookDecl;

    fn hook(scope: HookScope) -> PreparedHook {
        PreparedHook {
            decl: HookDecl {
                event: crate::config::HookEvent::Prepare,
                name: "svc".into(),
                executable: "/opt/my hooks/prepare".into(),
                args: vec!["--profile".into(), "it's".into(), "\x1b[2Khidden\rx".into()],
                timeout_seconds: 12,
                scope,
                config_path: "/p/.ags/config.toml".into(),
            },
            entrypoint: b"#!/bin/sh\n".to_vec().into(),
            hash: "ab".repeat(32),
        }
    }

    #[test]
    fn prompt_states_authority_and_coverage() {
        let text = prompt_text(
            &hook(HookScope::Project { root: "/p".into() }),
            &PromptNotes::default(),
        );
        for needle in [
            "svc",
            "/opt/my hooks/prepare",
            "'/opt/my hooks/prepare' --profile 'it'\\''s' '\\u{1b}[2Khidden\\rx'",
            "project /p",
            "12 s",
            &"ab".repeat(32),
            "HOST as you",
            "credentials",
            "NOT cover interpreters, shared libraries, sourced or imported files",
        ] {
            assert!(text.contains(needle), "missing {needle:?} in {text}");
        }
    }

    #[test]
    fn lifecycle_hooks_are_named_with_their_event() {
        let mut h = hook(HookScope::Global);
        h.decl.event = HookEvent::Finished;
        let u = unapproved(&h, false);
        assert_eq!(
            u.command,
            "ags hooks test svc --config /p/.ags/config.toml --event finished"
        );
        let msg = ApprovalError::Unapproved { hooks: vec![u] }.to_string();
        assert!(
            msg.starts_with("1 finished hook(s) are new or changed")
                && msg.contains("\n  svc (finished) (hash "),
            "{msg}"
        );
        assert!(prompt_text(&h, &PromptNotes::default()).contains("New finished hook: svc"));
    }

    #[test]
    fn unapproved_command_names_config_and_project() {
        let g = unapproved(&hook(HookScope::Global), false);
        assert_eq!(g.command, "ags hooks test svc --config /p/.ags/config.toml");
        let p = unapproved(&hook(HookScope::Project { root: "/a b".into() }), false);
        assert_eq!(
            p.command,
            "ags hooks test svc --config /p/.ags/config.toml --workdir '/a b'"
        );
        let r = unapproved(&hook(HookScope::Global), true);
        assert_eq!(
            r.command,
            "ags hooks test svc --config /p/.ags/config.toml --hash abababababab"
        );
    }
}
