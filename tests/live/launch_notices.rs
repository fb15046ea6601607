//! What a launch and `ags gc` say, against each live service: a missing image gets advice that
//! fits its reference (never Podman's raw API text), Podman's create warnings (the rootless
//! cgroup v1 resource-limit one) are said once per service, `ags plan` warns of a missing image
//! once, also around refused trust and approval questions, and `ags gc` says when there is
//! nothing to clean up.

use crate::common;

use common::launch::{assert_clean, launch_args, run_agent, stderr};
use common::{each_mode, show};

#[test]
fn missing_image_advice_fits_the_reference_without_raw_api_text() {
    each_mode(|env| {
        for (image, advice) in [
            (
                "localhost/ags-no-such-image:0",
                "it is a local image: build it (`ags image build --context DIR --tag`) or import",
            ),
            (
                "docker.io/library/ags-no-such-image:0",
                "ags never pulls images: pull it into this Podman service first",
            ),
        ] {
            let mut args = launch_args(env, &["--tty=false"], &["true"]);
            args[1] = image.into();
            let out = env.run(&args);
            assert_eq!(out.status.code(), Some(125), "{}", show(&out));
            let err = stderr(&out);
            assert!(
                err.contains(&format!(
                    "image {image} is not present in the Podman service at {}; {advice}",
                    env.url()
                )),
                "{image}: {err}"
            );
            assert!(
                !err.contains("image not known") && !err.contains("{\"") && !err.contains("bootstrap"),
                "{image}: {err}"
            );
            assert_clean(env);
        }
    });
}

/// `ags plan` on a terminal with a missing image and an untrusted overlay: the warning comes once,
/// whether the overlay (its hook) is refused or trusted and its hook's approval refused (issue 28
/// item 9 said it repeated after a refused approval).
#[test]
fn plan_warns_of_a_missing_image_once_around_refused_questions() {
    each_mode(|env| {
        let hook = env.write_file("hooks/h", "#!/bin/sh\necho '{\"version\":1}'\n", 0o755);
        let overlay = common::launch::decl("h", &hook, &[], "");
        common::launch::write_overlay(env, &format!("{overlay}[network]\nmode = \"none\"\n"));
        let image = "localhost/ags-no-such-image:0";
        let warning = format!("ags: warning: a launch would fail: image {image} is not present");
        // Each case: the answers, in order, to the questions it waits for; what it exits with.
        let trust = "Trust overlays of";
        let approve = "Approve prepare hook h?";
        for (answers, code) in [
            (&[(trust, "y"), (approve, "n")][..], 125),
            (&[(trust, "n")][..], 125),
        ] {
            let _ = std::fs::remove_file(common::launch::paths(env).overlay_trust_file());
            let mut s = env.spawn_pty(["plan", "--image", image], 24, 200);
            for (question, answer) in answers {
                assert!(
                    s.wait_for(question, PROMPT_WAIT),
                    "no {question:?}: {}",
                    s.output()
                );
                s.write(format!("{answer}\n").as_bytes());
            }
            let status = s.wait(PROMPT_WAIT).expect("ags exits");
            assert_eq!(status.code(), Some(code), "{}", s.output());
            let said = s.output().matches(&warning).count();
            let expected = usize::from(answers.len() > 1);
            assert_eq!(said, expected, "{answers:?}: said {said} times: {}", s.output());
        }
        // An overlay without hooks, refused: skipped, and the plan goes on.
        common::launch::write_overlay(env, "[network]\nmode = \"none\"\n");
        let mut s = env.spawn_pty(["plan", "--image", image], 24, 200);
        assert!(s.wait_for(trust, PROMPT_WAIT), "no question: {}", s.output());
        s.write(b"n\n");
        assert_eq!(
            s.wait(PROMPT_WAIT).and_then(|st| st.code()),
            Some(0),
            "{}",
            s.output()
        );
        assert_eq!(s.output().matches(&warning).count(), 1, "{}", s.output());
    });
}

const PROMPT_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

#[test]
fn podman_create_warnings_are_said_once_per_service() {
    each_mode(|env| {
        let warnings = |out: &std::process::Output| -> Vec<String> {
            stderr(out)
                .lines()
                .filter(|l| l.starts_with("ags: warning: podman: "))
                .map(String::from)
                .collect()
        };
        let first = run_agent(env, &[], &["true"]);
        assert_eq!(first.status.code(), Some(0), "{}", show(&first));
        let second = run_agent(env, &[], &["true"]);
        assert_eq!(second.status.code(), Some(0), "{}", show(&second));
        assert!(warnings(&second).is_empty(), "said again: {}", show(&second));
        for w in warnings(&first) {
            assert!(w.ends_with(&format!("(said once for {})", env.url())), "{w}");
        }
        println!("{} first-launch warnings: {:?}", env.mode(), warnings(&first));
        assert_clean(env);
    });
}

#[test]
fn gc_says_when_there_is_nothing_to_clean_up() {
    each_mode(|env| {
        // Other launches on the shared service may leave something for the first run to remove.
        let said = (0..5).any(|_| {
            let out = env.run(["gc"]);
            assert_eq!(out.status.code(), Some(0), "{}", show(&out));
            String::from_utf8_lossy(&out.stdout)
                == "nothing to clean up: no leftovers of ags processes that are gone\n"
        });
        assert!(said, "gc never said there was nothing to clean up");
    });
}
