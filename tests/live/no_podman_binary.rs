//! `ags` talks to Podman only through its API: a traced launch executes no `podman` program.
//! (See: issue 2, "strace -f -e trace=execve of a launch shows no podman executable".)

use crate::common;

use common::show;

#[test]
fn a_launch_executes_no_podman_binary() {
    common::each_mode(|env| {
        let trace = env.root().join("execve.trace");
        let label = env.label();
        let args = [
            "-f",
            "-qq",
            "-e",
            "trace=execve",
            "-o",
            trace.to_str().unwrap(),
            "--",
        ];
        let mut cmd = env.command("strace", args);
        cmd.arg(common::ags_bin()).args([
            "--label",
            &label,
            "--image",
            &env.image(),
            "--tty=false",
            "--",
            "sh",
            "-c",
            "exit 3",
        ]);
        let out = common::run_command(cmd, None, common::RUN_TIMEOUT);
        assert_eq!(out.status.code(), Some(3), "{}", show(&out));
        let text = std::fs::read_to_string(&trace).expect("strace wrote its trace");
        assert!(text.contains("execve("), "the trace records execve calls: {text}");
        let podman: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("execve(") && l.contains("podman"))
            .collect();
        assert!(podman.is_empty(), "ags executed podman: {podman:?}");
        env.assert_no_leftovers();
    });
}
