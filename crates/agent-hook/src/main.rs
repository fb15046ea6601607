//! `ags-agent-hook`: the agent hook dispatcher (docs/agent-hook-handlers.md). Every entry of the
//! generated hook wiring runs `ags-agent-hook --agent AGENT --event NATIVE_EVENT` with the
//! agent's hook input on stdin; it prints the agent's answer, sends the records to the host and
//! exits with the agent's status for the answer.
//!
//! `--handlers PATH` and `--socket PATH` replace the fixed container paths (tests and the
//! benchmark run it outside a container). The library of this crate does the work; this
//! file wires argv, stdin, stdout and the socket.

use std::io::{Read, Write};
use std::process::ExitCode;

use ags_agent_hook::{HANDLERS_PATH, SOCKET_PATH, answer, flow, handlers, send};

/// Largest hook input read from stdin (an agent's post-tool input carries the tool's output; a
/// longer one is cut, is no longer JSON, and a guarded pre-tool call is then blocked).
const INPUT_MAX: u64 = 16 * 1024 * 1024;
/// Largest handlers file read.
const HANDLERS_MAX: u64 = 4 * 1024 * 1024;

fn main() -> ExitCode {
    let mut agent = None;
    let mut event = None;
    let mut handlers_path = HANDLERS_PATH.to_string();
    let mut socket_path = SOCKET_PATH.to_string();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let slot = match a.as_str() {
            "--agent" => &mut agent,
            "--event" => &mut event,
            "--handlers" => {
                handlers_path = args.next().unwrap_or_default();
                continue;
            }
            "--socket" => {
                socket_path = args.next().unwrap_or_default();
                continue;
            }
            _ => {
                // Never break the agent over its command line: answer "allow" in no protocol.
                eprintln!("ags-agent-hook: unknown argument {a:?}");
                return ExitCode::SUCCESS;
            }
        };
        *slot = args.next();
    }
    let (Some(agent), Some(event)) = (agent, event) else {
        eprintln!("ags-agent-hook: usage: ags-agent-hook --agent AGENT --event NATIVE_EVENT");
        return ExitCode::SUCCESS;
    };
    let mut input = Vec::new();
    let _ = std::io::stdin().take(INPUT_MAX).read_to_end(&mut input);
    let handlers = read(&handlers_path).and_then(|b| handlers::parse(&b));
    let cwd = std::env::current_dir()
        .ok()
        .map(|p| p.to_string_lossy().into_owned());
    let d = flow::dispatch(&agent, &event, &input, &handlers, cwd);
    if !d.allows_call {
        // The answer first: the records must not delay or lose it.
        write_answer(&d.answer);
        send::send(&socket_path, &d.records);
        return ExitCode::from(d.answer.exit_code);
    }
    // A call that runs is recorded first, or does not run (session-12 attack F7).
    let answer = match send::send(&socket_path, &d.records) {
        send::Sent::Delivered | send::Sent::NoSocket => d.answer,
        send::Sent::Lost => answer::answer(&agent, Some(answer::UNRECORDED)),
    };
    write_answer(&answer);
    ExitCode::from(answer.exit_code)
}

fn write_answer(a: &answer::Answer) {
    let _ = std::io::stdout().write_all(a.stdout.as_bytes());
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().write_all(a.stderr.as_bytes());
}

fn read(path: &str) -> Result<Vec<u8>, String> {
    let f = std::fs::File::open(path).map_err(|e| format!("{path}: {e}"))?;
    let mut out = Vec::new();
    f.take(HANDLERS_MAX)
        .read_to_end(&mut out)
        .map_err(|e| format!("{path}: {e}"))?;
    Ok(out)
}
