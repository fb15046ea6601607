//! Network modes against real Podman (issue 15): in allowlist mode the agent reaches an
//! allowlisted destination through the egress proxy of `ags` and nothing else: a host or port
//! not on the list, a raw IP not on the list, a private address, a direct TCP connection that
//! bypasses the proxy and DNS all fail; every attempt is in the egress log; `none` has only
//! loopback; nothing is left after a launch, or after a SIGKILL of `ags` plus the next launch;
//! concurrent launches each get their own policy.
//!
//! The "internet" is a tiny HTTP server of this test process on 127.0.0.1 (the host's loopback,
//! reached by the proxy in the `ags` process); no traffic goes to any other host. The refusals of
//! other addresses (127.0.0.2, 10.88.0.1) happen before the proxy connects anywhere.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::Duration;

use nix::sys::signal::Signal;
use serde_json::Value;

use common::launch::{Background, assert_clean, launch_args, run_agent, run_agent_within, stdout};
use common::{Mode, TestEnv, each_mode, show};

/// A server on 127.0.0.1 answering every request with `hello <tag>`; returns its port.
pub fn server(tag: &'static str) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a test server");
    let port = listener.local_addr().expect("local addr").port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut c) = conn else { continue };
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let _ = c.set_read_timeout(Some(Duration::from_secs(10)));
                let _ = c.read(&mut buf);
                let body = format!("hello {tag}\n");
                let _ = write!(
                    c,
                    "HTTP/1.0 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    port
}

/// A shell snippet sending `request` to the forwarder and printing the reply.
fn through_proxy(request: &str) -> String {
    format!("printf '{request}\\r\\n\\r\\n' | nc 127.0.0.1 3128; echo")
}

