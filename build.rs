//! Builds the two programs `ags` mounts into containers as statically linked executables:
//! the egress forwarder (`src/egress/forwarder.rs`, docs/decisions/0003) and the agent hook
//! dispatcher (`src/agent_hooks/dispatch/main.rs`, docs/agent-hook-handlers.md). Both are std
//! only and must run in any image, including ones without a libc, so they are linked with
//! `-C target-feature=+crt-static`, which Cargo cannot set for one binary of a crate: this
//! script compiles each with `$RUSTC` itself. `ags` embeds them.

use std::path::PathBuf;
use std::process::Command;

/// (output name, crate name, source, directory watched, env var carrying the content id).
const PROGRAMS: &[(&str, &str, &str, &str, &str)] = &[
    (
        "ags-egress-fwd",
        "ags_egress_fwd",
        "src/egress/forwarder.rs",
        "src/egress/forwarder.rs",
        "AGS_EGRESS_FWD_ID",
    ),
    (
        "ags-agent-hook",
        "ags_agent_hook",
        "src/agent_hooks/dispatch/main.rs",
        "src/agent_hooks",
        "AGS_AGENT_HOOK_ID",
    ),
];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    let target = std::env::var("TARGET").expect("TARGET");
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    for (name, crate_name, source, watch, id_var) in PROGRAMS {
        println!("cargo:rerun-if-changed={watch}");
        let bin = out.join(name);
        let status = Command::new(&rustc)
            .args([
                "--edition",
                "2024",
                "--crate-type",
                "bin",
                "--crate-name",
                crate_name,
            ])
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
            .args(["--cap-lints", "allow"])
            .arg("-o")
            .arg(&bin)
            .arg(source)
            .status()
            .unwrap_or_else(|e| panic!("run rustc for {name}: {e}"));
        assert!(
            status.success(),
            "building the static {name} failed (it needs the static C library, e.g. Debian's libc6-dev)"
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
