//! Services on the host's loopback (issue 26, item 1), against real Podman: a port of the
//! host's `127.0.0.1` that an allowlist entry names (allowlist mode) or `host_loopback` opens
//! (open mode) is reached inside the container at `127.0.0.1:PORT` (the forwarder listens
//! there) and as `host.ags.internal:PORT`, through the proxy variables or without them; no
//! other port of the host's loopback is. A real agent CLI reaches a model endpoint on the
//! host's loopback through an allowlist entry.
//!
//! The services are servers of this test process on the host's 127.0.0.1; no traffic goes
//! anywhere else.

use crate::common;
use crate::egress::{egress_log, server};

use common::agents::{AGENT_IMAGE, REPLY, agent_args, endpoint_with};
use common::launch::{Background, assert_clean, launch_args, run_agent, stdout};
use common::{TestEnv, each_mode, show};

/// Sections of `text` written as `## NAME` lines by the scripts below.
fn section(text: &str, name: &str) -> String {
    let start = text
        .find(&format!("## {name}\n"))
        .unwrap_or_else(|| panic!("no section {name} in {text}"));
    let rest = &text[start + name.len() + 4..];
    rest[..rest.find("## ").unwrap_or(rest.len())].to_string()
}

/// The script: the opened port directly, by name without the proxy, by name through the proxy
/// (`wget` honours `http_proxy`), and the other port in the same three ways.
fn script(open: u16, other: u16) -> String {
    let get = "printf 'GET / HTTP/1.0\\r\\n\\r\\n'";
    [
        format!("echo '## direct'; {get} | nc -w 5 127.0.0.1 {open}; echo exit=$?"),
        format!("echo '## by-name'; {get} | nc -w 5 host.ags.internal {open}; echo exit=$?"),
        format!("echo '## proxied'; wget -q -O - http://host.ags.internal:{open}/ 2>&1; echo exit=$?"),
        format!("echo '## other-direct'; {get} | nc -w 5 127.0.0.1 {other}; echo exit=$?"),
        format!("echo '## other-by-name'; {get} | nc -w 5 host.ags.internal {other}; echo exit=$?"),
        format!("echo '## other-proxied'; wget -q -O - http://host.ags.internal:{other}/ 2>&1; echo exit=$?"),
        "echo '## env'; echo \"proxy=${http_proxy:-none}\"".to_string(),
    ]
    .join("; ")
}

