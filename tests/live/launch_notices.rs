//! What a launch and `ags gc` say, against each live service: a missing image gets advice that
//! fits its reference (never Podman's raw API text), Podman's create warnings (the rootless
//! cgroup v1 resource-limit one) are said once per service, and `ags gc` says when there is
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
