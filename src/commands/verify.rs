//! `ags verify [LAUNCH]`: a launch's run receipt checked against the host logs
//! (`crate::receipt::verify`). Exit 0 when intact; 1 with each finding when not (or when there
//! is no receipt to check).

use std::io::Write;

use crate::Error;
use crate::cli::VerifyArgs;
use crate::config::Paths;
use crate::error::CommandError;
use crate::receipt;

/// Check the receipt the arguments name.
pub fn verify(args: &VerifyArgs) -> Result<u8, Error> {
    let paths = Paths::from_env()?;
    let (launch, digest) = match &args.report {
        Some(file) => from_report(file)?,
        None => (args.launch.clone(), args.digest.clone()),
    };
    let launch = match launch {
        Some(l) => l,
        None => match latest(&paths) {
            Some(l) => l,
            None => {
                return Ok(say(&format!(
                    "no run receipts in {}",
                    receipt::dir(&paths).display()
                )));
            }
        },
    };
    let Some(path) = receipt::path(&paths, &launch).filter(|p| p.exists()) else {
        let shown = crate::text::escape_line(&launch);
        return Ok(say(&format!(
            "no run receipt of launch {shown} in {}: a receipt is written when a launch ends (after a crash, by the next launch or `ags gc`)",
            receipt::dir(&paths).display()
        )));
    };
    let verdict = receipt::verify::verify(&path, &launch, digest.as_deref(), &receipt::logs(&paths));
    let mut out = std::io::stdout().lock();
    for f in &verdict.late {
        let line = crate::text::escape_controls(&f.to_string());
        writeln!(out, "note: {line}").map_err(Error::Output)?;
    }
    let counts: Vec<String> = verdict
        .checked
        .iter()
        .map(|(log, n)| format!("{log} {n}"))
        .collect();
    let kept = match &digest {
        Some(_) => ", its digest as kept",
        None => " (pass --digest from the launch's --report to check the receipt itself)",
    };
    if verdict.findings.is_empty() {
        writeln!(
            out,
            "launch {launch}: intact: receipt{kept}; records: {}",
            counts.join(", ")
        )
        .map_err(Error::Output)?;
        return Ok(0);
    }
    for f in &verdict.findings {
        writeln!(out, "{}", crate::text::escape_controls(&f.to_string())).map_err(Error::Output)?;
    }
    writeln!(
        out,
        "launch {launch}: NOT intact: {} findings",
        verdict.findings.len()
    )
    .map_err(Error::Output)?;
    Ok(1)
}

fn say(line: &str) -> u8 {
    eprintln!("ags verify: {line}");
    1
}

/// The launch id and the receipt digest a `--report` file holds.
fn from_report(file: &std::path::Path) -> Result<(Option<String>, Option<String>), Error> {
    let bytes = std::fs::read(file).map_err(CommandError::io(format!("report {}", file.display())))?;
    let v: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| CommandError::io(format!("report {}", file.display()))(std::io::Error::other(e)))?;
    let text = |v: &serde_json::Value| v.as_str().map(String::from);
    Ok((text(&v["launch_id"]), text(&v["receipt"]["digest"])))
}

/// The latest receipt's launch (by the time in its id, `ags-PID-NANOS`).
fn latest(paths: &Paths) -> Option<String> {
    std::fs::read_dir(receipt::dir(paths))
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_suffix(".json").map(String::from))
        .filter(|l| !l.ends_with(".draft"))
        .max_by_key(|l| {
            l.rsplit('-')
                .next()
                .and_then(|n| n.parse::<u128>().ok())
                .unwrap_or(0)
        })
}
