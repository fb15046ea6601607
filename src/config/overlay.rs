//! Project overlay trust: `$XDG_CONFIG_HOME/ags/trusted-repo-overlays.txt` lists canonical
//! repository roots, one per line. An untrusted overlay is offered on the terminal once; a
//! refusal or a missing terminal skips it, unless it declares hooks, which is an error (hooks
//! are never dropped silently). An overlay that cannot be read as a config is an error when the
//! repository is trusted, and is skipped with a note when not ([`unreadable`]): the agent can
//! write it, and an untrusted overlay must not be able to stop every launch.

use std::io::Write;
use std::path::Path;

use super::{ConfigError, ConfigFile, Paths, Result};
use crate::{fsutil, prompt, safepath};

/// What to do with a discovered overlay.
#[derive(Debug)]
pub enum Decision {
    /// Trusted: load it.
    Load,
    /// Not trusted and harmless to skip: the warning to show.
    Skip(String),
}

/// Decide whether to load the overlay of `root`, parsed as `file` from `text`; the question on the
/// terminal shows what it sets ([`super::overlay_summary`]).
pub fn decide(
    paths: &Paths,
    root: &Path,
    overlay: &Path,
    (file, text): (&ConfigFile, &str),
    ask: bool,
) -> Result<Decision> {
    let trust_file = paths.overlay_trust_file();
    if is_trusted(&trust_file, root)? {
        return Ok(Decision::Load);
    }
    let has_hooks = file.declares_hooks() || file.declares_agent_hooks();
    if ask {
        let text = format!(
            "ags: {} is a project config overlay{}.\n{}",
            safepath::display(overlay),
            match (file.declares_hooks(), file.declares_agent_hooks()) {
                (true, _) => " that declares hooks (each needs its own approval too)",
                (false, true) =>
                    " that declares agent hooks (run inside the container; trusting covers them)",
                (false, false) => "",
            },
            super::overlay_summary::summary(text),
        );
        match prompt::confirm(&text, &format!("Trust overlays of {}?", safepath::display(root))) {
            Ok(true) => {
                record(&trust_file, root)?;
                return Ok(Decision::Load);
            }
            Ok(false) | Err(prompt::PromptError::NoTerminal) => {}
            Err(prompt::PromptError::Interrupted { signal }) => {
                return Err(ConfigError::OverlayTrustInterrupted {
                    overlay: overlay.into(),
                    root: root.into(),
                    signal,
                });
            }
            Err(e) => {
                return Err(ConfigError::TrustFile {
                    path: trust_file,
                    message: e.to_string(),
                });
            }
        }
    }
    if has_hooks {
        return Err(ConfigError::OverlayHooksUntrusted {
            overlay: overlay.into(),
            events: declared_events(file),
            root: root.into(),
            trust_file,
        });
    }
    Ok(Decision::Skip(format!(
        "skipping untrusted project overlay {} (trust it by running ags on a terminal in {}, or add that path to {})",
        overlay.display(),
        root.display(),
        trust_file.display()
    )))
}

/// An overlay that could not be read or parsed (`error`): the error itself when the repository
/// `root` is trusted (the user relies on it), else a note and the launch goes on without it.
/// Whether it was meant to declare hooks cannot be known; the note says they do not run.
pub fn unreadable(paths: &Paths, root: &Path, overlay: &Path, error: ConfigError) -> Result<String> {
    let trust_file = paths.overlay_trust_file();
    if is_trusted(&trust_file, root)? {
        return Err(error);
    }
    Ok(format!(
        "skipping untrusted project overlay {}: it is not a valid config, so nothing in it is used and no hook runs from it ({error}); to use it, fix it and trust the repository (run ags on a terminal in {}, or add that path to {})",
        overlay.display(),
        root.display(),
        trust_file.display()
    ))
}

/// `prepare`, `started and finished`, … : the events `file` declares hooks for.
fn declared_events(file: &ConfigFile) -> String {
    let events: Vec<&str> = [
        ("prepare", &file.prepare_hook),
        ("started", &file.started_hook),
        ("finished", &file.finished_hook),
    ]
    .iter()
    .filter(|(_, decls)| !decls.is_empty())
    .map(|(name, _)| *name)
    .chain(file.declares_agent_hooks().then_some("agent"))
    .collect();
    match events.as_slice() {
        [.., last] if events.len() > 1 => format!("{} and {last}", events[..events.len() - 1].join(", ")),
        _ => events.concat(),
    }
}

/// Whether `root` is listed in the trust file. A missing file trusts nothing.
pub fn is_trusted(trust_file: &Path, root: &Path) -> Result<bool> {
    super::check_not_writable_by_others(trust_file, "overlay trust file")?;
    let text = match std::fs::read_to_string(trust_file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => {
            return Err(ConfigError::TrustFile {
                path: trust_file.into(),
                message: e.to_string(),
            });
        }
    };
    Ok(text.lines().any(|l| Path::new(l.trim_end()) == root))
}

fn record(trust_file: &Path, root: &Path) -> Result<()> {
    let err = |message: String| ConfigError::TrustFile {
        path: trust_file.into(),
        message,
    };
    let dir = trust_file.parent().expect("trust file has a parent");
    std::fs::create_dir_all(dir).map_err(|e| err(e.to_string()))?;
    let mut text = std::fs::read_to_string(trust_file).unwrap_or_default();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    let line = root
        .to_str()
        .ok_or_else(|| err("repository path is not UTF-8".into()))?;
    if line.contains('\n') {
        return Err(err("repository path contains a newline".into()));
    }
    text.push_str(line);
    text.push('\n');
    fsutil::atomic_write(trust_file, text.as_bytes(), 0o600).map_err(|e| err(e.to_string()))?;
    let _ = std::io::stderr().flush();
    Ok(())
}
