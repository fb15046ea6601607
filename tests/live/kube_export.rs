//! The Kubernetes export (issue 16, item 5), in every mode: `ags plan --format kube` prints
//! manifests that the real service plays (`POST /libpod/play/kube`), and the played agent runs
//! the launch's command in the workdir, as the launch's user, with every capability dropped and
//! no new privileges, and exits with its code. With a prepare hook, its env value and its
//! generated file reach the agent through the Secret (env file and read-only file), and never
//! the Pod, the container's configuration, standard error or a file on disk.
//!
//! Podman 4.3's `play kube` cannot mount a Secret's keys as files (it writes them base64-encoded,
//! ignores `items` and `subPath`): there the hook test checks the printed manifests and plays
//! nothing, loudly; it plays them on Podman 5 (`scripts/test-podman5 --test live -- kube_export::`).
//! Everything a test plays is removed again (`DELETE /libpod/play/kube`, then what Podman 4.3
//! leaves: volumes and the Secret).

use crate::common;

use std::time::Duration;

use serde_json::{Value, json};

use common::api::{self, Reply};
use common::launch::{approve_hooks, files_containing, launch_args, respond_hook, wait_until};
use common::{Mode, TestEnv, each_mode, show};

/// The hook's env value: quotes and a command substitution must arrive literally.
const SECRET: &str = "kube-'$(id)'-secret-7f3a";
const FILE_SECRET: &str = "kube-file-secret-91c2";
const FILE_DEST: &str = "/tmp/kube-export/cfg.txt";

/// `ags plan --format kube` of `cmd`, with the test's image and label, no terminal and no
/// network; the manifests (stdout) and stderr.
fn export(env: &TestEnv, cmd: &[&str]) -> (Vec<Value>, Vec<u8>, String) {
    export_with(env, &[], cmd)
}

/// [`export`] with more launch options.
pub(crate) fn export_with(env: &TestEnv, more: &[&str], cmd: &[&str]) -> (Vec<Value>, Vec<u8>, String) {
    let mut extra = vec!["--tty=false", "--network", "none"];
    extra.extend_from_slice(more);
    let mut args = vec!["plan".to_string(), "--format".into(), "kube".into()];
    args.extend(launch_args(env, &extra, cmd));
    let out = env.run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let text = String::from_utf8(out.stdout.clone()).expect("manifests are text");
    let docs = text
        .split("\n---\n")
        .map(|d| serde_json::from_str(d).unwrap_or_else(|e| panic!("not JSON ({e}): {d}")))
        .collect();
    (
        docs,
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub(crate) fn kind<'a>(docs: &'a [Value], kind: &str) -> Option<&'a Value> {
    docs.iter().find(|d| d["kind"] == kind)
}

fn play(mode: Mode, method: &str, body: &[u8], query: &str) -> Reply {
    api::request_body(
        &mode.socket(),
        method,
        &format!("/play/kube{query}"),
        Some(("text/plain", body)),
    )
    .unwrap_or_else(|e| panic!("{mode}: {e}"))
}

/// The played manifests, removed on drop (also when an assertion failed).
pub(crate) struct Played<'a> {
    mode: Mode,
    body: &'a [u8],
    docs: &'a [Value],
}

impl Drop for Played<'_> {
    fn drop(&mut self) {
        let _ = play(self.mode, "DELETE", self.body, "?force=true");
        // What Podman 4.3's `kube down` leaves: the pod (when stopping failed), the named volumes
        // it made of the pod's volumes and Secret, and the Secret.
        let pod = kind(self.docs, "Pod").expect("a pod");
        let name = pod["metadata"]["name"].as_str().expect("a name");
        let _ = api::call(self.mode, "DELETE", &format!("/pods/{name}?force=true"), None);
        let volumes = pod["spec"]["volumes"].as_array().cloned().unwrap_or_default();
        for v in volumes {
            let name = v["secret"]["secretName"].as_str().or(v["name"].as_str());
            if let Some(n) = name.filter(|_| v.get("hostPath").is_none()) {
                let _ = api::call(self.mode, "DELETE", &format!("/volumes/{n}?force=true"), None);
            }
        }
        if let Some(s) = kind(self.docs, "Secret") {
            let name = s["metadata"]["name"].as_str().expect("a name");
            let _ = api::call(self.mode, "DELETE", &format!("/secrets/{name}"), None);
        }
    }
}

impl Played<'_> {
    /// Play the manifests without a network (`--network none` is a NetworkPolicy, which Podman
    /// ignores).
    pub(crate) fn start<'a>(mode: Mode, body: &'a [u8], docs: &'a [Value]) -> Played<'a> {
        let played = Played { mode, body, docs };
        let reply = play(mode, "POST", body, "?network=none");
        assert!(reply.ok(), "{mode}: play kube: {} {}", reply.status, reply.text());
        played
    }

    /// Wait for the agent container to exit; its exit code and output (stdout and stderr).
    pub(crate) fn finish(&self) -> (i64, String) {
        let pod = kind(self.docs, "Pod").expect("a pod");
        let ctr = format!("{}-agent", pod["metadata"]["name"].as_str().expect("a name"));
        let mut state = Value::Null;
        let exited = wait_until(Duration::from_secs(120), || {
            state =
                api::call(self.mode, "GET", &format!("/containers/{ctr}/json"), None).json()["State"].clone();
            state["Status"] == "exited"
        });
        assert!(exited, "{}: {ctr} did not exit: {state}", self.mode);
        let logs = api::call(
            self.mode,
            "GET",
            &format!("/containers/{ctr}/logs?stdout=true&stderr=true"),
            None,
        );
        (
            state["ExitCode"].as_i64().expect("an exit code"),
            api::demux(&logs.body),
        )
    }
}

