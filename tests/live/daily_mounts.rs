//! Mounts in plain config (issue 12, item 4): `[[mount]]` in the global config (`source`,
//! `target` defaulting to the source path, `readonly`, `optional`) and `--add-dir PATH[:ro]`,
//! checked by the rules of hook mount sources. A project overlay — which the agent can write —
//! cannot add one.

use crate::common;

use common::launch::{assert_clean, run_agent, stderr, stdout, trust_overlay, write_overlay};
use common::{each_mode, show};

#[test]
fn config_mounts_and_add_dir_modes_reach_the_agent() {
    each_mode(|env| {
        let data = env.mkdir("data", 0o755);
        let reference = env.mkdir("reference", 0o755);
        env.write_file("reference/README", "read me\n", 0o644);
        let ro_dir = env.mkdir("ro-dir", 0o755);
        env.write_global_config(&format!(
            "[[mount]]\nsource = \"{data}\"\n\n\
             [[mount]]\nsource = \"{reference}\"\ntarget = \"/opt/reference\"\nreadonly = true\n\n\
             [[mount]]\nsource = \"{missing}\"\noptional = true\n",
            data = data.display(),
            reference = reference.display(),
            missing = env.root().join("not-there").display(),
        ));
        let script = format!(
            "echo from-agent > {data}/out && echo data:ok
             cat /opt/reference/README
             (echo x > /opt/reference/new) 2>/dev/null && echo reference:written || echo reference:ro
             (echo x > {ro}/new) 2>/dev/null && echo add-dir:written || echo add-dir:ro",
            data = data.display(),
            ro = ro_dir.display()
        );
        let ro_arg = format!("{}:ro", ro_dir.display());
        let out = run_agent(env, &["--add-dir", &ro_arg], &["sh", "-c", &script]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert_eq!(
            stdout(&out),
            "data:ok\nread me\nreference:ro\nadd-dir:ro\n",
            "{}",
            show(&out)
        );
        assert_eq!(std::fs::read_to_string(data.join("out")).unwrap(), "from-agent\n");
        assert!(!reference.join("new").exists() && !ro_dir.join("new").exists());

        // --lockdown mounts only the workdir and the --add-dirs.
        let out = run_agent(
            env,
            &["--lockdown"],
            &[
                "sh",
                "-c",
                "test -e /opt/reference && echo mounted || echo absent",
            ],
        );
        assert_eq!(stdout(&out), "absent\n", "{}", show(&out));
        assert_clean(env);
    });
}

#[test]
fn config_mounts_obey_the_mount_source_rules() {
    each_mode(|env| {
        let trust_dir = env.state_home().join("ags-hook-trust");
        let cases = [
            (
                format!("[[mount]]\nsource = \"{}\"\n", env.config_home().display()),
                "overlaps the ",
            ),
            (
                format!(
                    "[[mount]]\nsource = \"{}\"\n",
                    trust_dir.parent().unwrap().display()
                ),
                "overlaps the hook approval store",
            ),
            (
                format!(
                    "[[mount]]\nsource = \"{}\"\n",
                    env.root().join("missing").display()
                ),
                "name an existing path",
            ),
            (
                format!(
                    "[[mount]]\nsource = \"{}\"\ntarget = \"/run/ags\"\n",
                    env.work_dir().display()
                ),
                "[[mount]] target /run/ags: the container path must stay clear",
            ),
            (
                format!(
                    "[[mount]]\nsource = \"{}\"\ntarget = \"/home/dev/x\"\n",
                    env.mkdir("other", 0o755).display()
                ),
                "",
            ),
        ];
        for (toml, want) in cases {
            env.write_global_config(&toml);
            let out = run_agent(env, &[], &["true"]);
            if want.is_empty() {
                assert_eq!(out.status.code(), Some(0), "{toml}: {}", show(&out));
                continue;
            }
            assert_eq!(out.status.code(), Some(125), "{toml}: {}", show(&out));
            assert!(stderr(&out).contains(want), "{toml}: {}", show(&out));
        }
        env.write_global_config("");

        // The agent writes a trusted repository's overlay to mount the user's home at the next
        // launch: refused, naming the key.
        std::fs::create_dir_all(env.work_dir().join(".git")).unwrap();
        write_overlay(
            env,
            &format!("[[mount]]\nsource = \"{}\"\n", env.home().display()),
        );
        trust_overlay(env);
        let out = run_agent(env, &[], &["true"]);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        assert!(
            stderr(&out).contains("mount may only be set in the global config"),
            "{}",
            show(&out)
        );
        assert_clean(env);
    });
}
