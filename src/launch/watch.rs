//! The workspace checks around the agent's run (`crate::workspace` does the reading): the git
//! metadata as the approved hooks left it, taken while the launch is prepared; the protected
//! project files and the launches running then, just before the agent starts; and, once the
//! container is gone, what differs (the launch's), moved aside and reported.

use std::path::PathBuf;

use crate::config::GitSettings;
use crate::containment::WritableRoot;
use crate::git::model::guard::GitGuard;
use crate::git::quarantine::{self as git_quarantine, CommitReading, Pending};
use crate::podman;
use crate::process::joined_blocking;
use crate::workspace::protected::Protection;
use crate::workspace::{git_inventory, protected_state};

/// Started while the launch is prepared.
pub struct Watch(Option<Pending>);

/// Taken just before the agent starts. It serializes for the Quadlet unit's check, whose
/// inventory and comparison run in two processes ([`UnitWatch`]).
#[derive(serde::Serialize, serde::Deserialize)]
pub struct Settled {
    git: Option<git_inventory::Inventory>,
    before: protected_state::Inventory,
    /// The read-write roots of the launches running then.
    pub running: Vec<WritableRoot>,
}

impl Watch {
    /// Begin the git inventory of `roots` in the background (`None`: `protect_git` is off).
    pub fn begin(roots: Option<Vec<PathBuf>>) -> Self {
        Self(roots.map(git_quarantine::begin))
    }

    /// The protected files' inventory and the finished git inventory, both distrusting what a
    /// launch running now could have planted.
    pub async fn settle(self, client: Option<&podman::Client>, protection: &Protection) -> Settled {
        let mut before = protected_state::inventory(protection);
        let git = match self.0 {
            Some(pending) => Some(pending.finish().await),
            None => None,
        };
        // Asked after both inventories: a launch running now could have planted what they hold.
        let running = podman::local_running_roots(client).await;
        let git = git.map(|i| git_quarantine::against(i, &running));
        before.distrust_against(&running);
        crate::trace::mark("git inventory");
        Settled { git, before, running }
    }
}

impl Settled {
    /// After the container is gone (nothing can write the workspace behind these checks, and
    /// the finished hooks, which may call git, run after them): the git check, the commits of
    /// the launch, and the project files host tools run on their own, reported into `report`.
    /// How many planted pieces could not be moved aside.
    pub async fn check(
        self,
        git: &GitSettings,
        guards: Vec<GitGuard>,
        writable: &[WritableRoot],
        protection: &Protection,
        report: &mut String,
    ) -> usize {
        let writable = writable.iter().chain(&self.running).cloned().collect();
        let reading = CommitReading::new(git, writable, protection);
        let mut unmoved = 0;
        if let Some(inventory) = self.git {
            let found = tokio::task::spawn_blocking(move || git_quarantine::run(&inventory, &guards));
            let mut found = joined_blocking(found.await);
            report.push_str(&found.message());
            report.push_str(&git_quarantine::commits(&mut found, &reading).await);
            unmoved += found.unmoved();
            crate::trace::mark("git checked");
        }
        let before = self.before;
        let settled =
            joined_blocking(tokio::task::spawn_blocking(move || protected_state::settle(&before)).await);
        report.push_str(&settled.message());
        unmoved + settled.unmoved()
    }
}

/// What the check around a Quadlet unit's container needs (`ags plan --format quadlet` writes
/// it; `ags unit-check before` takes the inventories, `ags unit-check after` compares, as a
/// launch does around its agent: docs/quadlet.md).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct UnitWatch {
    /// The trees whose git metadata is taken (`None`: `protect_git` is off).
    pub git_roots: Option<Vec<PathBuf>>,
    /// The git guards the unit mounts.
    pub guards: Vec<GitGuard>,
    /// The protected project files.
    pub protection: Protection,
    /// The unit's read-write mounts.
    pub writable: Vec<WritableRoot>,
    /// `[git]`: the host git that reads the agent's commits.
    pub git: GitSettings,
}

impl UnitWatch {
    /// The inventories, before the unit's container starts.
    pub async fn before(&self) -> Settled {
        Watch::begin(self.git_roots.clone())
            .settle(None, &self.protection)
            .await
    }

    /// After the container is gone: what differs, moved aside and reported into `report`; how
    /// many planted pieces stayed in place.
    pub async fn after(self, settled: Settled, report: &mut String) -> usize {
        let guards = self.guards.clone();
        settled
            .check(&self.git, guards, &self.writable, &self.protection, report)
            .await
    }
}