const PROBE: &str = "cat marker.txt; echo uid=$(id -u) gid=$(id -g); grep -E '^(CapEff|NoNewPrivs)' /proc/self/status; exit 7";

#[test]
fn a_played_export_runs_the_command_as_the_launch_would() {
    each_mode(|env| {
        let _turn = common::keep_id_turn(env);
        env.write_file("work/marker.txt", "marker-in-workdir\n", 0o644);
        let (docs, body, stderr) = export(env, &["sh", "-c", PROBE]);
        assert!(
            kind(&docs, "Secret").is_none(),
            "nothing staged, no Secret: {docs:?}"
        );
        assert!(stderr.contains("runs the prepare hooks"), "says so: {stderr}");
        let pod = kind(&docs, "Pod").expect("a pod");
        assert_eq!(pod["metadata"]["labels"]["io.ags.test"], env.id(), "{pod}");
        assert!(kind(&docs, "NetworkPolicy").is_some(), "--network none: {docs:?}");
        let played = Played::start(env.mode(), &body, &docs);
        let (code, out) = played.finish();
        assert_eq!(code, 7, "{}: {out}", env.mode());
        // Rootless Podman maps the user as a launch does (`keep-id`) only from 4.9 on: before,
        // the played agent's uid is not the owner of the workdir on the host.
        if env.mode() == Mode::Rootful || api::podman_major(env.mode()) >= 5 {
            assert!(
                out.contains("marker-in-workdir"),
                "the workdir as hostPath: {out}"
            );
        } else {
            common::loud(&format!(
                "SKIP (workdir content): rootless Podman {} ignores the keep-id annotation of play kube",
                api::podman_major(env.mode())
            ));
        }
        assert!(
            out.contains(&format!("uid={} gid={}", env.uid(), env.gid())),
            "{out}"
        );
        assert!(out.contains("CapEff:\t0000000000000000"), "{out}");
        assert!(out.contains("NoNewPrivs:\t1"), "{out}");
        drop(played);
        let left = api::call(env.mode(), "GET", "/pods/json", None).json();
        let name = &pod["metadata"]["name"];
        assert!(
            !left
                .as_array()
                .expect("a list")
                .iter()
                .any(|p| &p["Name"] == name),
            "the pod is gone: {left}"
        );
        env.assert_no_leftovers();
    });
}

#[test]
fn hook_values_reach_the_agent_through_the_secret_only() {
    each_mode(|env| {
        let _turn = common::keep_id_turn(env);
        let response = json!({
            "version": 1,
            "env": {"KUBE_TOKEN": SECRET},
            "files": [{"destination": FILE_DEST, "content": FILE_SECRET}],
        });
        env.write_global_config(&respond_hook(env, "kube", &response, None));
        approve_hooks(env);
        let script = format!(
            "echo \"token=[$KUBE_TOKEN]\"; cat {FILE_DEST}; echo; \
             echo x > {FILE_DEST} || echo file-read-only; exit 7"
        );
        let (docs, body, stderr) = export(env, &["sh", "-c", &script]);
        assert!(stderr.contains("runs the prepare hooks"), "says so: {stderr}");
        assert!(
            !stderr.contains(SECRET) && !stderr.contains(FILE_SECRET),
            "{stderr}"
        );
        let secret = kind(&docs, "Secret").expect("a Secret");
        let pod = kind(&docs, "Pod").expect("a pod");
        let decoded = |key: &str| decode(secret["data"][key].as_str().expect("a value"));
        assert!(decoded("env").contains("export KUBE_TOKEN="), "the env file");
        assert_eq!(decoded("file-0"), FILE_SECRET);
        let pod_text = pod.to_string();
        assert!(
            !pod_text.contains("KUBE_TOKEN=") && !pod_text.contains(FILE_SECRET),
            "{pod_text}"
        );
        // Nothing on disk: no file under the test root (config, state, runtime, work) holds a value.
        let found = files_containing(&[env.root().to_path_buf()], &["secret-7f3a", FILE_SECRET], None);
        let found: Vec<_> = found
            .into_iter()
            .filter(|p| !p.starts_with(env.root().join("responses")))
            .collect();
        assert!(found.is_empty(), "values on disk: {found:?}");
        if api::podman_major(env.mode()) < 5 {
            common::loud(&format!(
                "SKIP (play): {} Podman 4 cannot mount Secret keys as files; scripts/test-podman5 --test live -- kube_export:: plays this",
                env.mode()
            ));
            return;
        }
        let played = Played::start(env.mode(), &body, &docs);
        let (code, out) = played.finish();
        assert_eq!(code, 7, "{}: {out}", env.mode());
        assert!(
            out.contains(&format!("token=[{SECRET}]")),
            "the env value, literally: {out}"
        );
        assert!(out.contains(FILE_SECRET), "the generated file: {out}");
        assert!(out.contains("file-read-only"), "{out}");
        let ctr = format!("{}-agent", pod["metadata"]["name"].as_str().expect("a name"));
        let inspect = api::call(env.mode(), "GET", &format!("/containers/{ctr}/json"), None).text();
        assert!(!inspect.contains("secret-7f3a"), "no value in inspect: {inspect}");
        drop(played);
        env.assert_no_leftovers();
    });
}

/// Standard base64 (what a Secret's `data` holds), decoded.
fn decode(s: &str) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut bits = 0u32;
    let mut n = 0;
    let mut out = Vec::new();
    for c in s.bytes().filter(|c| *c != b'=') {
        let v = ALPHABET.iter().position(|a| *a == c).expect("base64") as u32;
        bits = bits << 6 | v;
        n += 6;
        if n >= 8 {
            n -= 8;
            out.push((bits >> n) as u8);
            bits &= (1 << n) - 1;
        }
    }
    String::from_utf8(out).expect("UTF-8")
}
