//! Process-wide protections `ags` applies to itself before anything else: no core dumps and no
//! debugger attachment by the user's other programs. `ags` holds secret values in memory (resolved
//! 1Password values, hook literals, the staged env file) between their lookup and the upload to
//! the container; a crash must not write them to a core file on disk, and another process of the
//! same user must not read them through `ptrace` or `/proc/PID/mem`.
//!
//! - `RLIMIT_CORE` 0 (soft and hard): no core file, also for the programs `ags` starts (hooks,
//!   `op`), which inherit it.
//! - `PR_SET_DUMPABLE` 0: no core dump even through a piped `core_pattern`, no `ptrace` attach
//!   or `/proc/PID/mem` access by unprivileged processes; `/proc/PID/` of `ags` belongs to root.
//!   Reset by the kernel for every program `ags` executes, so hooks are not affected.

use std::io;

/// Apply both settings; errors name the setting (the caller decides whether to go on).
pub fn protect_process() -> io::Result<()> {
    use rustix::process::{DumpableBehavior, Resource, Rlimit, set_dumpable_behavior, setrlimit};
    let no_core = Rlimit {
        current: Some(0),
        maximum: Some(0),
    };
    setrlimit(Resource::Core, no_core)
        .map_err(|e| io::Error::new(e.kind(), format!("setting RLIMIT_CORE to 0: {e}")))?;
    set_dumpable_behavior(DumpableBehavior::NotDumpable)
        .map_err(|e| io::Error::new(e.kind(), format!("prctl(PR_SET_DUMPABLE, 0): {e}")))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_process_is_left_without_core_dumps() {
        super::protect_process().unwrap();
        assert_eq!(
            rustix::process::dumpable_behavior().unwrap(),
            rustix::process::DumpableBehavior::NotDumpable
        );
        let limit = rustix::process::getrlimit(rustix::process::Resource::Core);
        assert_eq!((limit.current, limit.maximum), (Some(0), Some(0)));
    }
}
