//! Every external command the repository's scripts call is installed on a fresh Debian machine by
//! the script that needs it or by scripts/setup-podman (issue 11: `scripts/test` once failed on a
//! fresh machine because only a later script installed debootstrap).
//!
//! The scripts (scripts/*, containers/*/build-rootfs and lib.sh, .ci/run), the commands the test
//! suite spawns, and the interpreters of the example and fixture hooks are scanned for command
//! words (tests/script_tools_support/shell_words.rs). Each command must be in [`TOOLS`] with the
//! Debian package that provides it (a command missing from the table fails, and so does a row no
//! script uses any more), and that package must be one of Debian's required packages (what
//! `debootstrap --variant=minbase` installs; checked with dpkg-query), in setup-podman's
//! `PACKAGES`, or installed by the script itself (`apt-get … install`, lib.sh's
//! `install_missing`, or its `INCLUDE` list). The pinp image's entrypoint is checked against
//! containers/pinp/packages instead. Where the command exists in Debian's directories here, the
//! table's package must own it (dpkg-query -S, following alternatives).

use crate::script_tools_support;

use script_tools_support::shell_words::{command_words, defined_functions};
use script_tools_support::sources::*;
use script_tools_support::table::*;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// Where a file's commands must come from.
#[derive(Clone, Copy, PartialEq)]
enum Place {
    /// This machine: required packages, setup-podman's PACKAGES, or the file's own installs.
    Host,
    /// The pinp image: required packages or containers/pinp/packages.
    Pinp,
}

/// Each scanned file, where it runs, its own installs and the commands it calls.
fn uses() -> Vec<(String, Place, BTreeSet<String>, BTreeSet<String>)> {
    let scripts = host_scripts();
    let mut functions = BTreeSet::new();
    for f in &scripts {
        functions.extend(defined_functions(&read(f)));
    }
    let mut out = Vec::new();
    for f in scripts.iter().map(String::as_str).chain([PINP_INIT]) {
        let text = read(f);
        let mut commands = command_words(&text);
        commands.retain(|c| !functions.contains(c));
        commands.extend(interpreter(&text));
        commands.extend(
            INDIRECT
                .iter()
                .filter(|(file, ..)| *file == f)
                .map(|(_, c, _)| c.to_string()),
        );
        let place = if f == PINP_INIT { Place::Pinp } else { Place::Host };
        out.push((f.to_string(), place, own_installs(&text), commands));
    }
    for (f, commands) in rust_spawned().into_iter().chain(hook_interpreters()) {
        out.push((f, Place::Host, BTreeSet::new(), commands));
    }
    for (_, _, _, commands) in &mut out {
        let implied: Vec<String> = IMPLIED
            .iter()
            .filter(|(c, _)| commands.contains(*c))
            .map(|(_, needs)| needs.to_string())
            .collect();
        commands.extend(implied);
    }
    out
}

/// What is wrong, given setup-podman's package list: commands missing from [`TOOLS`], unused
/// rows, and packages a fresh machine would lack.
fn problems(setup_packages: &BTreeSet<String>) -> Vec<String> {
    let table: BTreeMap<&str, &str> = TOOLS
        .iter()
        .map(|(c, owner, install)| (*c, if install.is_empty() { *owner } else { *install }))
        .collect();
    let pinp: BTreeSet<String> = read("containers/pinp/packages")
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim().to_string())
        .filter(|l| !l.is_empty())
        .collect();
    let mut problems = Vec::new();
    let mut used = BTreeSet::new();
    let required = required_packages();
    for (file, place, own, commands) in uses() {
        for command in &commands {
            if NOT_DEBIAN.iter().any(|(c, _)| c == command) {
                continue;
            }
            let Some(package) = table.get(command.as_str()) else {
                problems.push(format!(
                    "{file} calls `{command}`, which TOOLS in tests/offline/script_tools.rs does not list: \
                     add it with the Debian package that provides it"
                ));
                continue;
            };
            used.insert(command.clone());
            if OPTIONAL.iter().any(|(f, c, _)| *f == file && c == command) {
                continue;
            }
            let ok = required.contains(*package)
                || match place {
                    Place::Host => setup_packages.contains(*package) || own.contains(*package),
                    Place::Pinp => pinp.contains(*package),
                };
            if !ok {
                let list = match place {
                    Place::Host => {
                        format!("not in scripts/setup-podman's PACKAGES, and {file} does not install it")
                    }
                    Place::Pinp => "not in containers/pinp/packages".to_string(),
                };
                problems.push(format!(
                    "{file} calls `{command}` from Debian package {package}, which a fresh machine lacks: \
                     {package} is not a required package, {list}"
                ));
            }
        }
    }
    for (command, _, _) in TOOLS {
        if !used.contains(*command) {
            problems.push(format!(
                "TOOLS lists `{command}`, which nothing calls any more: remove the row"
            ));
        }
    }
    problems
}

