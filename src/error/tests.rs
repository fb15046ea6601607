//! Every stage's errors that can hold a path or text the agent chose, rendered for the user:
//! no terminal control reaches the terminal raw (issue 22, finding 8).

use std::path::PathBuf;

use super::*;
use crate::containment::ContainmentError;
use crate::launch::report::ReportError;
use crate::workspace::user_paths::UserPathError;

/// ESC, an OSC window title ended by BEL, clear screen, CR, a C1 CSI and a right-to-left
/// override, in a name an agent could give a directory.
const NASTY: &str = "d\x1b]0;PWNED\x07\x1b[2J\rforged\u{9b}31m\u{202e}txt\u{2066}";

fn nasty_path() -> PathBuf {
    PathBuf::from(format!("/w/{NASTY}/f"))
}

fn io_err() -> std::io::Error {
    std::io::Error::other(format!("cannot open {NASTY}"))
}

fn every_error() -> Vec<Error> {
    let p = nasty_path;
    let s = || NASTY.to_string();
    vec![
        Error::Config(ConfigError::GitGuard(crate::git::model::guard::GitGuardError {
            path: p(),
            reason: s(),
        })),
        Error::Config(ConfigError::Workdir {
            path: p(),
            source: io_err(),
        }),
        Error::Config(ConfigError::Read {
            path: p(),
            source: io_err(),
        }),
        Error::Config(ConfigError::Parse {
            path: p(),
            message: s(),
        }),
        Error::Config(ConfigError::WorkdirNotDir(p())),
        Error::Config(ConfigError::OverlayTrustInterrupted {
            overlay: p(),
            root: p(),
            signal: libc::SIGTERM,
        }),
        Error::Image(crate::image::ImageError::CaCert {
            path: p(),
            reason: s(),
        }),
        Error::Image(crate::image::ImageError::ReadTar {
            path: p(),
            source: io_err(),
        }),
        Error::Plan(crate::plan::PlanError::BadName { name: s() }),
        Error::Plan(crate::plan::PlanError::BadMount { what: s(), rule: "r" }),
        Error::Podman(PodmanError::Api {
            status: 500,
            message: s(),
            cause: Some(s()),
            method: "POST".into(),
            path: s(),
            endpoint: NASTY.into(),
        }),
        Error::Launch(LaunchError::ImageMissing {
            image: s(),
            service: s(),
            detail: s(),
        }),
        Error::Launch(LaunchError::Start {
            code: 125,
            message: s(),
        }),
        Error::Launch(LaunchError::Report(ReportError::Write {
            path: p(),
            source: io_err(),
        })),
        Error::Launch(LaunchError::Report(ReportError::NoDirectory {
            path: p(),
            dir: p(),
        })),
        Error::Egress(crate::egress::EgressError::Listen {
            path: p(),
            source: io_err(),
        }),
        Error::AgentLog(crate::agent_hooks::log::AgentLogError::Listen {
            path: p(),
            source: io_err(),
        }),
        Error::Setup(crate::events::oci::install::SetupError::HooksDir {
            path: p(),
            reason: s(),
        }),
        ContainmentError::SymlinkInWritable {
            what: s(),
            link: s(),
            inside: s(),
            remedy: "r",
        }
        .into(),
        Error::Hooks(HookError::MountSource(Box::new(ContainmentError::Missing {
            what: s(),
            missing: s(),
            remedy: "r",
        }))),
        Error::UserPath(UserPathError::PlantedLink {
            what: s(),
            link: s(),
            inside: s(),
        }),
        Error::UserPath(UserPathError::Io {
            what: s(),
            source: io_err(),
        }),
        Error::UserPath(UserPathError::Changed { what: s(), why: s() }),
        Error::Command(CommandError::invalid(s(), s())),
        Error::Output(io_err()),
        Error::Runtime(io_err()),
    ]
}

#[test]
fn rendered_errors_hold_no_terminal_control() {
    for e in every_error() {
        let shown = render(&e);
        let raw: Vec<char> = shown
            .chars()
            .filter(|c| (c.is_control() && *c != '\n') || ('\u{200e}'..='\u{2069}').contains(c))
            .collect();
        assert!(raw.is_empty(), "{e:?} renders {raw:?} raw: {shown:?}");
        assert!(shown.contains("PWNED"), "the text is still shown: {shown:?}");
    }
}

#[test]
fn escaping_keeps_plain_text_and_line_breaks() {
    let e = Error::Command(CommandError::invalid("line one\nline two", "é → ok"));
    assert_eq!(render(&e), "line one\nline two: é → ok");
    let e = Error::Command(CommandError::invalid("x", NASTY));
    assert_eq!(
        render(&e),
        "x: d\\u{1b}]0;PWNED\\u{7}\\u{1b}[2J\\rforged\\u{9b}31m\\u{202e}txt\\u{2066}"
    );
}

#[test]
fn a_plant_left_in_place_ends_the_launch_as_an_ags_failure() {
    let e = Error::from(crate::workspace::quarantine::LeftInPlace { count: 2 });
    assert_eq!(e.exit_code(), EXIT_AGS_FAILURE);
    let text = render(&e);
    assert!(
        text.starts_with("2 planted file(s)") && text.contains("NOT MOVED"),
        "{text}"
    );
}
