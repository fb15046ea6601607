//! Issue 27, item 2, as a test: the exported Pod's posture is the local launch's. The same
//! probe runs in a played export and in a local launch of the same plan (a repository as the
//! workdir, `--network none`), and prints what the agent lives under: its user and groups,
//! every capability set, no-new-privileges and the seccomp mode, the names of its environment,
//! its network interfaces, and which of the workdir's mounts are read-only (the git guards).
//! Any difference fails, but for those a Pod cannot carry (docs/kube.md, "What a Pod cannot
//! carry"), which are named here one by one.

use crate::common;
use crate::kube_export::{Played, export_with, kind};

use common::git::git_ok;
use common::launch::{launch_args, stdout};
use common::{Mode, api, each_mode, show};

const PROBE: &str = r#"echo "user $(id -u) $(id -g) $(id -G)"
grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status
echo "env $(env | cut -d= -f1 | sort | tr '\n' ' ')"
echo "net $(ls /sys/class/net | tr '\n' ' ')"
awk -v w="$PWD" '$5 == w || index($5, w "/") == 1 { split($6, o, ","); print "mount", $5, o[1] }' /proc/self/mountinfo | sort -u
"#;

/// Environment names Podman sets on one side only, for reasons docs/kube.md gives: `HOSTNAME`
/// and `container=podman` (4.3: only in a container it creates; 5.4: in a played one too), and
/// `TERM=xterm` without a terminal (4.3 in a container it creates, 5.4 nowhere). Kubernetes
/// runtimes set none of them; none comes from the plan.
const ENV_ONLY_ONE_SIDE: [&str; 3] = ["HOSTNAME", "container", "TERM"];

/// The probe's lines, with the environment line filtered of [`ENV_ONLY_ONE_SIDE`].
fn posture(out: &str) -> Vec<String> {
    out.lines()
        .filter(|l| l.starts_with(['u', 'C', 'N', 'S', 'e', 'n', 'm']))
        .map(|l| match l.strip_prefix("env ") {
            Some(names) => {
                let kept: Vec<&str> = names
                    .split_whitespace()
                    .filter(|n| !ENV_ONLY_ONE_SIDE.contains(n))
                    .collect();
                format!("env {}", kept.join(" "))
            }
            None => l.trim_end().to_string(),
        })
        .collect()
}

#[test]
fn a_played_export_has_the_local_launchs_posture() {
    each_mode(|env| {
        let _turn = common::keep_id_turn(env);
        if env.mode() == Mode::Rootless && api::podman_major(env.mode()) < 5 {
            common::loud(
                "SKIP: rootless Podman 4.3 ignores the keep-id annotation: the Pod's user differs by design there",
            );
            return;
        }
        let work = env.work_dir().canonicalize().unwrap();
        env.write_file("work/README", "hello\n", 0o644);
        git_ok(env, &work, &["init", "-q", "-b", "main"]);
        let (docs, body, export_warned) = export_with(env, &[], &["sh", "-c", PROBE]);
        assert!(kind(&docs, "Pod").is_some());
        let played = Played::start(env.mode(), &body, &docs);
        let (code, pod_out) = played.finish();
        drop(played);
        assert_eq!(code, 0, "{pod_out}");
        let local = env.run(launch_args(
            env,
            &["--tty=false", "--network", "none"],
            &["sh", "-c", PROBE],
        ));
        assert_eq!(local.status.code(), Some(0), "{}", show(&local));
        let (mut pod, mut launch) = (posture(&pod_out), posture(&stdout(&local)));
        assert!(pod.iter().any(|l| l.starts_with("mount ")), "{pod_out}");
        if env.mode() == Mode::Rootless && api::podman_major(env.mode()) >= 5 {
            // Found by this test (docs/kube.md): rootless Podman 5.4 plays the Pod with a
            // network interface although `network=none` was asked; the launch has `lo` only.
            // Checked as found, so that a Podman that honours it makes this test say so.
            let net = |lines: &mut Vec<String>| {
                let at = lines
                    .iter()
                    .position(|l| l.starts_with("net "))
                    .expect("a net line");
                lines.remove(at)
            };
            let (pod_net, launch_net) = (net(&mut pod), net(&mut launch));
            assert_eq!(launch_net, "net lo", "{}", show(&local));
            assert!(
                pod_net.contains("eth0"),
                "Podman now honours network=none: {pod_net}; drop this exception"
            );
            common::loud(
                "rootless Podman 5: the played Pod has a network interface despite network=none (docs/kube.md)",
            );
            assert!(
                export_warned.contains("is not offline there"),
                "the export says so: {export_warned}"
            );
        }
        assert_eq!(
            pod,
            launch,
            "{}: the Pod's posture differs from the launch's\npod:\n{pod_out}\nlaunch:\n{}",
            env.mode(),
            show(&local)
        );
        env.assert_no_leftovers();
    });
}
