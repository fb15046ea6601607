//! Stage 2 (resolution): merge validated contributions deterministically. Pure, no I/O.
//!
//! Input: every hook's [`Contribution`] tagged with its [`Origin`] (optionally a
//! [`Origin::Default`] layer), and the [`LaunchOverrides`] known from the command line and the
//! launch plan. Output: [`Resolved`], or a [`ResolveError`] naming both sides of a conflict.
//!
//! Precedence: defaults < global hooks < project hooks < command line. Within a scope the later
//! *declaration* wins (layers are ordered by declaration index, never by completion order).
//! Env literals and op references share one keyspace; files and mounts share one destination
//! keyspace, where an exact collision replaces the losing entry entirely. After precedence,
//! destinations nested in one another are refused, including nesting with command-line mounts
//! and with the launch plan's own mounts ([`LaunchOverrides::fixed_destinations`]), which a hook
//! may not replace either. Everything that lost is listed in [`Resolved::eliminated`] for the
//! plan view. [`lockdown_check`] applies the `--lockdown` restrictions to the result.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::config::{HookDecl, HookScope};

use super::policy::{Destination, EnvKey, component_cmp, display_escaped, find_nesting};
use super::validate::{Contribution, EnvValue, GeneratedFile, HookMount};

/// Where a contribution came from; orders precedence (the declaration index breaks ties).
///
/// Not the same type as [`crate::plan::Origin`], on purpose: this one is the hook stage's
/// precedence key (it carries the index among declarations of a scope, which orders
/// contributions and appears in conflict messages), while the plan's records where each
/// setting of a launch came from (config file, agent hook wiring…) in the published
/// `ags plan --format json` form, without an index. The hook stage comes first and may not
/// import the plan; `plan::from_hooks` maps this one onto the plan's.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(tag = "layer", rename_all = "snake_case")]
pub enum Origin {
    /// Built-in defaults (lowest precedence).
    Default,
    /// A hook declared in the global config, `index` = position among global declarations.
    GlobalHook {
        /// Declared name (names may repeat; `index` disambiguates).
        name: String,
        /// Declaration position within the global scope.
        index: usize,
    },
    /// A hook declared in the project overlay, `index` = position among project declarations.
    ProjectHook {
        /// Declared name.
        name: String,
        /// Declaration position within the project scope.
        index: usize,
    },
    /// An explicit command-line option (highest precedence).
    Cli,
}

impl Origin {
    /// The origin of the `index`-th declaration of its scope.
    pub fn for_decl(decl: &HookDecl, index: usize) -> Self {
        let name = decl.name.clone();
        match decl.scope {
            HookScope::Global => Origin::GlobalHook { name, index },
            HookScope::Project { .. } => Origin::ProjectHook { name, index },
        }
    }

    fn rank(&self) -> (u8, usize) {
        match self {
            Origin::Default => (0, 0),
            Origin::GlobalHook { index, .. } => (1, *index),
            Origin::ProjectHook { index, .. } => (2, *index),
            Origin::Cli => (3, 0),
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::Default => f.write_str("defaults"),
            Origin::GlobalHook { name, index } => write!(f, "global hook `{name}` (#{index})"),
            Origin::ProjectHook { name, index } => write!(f, "project hook `{name}` (#{index})"),
            Origin::Cli => f.write_str("the command line"),
        }
    }
}

/// One hook's validated output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookOutput {
    /// Who produced it.
    pub origin: Origin,
    /// What it contributes.
    pub contribution: Contribution,
}

/// What the command line and the launch plan fix before hooks are merged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LaunchOverrides {
    /// `--env KEY=VALUE`: known keys that beat every hook and remove hook values and references.
    /// They are applied by the plan, not copied into [`Resolved::env`].
    pub cli_env: BTreeMap<String, String>,
    /// Destinations of command-line mounts (e.g. `--add-dir` targets): they replace an equal hook
    /// destination and may not nest with one.
    pub cli_mounts: Vec<PathBuf>,
    /// Destinations of the launch plan's own mounts (workdir, agent config, AGS staging…): a hook
    /// may neither replace nor nest with them. Do not list tmpfs roots such as `/tmp` that hook
    /// destinations are meant to live under.
    pub fixed_destinations: Vec<PathBuf>,
}

/// Which kind of entry an elimination removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EntryKind {
    /// A literal env value.
    Literal,
    /// An op reference.
    OpReference,
    /// A generated file.
    File,
    /// A bind mount.
    Mount,
}

/// An entry that lost to a higher-precedence one (for the plan view; never carries values).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Eliminated {
    /// The env key or destination (raw text; escape control characters before printing).
    pub target: String,
    /// What was removed.
    pub kind: EntryKind,
    /// Who contributed the removed entry.
    pub loser: Origin,
    /// Who won.
    pub winner: Origin,
}

