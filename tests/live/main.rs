//! The live integration tests: everything that talks to a real Podman service, one module per
//! area (each was its own test binary before; one binary links once). Tests that sweep a whole
//! service take [`common::exclusive`]; every other live test shares it.

#[path = "../support/agent_messages.rs"]
mod agent_messages;
#[path = "../common/mod.rs"]
mod common;
#[path = "../lifecycle_support/mod.rs"]
mod lifecycle_support;

mod agent_hooks_attacks;
mod agent_hooks_cli;
mod agent_hooks_dispatch;
mod agent_hooks_e2e;
mod agent_hooks_settings;
mod agent_log;
mod attacks;
mod attacks_agent_log;
mod attacks_boundary;
mod attacks_git_keys;
mod attacks_git_links;
mod attacks_git_nested;
mod attacks_git_objects;
mod attacks_git_paths;
mod attacks_git_scan;
mod attacks_git_state;
mod attacks_node_cache;
mod attacks_quarantine;
mod attacks_remote_staging;
mod attacks_user_paths;
mod ci_outcome;
mod ci_report;
mod concurrent_launches;
mod conmon_lost;
mod containment;
mod credentials;
mod daily_agents;
mod daily_env;
mod daily_git;
mod daily_mounts;
mod doctor;
mod egress;
mod egress_agents;
mod everyday;
mod gc_state;
mod git_outside;
mod git_protect;
mod harness_smoke;
mod hooks_cli;
mod host_loopback;
mod image;
mod keep_id;
mod kube_export;
mod kube_git;
mod kube_verify;
mod launch;
mod launch_cleanup;
mod launch_hardening;
mod launch_hooks;
mod launch_notices;
mod launch_op;
mod lifecycle_events;
mod login_import;
mod no_podman_binary;
mod oci_hooks;
mod output_logs;
mod podman_client;
mod protected_files;
mod quadlet_export;
mod receipts;
mod remote_files;
mod remote_ssh;
mod request_rules;
mod staging_ram;
mod state_volumes;
