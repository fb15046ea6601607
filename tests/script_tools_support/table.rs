//! The table of tests/offline/script_tools.rs: each external command the scripts call and the Debian
//! package that provides it, and the exceptions (not from Debian, optional, implied, indirect).

/// command, the Debian package that owns it, and the package that installs it ("" = the same).
pub const TOOLS: &[(&str, &str, &str)] = &[
    ("apt-get", "apt", ""),
    ("awk", "mawk", ""),
    ("bash", "bash", ""),
    ("busybox", "busybox-static", ""),
    ("cat", "coreutils", ""),
    ("cc", "gcc", ""),
    ("chmod", "coreutils", ""),
    ("chown", "coreutils", ""),
    ("cp", "coreutils", ""),
    ("curl", "curl", ""),
    ("cut", "coreutils", ""),
    ("date", "coreutils", ""),
    ("debootstrap", "debootstrap", ""),
    ("dirname", "coreutils", ""),
    ("dpkg-query", "dpkg", ""),
    ("du", "coreutils", ""),
    ("env", "coreutils", ""),
    ("find", "findutils", ""),
    ("flock", "util-linux", ""),
    ("getent", "libc-bin", ""),
    ("git", "git", ""),
    ("grep", "grep", ""),
    ("groupadd", "passwd", ""),
    ("head", "coreutils", ""),
    ("chroot", "coreutils", ""),
    ("hostname", "hostname", ""),
    ("id", "coreutils", ""),
    ("install", "coreutils", ""),
    ("jq", "jq", ""),
    ("ldd", "libc-bin", ""),
    ("ln", "coreutils", ""),
    ("ls", "coreutils", ""),
    ("mkdir", "coreutils", ""),
    ("mkfifo", "coreutils", ""),
    ("mknod", "coreutils", ""),
    ("mktemp", "coreutils", ""),
    ("mount", "mount", ""),
    ("mv", "coreutils", ""),
    ("nproc", "coreutils", ""),
    ("paste", "coreutils", ""),
    ("podman", "podman", ""),
    ("node", "nodejs", ""),
    ("openssl", "openssl", ""),
    ("python3", "python3-minimal", "python3"),
    ("rm", "coreutils", ""),
    ("runc", "runc", ""),
    ("script", "bsdutils", ""),
    ("sed", "sed", ""),
    ("setpriv", "util-linux", ""),
    ("setsid", "util-linux", ""),
    ("sh", "dash", ""),
    ("sha256sum", "coreutils", ""),
    ("sleep", "coreutils", ""),
    ("seq", "coreutils", ""),
    ("sort", "coreutils", ""),
    ("ssh-add", "openssh-client", ""),
    ("ssh-agent", "openssh-client", ""),
    ("ssh-keygen", "openssh-client", ""),
    ("stat", "coreutils", ""),
    ("strace", "strace", ""),
    ("stty", "coreutils", ""),
    ("sudo", "sudo", ""),
    ("systemctl", "systemd", ""),
    ("tail", "coreutils", ""),
    ("tar", "tar", ""),
    ("tee", "coreutils", ""),
    ("time", "time", ""),
    ("timeout", "coreutils", ""),
    ("touch", "coreutils", ""),
    ("tr", "coreutils", ""),
    ("umount", "mount", ""),
    ("uname", "coreutils", ""),
    ("unshare", "util-linux", ""),
    ("update-ca-certificates", "ca-certificates", ""),
    ("useradd", "passwd", ""),
    ("usermod", "passwd", ""),
    ("wc", "coreutils", ""),
    ("xargs", "findutils", ""),
];

/// Commands that come from elsewhere than Debian, and from where.
pub const NOT_DEBIAN: &[(&str, &str)] = &[(
    "cargo",
    "the machine's rustup toolchain (README: a fresh machine of this kind has one; rust-toolchain.toml)",
)];

/// Commands a command runs without the script naming them.
pub const IMPLIED: &[(&str, &str)] = &[("cargo", "cc")]; // rustc links through the C compiler

/// (file, command, why): a command used only when available, the script checking for it first.
pub const OPTIONAL: &[(&str, &str, &str)] = &[
    (
        "scripts/setup-podman",
        "sudo",
        "only as a user; refuses with a hint when missing",
    ),
    (
        "scripts/bootstrap-base-image",
        "sudo",
        "only as a user; refuses with a hint when missing",
    ),
    (
        "scripts/lib.sh",
        "sudo",
        "install_missing as a user; refuses with a hint when missing",
    ),
    (
        "scripts/setup-podman",
        "systemctl",
        "only when a systemd user manager runs",
    ),
    (
        "scripts/bench-launch",
        "git",
        "the commit id in the report, else 'unknown'",
    ),
    (
        "tests/live/daily_git.rs",
        "ssh-add",
        "only when /usr/sbin/sshd exists (openssh-server, which scripts/test installs, depends on openssh-client); else the ssh-agent tests skip",
    ),
    (
        "tests/live/daily_git.rs",
        "ssh-agent",
        "only when /usr/sbin/sshd exists (openssh-server, which scripts/test installs, depends on openssh-client); else the ssh-agent tests skip",
    ),
    (
        "tests/live/daily_git.rs",
        "ssh-keygen",
        "only when /usr/sbin/sshd exists (openssh-server, which scripts/test installs, depends on openssh-client); else the ssh-agent tests skip",
    ),
    (
        "tests/common/sshd.rs",
        "ssh-keygen",
        "only when /usr/sbin/sshd exists (openssh-server, which scripts/test installs, depends on openssh-client); else the ssh:// tests skip, or fail under AGS_TEST_REQUIRE_PODMAN",
    ),
];

/// (file, command, how): commands a script's own programs run.
pub const INDIRECT: &[(&str, &str, &str)] = &[(
    "scripts/bench-launch",
    "time",
    "examples/bench_launch measures the peak RSS with /usr/bin/time",
)];
