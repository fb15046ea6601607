//! The OCI hook definitions (oci-hooks(5), version 1.0.0) of `ags`, and whether they are active.
//!
//! The committed files `oci/hooks.d/ags-poststart.json` and `ags-poststop.json` are the templates:
//! [`render`] puts the absolute path of the installed `ags-oci-hook` in `hook.path`. [`status`]
//! looks for them in the hooks directories Podman is configured with. Pure except [`status`] and
//! [`find_installed`], which read files.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::conf::{self, ConfEnv, ServiceKind};
use crate::plan::ANNOTATION_LAUNCH;

/// File name of the hook program.
pub const HOOK_PROGRAM: &str = "ags-oci-hook";

/// The committed definitions: (file name, template text).
pub const TEMPLATES: [(&str, &str); 2] = [
    (
        "ags-poststart.json",
        include_str!("../../../oci/hooks.d/ags-poststart.json"),
    ),
    (
        "ags-poststop.json",
        include_str!("../../../oci/hooks.d/ags-poststop.json"),
    ),
];

/// One definition (the members `ags` writes; others are kept when reading).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Definition {
    /// `1.0.0`.
    pub version: String,
    pub hook: HookCommand,
    /// When: `annotations` maps a key regex to a value regex.
    pub when: When,
    /// `poststart` or `poststop`.
    pub stages: Vec<String>,
}

/// `hook` of a definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookCommand {
    /// Absolute path of the program.
    pub path: PathBuf,
    /// argv, including argv[0].
    pub args: Vec<String>,
    /// Seconds before the runtime kills it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u32>,
}

/// `when` of a definition.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct When {
    /// Annotation key regex → value regex.
    #[serde(default)]
    pub annotations: std::collections::BTreeMap<String, String>,
}

/// The annotation key regex the definitions match on.
pub fn annotation_key_regex() -> String {
    format!("^{}$", ANNOTATION_LAUNCH.replace('.', "\\."))
}

/// The definitions to install for `program` (absolute): (file name, JSON text).
pub fn render(program: &Path) -> Vec<(&'static str, String)> {
    TEMPLATES
        .iter()
        .map(|(name, text)| {
            let mut def: Definition = serde_json::from_str(text).expect("committed templates parse");
            def.hook.path = program.to_path_buf();
            let mut json = serde_json::to_string_pretty(&def).expect("a definition serializes");
            json.push('\n');
            (*name, json)
        })
        .collect()
}

/// Whether `def` is one of `ags`'s: our program, our stage, our annotation only.
fn is_ours(def: &Definition, stage: &str) -> bool {
    def.hook.path.file_name().is_some_and(|n| n == HOOK_PROGRAM)
        && def.stages == [stage]
        && def.hook.args.get(1).map(String::as_str) == Some(stage)
        && def.when.annotations.keys().eq([&annotation_key_regex()])
}

/// Are the hooks active for the service this user's `ags` talks to?
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OciHooksStatus {
    /// Both definitions are in a configured hooks directory and name an executable program.
    Active {
        /// The hooks directory holding them.
        dir: PathBuf,
        program: PathBuf,
    },
    /// Not installed (or not in a directory the service reads).
    Missing {
        /// What was looked at.
        detail: String,
    },
    /// Installed but unusable.
    Broken { detail: String },
}

impl OciHooksStatus {
    /// One line for `ags doctor`.
    pub fn summary(&self) -> String {
        match self {
            Self::Active { dir, program } => format!(
                "active in {} ({}); the service reads hooks_dir only when it starts",
                dir.display(),
                program.display()
            ),
            Self::Missing { detail } | Self::Broken { detail } => detail.clone(),
        }
    }

    /// What to do about it (None when active).
    pub fn fix(&self) -> Option<&'static str> {
        match self {
            Self::Active { .. } => None,
            _ => Some(
                "run `ags setup oci-hooks` and restart the Podman service; until then a killed ags's \
                 finished hooks rely on reconciliation of its leftover container alone",
            ),
        }
    }
}

/// Where the definitions are in effect: the configured hooks directories of the service of
/// `kind`, each checked for both definitions.
pub fn status(kind: ServiceKind, env: &ConfEnv) -> OciHooksStatus {
    let effective = conf::effective_hooks_dirs(kind, env);
    let dirs = match &effective {
        Ok(dirs) => dirs.clone(),
        Err(e) => {
            return OciHooksStatus::Broken {
                detail: e.to_string(),
            };
        }
    };
    if dirs.is_empty() {
        return OciHooksStatus::Missing {
            detail: "the Podman service has no hooks_dir (rootless Podman runs no OCI hooks without one)"
                .into(),
        };
    }
    for dir in &dirs {
        match find_installed(dir) {
            Ok(Some(program)) => {
                return OciHooksStatus::Active {
                    dir: dir.clone(),
                    program,
                };
            }
            Ok(None) => {}
            Err(detail) => return OciHooksStatus::Broken { detail },
        }
    }
    let shown: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    OciHooksStatus::Missing {
        detail: format!("no ags OCI hook definitions in hooks_dir {}", shown.join(", ")),
    }
}

/// The program named by both of `ags`'s definitions in `dir`, if both are there. A definition
/// that is present but unusable is an error.
pub fn find_installed(dir: &Path) -> Result<Option<PathBuf>, String> {
    let mut program = None;
    for (name, _) in TEMPLATES {
        let path = dir.join(name);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        let stage = name.trim_start_matches("ags-").trim_end_matches(".json");
        let def: Definition = serde_json::from_str(&text)
            .ok()
            .filter(|d| is_ours(d, stage))
            .ok_or_else(|| format!("{} is not an ags {stage} hook definition", path.display()))?;
        if !is_executable(&def.hook.path) {
            return Err(format!(
                "{} runs {}, which is not an executable file",
                path.display(),
                def.hook.path.display()
            ));
        }
        program = Some(def.hook.path);
    }
    Ok(program)
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.is_absolute()
        && std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_are_ours_and_select_by_annotation_only() {
        for (name, text) in TEMPLATES {
            let def: Definition = serde_json::from_str(text).unwrap();
            let stage = name.trim_start_matches("ags-").trim_end_matches(".json");
            assert!(is_ours(&def, stage), "{name}");
            assert_eq!(def.version, "1.0.0");
            let raw: serde_json::Value = serde_json::from_str(text).unwrap();
            assert_eq!(
                raw["when"].as_object().unwrap().keys().collect::<Vec<_>>(),
                ["annotations"],
                "{name}: no other condition may widen the selection"
            );
        }
    }

    #[test]
    fn render_sets_the_program_and_find_installed_reads_it_back() {
        let tmp = tempfile::tempdir().unwrap();
        let program = tmp.path().join(HOOK_PROGRAM);
        assert_eq!(find_installed(tmp.path()), Ok(None));
        for (name, json) in render(&program) {
            std::fs::write(tmp.path().join(name), json).unwrap();
        }
        let err = find_installed(tmp.path()).unwrap_err();
        assert!(err.contains("not an executable file"), "{err}");
        std::fs::write(&program, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(find_installed(tmp.path()), Ok(Some(program)));
    }
}
