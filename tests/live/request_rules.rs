//! Method and path rules (issue 26, item 3), performed on real Podman, rootful and rootless:
//! an allowlist whose only entry for an HTTPS endpoint is `POST localhost:PORT/v1/*` lets the
//! agent's `POST /v1/messages` through (the proxy reads the request, terminating TLS with the
//! launch CA, and verifies the endpoint against `[image] ca_certs`), refuses another method,
//! another path, a `..` walk out of the prefix and an encoded one, and a deny rule beats the
//! allow rule; a plain-HTTP rule decides by the request line. `ags explain` gives the proxy's
//! answers. The endpoints listen on this machine's 127.0.0.1; no traffic goes elsewhere.

use crate::common;
use crate::credentials::{has_agent_image, test_pki};

use common::agents::{agent_args, endpoint_with};
use common::launch::{assert_clean, stdout};
use common::{TestEnv, each_mode, run_command, show};

/// The status code of each request, by name, as the script prints them (`NAME=CODE`).
fn codes(text: &str) -> std::collections::BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.trim().to_string()))
        .collect()
}

/// The requests: through the proxy explicitly (`localhost` and `127.0.0.1` are in `NO_PROXY`,
/// where the agent would reach its own loopback), `--path-as-is` so curl sends the `..`.
fn script(tls: u16, plain: u16) -> String {
    let curl = "curl -sS -o /dev/null -w '%{http_code}' --noproxy '' -x http://127.0.0.1:3128 --path-as-is";
    let base = format!("https://localhost:{tls}");
    [
        format!("echo post=$({curl} -X POST -d '{{}}' {base}/v1/messages)"),
        format!("echo get=$({curl} {base}/v1/messages)"),
        format!("echo other=$({curl} -X POST -d '{{}}' {base}/v2/messages)"),
        format!("echo walk=$({curl} -X POST -d '{{}}' {base}/v1/../v2/messages)"),
        format!("echo encoded=$({curl} -X POST -d '{{}}' {base}/v1/%2e%2e/v2/messages)"),
        format!("echo denied=$({curl} -X POST -d '{{}}' {base}/V1/ADMIN/messages)"),
        format!("echo plain=$({curl} http://127.0.0.1:{plain}/ok/x)"),
        format!("echo plain_other=$({curl} http://127.0.0.1:{plain}/no/x)"),
        format!(
            "echo \"said=$(curl -sS --noproxy '' -x http://127.0.0.1:3128 http://127.0.0.1:{plain}/no/x)\""
        ),
    ]
    .join("\n")
}

#[test]
fn method_and_path_rules_decide_each_request_through_terminated_tls() {
    each_mode(|env| {
        if !has_agent_image(env) {
            return;
        }
        let pki = test_pki(&env.root().join("pki"), "localhost");
        let log = env.root().join("endpoint.jsonl");
        let (cert, key) = (pki.1.to_str().unwrap(), pki.2.to_str().unwrap());
        let tls = endpoint_with(
            "127.0.0.1",
            &[
                "--tls-cert",
                cert,
                "--tls-key",
                key,
                "--log",
                log.to_str().unwrap(),
            ],
        );
        let plain = endpoint_with("127.0.0.1", &[]);
        env.write_global_config(&format!(
            "[network]\nmode = \"allowlist\"\nagent_hosts = false\n\
             allow = [\"POST localhost:{t}/v1/*\", \"GET 127.0.0.1:{p}/ok/*\"]\n\
             deny = [\"POST localhost:{t}/v1/admin/*\"]\n\n[image]\nca_certs = [\"{ca}\"]\n",
            t = tls.port,
            p = plain.port,
            ca = pki.0.display()
        ));
        let args = agent_args(
            env,
            "shell",
            &[],
            &["sh".into(), "-c".into(), script(tls.port, plain.port)],
        );
        let out = run_command(env.cmd(&args), None, std::time::Duration::from_secs(300));
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let got = codes(&stdout(&out));
        let want = [
            ("post", "200"),
            ("get", "403"),
            ("other", "403"),
            ("walk", "403"),
            ("encoded", "403"),
            ("denied", "403"),
            ("plain", "404"),
            ("plain_other", "403"),
        ];
        for (name, code) in want {
            assert_eq!(
                got.get(name).map(String::as_str),
                Some(code),
                "{name}: {}",
                show(&out)
            );
        }
        // The endpoint saw the allowed request only.
        let seen = std::fs::read_to_string(&log).unwrap_or_default();
        assert_eq!(seen.lines().count(), 1, "{seen}");
        assert!(seen.contains("\"/v1/messages\""), "{seen}");
        let egress = stdout(&env.run(["log", "--egress", "--json", "-n", "100"]));
        assert!(
            egress.contains("matches none of the method and path rules"),
            "{egress}"
        );
        assert!(egress.contains("deny entry POST localhost"), "{egress}");
        assert!(egress.contains("a '.', '..' or empty segment"), "{egress}");
        assert_clean(env);
        explain_agrees(env, tls.port, plain.port);
        explain_record(env, &stdout(&out));
    });
}

/// `ags explain` answers as the proxy did.
fn explain_agrees(env: &TestEnv, tls: u16, plain: u16) {
    let cases = [
        (format!("POST localhost:{tls}/v1/messages"), 0),
        (format!("GET localhost:{tls}/v1/messages"), 1),
        (format!("POST localhost:{tls}/v1/../v2"), 1),
        (format!("POST localhost:{tls}/v1/admin/x"), 1),
        (format!("GET 127.0.0.1:{plain}/ok/x"), 0),
        (format!("localhost:{tls}"), 0),
    ];
    for (asked, code) in cases {
        let out = env.run(["explain", &asked]);
        assert_eq!(out.status.code(), Some(code), "{asked}: {}", show(&out));
    }
}

/// The 403 names its record; `ags explain RECORD` shows it and today's answer.
fn explain_record(env: &TestEnv, text: &str) {
    let said = text.lines().find(|l| l.starts_with("said=")).unwrap_or_default();
    let at = said
        .find("ags explain ")
        .unwrap_or_else(|| panic!("no record in {said}"));
    let id = said[at + "ags explain ".len()..]
        .split(|c: char| c.is_whitespace())
        .next()
        .unwrap()
        .trim_end_matches('.');
    let out = env.run(["explain", id]);
    assert_eq!(out.status.code(), Some(1), "{id}: {}", show(&out));
    let shown = stdout(&out);
    assert!(shown.contains(id) && shown.contains("refused"), "{shown}");
    assert!(
        shown.contains("matches none of the method and path rules"),
        "{shown}"
    );
    assert!(
        shown.contains("now, for a launch here: allowed: only requests matching"),
        "{shown}"
    );
    let none = env.run(["explain", &format!("{id}999")]);
    assert_eq!(none.status.code(), Some(125), "{}", show(&none));
}
