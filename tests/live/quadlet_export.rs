//! The Quadlet export (issue 27, item 3), in every mode: `ags plan --format quadlet` writes a
//! `.container` unit (and a `.volume` unit per agent state volume) that Podman's own quadlet
//! generator accepts, and the `podman run` the generated service would start carries the
//! launch's posture: no network, every capability dropped, no new privileges, ags's seccomp
//! profile, the user (keep-id rootless), the workdir and its git guards read-only, and the
//! launch's command word for word (quotes, `$` and `%` included, which systemd would otherwise
//! expand).
//!
//! The generator runs in a container of a pinp image (Podman 5.4 and 5.8 from Debian; Podman
//! 4.3 has no quadlet): AGS_TEST_QUADLET_IMAGES lists them (scripts/test sets it); without it
//! the test says so and checks only what `ags` writes. These machines have no systemd as PID 1,
//! so the unit is not started (docs/quadlet.md).

use crate::common;

use std::path::Path;

use serde_json::json;

use common::launch::launch_args;
use common::{Mode, TestEnv, each_mode, show};

/// A command that systemd would mangle if the unit did not escape it.
const SCRIPT: &str = "echo \"100% of $HOME\" 'it''s'; exit 3";

fn export(env: &TestEnv, dir: &Path, workdir: &Path, more: &[&str]) -> std::process::Output {
    let mut args = vec![
        "plan".to_string(),
        "--format".into(),
        "quadlet".into(),
        "--no-hooks".into(),
    ];
    args.extend(["--quadlet-dir".into(), dir.display().to_string()]);
    let w = workdir.display().to_string();
    let mut extra = vec!["--tty=false", "--network", "none", "--workdir", &w];
    extra.extend_from_slice(more);
    args.extend(launch_args(env, &extra, &["sh", "-c", SCRIPT]));
    env.run(args)
}

/// systemd's words of a command line: double-quoted words with C escapes (`\\xHH` too), `$$`
/// and `%%`.
fn systemd_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut chars = line.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c == ' ' {
            chars.next();
            continue;
        }
        let mut word = String::new();
        let mut quoted = false;
        while let Some(c) = chars.next() {
            match c {
                '"' => quoted = !quoted,
                ' ' if !quoted => break,
                '\\' => match chars.next() {
                    Some('n') => word.push('\n'),
                    Some('t') => word.push('\t'),
                    // Podman 5.8's quadlet writes a space inside a word as `\x20`.
                    Some('x') => {
                        let hex: String = chars.by_ref().take(2).collect();
                        word.push(u8::from_str_radix(&hex, 16).expect("\\xHH") as char);
                    }
                    Some(other) => word.push(other),
                    None => {}
                },
                '$' | '%' if chars.peek() == Some(&c) => {
                    chars.next();
                    word.push(c);
                }
                c => word.push(c),
            }
        }
        words.push(word);
    }
    words
}

/// Podman's quadlet generator, dry run, on the units in `dir` (user units when rootless); its
/// exit code and output.
fn generate(env: &TestEnv, image: &str, dir: &Path, rootless: bool) -> (i64, String) {
    let (target, args) = match rootless {
        true => ("/etc/containers/systemd/users", vec!["-user", "-dryrun"]),
        false => ("/etc/containers/systemd", vec!["-dryrun"]),
    };
    let mut command = vec!["/usr/libexec/podman/quadlet"];
    command.extend(args);
    let spec = json!({
        "image": image,
        "command": command,
        "netns": {"nsmode": "none"},
        "labels": {common::TEST_LABEL_KEY: env.id()},
        "mounts": [{"type": "bind", "source": dir, "destination": target, "options": ["ro"]}],
    });
    common::api::run_to_end(Mode::Rootful, &spec)
}

