//! Benchmark of the git check around each launch (`workspace::git_inventory`): the inventory
//! taken before the container starts (`take`) and the comparison after it (`check`), each
//! against `find ROOT -name .git` over the same tree (the cheapest way a shell would look), as
//! a ratio.
//!
//! The tree, generated here (deterministic): a repository whose work tree looks like a
//! JavaScript project — `AGS_BENCH_DIRS` directories (default 20 000) of 10 files each, three
//! levels deep, a `.git` with 256 object directories of 8 loose objects each and hook samples,
//! plus one nested repository — so about 220 000 entries. Each tool runs 5 times after a
//! warm-up; the medians are printed.
//!
//! Run: `cargo bench --bench git_scan` (`AGS_BENCH_DIRS=100000` for a bigger tree).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ags::workspace::git_inventory;

fn tree(root: &Path, dirs: usize) {
    let git = root.join(".git");
    for i in 0..256 {
        let objects = git.join(format!("objects/{i:02x}"));
        std::fs::create_dir_all(&objects).unwrap();
        for o in 0..8 {
            std::fs::write(objects.join(format!("{o:038x}")), "x").unwrap();
        }
    }
    std::fs::create_dir_all(git.join("hooks")).unwrap();
    for h in [
        "pre-commit",
        "pre-push",
        "commit-msg",
        "post-update",
        "pre-rebase",
        "update",
    ] {
        std::fs::write(git.join(format!("hooks/{h}.sample")), "#!/bin/sh\nexit 0\n").unwrap();
    }
    std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(git.join("config"), "[core]\n\tbare = false\n").unwrap();
    for d in 0..dirs {
        let dir = root.join(format!("node_modules/p{}/d{}/e{d}", d % 50, d % 997));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..10 {
            std::fs::write(dir.join(format!("f{f}.js")), "x").unwrap();
        }
    }
    let nested = root.join("vendor/lib/.git");
    std::fs::create_dir_all(nested.join("objects")).unwrap();
    std::fs::write(nested.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(nested.join("config"), "[core]\n\tbare = false\n").unwrap();
}

fn median(mut f: impl FnMut()) -> Duration {
    f();
    let mut times: Vec<Duration> = (0..5)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    times.sort();
    times[2]
}

fn main() {
    let dirs = std::env::var("AGS_BENCH_DIRS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let tmp = tempfile::tempdir().unwrap();
    let root: PathBuf = tmp.path().canonicalize().unwrap();
    tree(&root, dirs);
    let roots = [root.clone()];
    let before = git_inventory::take(&roots);
    let take = median(|| {
        assert_eq!(git_inventory::take(&roots).len(), before.len());
    });
    let check = median(|| {
        let s = git_inventory::check(&before, &[]);
        assert!(s.incomplete.is_empty() && s.findings.is_empty());
    });
    let find = median(|| {
        let out = std::process::Command::new("find")
            .arg(&root)
            .args(["-name", ".git"])
            .output()
            .unwrap();
        assert!(out.status.success());
    });
    println!(
        "git_inventory: {dirs} directories, ~{} entries: take {:.1} ms, check {:.1} ms, find -name .git {:.1} ms, ratios {:.2} and {:.2}",
        dirs * 11,
        take.as_secs_f64() * 1e3,
        check.as_secs_f64() * 1e3,
        find.as_secs_f64() * 1e3,
        take.as_secs_f64() / find.as_secs_f64(),
        check.as_secs_f64() / find.as_secs_f64()
    );
}
