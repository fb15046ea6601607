//! The doctor's `op` check: the 1Password CLI that a launch would use (located on `PATH` like
//! the launch does) and whether it has a usable `op inject`. Optional: only hooks with
//! `op://` references and `--op-secret-set` need it. `op` runs through the hooks' `OpCli` (and
//! so through the hook runner, the one place that spawns processes), without credentials.

use std::time::Duration;

use super::Check;
use crate::hooks::runner::Interrupt;
use crate::op::{OpCli, OpEnv, OpPolicy};

/// How long `op inject --help` may take.
const OP_TIMEOUT: Duration = Duration::from_secs(10);

const INSTALL: &str = "install or update the 1Password CLI (version 2 or later): https://developer.1password.com/docs/cli/get-started/";

/// Check the `op` a launch would run: `[op] path`, else the one found through `env`'s `PATH`,
/// under the same rules (outside the workdir, not writable by group or others).
pub(super) async fn check(env: OpEnv, policy: &OpPolicy) -> Check {
    let op = OpCli::new(env).with_timeout(OP_TIMEOUT);
    if policy.configured.is_none() && op.locate().is_err() {
        return Check::warn(
            "op",
            "`op` (1Password CLI) is not on PATH; needed only for op:// references and --op-secret-set",
            INSTALL,
        );
    }
    let op = match op.resolve(policy) {
        Ok(op) => op,
        Err(e) => {
            return Check::warn(
                "op",
                e.to_string(),
                "see docs/prepare-hooks.md#1password-references",
            );
        }
    };
    let program = op.program().unwrap_or_default();
    match op.check_capability(&Interrupt::never()).await {
        Ok(()) => Check::ok("op", format!("{} supports `op inject`", program.display())),
        Err(e) => Check::warn("op", e.to_string(), INSTALL),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::super::Status;
    use super::*;

    fn env_with_op(script: Option<&str>) -> (tempfile::TempDir, OpEnv) {
        let dir = tempfile::tempdir().unwrap();
        if let Some(script) = script {
            let op = dir.path().join("op");
            std::fs::write(&op, script).unwrap();
            std::fs::set_permissions(&op, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let path = format!("{}:/usr/bin:/bin", dir.path().display());
        (dir, OpEnv::from_vars([("PATH", path)]))
    }

    #[tokio::test]
    async fn capable_missing_and_unsupported_op() {
        let (_d, env) = env_with_op(Some(
            "#!/bin/sh\necho 'Usage: op inject [--in-file f] [--out-file f]'\n",
        ));
        let c = check(env, &OpPolicy::default()).await;
        assert_eq!(c.status, Status::Ok, "{c:?}");
        assert!(c.detail.ends_with("/op supports `op inject`"), "{}", c.detail);

        let (_d, env) = env_with_op(None);
        let c = check(env, &OpPolicy::default()).await;
        assert_eq!(c.status, Status::Warn);
        assert!(c.detail.contains("not on PATH"));

        let (_d, env) = env_with_op(Some("#!/bin/sh\nexit 3\n"));
        let c = check(env, &OpPolicy::default()).await;
        assert_eq!(c.status, Status::Warn);
        assert!(c.detail.contains("does not support `op inject`"), "{}", c.detail);
    }
}