pub fn egress_log(env: &TestEnv) -> Vec<Value> {
    let out = env.run(["log", "--egress", "--json", "-n", "100"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

fn allowlist_config(env: &TestEnv, allow: &[String]) {
    let list: Vec<String> = allow.iter().map(|a| format!("{a:?}")).collect();
    env.write_global_config(&format!(
        "[network]\nmode = \"allowlist\"\nallow = [{}]\n",
        list.join(", ")
    ));
}

#[test]
fn allowlist_reaches_only_the_listed_destination() {
    let allowed = server("allowed");
    let unlisted = server("unlisted");
    each_mode(|env| {
        allowlist_config(env, &[format!("127.0.0.1:{allowed}")]);
        let script = [
            format!("echo '## allowed-connect'; {}", through_proxy(&format!("CONNECT 127.0.0.1:{allowed} HTTP/1.1\\r\\n\\r\\nGET / HTTP/1.0"))),
            format!("echo '## allowed-http'; {}", through_proxy(&format!("GET http://127.0.0.1:{allowed}/x HTTP/1.1"))),
            format!("echo '## unlisted-port'; {}", through_proxy(&format!("CONNECT 127.0.0.1:{unlisted} HTTP/1.1"))),
            format!("echo '## unlisted-host'; {}", through_proxy("CONNECT api.example.invalid:443 HTTP/1.1")),
            format!("echo '## raw-ip'; {}", through_proxy(&format!("CONNECT 127.0.0.2:{allowed} HTTP/1.1"))),
            format!("echo '## private'; {}", through_proxy(&format!("GET http://10.88.0.1:{allowed}/ HTTP/1.1"))),
            format!("echo '## direct'; nc -w 3 127.0.0.1 {unlisted} </dev/null; echo direct-exit=$?; nc -w 3 10.88.0.1 {allowed} </dev/null; echo bridge-exit=$?"),
            "echo '## dns'; nslookup example.com; echo dns-exit=$?".to_string(),
            "echo '## interfaces'; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '".to_string(),
            "echo '## env'; echo \"$HTTPS_PROXY $http_proxy $NO_PROXY\"".to_string(),
        ]
        .join("; ");
        let out = run_agent(env, &[], &["sh", "-c", &script]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let text = stdout(&out);
        let section = |name: &str| {
            let start = text
                .find(&format!("## {name}\n"))
                .unwrap_or_else(|| panic!("no {name}: {}", show(&out)));
            let rest = &text[start + name.len() + 4..];
            rest[..rest.find("## ").unwrap_or(rest.len())].to_string()
        };
        let connect = section("allowed-connect");
        assert!(
            connect.starts_with("HTTP/1.1 200") && connect.contains("hello allowed"),
            "{}",
            show(&out)
        );
        assert!(
            section("allowed-http").contains("hello allowed"),
            "{}",
            show(&out)
        );
        for (name, why) in [
            (
                "unlisted-port",
                format!("127.0.0.1 port {unlisted} is not on this launch's allowlist"),
            ),
            (
                "unlisted-host",
                "api.example.invalid port 443 is not on this launch's allowlist".into(),
            ),
            ("raw-ip", "the address 127.0.0.2".into()),
            ("private", "the address 10.88.0.1".into()),
        ] {
            let s = section(name);
            assert!(
                s.starts_with("HTTP/1.1 403 Forbidden") && s.contains(&why),
                "{name}: {}",
                show(&out)
            );
            assert!(!s.contains("hello"), "{name}: {}", show(&out));
        }
        let direct = section("direct");
        assert!(
            !direct.contains("hello")
                && !direct.contains("direct-exit=0")
                && !direct.contains("bridge-exit=0"),
            "{}",
            show(&out)
        );
        assert!(!section("dns").contains("dns-exit=0"), "{}", show(&out));
        assert_eq!(section("interfaces").trim(), "lo", "{}", show(&out));
        assert_eq!(
            section("env").trim(),
            "http://127.0.0.1:3128 http://127.0.0.1:3128 localhost,127.0.0.1,::1"
        );

        let log = egress_log(env);
        let find = |host: &str, port: u16, decision: &str| {
            log.iter()
                .filter(|r| r["host"] == host && r["port"] == port && r["decision"] == decision)
                .count()
        };
        assert_eq!(find("127.0.0.1", allowed, "allowed"), 2, "{log:#?}");
        assert_eq!(find("127.0.0.1", unlisted, "refused"), 1, "{log:#?}");
        assert_eq!(find("api.example.invalid", 443, "refused"), 1, "{log:#?}");
        assert_eq!(find("127.0.0.2", allowed, "refused"), 1, "{log:#?}");
        assert_eq!(find("10.88.0.1", allowed, "refused"), 1, "{log:#?}");
        assert_eq!(log.len(), 6, "{log:#?}");
        let tunnel = log
            .iter()
            .find(|r| r["kind"] == "connect" && r["decision"] == "allowed")
            .expect("tunnel");
        assert!(
            tunnel["bytes_down"].as_u64().unwrap() > 0 && tunnel["bytes_up"].as_u64().unwrap() > 0,
            "{tunnel}"
        );
        assert!(
            log.iter()
                .all(|r| r["launch_id"].as_str().is_some_and(|l| l.starts_with("ags-")))
        );
        let text = env.run(["log", "--egress"]);
        assert!(stdout(&text).contains("refused"), "{}", show(&text));
        assert_clean(env);
    });
}

/// How long a flood may take: about a minute on an idle two-core machine, over three under four
/// busy loops beside another suite (170 s was too short there once).
const FLOOD_LIMIT: Duration = Duration::from_secs(600);

/// Refused CONNECTs of the flood in [`a_flood_of_refusals_rotates_nothing_away`]: more than
/// twice the rotation size of log lines before the budget (about 750 bytes each), so without it
/// the log rotates twice.
const FLOOD: usize = 16_000;

/// Issue 22, finding 6: an agent floods the proxy with refused `CONNECT`s to long names
/// ([`FLOOD`] of them, in 8 parallel loops, to the forwarder on the container's loopback only)
/// around one allowed connection. The log was just below its rotation size, ending with another
/// launch's record. Afterwards the other launch's record and this launch's allowed connection
/// are still in the log, the flood rotated it at most once, and one `dropped` line counts the
/// refusals past the budget (`ags log --egress` shows it).
#[test]
fn a_flood_of_refusals_rotates_nothing_away() {
    let allowed = server("allowed");
    each_mode(|env| {
        allowlist_config(env, &[format!("127.0.0.1:{allowed}")]);
        let other = through_proxy("CONNECT other-launch.invalid:443 HTTP/1.1");
        let out = run_agent(env, &[], &["sh", "-c", &other]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        // Just below the rotation size: the flood's first lines rotate it once.
        let path = env.state_home().join("ags/egress.jsonl");
        let size = std::fs::metadata(&path).unwrap().len();
        let pad = 10 * 1024 * 1024 - size - 2048;
        let mut file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        let filler = format!("{{\"filler\":\"{}\"}}\n", "x".repeat(1000));
        for _ in 0..pad / filler.len() as u64 {
            file.write_all(filler.as_bytes()).unwrap();
        }
        drop(file);
        let label = "a".repeat(63);
        let long = format!("{label}.{label}.{label}.{}", "b".repeat(61));
        let loop_ = format!(
            "i=0; while [ $i -lt {} ]; do printf 'CONNECT {long}:443 HTTP/1.1\\r\\n\\r\\n' | nc 127.0.0.1 3128 >/dev/null; i=$((i+1)); done",
            FLOOD / 8
        );
        let flood = vec![format!("( {loop_} ) &"); 8].join(" ");
        let allowed_req = format!("CONNECT 127.0.0.1:{allowed} HTTP/1.1\\r\\n\\r\\nGET / HTTP/1.0");
        let script = format!(
            "{flood} {}; wait; {}",
            through_proxy(&allowed_req),
            through_proxy(&allowed_req)
        );
        let started = std::time::Instant::now();
        let out = run_agent_within(env, FLOOD_LIMIT, &["sh", "-c", &script]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        println!("{}: flood of {FLOOD} took {:?}", env.mode(), started.elapsed());
        let listing = env.run(["log", "--egress", "--json", "-n", "100000"]);
        assert_eq!(listing.status.code(), Some(0), "{}", show(&listing));
        let log: Vec<Value> = stdout(&listing)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let count = |f: &dyn Fn(&Value) -> bool| log.iter().filter(|r| f(r)).count();
        assert_eq!(
            count(&|r| r["host"] == "other-launch.invalid"),
            1,
            "the other launch's record is gone"
        );
        let flooder = log
            .iter()
            .find(|r| r["host"] == long)
            .map(|r| r["launch_id"].clone())
            .expect("some refusals are written");
        let mine = |r: &Value| r["launch_id"] == flooder;
        assert_eq!(
            count(&|r| mine(r) && r["decision"] == "allowed" && r["port"] == allowed),
            2,
            "this launch's allowed connections are gone"
        );
        let refused = count(&|r| mine(r) && r["decision"] == "refused");
        let dropped: Vec<&Value> = log
            .iter()
            .filter(|r| mine(r) && r["decision"] == "dropped")
            .collect();
        assert_eq!(dropped.len(), 1, "{dropped:?}");
        assert_eq!(dropped[0]["dropped"].as_u64().unwrap() as usize, FLOOD - refused);
        let text = stdout(&env.run(["log", "--egress", "-n", "1"]));
        assert!(
            text.contains(&format!("{} records not written", FLOOD - refused)),
            "{text}"
        );
        assert_clean(env);
    });
}

/// Failed connections of [`failed_connections_cannot_crowd_out_an_upload`]: their lines (about
/// 280 bytes each) pass the 5 MiB that allowed and failed connections shared before.
const FAILED_FLOOD: usize = 24_000;

/// Session-18 attack B1 (its cheap variant): failed connections need no server, and they
/// shared one budget with allowed ones, so an agent spent it on connections to an allowed port
/// where nothing listens, and its later upload to an allowed destination was counted, not
/// written. Failed connections now have their own budget: the upload is recorded with its bytes.
#[test]
fn failed_connections_cannot_crowd_out_an_upload() {
    let allowed = server("allowed");
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    each_mode(|env| {
        allowlist_config(
            env,
            &[format!("127.0.0.1:{allowed}"), format!("127.0.0.1:{closed}")],
        );
        let loop_ = format!(
            "i=0; while [ $i -lt {} ]; do printf 'CONNECT 127.0.0.1:{closed} HTTP/1.1\\r\\n\\r\\n' | nc 127.0.0.1 3128 >/dev/null; i=$((i+1)); done",
            FAILED_FLOOD / 8
        );
        let flood = vec![format!("( {loop_} ) &"); 8].join(" ");
        let upload = format!(
            "CONNECT 127.0.0.1:{allowed} HTTP/1.1\\r\\n\\r\\nPOST / HTTP/1.0\\r\\nContent-Length: 9\\r\\n\\r\\nexfiltrat"
        );
        let script = format!("{flood} wait; {}", through_proxy(&upload));
        let out = run_agent_within(env, FLOOD_LIMIT, &["sh", "-c", &script]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let listing = env.run(["log", "--egress", "--json", "-n", "100000"]);
        let log: Vec<Value> = stdout(&listing)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let failed = log.iter().filter(|r| r["decision"] == "failed").count();
        let dropped_failed: u64 = log
            .iter()
            .filter(|r| {
                r["decision"] == "dropped"
                    && r["reason"]
                        .as_str()
                        .is_some_and(|t| t.contains("failed connections"))
            })
            .filter_map(|r| r["dropped"].as_u64())
            .sum();
        assert_eq!(
            failed as u64 + dropped_failed,
            FAILED_FLOOD as u64,
            "every failed connection is written or counted"
        );
        let up = log
            .iter()
            .find(|r| r["decision"] == "allowed" && r["port"] == allowed)
            .unwrap_or_else(|| {
                panic!(
                    "{}: the upload is not in the log ({failed} failed written, {dropped_failed} counted)",
                    env.mode()
                )
            });
        assert!(up["bytes_up"].as_u64().unwrap() > 9, "{up}");
        assert_clean(env);
    });
}

#[test]
fn mode_none_has_no_network_and_no_proxy() {
    each_mode(|env| {
        let script = "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '; nslookup example.com >/dev/null 2>&1; \
                      echo dns-exit=$?; nc -w 3 127.0.0.1 3128 </dev/null; echo proxy-exit=$?; \
                      ls /run/ags-egress 2>&1 | head -1; echo \"proxy=${HTTPS_PROXY:-unset}\"";
        let out = run_agent(env, &["--network", "none"], &["sh", "-c", script]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let text = stdout(&out);
        assert!(text.starts_with("lo\n"), "{}", show(&out));
        assert!(text.contains("proxy=unset"), "{}", show(&out));
        for unwanted in ["dns-exit=0", "proxy-exit=0"] {
            assert!(!text.contains(unwanted), "{}", show(&out));
        }
        assert!(egress_log(env).is_empty());
        assert_clean(env);
    });
}

#[test]
fn the_plan_shows_the_policy_and_where_each_entry_came_from() {
    let env = TestEnv::without_podman();
    env.write_global_config("[network]\nallow = [\"example.org\", \"10.0.0.0/8:8080\"]\n");
    let out = env.run([
        "plan",
        "--json",
        "--no-hooks",
        "--agent",
        "claude",
        "--network",
        "allowlist",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let plan: Value = serde_json::from_slice(&out.stdout).expect("plan JSON");
    assert_eq!(plan["network"], "allowlist");
    let egress = &plan["egress"];
    assert_eq!(egress["mode_origin"]["source"], "cli");
    let allow: Vec<(String, Value, String)> = egress["allow"]
        .as_array()
        .expect("allow")
        .iter()
        .map(|a| {
            (
                a["entry"].as_str().unwrap().to_string(),
                a["ports"].clone(),
                a["origin"]["source"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        allow,
        [
            (
                "example.org".to_string(),
                serde_json::json!([443, 80]),
                "config".to_string()
            ),
            (
                "10.0.0.0/8:8080".into(),
                serde_json::json!([8080]),
                "config".into()
            ),
            (
                "api.anthropic.com:443".into(),
                serde_json::json!([443]),
                "agent".into()
            ),
        ]
    );
    assert_eq!(plan["container_command"][0], "/run/ags-egress-fwd");
    let env_keys: Vec<&str> = plan["env"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["key"].as_str())
        .collect();
    for key in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "NO_PROXY",
        "http_proxy",
        "https_proxy",
        "no_proxy",
    ] {
        assert!(env_keys.contains(&key), "{key}: {env_keys:?}");
    }
    // An overlay-free open config without --network: open, no proxy.
    let out = env.run(["plan", "--json", "--no-hooks"]);
    let plan: Value = serde_json::from_slice(&out.stdout).expect("plan JSON");
    assert_eq!(
        (plan["network"].as_str(), plan["egress"]["proxy"].is_null()),
        (Some("open"), true)
    );
}

#[test]
fn after_a_sigkill_of_ags_the_next_launch_leaves_nothing() {
    each_mode(|env| {
        let port = server("k");
        allowlist_config(env, &[format!("127.0.0.1:{port}")]);
        let args = launch_args(env, &["--tty=false"], &["sh", "-c", "echo READY; sleep 600"]);
        let bg = Background::spawn(env, &args);
        bg.expect_stdout("READY", Duration::from_secs(120));
        // The socket directory exists while the launch runs.
        let pid = bg.pid();
        let live: Vec<_> = std::fs::read_dir(env.runtime_dir().join("ags"))
            .expect("stage root")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(&format!("stage-{pid}-")) && n.ends_with("-egress"))
            .collect();
        assert_eq!(live.len(), 1, "{live:?}");
        bg.signal(Signal::SIGKILL);
        let out = bg.wait();
        assert_eq!(out.status.code(), None, "{}", show(&out));
        let out = run_agent(env, &[], &["true"]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert!(
            !env.runtime_dir().join("ags").join(&live[0]).exists(),
            "{} left",
            live[0]
        );
        assert_clean(env);
    });
}

/// 20 concurrent launches each get their own policy: launch `i` may reach server `i` only.
/// Rootful and rootless: rootless creates spell `keep-id` out (the 4.3 service is not safe under
/// concurrent keep-id creates), so the 20 rootless launches run at once too.
#[test]
fn concurrent_launches_each_get_their_own_policy() {
    const N: usize = 20;
    let ports: Vec<u16> = (0..N).map(|_| server("c")).collect();
    each_mode(|env| {
        concurrent_policies(env, &ports);
    });
}

/// Launch one container per entry of `ports` at once, launch `i` allowed `ports[i]` only.
fn concurrent_policies(env: &TestEnv, ports: &[u16]) {
    let n = ports.len();
    let results: Vec<(usize, String)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|i| {
                s.spawn(move || {
                    let cfg = env.root().join(format!("cfg{i}.toml"));
                    std::fs::write(&cfg, format!("[network]\nmode = \"allowlist\"\nallow = [\"127.0.0.1:{}\"]\n", ports[i])).unwrap();
                    let script: Vec<String> = ports
                        .iter()
                        .map(|p| format!("printf 'CONNECT 127.0.0.1:{p} HTTP/1.1\\r\\n\\r\\n' | nc 127.0.0.1 3128 | head -1"))
                        .collect();
                    let cfg = cfg.display().to_string();
                    let out = run_agent(env, &["--config", &cfg], &["sh", "-c", &script.join("; ")]);
                    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
                    (i, stdout(&out))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("launch thread"))
            .collect()
    });
    for (i, text) in results {
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        for (j, line) in lines.iter().enumerate() {
            let want = if i == j {
                "HTTP/1.1 200 Connection established"
            } else {
                "HTTP/1.1 403 Forbidden"
            };
            assert_eq!(*line, want, "launch {i}, server {j}: {text}");
        }
        assert_eq!(lines.len(), n, "{text}");
    }
    assert_clean(env);
}

/// A TCP relay to a unix socket: a "remote" service that is really the local one.
fn tcp_relay_to(socket: std::path::PathBuf) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind relay");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(tcp) = conn else { continue };
            let Ok(unix) = std::os::unix::net::UnixStream::connect(&socket) else {
                continue;
            };
            let (mut t2, mut u2) = (tcp.try_clone().expect("clone"), unix.try_clone().expect("clone"));
            let (mut tcp, mut unix) = (tcp, unix);
            std::thread::spawn(move || std::io::copy(&mut t2, &mut u2));
            std::thread::spawn(move || std::io::copy(&mut unix, &mut tcp));
        }
    });
    port
}

/// Allowlist mode needs a local service (the proxy socket is bind-mounted from this host): a
/// tcp:// service is refused before anything is created.
#[test]
fn allowlist_mode_refuses_a_remote_service() {
    if !common::modes().contains(&Mode::Rootful) {
        return;
    }
    let env = TestEnv::new(Mode::Rootful);
    let port = tcp_relay_to(Mode::Rootful.socket());
    let url = format!("tcp://127.0.0.1:{port}");
    let out = run_agent(&env, &["--url", &url, "--network", "allowlist"], &["true"]);
    assert_eq!(out.status.code(), Some(125), "{}", show(&out));
    assert!(
        common::launch::stderr(&out).contains("remote Podman service"),
        "{}",
        show(&out)
    );
    // The same service over tcp:// works in the other modes.
    let out = run_agent(&env, &["--url", &url, "--network", "none"], &["true"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_clean(&env);
}
