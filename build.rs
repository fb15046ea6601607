//! Builds the egress forwarder (`src/egress/forwarder.rs`, std only) as a statically linked
//! executable that `ags` embeds and mounts into allowlist-mode containers (docs/decisions/0003).
//! It must run in any image, including ones without a libc, so it is linked with
//! `-C target-feature=+crt-static`, which Cargo cannot set for one binary of a crate: this
//! script compiles that one file with `$RUSTC` itself.

use std::path::PathBuf;
use std::process::Command;

const SOURCE: &str = "src/egress/forwarder.rs";

fn main() {
    println!("cargo:rerun-if-changed={SOURCE}");
    println!("cargo:rerun-if-changed=build.rs");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    let target = std::env::var("TARGET").expect("TARGET");
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let bin = out.join("ags-egress-fwd");
    let status = Command::new(rustc)
        .args([
            "--edition",
            "2024",
            "--crate-type",
            "bin",
            "--crate-name",
            "ags_egress_fwd",
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
        .arg("-o")
        .arg(&bin)
        .arg(SOURCE)
        .status()
        .expect("run rustc for the egress forwarder");
    assert!(
        status.success(),
        "building the static egress forwarder failed (it needs the static C library, e.g. Debian's libc6-dev)"
    );
    let bytes = std::fs::read(&bin).expect("read the egress forwarder");
    // FNV-1a: names the installed copy by content (no build dependencies needed).
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in &bytes {
        h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
    }
    println!("cargo:rustc-env=AGS_EGRESS_FWD_ID={h:016x}");
}