fn setup_podman_packages() -> BTreeSet<String> {
    let packages = array_words(&read("scripts/setup-podman"), "PACKAGES");
    assert!(
        packages.contains("podman"),
        "PACKAGES=( … ) not found in scripts/setup-podman: {packages:?}"
    );
    packages
}

#[test]
fn every_command_a_script_calls_is_installed_on_a_fresh_machine() {
    let problems = problems(&setup_podman_packages());
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn a_package_dropped_from_setup_podman_is_caught() {
    // The failure of issue 11: build-pinp-image's debootstrap, installed only by a later script.
    let mut packages = setup_podman_packages();
    assert!(packages.remove("debootstrap"));
    let problems = problems(&packages);
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("containers/pinp/build-rootfs calls `debootstrap`")),
        "{problems:#?}"
    );
    // bootstrap-base-image installs debootstrap itself: no complaint about it.
    assert!(
        !problems
            .iter()
            .any(|p| p.starts_with("scripts/bootstrap-base-image")),
        "{problems:#?}"
    );
}

#[test]
fn the_table_names_the_package_that_owns_each_command() {
    // Not installed here (sudo on a root-only machine): nothing to compare.
    let chains: Vec<(&str, &str, PathBuf, Vec<String>)> = TOOLS
        .iter()
        .filter_map(|(command, owner, _)| {
            debian_path(command).map(|p| (*command, *owner, p.clone(), chain(&p)))
        })
        .collect();
    let all: Vec<String> = chains.iter().flat_map(|(.., c)| c.clone()).collect();
    let owned = owners(&all);
    let mut wrong = Vec::new();
    for (command, owner, path, chain) in &chains {
        let found: BTreeSet<&String> = chain.iter().filter_map(|p| owned.get(p)).flatten().collect();
        if !found.iter().any(|p| p.as_str() == *owner) {
            wrong.push(format!(
                "{command} ({}) belongs to {found:?}, not {owner}",
                path.display()
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "fix TOOLS in tests/offline/script_tools.rs:\n{}",
        wrong.join("\n")
    );
}

// ---- the lexer on the constructs the scripts use ----

fn words(script: &str) -> Vec<String> {
    command_words(script).into_iter().collect()
}

#[test]
fn lexer_finds_commands_in_pipelines_substitutions_and_wrappers() {
    let s = r#"
x=$(jq -r .a <<<"$j" | cut -c1-3) && echo "$(date +%s) ${V:-$(id -u)}"
while read -r a; do :; done < <(find . -print0)
priv env DEBIAN_FRONTEND=noninteractive apt-get -qq install foo </dev/null >/dev/null
as_user "$u" sh -c 'exec setsid -f podman system service' sh x
"${sudo_cmd[@]}" debootstrap --variant=minbase
command -v git >/dev/null || timeout -s TERM 5 true
exec > >(tee "$OUT") 2>&1
{ curl -sf x || true; } | LC_ALL=C sort -z | xargs -0 sha256sum
if ! out=$(/usr/bin/stat -c %u x 2>&1); then mkdir -p "$d"; fi
"#;
    assert_eq!(
        words(s),
        [
            "apt-get",
            "curl",
            "cut",
            "date",
            "debootstrap",
            "env",
            "find",
            "git",
            "id",
            "jq",
            "mkdir",
            "podman",
            "setsid",
            "sh",
            "sha256sum",
            "sort",
            "stat",
            "tee",
            "timeout",
            "xargs"
        ]
    );
}

#[test]
fn lexer_skips_data_patterns_heredocs_and_own_functions() {
    let s = r#"
# a comment naming rm and podman
usage() {
    cat <<'EOF'
Usage: fake --force
  podman run nothing
EOF
}
PACKAGES=(podman runc
    uidmap) # not commands
declare -A pin=([pi]=PI_VERSION)
case $1 in
    --force) FORCE=1 ;;
    rootful | rootless) usage; exit 0 ;;
    '' | *[!0-9]*) die "bad" ;;
esac
for tool in debootstrap curl; do :; done
for ((i = 0; i < 3; i++)); do :; done
[[ "$a" == *fuse* ]] && awk '{ system("rm -rf /") }' file
jq -n '{a: 1} | tojson' 2>/dev/null
"#;
    assert_eq!(words(s), ["awk", "cat", "die", "jq"]);
}