#[test]
fn the_unit_is_accepted_by_quadlet_and_carries_the_launch() {
    each_mode(|env| {
        let units = env.mkdir("units", 0o755);
        let workdir = common::git::repository(env, &[]);
        let out = export(env, &units, &workdir, &["--agent", "claude"]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !err.contains("no check after it"),
            "the unit has its check: {err}"
        );
        let mut names: Vec<String> = std::fs::read_dir(&units)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        let container = names
            .iter()
            .find(|n| n.ends_with(".container"))
            .expect("a .container unit");
        let stem = container.trim_end_matches(".container").to_string();
        assert!(
            names.iter().any(|n| n.ends_with(".volume")),
            "{names:?}: the claude state volume"
        );
        let text = std::fs::read_to_string(units.join(container)).unwrap();
        for line in [
            "Network=none",
            "DropCapability=all",
            "NoNewPrivileges=true",
            "Label=\"io.ags.export=quadlet\"",
            // The check after the container must not be killed at systemd's 90 s (attack F1).
            "TimeoutStopSec=infinity",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing:\n{text}");
        }
        assert!(
            !text.contains("io.ags.owner"),
            "owner labels leave the unit:\n{text}"
        );

        let images = std::env::var("AGS_TEST_QUADLET_IMAGES").unwrap_or_default();
        if images.is_empty() {
            eprintln!("quadlet_export: AGS_TEST_QUADLET_IMAGES unset: Podman's generator not run");
            return;
        }
        let plan = env.run([
            "plan",
            "--json",
            "--no-hooks",
            "--agent",
            "claude",
            "--tty=false",
            "--network",
            "none",
            "--workdir",
            &workdir.display().to_string(),
            "--image",
            &env.image(),
            "--",
            "sh",
            "-c",
            SCRIPT,
        ]);
        let plan: serde_json::Value = serde_json::from_slice(&plan.stdout).expect("plan --json");
        let command: Vec<String> = serde_json::from_value(plan["container_command"].clone()).unwrap();
        for image in images.split(',') {
            let rootless = env.mode() == Mode::Rootless;
            let (code, output) = generate(env, image, &units, rootless);
            assert_eq!(
                code, 0,
                "{image}: the generator refused the units:\n{output}\n{text}"
            );
            assert!(!output.contains("unsupported key"), "{image}:\n{output}");
            assert!(
                output.contains(&format!("---{stem}.service---")),
                "{image}:\n{output}"
            );
            assert!(
                output.contains(&format!("---{stem}-state-")),
                "{image}: no volume service:\n{output}"
            );
            for phase in ["ExecStartPre=", "ExecStopPost="] {
                let line = output.lines().find(|l| l.starts_with(phase)).unwrap_or("");
                assert!(line.contains(" unit-check "), "{image}: {phase}:\n{output}");
            }
            let exec = output
                .lines()
                .find(|l| l.starts_with("ExecStart=") && l.contains(" run "))
                .unwrap_or_else(|| panic!("{image}: no ExecStart:\n{output}"));
            let words = systemd_words(exec.trim_start_matches("ExecStart="));
            let has = |pair: &[&str]| words.windows(pair.len()).any(|w| w == pair);
            assert!(has(&["--network", "none"]), "{image}: {words:?}");
            assert!(has(&["--cap-drop", "all"]), "{image}: {words:?}");
            assert!(
                words.iter().any(|w| w == "--security-opt=no-new-privileges"),
                "{words:?}"
            );
            assert!(
                words
                    .iter()
                    .any(|w| w.starts_with("seccomp=") && w.contains("seccomp-no-setuid")),
                "{words:?}"
            );
            let user = format!("{}:{}", env.uid(), env.gid());
            assert!(has(&["--user", &user]), "{image}: {words:?}");
            assert_eq!(has(&["--userns", "keep-id"]), rootless, "{image}: {words:?}");
            let config = format!("{}/.git/config", workdir.display());
            let guard = format!("{config}:{config}:ro,nosuid,nodev");
            assert!(has(&["-v", &guard]), "{image}: {words:?}");
            assert!(has(&["--log-driver", "none"]), "{image}: {words:?}");
            let at = words.iter().position(|w| *w == env.image()).expect("the image");
            assert_eq!(
                words[at + 1..],
                command[1..],
                "{image}: the command changed on its way"
            );
            // 5.4 writes `--entrypoint X`, 5.8 `--entrypoint=X`.
            let joined = format!("--entrypoint={}", command[0]);
            assert!(
                has(&["--entrypoint", &command[0]]) || has(&[&joined]),
                "{image}: {words:?}"
            );
        }
    });
}

