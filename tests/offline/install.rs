//! Installing `ags` like a real tool (issue 13, item 4): `cargo install --path .` puts both
//! binaries in place and they run; the shell completions mention every subcommand (and every
//! launch option); `docs/man/ags.1` is exactly what `ags man` prints (regenerate it with
//! `AGS_UPDATE_MAN=1 cargo test --test offline -- install::`).

use crate::common;

use std::path::Path;
use std::process::Command;

use clap::CommandFactory;

use common::{TestEnv, show};

const MAN_PAGE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/man/ags.1");

/// The visible subcommands, recursively (`hooks list`, …) as (parent, name).
fn subcommands(cmd: &clap::Command, parent: &str, out: &mut Vec<(String, String)>) {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        out.push((parent.to_string(), sub.get_name().to_string()));
        subcommands(sub, sub.get_name(), out);
    }
}

#[test]
fn completions_mention_every_subcommand_and_launch_option() {
    let env = TestEnv::without_podman();
    let mut subs = Vec::new();
    subcommands(&ags::cli::Cli::command(), "ags", &mut subs);
    assert!(subs.len() > 10, "{subs:?}");
    let longs: Vec<String> = ags::cli::Cli::command()
        .get_arguments()
        .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
        .collect();
    for shell in ["bash", "zsh", "fish"] {
        let out = env.run(["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}: {}", show(&out));
        let script = String::from_utf8(out.stdout).unwrap();
        for (parent, sub) in &subs {
            assert!(
                script.contains(sub.as_str()),
                "{shell}: no subcommand {parent} {sub}"
            );
        }
        for long in &longs {
            let bare = long.trim_start_matches('-');
            assert!(script.contains(bare), "{shell}: no option {long}");
        }
    }
    // Bash can load the script and registers a completion for `ags`.
    let out = env.run(["completions", "bash"]);
    let file = env.write_file("ags.bash", &out.stdout, 0o644);
    let check = Command::new("bash")
        .args(["-c", &format!("source {} && complete -p ags", file.display())])
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", show(&check));
}

/// Every visible long option of a command and its subcommands, as `--long`.
fn longs(cmd: &clap::Command, out: &mut Vec<String>) {
    let visible = cmd.get_arguments().filter(|a| !a.is_hide_set());
    out.extend(visible.filter_map(|a| a.get_long().map(|l| format!("--{l}"))));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        longs(sub, out);
    }
}

/// docs/cli.md names every subcommand (`ags hooks approve` in a code block) and every visible
/// long option, so the page cannot drift from the command line.
#[test]
fn the_cli_page_names_every_subcommand_and_option() {
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/cli.md")).unwrap();
    let blocks: String = page.split("```").skip(1).step_by(2).collect();
    let mut subs = Vec::new();
    subcommands(&ags::cli::Cli::command(), "ags", &mut subs);
    let mut missing: Vec<String> = subs
        .iter()
        .map(|(parent, sub)| match parent.as_str() {
            "ags" => format!("ags {sub}"),
            _ => format!("ags {parent} {sub}"),
        })
        .filter(|line| !blocks.contains(line.as_str()) && !line.ends_with(" help"))
        .collect();
    let mut options = Vec::new();
    longs(&ags::cli::Cli::command(), &mut options);
    missing.extend(
        options
            .into_iter()
            .filter(|o| o != "--help" && !page.contains(o.as_str())),
    );
    missing.dedup();
    assert!(
        missing.is_empty(),
        "docs/cli.md does not name: {missing:?} (add them to its synopsis or option table)"
    );
}

#[test]
fn man_page_matches_the_command_line() {
    let env = TestEnv::without_podman();
    let out = env.run(["man"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    if std::env::var_os("AGS_UPDATE_MAN").is_some() {
        std::fs::write(MAN_PAGE, &out.stdout).unwrap();
    }
    let committed = std::fs::read(MAN_PAGE).expect("docs/man/ags.1 exists");
    assert!(
        committed == out.stdout,
        "docs/man/ags.1 is out of date: regenerate it with `AGS_UPDATE_MAN=1 cargo test --test offline -- install::`"
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for section in [".SH NAME", ".SH SYNOPSIS", ".SH OPTIONS", ".SH SUBCOMMANDS"] {
        assert!(text.contains(section), "{section}");
    }
}

/// `cargo install --path .` (debug profile, sharing this build's target directory so only the
/// install itself is timed) installs `ags` and `ags-oci-hook`, and the installed `ags` runs.
#[test]
fn cargo_install_installs_both_binaries() {
    let root = tempfile::tempdir().unwrap();
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| manifest.join("target"));
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "install",
            "--path",
            ".",
            "--debug",
            "--offline",
            "--locked",
            "--root",
        ])
        .arg(root.path())
        .arg("--target-dir")
        .arg(&target)
        .current_dir(manifest)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));
    for bin in ["ags", "ags-oci-hook"] {
        assert!(
            root.path().join("bin").join(bin).is_file(),
            "{bin} not installed: {}",
            show(&out)
        );
    }
    let version = Command::new(root.path().join("bin/ags"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(version.status.success(), "{}", show(&version));
    assert!(
        String::from_utf8_lossy(&version.stdout).starts_with("ags "),
        "{}",
        show(&version)
    );
}
