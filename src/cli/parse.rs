//! Parsing the command line into [`Cli`], plus the rules clap's derive cannot express: launch
//! options given before a subcommand (`ags --agent claude plan`) are honoured by `ags plan` and
//! refused by every other subcommand, never silently dropped. Value parsers live here too.
//! Pure: no I/O.

use std::ffi::OsString;
use std::time::Duration;

use clap::error::ErrorKind;
use clap::parser::ValueSource;
use clap::{ArgMatches, Args, CommandFactory, FromArgMatches};

use super::{Cli, Command, RunArgs};

/// Parse `args` (argv, program name first). Errors are clap's (usage, help, version).
pub fn parse<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let mut cmd = Cli::command();
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let matches = match cmd.try_get_matches_from_mut(args.clone()) {
        Ok(m) => m,
        Err(e) => {
            let words: Vec<String> = args.iter().map(|a| a.to_string_lossy().into_owned()).collect();
            return Err(super::suggest::unknown_word(e, &mut cmd, &words));
        }
    };
    let mut cli = Cli::from_arg_matches(&matches).map_err(|e| e.format(&mut cmd))?;
    cli.run_given = given(&matches);
    if cli.run_given.is_empty() {
        return Ok(cli);
    }
    let sub = matches.subcommand().map(|(name, m)| (name.to_string(), given(m)));
    match (&mut cli.command, sub) {
        (Some(Command::Plan(plan)), Some((_, plan_given))) => {
            merge(&cli.run, &cli.run_given, &mut plan.run, &plan_given)
                .map_err(|msg| cmd.error(ErrorKind::ArgumentConflict, msg))?;
        }
        (Some(_), Some((name, _))) => {
            let msg = format!(
                "launch option{} {} given before `ags {name}`, which does not use {}; remove {} \
                 (launch options apply to `ags [OPTIONS] -- CMD` and `ags plan`)",
                if cli.run_given.len() > 1 { "s" } else { "" },
                flags(&cli.run_given),
                if cli.run_given.len() > 1 { "them" } else { "it" },
                if cli.run_given.len() > 1 { "them" } else { "it" },
            );
            return Err(cmd.error(ErrorKind::ArgumentConflict, msg));
        }
        _ => {}
    }
    Ok(cli)
}

/// The ids of the launch options (the fields of [`RunArgs`]).
fn run_ids() -> Vec<String> {
    RunArgs::augment_args(clap::Command::default())
        .get_arguments()
        .map(|a| a.get_id().to_string())
        .collect()
}

/// The launch options set on the command line in `m` (not by default).
fn given(m: &ArgMatches) -> Vec<String> {
    run_ids()
        .into_iter()
        .filter(|id| m.try_contains_id(id).unwrap_or(false))
        .filter(|id| m.value_source(id) == Some(ValueSource::CommandLine))
        .collect()
}

