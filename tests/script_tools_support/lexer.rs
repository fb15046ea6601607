//! The lexer behind [`super::shell_words`]: splits bash text into words (as written, quotes and
//! all) and operators, skips comments, here-document bodies and arithmetic, and hands the code of
//! command and process substitutions (also inside double quotes, `${…}` and array literals) back
//! for a separate scan.

/// One lexical item: a word as written (quotes and all), or an operator ending a command.
#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    Word(String),
    /// `;`, `;;`, `&`, `&&`, `|`, `||`, `(`, `)` or a newline.
    Sep(&'static str),
}

/// Splits `code` into words and operators; the code of substitutions goes to `nested`.
pub fn lex(code: &str, nested: &mut Vec<String>) -> Vec<Tok> {
    let c: Vec<char> = code.chars().collect();
    let mut toks = Vec::new();
    let mut word = String::new();
    let mut heredocs: Vec<(String, bool)> = Vec::new();
    let mut i = 0;
    let flush = |word: &mut String, toks: &mut Vec<Tok>| {
        if !word.is_empty() {
            toks.push(Tok::Word(std::mem::take(word)));
        }
    };
    while i < c.len() {
        let ch = c[i];
        let next = c.get(i + 1).copied();
        match ch {
            '\\' if next == Some('\n') => i += 2,
            '\\' => {
                word.extend(&c[i..(i + 2).min(c.len())]);
                i += 2;
            }
            ' ' | '\t' => {
                flush(&mut word, &mut toks);
                i += 1;
            }
            '\n' => {
                flush(&mut word, &mut toks);
                toks.push(Tok::Sep("\n"));
                i += 1;
                for (delim, strip) in heredocs.drain(..) {
                    i = skip_heredoc(&c, i, &delim, strip);
                }
            }
            '#' if word.is_empty() => {
                while i < c.len() && c[i] != '\n' {
                    i += 1;
                }
            }
            '\'' => {
                let end = find_char(&c, i + 1, '\'');
                word.extend(&c[i..end]);
                i = end;
            }
            '"' => {
                let end = double_quoted_end(&c, i + 1);
                substitutions(&c[i + 1..end.saturating_sub(1).max(i + 1)], nested);
                word.extend(&c[i..end]);
                i = end;
            }
            '`' => {
                let end = find_char(&c, i + 1, '`');
                nested.push(c[i + 1..end - 1].iter().collect());
                word.extend(&c[i..end]);
                i = end;
            }
            '$' if next == Some('(') && c.get(i + 2) == Some(&'(') => {
                let end = balanced(&c, i + 1);
                word.extend(&c[i..end]);
                i = end;
            }
            '$' if next == Some('(') => {
                let end = balanced(&c, i + 1);
                nested.push(c[i + 2..end - 1].iter().collect());
                word.extend(&c[i..end]);
                i = end;
            }
            '$' if next == Some('{') => {
                let end = braced(&c, i + 1);
                substitutions(&c[i + 2..end - 1], nested);
                word.extend(&c[i..end]);
                i = end;
            }
            '<' | '>' if next == Some('(') => {
                let end = balanced(&c, i + 1);
                nested.push(c[i + 2..end - 1].iter().collect());
                word.extend(&c[i..end]);
                i = end;
            }
            '<' if next == Some('<') && c.get(i + 2) != Some(&'<') => {
                let (delim, strip, end) = heredoc_delimiter(&c, i + 2);
                heredocs.push((delim, strip));
                word.extend(&c[i..end]);
                i = end;
            }
            '(' if word.ends_with('=') => {
                // An array literal: its elements are words, not commands.
                let end = balanced(&c, i);
                lex(&c[i + 1..end - 1].iter().collect::<String>(), nested);
                word.extend(&c[i..end]);
                i = end;
            }
            '(' if word.is_empty() && next == Some('(') => {
                let end = balanced(&c, i); // (( arithmetic ))
                word.extend(&c[i..end]);
                i = end;
            }
            '&' if word.ends_with(['<', '>']) || next == Some('>') => {
                word.push(ch);
                i += 1;
            }
            ';' | '&' | '|' | '(' | ')' => {
                flush(&mut word, &mut toks);
                let two: String = c[i..(i + 2).min(c.len())].iter().collect();
                let op = match two.as_str() {
                    ";;" => ";;",
                    "&&" => "&&",
                    "||" => "||",
                    _ => match ch {
                        ';' => ";",
                        '&' => "&",
                        '|' => "|",
                        '(' => "(",
                        _ => ")",
                    },
                };
                toks.push(Tok::Sep(op));
                i += op.len();
            }
            _ => {
                word.push(ch);
                i += 1;
            }
        }
    }
    flush(&mut word, &mut toks);
    toks
}

