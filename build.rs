//! Builds the two programs `ags` mounts into containers as statically linked executables:
//! the egress forwarder (`crates/egress-fwd`, docs/decisions/0003) and the agent hook
//! dispatcher (`crates/agent-hook`, docs/agent-hook-handlers.md). Both are std only and must
//! run in any image, including ones without a libc, so they are linked with
//! `-C target-feature=+crt-static`, which Cargo cannot set for one crate of a build: this script
//! compiles each with `$RUSTC` itself (a crate's library first, as an rlib, when it has one).
//! `ags` embeds them.

use std::path::{Path, PathBuf};
use std::process::Command;

/// (output name, crate name, crate directory, env var carrying the content id).
const PROGRAMS: &[(&str, &str, &str, &str)] = &[
    (
        "ags-egress-fwd",
        "ags_egress_fwd",
        "crates/egress-fwd",
        "AGS_EGRESS_FWD_ID",
    ),
    (
        "ags-agent-hook",
        "ags_agent_hook",
        "crates/agent-hook",
        "AGS_AGENT_HOOK_ID",
    ),
];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    for (name, crate_name, dir, id_var) in PROGRAMS {
        println!("cargo:rerun-if-changed={dir}/src");
        let lib = Path::new(dir).join("src/lib.rs");
        let mut main = rustc("bin", crate_name);
        if lib.exists() {
            let mut rlib = rustc("rlib", crate_name);
            run(name, rlib.arg("--out-dir").arg(&out).arg(&lib));
            let extern_arg = format!(
                "{crate_name}={}",
                out.join(format!("lib{crate_name}.rlib")).display()
            );
            main.arg("--extern").arg(extern_arg).arg("-L").arg(&out);
        }
        let bin = out.join(name);
        run(
            name,
            main.arg("-o").arg(&bin).arg(Path::new(dir).join("src/main.rs")),
        );
        let bytes = std::fs::read(&bin).unwrap_or_else(|e| panic!("read {name}: {e}"));
        // FNV-1a: names the installed copy by content (no build dependencies needed).
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in &bytes {
            h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
        println!("cargo:rustc-env={id_var}={h:016x}");
    }
}

/// A `rustc` for one crate type of a static, size-optimised, symbol-stripped program.
fn rustc(crate_type: &str, crate_name: &str) -> Command {
    let target = std::env::var("TARGET").expect("TARGET");
    let mut cmd = Command::new(std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into()));
    cmd.args(["--edition", "2024", "--crate-type", crate_type, "--crate-name"])
        .arg(if crate_type == "bin" {
            format!("{crate_name}_bin")
        } else {
            crate_name.to_string()
        })
        .args(["--target", &target])
        .args([
            "-C",
            "target-feature=+crt-static",
            "-C",
            "opt-level=s",
            "-C",
            "panic=abort",
        ])
        .args(["-C", "strip=symbols", "-C", "codegen-units=1"])
        .args(["--cap-lints", "allow"]);
    cmd
}

fn run(name: &str, cmd: &mut Command) {
    let status = cmd
        .status()
        .unwrap_or_else(|e| panic!("run rustc for {name}: {e}"));
    assert!(
        status.success(),
        "building the static {name} failed (it needs the static C library, e.g. Debian's libc6-dev)"
    );
}