/// The merged result of all layers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resolved {
    /// Surviving hook/default env, by key.
    pub env: BTreeMap<EnvKey, (EnvValue, Origin)>,
    /// Surviving generated files, by destination.
    pub files: Vec<(GeneratedFile, Origin)>,
    /// Surviving hook mounts, by destination.
    pub mounts: Vec<(HookMount, Origin)>,
    /// Everything that lost, in resolution order.
    pub eliminated: Vec<Eliminated>,
}

/// A conflict between destinations after precedence.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// One destination lies inside another and at least one of them comes from a hook.
    #[error(
        "{inner_owner} at {inner} is nested inside {outer_owner} at {outer}; nesting is an ambiguous \
         overlap, not an overlay: choose an independent destination"
    )]
    Nested {
        /// The descendant destination.
        inner: String,
        /// Who placed it.
        inner_owner: String,
        /// The ancestor destination.
        outer: String,
        /// Who placed it.
        outer_owner: String,
    },
    /// A hook destination equals one of the launch plan's own mounts.
    #[error(
        "{owner} at {destination} would replace a mount of the launch plan itself (workdir, agent \
         configuration or AGS runtime); choose an independent destination"
    )]
    ReplacesPlanMount {
        /// The destination.
        destination: String,
        /// Who placed it.
        owner: String,
    },
}

/// Merge `layers` (in any order; they are sorted by precedence and declaration index).
pub fn resolve(mut layers: Vec<HookOutput>, overrides: &LaunchOverrides) -> Result<Resolved, ResolveError> {
    layers.sort_by_key(|l| l.origin.rank());
    let mut merge = Merge::default();
    for layer in layers {
        merge.apply(layer, &overrides.cli_env);
    }
    merge.apply_cli_mounts(&overrides.cli_mounts);
    check_destinations(&merge.destinations, overrides)?;
    Ok(merge.finish())
}

#[derive(Debug, Clone)]
enum Entry {
    File(GeneratedFile),
    Mount(HookMount),
}

impl Entry {
    fn kind(&self) -> EntryKind {
        match self {
            Entry::File(_) => EntryKind::File,
            Entry::Mount(_) => EntryKind::Mount,
        }
    }
}

fn env_kind(v: &EnvValue) -> EntryKind {
    match v {
        EnvValue::Literal(_) => EntryKind::Literal,
        EnvValue::Op(_) => EntryKind::OpReference,
    }
}

#[derive(Default)]
struct Merge {
    env: BTreeMap<EnvKey, (EnvValue, Origin)>,
    destinations: BTreeMap<String, (Entry, Origin)>,
    eliminated: Vec<Eliminated>,
}

impl Merge {
    fn apply(&mut self, layer: HookOutput, cli_env: &BTreeMap<String, String>) {
        let HookOutput { origin, contribution } = layer;
        let Contribution { env, files, mounts } = contribution;
        for (key, value) in env {
            if cli_env.contains_key(key.as_str()) {
                self.eliminate(key.to_string(), env_kind(&value), origin.clone(), Origin::Cli);
            } else if let Some((old, loser)) = self.env.insert(key.clone(), (value, origin.clone())) {
                self.eliminate(key.to_string(), env_kind(&old), loser, origin.clone());
            }
        }
        let files = files.into_iter().map(|f| (f.destination.clone(), Entry::File(f)));
        let mounts = mounts
            .into_iter()
            .map(|m| (m.destination.clone(), Entry::Mount(m)));
        for (dest, entry) in files.chain(mounts) {
            self.place(&dest, entry, &origin);
        }
    }

    fn place(&mut self, dest: &Destination, entry: Entry, origin: &Origin) {
        let key = dest.as_str().to_owned();
        if let Some((old, loser)) = self.destinations.insert(key, (entry, origin.clone())) {
            self.eliminate(dest.as_str().to_owned(), old.kind(), loser, origin.clone());
        }
    }

    fn apply_cli_mounts(&mut self, cli_mounts: &[PathBuf]) {
        for path in cli_mounts {
            let key = lexical(path);
            if let Some((old, loser)) = self.destinations.remove(&key) {
                self.eliminate(key, old.kind(), loser, Origin::Cli);
            }
        }
    }

    fn eliminate(&mut self, target: String, kind: EntryKind, loser: Origin, winner: Origin) {
        self.eliminated.push(Eliminated {
            target,
            kind,
            loser,
            winner,
        });
    }

    fn finish(self) -> Resolved {
        let Merge {
            env,
            destinations,
            eliminated,
        } = self;
        let (mut files, mut mounts) = (Vec::new(), Vec::new());
        for (entry, origin) in destinations.into_values() {
            match entry {
                Entry::File(f) => files.push((f, origin)),
                Entry::Mount(m) => mounts.push((m, origin)),
            }
        }
        Resolved {
            env,
            files,
            mounts,
            eliminated,
        }
    }
}

