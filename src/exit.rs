//! The exit codes `ags` shares with `podman run`: 125 when `ags` itself fails, 126 when the agent
//! command cannot be invoked, 127 when it cannot be found, otherwise the agent's own code.
//! A leaf module (the launch stage and the crate error both use them).

/// Exit code for a failure of `ags` itself.
pub const EXIT_AGS_FAILURE: u8 = 125;
/// Exit code when the command exists but cannot be invoked.
pub const EXIT_CANNOT_INVOKE: u8 = 126;
/// Exit code when the command cannot be found.
pub const EXIT_NOT_FOUND: u8 = 127;
