//! Agents in a sandbox (issue 12, item 3): `[agent.NAME] args`/`env` reach the agent, a typo in
//! an agent name is an error, and `--yolo` puts each agent's own switch into the plan. (That
//! each switch is accepted by the real CLI is checked by scripts/test-agents in the agent image.)

use crate::common;

use common::launch::{assert_clean, launch_args, run_agent, stderr, stdout};
use common::{each_mode, show};
use serde_json::Value;

#[test]
fn agent_table_args_and_env_reach_the_agent() {
    each_mode(|env| {
        env.write_global_config(
            "[agent.shell]\nargs = [\"-c\", \"echo args:$0:$TABLE_TOKEN\"]\n\
             env = { TABLE_TOKEN = \"tok\" }\n",
        );
        let out = run_agent(env, &[], &[]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        // The shell agent is bash where the image has it, else sh (found on PATH).
        let text = stdout(&out);
        assert!(
            ["args:sh:tok\n", "args:bash:tok\n"].contains(&text.as_str()),
            "{}",
            show(&out)
        );

        env.write_global_config("[agent.claud]\nskip_permissions = true\n");
        let out = run_agent(env, &[], &["true"]);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        assert!(
            stderr(&out).contains("[agent.claud]: unknown agent; known agents: pi, claude"),
            "{}",
            show(&out)
        );
        assert_clean(env);
    });
}

#[test]
fn yolo_adds_each_agents_own_switch_to_the_plan() {
    each_mode(|env| {
        let plan = |extra: &[&str]| -> Value {
            let mut args = vec!["plan".to_string(), "--json".into(), "--no-hooks".into()];
            args.extend(launch_args(env, extra, &[]).into_iter().filter(|a| a != "--"));
            let out = env.run(&args);
            assert_eq!(out.status.code(), Some(0), "{}", show(&out));
            serde_json::from_slice(&out.stdout).expect("plan JSON")
        };
        let p = plan(&["--agent", "claude", "--yolo"]);
        assert_eq!(
            p["command"],
            serde_json::json!(["claude", "--dangerously-skip-permissions"])
        );
        assert_eq!(p["skip_permissions"], true);
        let sandbox: Vec<&Value> = p["env"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["key"] == "IS_SANDBOX")
            .collect();
        assert_eq!(sandbox.len(), 1, "{p}");
        assert_eq!(sandbox[0]["value"], "1");

        env.write_global_config("[agent.codex]\nskip_permissions = true\n");
        let p = plan(&["--agent", "codex"]);
        assert_eq!(
            p["command"],
            serde_json::json!(["codex", "--dangerously-bypass-approvals-and-sandbox"])
        );
        let p = plan(&["--agent", "claude"]);
        assert_eq!(
            p["command"],
            serde_json::json!(["claude"]),
            "only codex is configured"
        );
        assert_clean(env);
    });
}
