//! A hint for a bare word `ags` does not know (`ags pln`, `ags claude`): clap's own
//! suggestions never fire here, since the top level also takes `-- CMD`, so it reports an
//! "unexpected argument" without a tip. This adds one: the subcommand the word is a typo of,
//! or `--agent NAME` for an agent's name. Pure: no I/O.

use clap::error::{ContextKind, ContextValue, ErrorKind};

/// `e` with a tip added when it is an unexpected bare word at the top level of `cmd`.
pub fn unknown_word(e: clap::Error, cmd: &mut clap::Command, args: &[String]) -> clap::Error {
    if e.kind() != ErrorKind::UnknownArgument {
        return e;
    }
    let Some(ContextValue::String(word)) = e.get(ContextKind::InvalidArg) else {
        return e;
    };
    // Only the first bare word (a subcommand's place), never an option or its value.
    let first_word = args.iter().skip(1).find(|a| !a.starts_with('-'));
    if word.starts_with('-') || first_word != Some(word) {
        return e;
    }
    let Some(tip) = tip(word, cmd) else {
        return e;
    };
    let word = word.clone();
    cmd.error(
        ErrorKind::InvalidSubcommand,
        format!("unrecognized subcommand '{word}'\n\n  tip: {tip}"),
    )
}

/// What `word` most likely meant.
fn tip(word: &str, cmd: &clap::Command) -> Option<String> {
    if crate::agents::find(word).is_some() {
        return Some(format!("to launch {word}, run `ags --agent {word}`"));
    }
    let best = cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .map(|s| s.get_name())
        .map(|name| (distance(word, name), name))
        .filter(|(d, name)| *d <= 2 && *d < name.len())
        .min()?;
    Some(format!("a similar subcommand exists: `ags {}`", best.1))
}

/// The Damerau–Levenshtein distance (adjacent swaps count once) between `a` and `b`.
fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transpositions_count_once() {
        assert_eq!(distance("dcotor", "doctor"), 1);
        assert_eq!(distance("pln", "plan"), 1);
        assert_eq!(distance("zzzzzz", "plan"), 6);
    }
}