#[test]
fn a_launch_that_needs_ags_beside_it_is_refused_with_what_to_do() {
    each_mode(|env| {
        let units = env.mkdir("units", 0o755);
        let workdir = env.mkdir("project", 0o755);
        let out = export(env, &units, &workdir, &["--env", "TOKEN=quadlet-secret-5b1e"]);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("stages values") && err.contains("--format kube"),
            "{err}"
        );
        assert!(!err.contains("quadlet-secret-5b1e"), "{err}");
        // Nor a record of the unit's check.
        let records = env.state_home().join("ags/units");
        let left = std::fs::read_dir(&records).map(|d| d.count()).unwrap_or(0);
        assert_eq!(left, 0, "a refused export left a record in {}", records.display());
        assert_eq!(
            std::fs::read_dir(&units).unwrap().count(),
            0,
            "a refused export wrote units"
        );

        // A workdir whose name carries a line and a directive of its own: a unit would run it.
        let planted = env.mkdir("project\nExecStartPre=/bin/touch /tmp/quadlet-pwned", 0o755);
        let out = export(env, &units, &planted, &[]);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("line break"), "{err}");
        let written = std::fs::read_dir(&units).unwrap().count();
        assert_eq!(written, 0, "a refused export wrote units");

        // Quadlet trims a value's trailing whitespace (a no-break space too): a workdir named
        // `project ` would be mounted as `project`, and its guards would land outside it.
        for name in ["project ", "project\u{a0}"] {
            let trailing = env.mkdir(name, 0o755);
            let out = export(env, &units, &trailing, &[]);
            assert_eq!(out.status.code(), Some(125), "{name:?}: {}", show(&out));
            assert!(
                String::from_utf8_lossy(&out.stderr).contains("whitespace"),
                "{}",
                show(&out)
            );
        }
        // A trailing backslash would join the next line of the unit (a mount's line always
        // ends with its options; the workdir's and the description's would not).
        let slash = env.mkdir("project\\", 0o755);
        let out = export(env, &units, &slash, &[]);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("backslash"),
            "{}",
            show(&out)
        );
        assert_eq!(
            std::fs::read_dir(&units).unwrap().count(),
            0,
            "a refused export wrote units"
        );
    });
}

#[test]
fn an_empty_argument_is_refused_since_quadlet_would_drop_it() {
    each_mode(|env| {
        let units = env.mkdir("units", 0o755);
        let workdir = env.mkdir("project", 0o755);
        let w = workdir.display().to_string();
        let mut args = vec!["plan", "--format", "quadlet", "--no-hooks", "--network", "none"];
        let dir = units.display().to_string();
        args.extend(["--quadlet-dir", &dir, "--workdir", &w]);
        let all = launch_args(env, &args, &["sh", "-c", "echo \"[$1]\"", "", "--dry-run"]);
        let out = env.run(all);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("empty argument"),
            "{}",
            show(&out)
        );
        assert_eq!(
            std::fs::read_dir(&units).unwrap().count(),
            0,
            "a refused export wrote units"
        );
    });
}

/// The unit's `ExecStartPre=` and `ExecStopPost=` words, from the `.container` unit in `dir`.
fn check_commands(dir: &Path) -> (Vec<String>, Vec<String>) {
    let unit = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "container"))
        .expect("a .container unit");
    let text = std::fs::read_to_string(unit).unwrap();
    let words = |key: &str| {
        let line = text.lines().find_map(|l| l.strip_prefix(key)).expect(key);
        systemd_words(line)
    };
    (words("ExecStartPre="), words("ExecStopPost="))
}

