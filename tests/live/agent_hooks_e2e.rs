//! Agent hooks end to end with the REAL agent CLIs of the agent image (issue #14, "Done when"):
//! claude, codex, pi, opencode and gemini, each headless against the scripted model endpoint
//! (`tests/support/model_endpoint.py`), which makes the agent call its shell tool once. Nothing
//! leaves this machine: allowlist mode with only the endpoint listed (`agent_hosts = false`).
//!
//! Per agent, two launches through `ags` with the wiring, the dispatcher and the record socket
//! as every launch gets them:
//!
//! 1. the tool runs `touch allowed-AGENT`: the file exists; the host log holds `session_start`,
//!    `pre_tool` and `post_tool` (and `stop`) event records with the agent's shell tool and that
//!    command; a handler that crashes (SIGSEGV) and one that hangs (killed at its 2 s timeout)
//!    are recorded as `crashed` and `timeout`, and the session still completes;
//! 2. the tool runs `touch denied-AGENT`, which `[agent_guard] deny` matches: the file is absent,
//!    the `pre_tool` event is recorded with decision `block` and the guard's handler record says
//!    `blocked`.
//!
//! The endpoint listens on this machine's own address (the first of `hostname -I`). Runs in each
//! mode whose service has `localhost/ags-agent:latest` (the rootful store here); skipped with a
//! note elsewhere. The attacks on the wiring are in `tests/live/agent_hooks_attacks.rs`.

use crate::common;

use common::agents::run_for;

#[test]
fn claude_hooks_are_recorded_a_denied_command_is_blocked_and_broken_handlers_do_not_stop_it() {
    run_for("claude");
}

#[test]
fn codex_hooks_are_recorded_a_denied_command_is_blocked_and_broken_handlers_do_not_stop_it() {
    run_for("codex");
}

#[test]
fn pi_hooks_are_recorded_a_denied_command_is_blocked_and_broken_handlers_do_not_stop_it() {
    run_for("pi");
}

#[test]
fn opencode_hooks_are_recorded_a_denied_command_is_blocked_and_broken_handlers_do_not_stop_it() {
    run_for("opencode");
}

#[test]
fn gemini_hooks_are_recorded_a_denied_command_is_blocked_and_broken_handlers_do_not_stop_it() {
    run_for("gemini");
}
