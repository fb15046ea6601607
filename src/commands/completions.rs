//! `ags completions SHELL` and `ags man`: the command line described for shells and `man`,
//! generated from the clap definition so they never drift from it.

use clap::CommandFactory;

use crate::Error;
use crate::cli::{Cli, Shell};

/// Print the completion script for `shell`.
pub fn completions(shell: Shell) -> Result<u8, Error> {
    let mut out = Vec::new();
    write_completions(shell, &mut out);
    std::io::Write::write_all(&mut std::io::stdout().lock(), &out).map_err(Error::Output)?;
    Ok(0)
}

/// The completion script for `shell`.
pub fn write_completions(shell: Shell, out: &mut Vec<u8>) {
    let shell = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    clap_complete::generate(shell, &mut with_agent_names(Cli::command()), "ags", out);
}

/// `cmd` with every argument named `agent` (in every subcommand) completing to the agent names
/// instead of file names. Only for completion: parsing keeps its own refusal, which suggests.
fn with_agent_names(cmd: clap::Command) -> clap::Command {
    let names: Vec<&'static str> = crate::agents::AGENTS.iter().map(|a| a.name).collect();
    let has_agent = cmd.get_arguments().any(|a| a.get_id() == "agent");
    let cmd = match has_agent {
        true => cmd.mut_arg("agent", |a| {
            a.value_parser(clap::builder::PossibleValuesParser::new(names.clone()))
        }),
        false => cmd,
    };
    let subs: Vec<String> = cmd.get_subcommands().map(|s| s.get_name().to_string()).collect();
    subs.into_iter()
        .fold(cmd, |cmd, name| cmd.mut_subcommand(name, with_agent_names))
}

/// Print the manual page (roff).
pub fn man() -> Result<u8, Error> {
    std::io::Write::write_all(&mut std::io::stdout().lock(), &man_page()).map_err(Error::Output)?;
    Ok(0)
}

/// The manual page of `ags` (roff), as installed in docs/man/ags.1.
pub fn man_page() -> Vec<u8> {
    let mut out = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut out)
        .expect("rendering into a Vec cannot fail");
    // The help text's `…` makes troff warn (no such glyph on an ASCII terminal): spell it out.
    String::from_utf8(out)
        .expect("clap_mangen writes UTF-8")
        .replace('…', "...")
        .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_values_complete_to_agent_names() {
        let mut out = Vec::new();
        write_completions(Shell::Bash, &mut out);
        let script = String::from_utf8(out).unwrap();
        let names = "pi claude codex gemini opencode shell";
        let agent = script
            .lines()
            .skip_while(|l| !l.trim_start().starts_with("--agent)"))
            .nth(1)
            .expect("an --agent case");
        assert!(agent.contains(names), "{agent}");
        assert!(script.contains(&format!("compgen -W \"{names}\"")));
    }

    #[test]
    fn the_manual_page_is_ascii_for_troff() {
        let page = String::from_utf8(man_page()).unwrap();
        assert!(!page.contains('…'), "troff warns about it");
    }
}
