//! `ags verify`: a receipt checked against itself and the logs it closes.
//!
//! The receipt's seal must be the digest of its body (and, when the caller kept it, the file's
//! digest must be the one `--report` printed). Then, per log, the launch's records are read from
//! `NAME.1` and `NAME` in file order: each must carry its link, numbered one past the previous
//! and naming the previous record's digest, and the last must be the receipt's count and
//! digest. A line that names the launch but is not a record is reported too. Every finding
//! names the file and line.
//!
//! The chain's last record is the receipt's closing record, so the chain's end is where the
//! receipt closed it in the file. Records of the launch after it were written after the receipt
//! closed (a connection that ended after the launch, or added since): without a link (no
//! chain is open then) they are listed apart, as what the receipt does not cover, and do not
//! make it fail; a linked one there is a copy, found.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::Body;
use crate::logfile::chain::{self, GENESIS};

/// One thing found wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The file.
    pub file: PathBuf,
    /// Its line (from 1), when the finding is about one.
    pub line: Option<usize>,
    /// What is wrong.
    pub what: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(n) => write!(f, "{}:{n}: {}", self.file.display(), self.what),
            None => write!(f, "{}: {}", self.file.display(), self.what),
        }
    }
}

/// What [`verify`] found: every finding.
#[derive(Debug)]
pub struct Verdict {
    /// The records checked, per log.
    pub checked: Vec<(String, u64)>,
    /// What is wrong (none: intact).
    pub findings: Vec<Finding>,
    /// Records of the launch after the end of its sealed chain: not covered by the receipt.
    pub late: Vec<Finding>,
}

/// Check the receipt at `receipt`, which must be `launch`'s (and whose file digest should be
/// `kept`, when given), against the logs of `logs` (name → path).
pub fn verify(receipt: &Path, launch: &str, kept: Option<&str>, logs: &[(&str, PathBuf)]) -> Verdict {
    let (mut findings, mut late) = (Vec::new(), Vec::new());
    let at = |what: String| Finding {
        file: receipt.to_path_buf(),
        line: None,
        what,
    };
    let unread = |what: String| Verdict {
        checked: vec![],
        findings: vec![at(what)],
        late: vec![],
    };
    let bytes = match std::fs::read(receipt) {
        Ok(b) => b,
        Err(e) => return unread(format!("cannot be read: {e}")),
    };
    if let Some(kept) = kept {
        let digest = super::file_digest(&bytes);
        if digest != kept.trim() {
            findings.push(at(format!(
                "its digest is {digest}, not {} as kept: the receipt was changed or replaced",
                kept.trim()
            )));
        }
    }
    let mut lines = bytes.split(|b| *b == b'\n');
    let (body_line, seal_line) = (lines.next().unwrap_or_default(), lines.next().unwrap_or_default());
    #[derive(Deserialize)]
    struct Seal {
        seal: String,
    }
    match serde_json::from_slice::<Seal>(seal_line) {
        Ok(s) if s.seal == chain::digest(body_line) => {}
        Ok(_) => findings.push(at(
            "its seal is not the digest of its body: the receipt was changed".into(),
        )),
        Err(_) => findings.push(at(
            "its second line is not its seal: the receipt was changed or cut".into(),
        )),
    }
    let body: Body = match serde_json::from_slice(body_line) {
        Ok(b) => b,
        Err(e) => {
            let mut v = unread(format!("its body is not a receipt: {e}"));
            v.findings.splice(0..0, findings);
            return v;
        }
    };
    if body.draft.launch_id != launch {
        findings.push(at(format!(
            "it is the receipt of launch {}, not of {launch}: it was replaced",
            crate::text::escape_line(&body.draft.launch_id)
        )));
    }
    let mut checked = Vec::new();
    for (name, log) in logs {
        let Some(head) = body.logs.get(*name) else {
            findings.push(at(format!("it does not close the {name} log")));
            continue;
        };
        let n = check_log(log, launch, head, (&mut findings, &mut late));
        checked.push((name.to_string(), n));
    }
    Verdict {
        checked,
        findings,
        late,
    }
}

