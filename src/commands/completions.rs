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
    clap_complete::generate(shell, &mut Cli::command(), "ags", out);
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
    out
}
