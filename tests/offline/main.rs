//! The Podman-free integration tests: the `ags` binary, its hook runner and its documents without
//! a Podman service (the architecture check, docs examples, prepare-hook runs, the fake `op`), one
//! module per area.

#[path = "../common/mod.rs"]
mod common;
#[path = "../hook_support/mod.rs"]
mod hook_support;
#[path = "../script_tools_support/mod.rs"]
mod script_tools_support;

mod architecture;
mod attacks_exec_root;
mod attacks_supervisor;
mod cli_polish;
mod docs_examples;
mod hook_runner;
mod hook_runner_probes;
mod hook_trust;
mod hooks_noexec;
mod hooks_prompt;
mod hooks_test_cmd;
mod install;
mod op;
mod script_tools;
mod size;
mod validate_props;
