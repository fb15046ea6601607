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
use crate::workspace::protected::Protection;
use crate::workspace::{git_inventory, protected_state};

/// Started while the launch is prepared.
pub struct Watch(Option<Pending>);

/// Taken just before the agent starts.
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
    pub async fn settle(self, client: &podman::Client, protection: &Protection) -> Settled {
        let mut before = protected_state::inventory(protection);
        let git = match self.0 {
            Some(pending) => Some(pending.finish().await),
            None => None,
        };
        // Asked after both inventories: a launch running now could have planted what they hold.
        let running = podman::local_running_roots(Some(client)).await;
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
            let mut found = tokio::task::spawn_blocking(move || git_quarantine::run(&inventory, &guards))
                .await
                .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
            report.push_str(&found.message());
            report.push_str(&git_quarantine::commits(&mut found, &reading).await);
            unmoved += found.unmoved();
            crate::trace::mark("git checked");
        }
        let before = self.before;
        let settled = tokio::task::spawn_blocking(move || protected_state::settle(&before))
            .await
            .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
        report.push_str(&settled.message());
        unmoved + settled.unmoved()
    }
}