/// Attack F1 of session 24, performed: in the unit's writable `.git` the agent makes a
/// submodule whose git dir runs `core.fsmonitor`, with its `.git` file and a gitlink in the
/// index, and a `.envrc`; the unit's check after the container moves them aside, and the host's
/// `git status` runs nothing. Without changes, the check finds nothing.
#[test]
fn the_units_check_moves_aside_what_the_agent_planted() {
    each_mode(|env| {
        let units = env.mkdir("units", 0o755);
        let workdir = common::git::repository(env, &[]);
        let out = export(env, &units, &workdir, &["--agent", "shell"]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let (before, after) = check_commands(&units);
        assert_eq!(before[1..3], ["unit-check", "before"], "{before:?}");
        assert_eq!(after[1..3], ["unit-check", "after"], "{after:?}");
        let record = before[3].clone();
        assert_eq!(after[3], record);

        // Nothing planted: nothing moved.
        let out = env.run(["unit-check", "before", &record]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        // A second `before` while an inventory waits for its `after` (an `after` killed by a
        // stop timeout, say) is refused: the plants would become the baseline (attack F2).
        let out = env.run(["unit-check", "before", &record]);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("did not finish"),
            "{}",
            show(&out)
        );
        let out = env.run(["unit-check", "after", &record]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("nothing planted"),
            "{}",
            show(&out)
        );

        let out = env.run(["unit-check", "before", &record]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        // What the agent does in the container (as the same user, in the same files).
        let git = |dir: &Path, args: &[&str]| common::git::git_ok(env, dir, args);
        let sub = workdir.join("sub");
        let modules = workdir.join(".git/modules/sub");
        env.mkdir("work/.git/modules", 0o755);
        git(
            &workdir,
            &[
                "init",
                "-q",
                "--separate-git-dir",
                &modules.display().to_string(),
                "sub",
            ],
        );
        env.write_file("work/sub/f", "x\n", 0o644);
        git(&sub, &["add", "f"]);
        git(&sub, &["commit", "-q", "-m", "sub"]);
        let marker = env.root().join("PWNED");
        let config = modules.join("config");
        let mut text = std::fs::read_to_string(&config).unwrap();
        text.push_str(&format!("\tfsmonitor = touch {}\n", marker.display()));
        std::fs::write(&config, text).unwrap();
        let head = git(&sub, &["rev-parse", "HEAD"]);
        git(
            &workdir,
            &[
                "update-index",
                "--add",
                "--cacheinfo",
                &format!("160000,{head},sub"),
            ],
        );
        env.write_file("work/.envrc", "touch /tmp/envrc-ran\n", 0o644);

        let out = env.run(["unit-check", "after", &record]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("core.fsmonitor") && err.contains(".envrc"), "{err}");
        assert!(!modules.exists() && !workdir.join(".envrc").exists(), "{err}");
        git(&workdir, &["status", "--short"]);
        assert!(!marker.exists(), "host git ran the planted fsmonitor");
    });
}

#[test]
fn a_record_others_can_write_is_refused() {
    each_mode(|env| {
        let units = env.mkdir("units", 0o755);
        let workdir = env.mkdir("project", 0o755);
        let out = export(env, &units, &workdir, &[]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let (before, _) = check_commands(&units);
        let record = Path::new(&before[3]);
        std::fs::set_permissions(record, std::os::unix::fs::PermissionsExt::from_mode(0o666)).unwrap();
        let out = env.run(["unit-check", "before", &before[3]]);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("private file"),
            "{}",
            show(&out)
        );
    });
}

/// A unit's container carries no owner labels (`ags gc` must leave it alone) but is an agent
/// all the same: a launch treats its read-write mounts as it treats a running launch's
/// (unit-check attack F3: before, a launch beside a unit neither distrusted nor refused them).
#[test]
fn a_units_container_counts_as_a_running_agent() {
    each_mode(|env| {
        let shared = env.mkdir("shared", 0o755);
        env.mkdir("shared/sub", 0o755);
        let name = env.unique_name("unit");
        let spec = json!({
            "name": name,
            "image": env.image(),
            "command": ["sleep", "60"],
            "netns": {"nsmode": "none"},
            "labels": {"io.ags.export": "quadlet", common::TEST_LABEL_KEY: env.id()},
            "mounts": [{"type": "bind", "source": shared, "destination": shared, "options": ["rw"]}],
        });
        let created = common::api::call(env.mode(), "POST", "/containers/create", Some(&spec));
        assert!(created.ok(), "{}", created.text());
        let sub = shared.join("sub").display().to_string();
        let out = env.run(launch_args(
            env,
            &["--tty=false", "--network", "none", "--add-dir", &sub],
            &["true"],
        ));
        common::api::call(
            env.mode(),
            "DELETE",
            &format!("/containers/{name}?force=true"),
            None,
        );
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("lies inside running ags container {name}")),
            "{err}"
        );
    });
}