/// Check `launch`'s chain in the log at `log` (its rotated file first) against `head`; the
/// number of the launch's records found. What is wrong goes to the first list, records after
/// the chain's sealed end to the second.
fn check_log(
    log: &Path,
    launch: &str,
    head: &chain::Head,
    (findings, late): (&mut Vec<Finding>, &mut Vec<Finding>),
) -> u64 {
    // Lines that hold neither the id's bytes nor a `\u` escape (which could spell it, or the
    // key) cannot name the launch: not parsed.
    let (needle, escape) = (
        memchr::memmem::Finder::new(launch.as_bytes()),
        memchr::memmem::Finder::new(b"\\u"),
    );
    let (mut seq, mut prev, mut last) = (0u64, GENESIS.to_string(), None::<(PathBuf, usize)>);
    let mut sealed = false;
    for file in [crate::logfile::rotated(log), log.to_path_buf()] {
        let Ok(bytes) = std::fs::read(&file) else { continue };
        for (i, line) in bytes.split(|b| *b == b'\n').enumerate() {
            if line.is_empty() || (needle.find(line).is_none() && escape.find(line).is_none()) {
                continue;
            }
            let (record, link) = chain::split(line);
            let whose = whose(&record, launch, needle.find(line).is_some());
            let late_one = sealed && link.is_none() && whose != Whose::Forged;
            let mut say = |what: String| {
                let list = if late_one { &mut *late } else { &mut *findings };
                list.push(Finding {
                    file: file.clone(),
                    line: Some(i + 1),
                    what: match late_one {
                        true => "a record of this launch after its receipt closed: not covered by it".into(),
                        false => what,
                    },
                });
            };
            match whose {
                Whose::Mine => {}
                Whose::Other => continue,
                Whose::Forged => {
                    say("a record with this launch's record id under another launch id: forged".into());
                    continue;
                }
                Whose::Broken => {
                    say("names this launch but is not a record: changed or cut".into());
                    continue;
                }
            }
            match link {
                None => say("a record of this launch without its link: inserted".into()),
                Some(_) if sealed => {
                    say("a chained record of this launch after its chain's end: a copy".into())
                }
                Some(link) => {
                    if let Some(what) = out_of_place(&link, seq, &prev) {
                        say(what);
                    }
                    (seq, prev, last) = (link.seq + 1, chain::digest(line), Some((file.clone(), i + 1)));
                    sealed = seq == head.count && prev == head.head;
                }
            }
        }
    }
    if seq != head.count || prev != head.head {
        let (file, line) = last.map_or((log.to_path_buf(), None), |(f, l)| (f, Some(l)));
        findings.push(Finding {
            file,
            line,
            what: format!(
                "the chain ends at {seq} records whose last digest is {}; the receipt closed it at {} records, {}: records were changed, removed or added at the end, or the chain was replaced",
                short(&prev),
                head.count,
                short(&head.head)
            ),
        });
    }
    seq
}

/// Whose a line is, to `launch`.
#[derive(Debug, PartialEq, Eq)]
enum Whose {
    /// A record of the launch.
    Mine,
    /// Another launch's, or no record naming it.
    Other,
    /// Another launch id on a record id of the launch (`LAUNCH.N`): never written so.
    Forged,
    /// Not a record, but the launch's id is in it.
    Broken,
}

/// Whose the record `record` (its link split off) is; `named` when its bytes hold the id.
fn whose(record: &[u8], launch: &str, named: bool) -> Whose {
    #[derive(Deserialize)]
    struct Of<'a> {
        #[serde(borrow)]
        launch_id: std::borrow::Cow<'a, str>,
        #[serde(borrow, default)]
        id: Option<std::borrow::Cow<'a, str>>,
    }
    let of_launch = |id: &str| id.strip_prefix(launch).is_some_and(|n| n.starts_with('.'));
    match serde_json::from_slice::<Of>(record) {
        Ok(of) if of.launch_id == launch => Whose::Mine,
        Ok(of) if of.id.as_deref().is_some_and(of_launch) => Whose::Forged,
        Ok(_) => Whose::Other,
        Err(_) if named => Whose::Broken,
        Err(_) => Whose::Other,
    }
}

/// What is wrong with a link found where record `seq`, following the digest `prev`, belongs.
fn out_of_place(link: &chain::Link, seq: u64, prev: &str) -> Option<String> {
    if link.seq != seq {
        return Some(format!(
            "record {} of the chain where record {seq} belongs: records were removed, inserted or reordered",
            link.seq
        ));
    }
    (link.prev != prev).then(|| {
        format!(
            "record {seq} does not follow the record before it: that one was changed, removed or replaced"
        )
    })
}

fn short(d: &str) -> &str {
    d.get(..12).unwrap_or(d)
}