/// Run the script under `config` and check what was reached; returns the script's output.
fn check(env: &TestEnv, config: &str, open: u16, other: u16) -> String {
    env.write_global_config(config);
    let plan = env.run(["plan"]);
    assert!(
        stdout(&plan).contains(&format!("port {open}: 127.0.0.1:{open}")),
        "{}",
        show(&plan)
    );
    let out = run_agent(env, &[], &["sh", "-c", &script(open, other)]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let text = stdout(&out);
    for name in ["direct", "by-name"] {
        assert!(
            section(&text, name).contains("hello open"),
            "{name}: {}",
            show(&out)
        );
    }
    for name in ["other-direct", "other-by-name", "other-proxied"] {
        let s = section(&text, name);
        assert!(!s.contains("hello"), "{name}: {}", show(&out));
    }
    assert_clean(env);
    text
}

#[test]
fn opened_ports_of_the_hosts_loopback_are_reached_and_no_other() {
    let open = server("open");
    let other = server("other");
    each_mode(|env| {
        let config =
            format!("[network]\nmode = \"allowlist\"\nagent_hosts = false\nallow = [\"127.0.0.1:{open}\"]\n");
        let text = check(env, &config, open, other);
        assert!(section(&text, "proxied").contains("hello open"), "{text}");
        assert!(
            section(&text, "env").contains("proxy=http://127.0.0.1:3128"),
            "{text}"
        );
        let log = egress_log(env);
        let count = |port: u16, decision: &str| {
            log.iter()
                .filter(|r| r["port"] == port && r["decision"] == decision)
                .count()
        };
        // Each way in to the opened port went through the proxy and is in the log.
        assert_eq!(count(open, "allowed"), 3, "{log:#?}");
        assert_eq!(count(other, "refused"), 1, "{log:#?}");

        let config = format!("[network]\nmode = \"open\"\nhost_loopback = [{open}]\n");
        let text = check(env, &config, open, other);
        // Open mode gives no proxy variables for the host's loopback alone.
        assert!(section(&text, "env").contains("proxy=none"), "{text}");
        assert!(section(&text, "proxied").contains("hello open"), "{text}");
    });
}

#[test]
fn an_agent_reaches_a_model_endpoint_on_the_hosts_loopback() {
    let ep = endpoint_with("127.0.0.1", &[]);
    each_mode(|env| {
        if !common::api::image_exists(&env.mode().socket(), AGENT_IMAGE).unwrap_or(false) {
            println!("SKIP: {}: no {AGENT_IMAGE} in this service", env.mode());
            return;
        }
        env.write_global_config(&format!(
            "[network]\nmode = \"allowlist\"\nagent_hosts = false\nallow = [\"127.0.0.1:{}\"]\n",
            ep.port
        ));
        let flags: Vec<String> = [
            format!("ANTHROPIC_BASE_URL=http://127.0.0.1:{}", ep.port),
            "ANTHROPIC_API_KEY=sk-ant-test".into(),
            "DISABLE_TELEMETRY=1".into(),
        ]
        .into_iter()
        .flat_map(|e| ["--env".to_string(), e])
        .collect();
        let args = ["-p".to_string(), "say hi".into()];
        let out = env.run(agent_args(env, "claude", &flags, &args));
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert!(stdout(&out).contains(REPLY), "{}", show(&out));
        let log = egress_log(env);
        assert!(
            log.iter().any(|r| r["port"] == ep.port
                && r["decision"] == "allowed"
                && r["bytes_down"].as_u64() > Some(0)),
            "{log:#?}"
        );
        assert_clean(env);
    });
}

/// `ags explain` gives the proxy's own decision for every layer: a global-config entry, a
/// command-line `--allow`, a project overlay's deny beating a global allow, an opened port of
/// the host's loopback, the built-in refusal of the rest, and a deny entry covering the address
/// a name resolves to. Each row is asked of `ags explain` and tried through the proxy of one
/// launch with the same configuration.
#[test]
fn explain_matches_the_proxys_decision_for_every_layer() {
    let (global, cli, denied, other) = (server("g"), server("c"), server("d"), server("o"));
    each_mode(|env| {
        env.write_global_config(&format!(
            "[network]\nmode = \"allowlist\"\nagent_hosts = false\nallow = [\n  \"127.0.0.1:{global}\",\n  \"127.0.0.1:{denied}\",\n  \"localhost:{other}\",\n]\n"
        ));
        common::launch::write_overlay(
            env,
            &format!("[network]\ndeny = [\"127.0.0.1:{denied}\", \"127.0.0.1:{other}\"]\n"),
        );
        common::launch::trust_overlay(env);
        let cli_allow = format!("127.0.0.1:{cli}");
        // (destination, allowed, what the answer names)
        let rows = [
            (format!("127.0.0.1:{global}"), true, "config, ".to_string()),
            (cli_allow.clone(), true, "(command line)".to_string()),
            (
                format!("127.0.0.1:{denied}"),
                false,
                "deny entry 127.0.0.1".to_string(),
            ),
            (
                format!("host.ags.internal:{global}"),
                true,
                "host's loopback".to_string(),
            ),
            (format!("127.0.0.1:{}", other + 1), false, "built in".to_string()),
            (format!("localhost:{other}"), false, "project config".to_string()),
        ];
        let mut script = String::new();
        for (i, (dest, _, _)) in rows.iter().enumerate() {
            script.push_str(&format!(
                "echo '## row{i}'; printf 'CONNECT {dest} HTTP/1.1\\r\\n\\r\\n' | nc -w 5 127.0.0.1 3128 | head -1; "
            ));
        }
        let out = run_agent(env, &["--allow", &cli_allow], &["sh", "-c", &script]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let text = stdout(&out);
        for (i, (dest, allowed, names)) in rows.iter().enumerate() {
            let proxy = section(&text, &format!("row{i}"));
            assert_eq!(proxy.contains(" 200 "), *allowed, "{dest}: proxy said {proxy}");
            assert_eq!(proxy.contains(" 403 "), !allowed, "{dest}: proxy said {proxy}");
            let asked = env.run(["explain", "--allow", &cli_allow, dest.as_str()]);
            let said = stdout(&asked);
            assert_eq!(
                asked.status.code(),
                Some(if *allowed { 0 } else { 1 }),
                "{dest}: {}",
                show(&asked)
            );
            assert!(said.contains(names.as_str()), "{dest}: {said}");
        }
        // The rule's file and line are named.
        let said = stdout(&env.run(["explain", &format!("127.0.0.1:{denied}")]));
        assert!(said.contains(".ags/config.toml:2"), "{said}");
        assert_clean(env);
    });
}

/// A grant in flight: a refused destination is granted to the running launch (with the command
/// its 403 names), reached, and refused again after the grant expires; a tunnel the grant
/// admitted is cut at the expiry; the grant is in the egress log.
#[test]
fn a_grant_opens_a_refused_destination_in_a_running_launch_until_it_expires() {
    let port = server("granted");
    each_mode(|env| {
        env.write_global_config(
            "[network]\nmode = \"allowlist\"\nagent_hosts = false\nallow = [\"127.0.0.1:1\"]\n",
        );
        let ask = format!(
            "printf 'CONNECT 127.0.0.1:{port} HTTP/1.1\\r\\n\\r\\nGET / HTTP/1.0\\r\\n\\r\\n' | nc -w 3 127.0.0.1 3128"
        );
        let script = format!(
            r#"seen=0; i=0; long=0
while [ $i -lt 300 ]; do
  r=$({ask})
  case "$r" in
    *" 200 "*) echo "try $i: 200"
      if [ $seen = 0 ]; then seen=1; (printf 'CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n'; sleep 60) | nc 127.0.0.1 3128 >/dev/null & long=$!; fi ;;
    *" 403 "*) [ $i = 0 ] && echo "$r" | tail -1; echo "try $i: 403"; [ $seen = 1 ] && break ;;
    *) echo "try $i: other" ;;
  esac
  i=$((i+1)); sleep 0.3
done
sleep 2
if kill -0 $long 2>/dev/null; then echo long=open; else echo long=closed; fi"#
        );
        let bg = Background::spawn(env, &launch_args(env, &["--tty=false"], &["sh", "-c", &script]));
        bg.expect_stdout("try 0: 403", std::time::Duration::from_secs(120));
        let text = bg.stdout_so_far();
        let advice = text
            .split("run on the host: ")
            .nth(1)
            .unwrap_or_else(|| panic!("no advice: {text}"));
        let command: Vec<&str> = advice.split_whitespace().take(7).collect();
        assert_eq!(
            command[..3],
            ["ags", "allow", &format!("127.0.0.1:{port}")],
            "{text}"
        );
        assert_eq!(command[3], "--launch", "{text}");
        let launch = command[4].to_string();
        let granted = env.run([
            "allow",
            &format!("127.0.0.1:{port}"),
            "--launch",
            &launch,
            "--for",
            "3s",
        ]);
        assert_eq!(granted.status.code(), Some(0), "{}", show(&granted));
        let out = bg.wait();
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let text = stdout(&out);
        let order: Vec<&str> = text
            .lines()
            .filter_map(|l| l.split(": ").nth(1))
            .filter(|s| s.len() == 3)
            .collect();
        let first_ok = order
            .iter()
            .position(|s| *s == "200")
            .unwrap_or_else(|| panic!("never granted: {text}"));
        assert!(
            order[first_ok..].last() == Some(&"403"),
            "not refused after the expiry: {text}"
        );
        assert!(
            text.contains("long=closed"),
            "the granted tunnel outlived its grant: {text}"
        );
        let log = egress_log(env);
        assert!(
            log.iter()
                .any(|r| r["decision"] == "granted" && r["launch_id"] == launch.as_str()),
            "{log:#?}"
        );
        let by_grant: Vec<&serde_json::Value> = log
            .iter()
            .filter(|r| r["port"] == port && r["decision"] == "allowed")
            .collect();
        assert!(
            !by_grant.is_empty()
                && by_grant
                    .iter()
                    .all(|r| r["reason"].as_str().unwrap_or("").contains("grant ")),
            "{log:#?}"
        );
        assert!(
            by_grant.iter().any(|r| r["reason"]
                .as_str()
                .unwrap_or("")
                .contains("cut when its grant expired")),
            "{log:#?}"
        );
        assert_clean(env);
    });
}