/// The index after the next `want` from `from` (or the end).
fn find_char(c: &[char], mut i: usize, want: char) -> usize {
    while i < c.len() && c[i] != want {
        i += 1;
    }
    (i + 1).min(c.len())
}

/// The index after the `"` closing a double-quoted string that starts at `i`.
fn double_quoted_end(c: &[char], mut i: usize) -> usize {
    while i < c.len() {
        match c[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            '$' if c.get(i + 1) == Some(&'(') => i = balanced(c, i + 1),
            '$' if c.get(i + 1) == Some(&'{') => i = braced(c, i + 1),
            _ => i += 1,
        }
    }
    c.len()
}

/// The index after the `)` matching the `(` at `i`; quotes and nesting respected.
fn balanced(c: &[char], mut i: usize) -> usize {
    let mut depth = 0;
    while i < c.len() {
        match c[i] {
            '\\' => i += 1,
            '\'' => i = find_char(c, i + 1, '\'') - 1,
            '"' => i = double_quoted_end(c, i + 1) - 1,
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    c.len()
}

/// The index after the `}` matching the `{` at `i`.
fn braced(c: &[char], mut i: usize) -> usize {
    let mut depth = 0;
    while i < c.len() {
        match c[i] {
            '\\' => i += 1,
            '\'' => i = find_char(c, i + 1, '\'') - 1,
            '"' => i = double_quoted_end(c, i + 1) - 1,
            '$' if c.get(i + 1) == Some(&'(') => i = balanced(c, i + 1) - 1,
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    c.len()
}

/// The `$(…)` and backquoted code inside double-quoted or `${…}` text.
fn substitutions(c: &[char], nested: &mut Vec<String>) {
    let mut i = 0;
    while i < c.len() {
        match c[i] {
            '\\' => i += 2,
            '$' if c.get(i + 1) == Some(&'(') && c.get(i + 2) != Some(&'(') => {
                let end = balanced(c, i + 1);
                nested.push(c[i + 2..end.saturating_sub(1).max(i + 2)].iter().collect());
                i = end;
            }
            '$' if c.get(i + 1) == Some(&'{') => {
                let end = braced(c, i + 1);
                substitutions(&c[i + 2..end.saturating_sub(1).max(i + 2)], nested);
                i = end;
            }
            '`' => {
                let end = find_char(c, i + 1, '`');
                nested.push(c[i + 1..end.saturating_sub(1).max(i + 1)].iter().collect());
                i = end;
            }
            _ => i += 1,
        }
    }
}

/// After `<<` at `i`: the delimiter, whether tabs are stripped (`<<-`), and where it ends.
fn heredoc_delimiter(c: &[char], mut i: usize) -> (String, bool, usize) {
    let strip = c.get(i) == Some(&'-');
    if strip {
        i += 1;
    }
    while c.get(i) == Some(&' ') {
        i += 1;
    }
    let mut delim = String::new();
    while i < c.len() && !c[i].is_whitespace() && !";&|<>()".contains(c[i]) {
        if c[i] != '\'' && c[i] != '"' {
            delim.push(c[i]);
        }
        i += 1;
    }
    (delim, strip, i)
}

/// Skips here-document lines from `i` up to and including the delimiter line.
fn skip_heredoc(c: &[char], mut i: usize, delim: &str, strip: bool) -> usize {
    while i < c.len() {
        let end = find_char(c, i, '\n');
        let line: String = c[i..end].iter().collect();
        let line = line.trim_end_matches('\n');
        let line = if strip {
            line.trim_start_matches('\t')
        } else {
            line
        };
        i = end;
        if line == delim {
            break;
        }
    }
    i
}