/// Component-wise form of a path (drops `//`, trailing `/` and inner `.`), as text.
fn lexical(p: &Path) -> String {
    p.components().collect::<PathBuf>().to_string_lossy().into_owned()
}

/// Who placed a destination, for conflict messages.
enum Owner<'a> {
    Hook(EntryKind, &'a Origin),
    Cli,
    Plan,
}

impl Owner<'_> {
    fn is_hook(&self) -> bool {
        matches!(self, Owner::Hook(..))
    }

    fn describe(&self) -> String {
        match self {
            Owner::Hook(EntryKind::Mount, o) => format!("the mount from {o}"),
            Owner::Hook(_, o) => format!("the file from {o}"),
            Owner::Cli => "the command-line mount".into(),
            Owner::Plan => "the launch plan's own mount".into(),
        }
    }
}

fn check_destinations(
    placed: &BTreeMap<String, (Entry, Origin)>,
    overrides: &LaunchOverrides,
) -> Result<(), ResolveError> {
    let mut all: Vec<(String, Owner<'_>)> = placed
        .iter()
        .map(|(p, (e, o))| (p.clone(), Owner::Hook(e.kind(), o)))
        .collect();
    for fixed in overrides.fixed_destinations.iter().map(|p| lexical(p)) {
        if let Some((entry, origin)) = placed.get(&fixed) {
            return Err(ResolveError::ReplacesPlanMount {
                owner: Owner::Hook(entry.kind(), origin).describe(),
                destination: display_escaped(&fixed),
            });
        }
        all.push((fixed, Owner::Plan));
    }
    all.extend(overrides.cli_mounts.iter().map(|p| (lexical(p), Owner::Cli)));
    all.sort_by(|a, b| component_cmp(&a.0, &b.0));
    all.dedup_by(|later, earlier| later.0 == earlier.0);
    let paths: Vec<&str> = all.iter().map(|(p, _)| p.as_str()).collect();
    let owner = |i: usize| &all[i].1;
    match find_nesting(&paths, |a, d| owner(a).is_hook() || owner(d).is_hook()) {
        Some((outer, inner)) => Err(ResolveError::Nested {
            inner: display_escaped(paths[inner]),
            inner_owner: owner(inner).describe(),
            outer: display_escaped(paths[outer]),
            outer_owner: owner(outer).describe(),
        }),
        None => Ok(()),
    }
}

/// A `--lockdown` refusal: every surviving op reference and hook bind mount.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "--lockdown refuses {count} hook contribution(s): {list}; override the keys with --env KEY=VALUE, \
     drop them from the hook's response, or launch without --lockdown",
    count = .violations.len(),
    list = render_violations(.violations)
)]
pub struct LockdownError {
    /// What was refused.
    pub violations: Vec<LockdownViolation>,
}

/// One contribution `--lockdown` refuses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockdownViolation {
    /// A surviving op reference (the reference itself is not shown).
    OpReference {
        /// The env key.
        key: EnvKey,
        /// Who contributed it.
        origin: Origin,
    },
    /// A surviving hook bind mount.
    Mount {
        /// The container destination.
        destination: Destination,
        /// Who contributed it.
        origin: Origin,
    },
}

impl fmt::Display for LockdownViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LockdownViolation::OpReference { key, origin } => {
                write!(f, "env {key} is a 1Password reference from {origin}")
            }
            LockdownViolation::Mount { destination, origin } => {
                write!(f, "mount {destination} is a host bind mount from {origin}")
            }
        }
    }
}

fn render_violations(violations: &[LockdownViolation]) -> String {
    violations
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Apply `--lockdown` after precedence: literal env and generated files pass; surviving op
/// references and host bind mounts are refused.
pub fn lockdown_check(resolved: &Resolved) -> Result<(), LockdownError> {
    let refs = resolved
        .env
        .iter()
        .filter_map(|(key, (value, origin))| match value {
            EnvValue::Op(_) => Some(LockdownViolation::OpReference {
                key: key.clone(),
                origin: origin.clone(),
            }),
            EnvValue::Literal(_) => None,
        });
    let mounts = resolved
        .mounts
        .iter()
        .map(|(m, origin)| LockdownViolation::Mount {
            destination: m.destination.clone(),
            origin: origin.clone(),
        });
    let violations: Vec<_> = refs.chain(mounts).collect();
    if violations.is_empty() {
        Ok(())
    } else {
        Err(LockdownError { violations })
    }
}

#[cfg(test)]
#[path = "resolve_tests.rs"]
mod tests;
