//! Issue 10, hole 9: the content of hook-generated files never touches a disk-backed file
//! system. `$XDG_RUNTIME_DIR` is on ext4 on this machine (and under the test root, on disk, in
//! rootful mode: [`TestEnv::runtime_on_disk`]), where `ags` used to stage them. A hook generates a file holding a sentinel;
//! while the agent runs (and has read it), the launch's staging directory named in the
//! container's annotation lies on tmpfs/ramfs, it is already gone, and no file under the test
//! root or the runtime directory holds the sentinel.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::launch::{
    Background, approve_hooks, assert_clean, decl, files_containing, fs_type, launch_args, stdout,
    the_container,
};
use common::{TestEnv, api, each_mode_with, show};

#[test]
fn generated_files_are_staged_in_ram_only() {
    each_mode_with(TestEnv::runtime_on_disk, |env| {
        // Assembled by the hook at run time, so no file of the test holds the sentinel.
        let word = env.id().replace(['-', '.', '_'], "");
        let sentinel = format!("GENFILE-{word}");
        let hook = env.write_file(
            "hooks/gen",
            format!(
                "#!/bin/sh\ncat >/dev/null\nA=GENFILE\nprintf '{{\"version\":1,\"files\":[{{\"destination\":\"/home/dev/generated.txt\",\"content\":\"%s-%s\\\\n\"}}]}}' \"$A\" {word}\n"
            ),
            0o755,
        );
        env.write_global_config(&decl("gen", &hook, &[], ""));
        approve_hooks(env);
        let script = "sha=$(sha256sum /home/dev/generated.txt | cut -c1-16); echo \"READY $sha\"; \
            while [ ! -e go ]; do sleep 0.1; done";
        let args = launch_args(env, &["--tty=false"], &["sh", "-c", script]);
        let bg = Background::spawn(env, &args);
        bg.expect_stdout("READY", Duration::from_secs(120));

        let (id, _) = the_container(env);
        let inspect = api::call(env.mode(), "GET", &format!("/containers/{id}/json"), None).json();
        let stage = inspect["Config"]["Annotations"]["io.ags.stage"]
            .as_str()
            .unwrap_or_else(|| panic!("no io.ags.stage annotation: {}", inspect["Config"]["Annotations"]));
        let root = Path::new(stage).parent().unwrap();
        let kind = fs_type(root);
        assert!(
            kind == "tmpfs" || kind == "ramfs",
            "{}: generated files staged in {stage}, on {kind}",
            env.mode()
        );
        assert!(
            !Path::new(stage).exists(),
            "{stage} still exists while the agent runs"
        );
        let dirs: Vec<PathBuf> = vec![env.root().to_path_buf(), env.runtime_dir()];
        let hits = files_containing(&dirs, &[&sentinel], None);
        assert!(
            hits.is_empty(),
            "{}: generated content on disk: {hits:?}",
            env.mode()
        );

        env.write_file("work/go", "", 0o644);
        let out = bg.wait();
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let expected = {
            use sha2::Digest;
            hex::encode(sha2::Sha256::digest(format!("{sentinel}\n")))[..16].to_string()
        };
        assert!(
            stdout(&out).contains(&format!("READY {expected}")),
            "{}",
            show(&out)
        );
        assert_clean(env);
    });
}
