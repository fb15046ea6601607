//! Issue 10, hole 9: the content of hook-generated files never touches a disk-backed file
//! system. `$XDG_RUNTIME_DIR` is on ext4 on this machine (and under the test root, on disk, in
//! rootful mode: [`TestEnv::runtime_on_disk`]), where `ags` used to stage them. A hook generates a file holding a sentinel;
//! while the agent runs (and has read it), the launch's staging directory named in the
//! container's annotation lies on tmpfs/ramfs, it is already gone, and no file under the test
//! root or the runtime directory holds the sentinel.

use crate::common;

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

/// `/dev/shm/ags-<uid>` that another local user created first, owned by it, mode 0755 (issue
/// 22, finding 9). Removed when dropped, even when the test fails.
struct Squat(PathBuf);

impl Squat {
    /// Squat `/dev/shm/ags-<uid>` of `env`'s user; `None` when it exists already (it belongs to
    /// other tests: left alone).
    fn take(env: &TestEnv) -> Option<Squat> {
        let path = PathBuf::from(format!("/dev/shm/ags-{}", env.uid()));
        if std::fs::create_dir(&path).is_err() {
            common::loud(&format!(
                "SKIP {}: {} exists already (another test's); the squat is not performed in this mode",
                env.mode(),
                path.display()
            ));
            return None;
        }
        let squat = Squat(path);
        std::os::unix::fs::chown(&squat.0, Some(65534), Some(65534)).unwrap();
        std::fs::set_permissions(&squat.0, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        Some(squat)
    }
}

impl Drop for Squat {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Issue 22, finding 9: where `$XDG_RUNTIME_DIR` is on disk, another local user creates
/// `/dev/shm/ags-<uid>` first. A launch without hook-generated files still works (its socket
/// directories and agent hook wiring go to a private directory of the user's: the state
/// directory's `run`); one with a hook-generated file (a secret that must stay in RAM) is
/// refused with exit 125, naming the squatted path and the fix, leaving nothing behind. `ags`
/// never writes into the squatted directory.
#[test]
fn a_squatted_shm_directory_does_not_stop_launches_that_need_no_ram() {
    each_mode_with(TestEnv::runtime_on_disk, |env| {
        let Some(squat) = Squat::take(env) else { return };
        let disk_runtime = env.mkdir("run-on-disk", 0o700);
        let launch = |cmd: &[&str]| {
            let mut c = env.cmd(launch_args(env, &["--tty=false"], cmd));
            c.env("XDG_RUNTIME_DIR", &disk_runtime);
            common::run_command(c, None, common::RUN_TIMEOUT)
        };
        let out = launch(&["sh", "-c", "echo launched"]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert_eq!(stdout(&out), "launched\n", "{}", show(&out));

        let hook = env.write_file(
            "hooks/gen",
            "#!/bin/sh\ncat >/dev/null\necho '{\"version\":1,\"files\":[{\"destination\":\"/home/dev/g.txt\",\"content\":\"x\"}]}'\n",
            0o755,
        );
        env.write_global_config(&decl("gen", &hook, &[], ""));
        approve_hooks(env);
        let out = launch(&["true"]);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        let err = common::launch::stderr(&out);
        assert!(
            err.contains(&squat.0.display().to_string())
                && err.contains("another local user may have created")
                && err.contains("set XDG_RUNTIME_DIR to a tmpfs directory"),
            "{}",
            show(&out)
        );
        let inside: Vec<_> = std::fs::read_dir(&squat.0)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        assert!(
            inside.is_empty(),
            "ags wrote into the squatted directory: {inside:?}"
        );
        assert_clean(env);
    });
}