/// `--agent, --env` for error messages.
fn flags(ids: &[String]) -> String {
    ids.iter()
        .map(|id| match id.as_str() {
            "command" => "-- CMD".to_string(),
            "add_dirs" => "--add-dir".into(),
            "op_secret_sets" => "--op-secret-set".into(),
            "labels" => "--label".into(),
            other => format!("--{}", other.replace('_', "-")),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Fold the launch options given before `plan` into the plan's own. Repeatable options
/// accumulate (before-`plan` values first); a single-valued option given on both sides is
/// refused rather than one side silently winning.
fn merge(
    top: &RunArgs,
    top_given: &[String],
    plan: &mut RunArgs,
    plan_given: &[String],
) -> Result<(), String> {
    for id in top_given {
        let both = plan_given.contains(id);
        match id.as_str() {
            "env" => prepend(&mut plan.env, &top.env),
            "add_dirs" => prepend(&mut plan.add_dirs, &top.add_dirs),
            "op_secret_sets" => prepend(&mut plan.op_secret_sets, &top.op_secret_sets),
            "labels" => prepend(&mut plan.labels, &top.labels),
            "publish" => prepend(&mut plan.publish, &top.publish),
            "lockdown" => plan.lockdown = true,
            "no_init" => plan.no_init = true,
            _ if both => {
                return Err(format!(
                    "{} given both before and after `plan`; give it once",
                    flags(std::slice::from_ref(id))
                ));
            }
            "agent" => plan.agent = top.agent.clone(),
            "workdir" => plan.workdir = top.workdir.clone(),
            "image" => plan.image = top.image.clone(),
            "tty" => plan.tty = top.tty,
            "name" => plan.name = top.name.clone(),
            "timeout" => plan.timeout = top.timeout,
            "memory" => plan.memory = top.memory,
            "cpus" => plan.cpus = top.cpus,
            "command" => plan.command = top.command.clone(),
            other => return Err(format!("--{other} cannot be given before `plan`")),
        }
    }
    Ok(())
}

fn prepend<T: Clone>(dst: &mut Vec<T>, first: &[T]) {
    let rest = std::mem::take(dst);
    dst.extend(first.iter().cloned());
    dst.extend(rest);
}

/// Parse a duration like timeout(1): a non-negative number with an optional unit `s`
/// (default), `m`, `h` or `d`; `0` is refused (timeout(1) would mean "no timeout").
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let (num, unit) = match s.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&s[..i], c),
        _ => (s, 's'),
    };
    let scale = match unit {
        's' => 1.0,
        'm' => 60.0,
        'h' => 3600.0,
        'd' => 86400.0,
        _ => {
            return Err(format!(
                "unknown unit {unit:?}; use s, m, h or d (e.g. 90s, 30m, 2h)"
            ));
        }
    };
    let value: f64 = num
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite() && *v >= 0.0 && !num.starts_with(['+', '-']))
        .ok_or_else(|| format!("{s:?} is not a duration; use a number with an optional unit s, m, h or d"))?;
    let secs = value * scale;
    if secs <= 0.0 || secs > 1e9 {
        return Err(format!(
            "{s:?} is out of range; give a positive duration such as 90s or 30m"
        ));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(args: &[&str]) -> String {
        parse(args.iter().copied()).expect_err("refused").to_string()
    }

    #[test]
    fn typos_and_agent_names_get_a_tip() {
        assert!(message(&["ags", "pln"]).contains("tip: a similar subcommand exists: `ags plan`"));
        assert!(message(&["ags", "dcotor"]).contains("`ags doctor`"));
        assert!(message(&["ags", "claude"]).contains("run `ags --agent claude`"));
        assert!(message(&["ags", "--agent", "codex", "claud"]).contains("unexpected argument"));
        assert!(!message(&["ags", "zzzzzz"]).contains("tip:"));
    }

    fn parse_ok(args: &[&str]) -> Cli {
        parse(args.iter().copied()).unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }

    fn parse_err(args: &[&str]) -> String {
        parse(args.iter().copied()).expect_err("refused").to_string()
    }

    #[test]
    fn options_before_plan_are_honoured() {
        let cli = parse_ok(&[
            "ags", "--agent", "claude", "-e", "A=1", "plan", "-e", "B=2", "--json",
        ]);
        let Some(Command::Plan(plan)) = &cli.command else {
            panic!()
        };
        assert_eq!(plan.run.agent, "claude");
        assert_eq!(plan.run.env, ["A=1", "B=2"]);
        let cli = parse_ok(&["ags", "--lockdown", "-p", "1455:1455", "plan"]);
        let Some(Command::Plan(plan)) = &cli.command else {
            panic!()
        };
        assert!(plan.run.lockdown);
        assert_eq!(plan.run.publish, ["1455:1455"]);
    }

    #[test]
    fn a_single_option_on_both_sides_of_plan_is_refused() {
        let err = parse_err(&["ags", "--agent", "claude", "plan", "--agent", "pi"]);
        assert!(
            err.contains("--agent given both before and after `plan`"),
            "{err}"
        );
    }

    #[test]
    fn options_before_other_subcommands_are_refused() {
        let err = parse_err(&["ags", "--agent", "claude", "-e", "K=V", "gc"]);
        assert!(err.contains("--agent, --env given before `ags gc`"), "{err}");
        let err = parse_err(&["ags", "--timeout", "5s", "doctor"]);
        assert!(err.contains("--timeout given before `ags doctor`"), "{err}");
        // Global options stay global.
        parse_ok(&["ags", "--url", "unix:///x.sock", "gc"]);
        parse_ok(&["ags", "--no-repo-config", "doctor"]);
    }

    #[test]
    fn launch_without_subcommand_records_what_was_given() {
        let cli = parse_ok(&["ags", "--agent", "pi", "--", "x"]);
        assert_eq!(cli.run_given, ["agent", "command"]);
        assert!(parse_ok(&["ags"]).run_given.is_empty());
    }

    #[test]
    fn limits_are_parsed_and_bad_values_refused_with_the_rule() {
        let cli = parse_ok(&["ags", "--memory", "256m", "--cpus", "1.5", "--", "true"]);
        assert_eq!(cli.run.memory, Some(crate::limits::Memory::Bytes(256 << 20)));
        assert_eq!(cli.run.cpus.map(|c| c.millis()), Some(1500));
        let cli = parse_ok(&["ags", "--memory", "none", "plan"]);
        let Some(Command::Plan(plan)) = &cli.command else {
            panic!()
        };
        assert_eq!(plan.run.memory, Some(crate::limits::Memory::Unlimited));
        let err = parse_err(&["ags", "--memory", "lots"]);
        assert!(
            err.contains("--memory") && err.contains("\"lots\" is not a size"),
            "{err}"
        );
        let err = parse_err(&["ags", "--cpus", "0"]);
        assert!(
            err.contains("--cpus") && err.contains("between 0.01 and 1024"),
            "{err}"
        );
    }

    #[test]
    fn durations_like_timeout_1() {
        assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("1d"), Ok(Duration::from_secs(86400)));
        for bad in ["", "0", "-1", "+1", "1x", "s", "nan", "inf", "1e99"] {
            assert!(parse_duration(bad).is_err(), "{bad:?}");
        }
    }
}
