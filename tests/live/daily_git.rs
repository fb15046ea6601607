//! Issue 12, item 1: git works in the container as the user expects.
//!
//! - The host's effective identity (`user.name`/`user.email` from the host's global config and
//!   the repository's own) reaches the agent, and nothing else of the host's git configuration
//!   (a `credential.helper` stays behind); `[git] identity = false` switches it off.
//! - `--ssh-agent` forwards a real `ssh-agent` started by the test (the key is loaded into it and
//!   then deleted from disk: it never enters the container): a static probe asks the forwarded
//!   socket for its identities in both modes (rootless: through keep-id), and `git fetch` and
//!   `git push` over SSH work against a real `sshd` on this machine's address (run as root,
//!   logging in the mode's user; rootless: reached through slirp4netns) serving a bare
//!   repository, the host key known only through the read-only `[git] known_hosts`.
//!
//! Git in the container needs an image with git and ssh: the agent image where the service has
//! it (rootful here), else the small `localhost/ags-git:latest` (containers/git) that
//! scripts/test builds and copies into the rootless service (docs/images.md). Without either the
//! container half is skipped with a note, unless `AGS_TEST_GIT_IMAGE` (set by scripts/test)
//! says the image must be there.

use crate::agent_messages;
use crate::common;

use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use agent_messages::{add_identity_hex, sign_hex, ssh_string};
use common::launch::{assert_clean, stdout};
use common::{RUN_TIMEOUT, TestEnv, each_mode, run_command, show, tool};
use serde_json::Value;

const AGENT_IMAGE: &str = "localhost/ags-agent:latest";
/// The small image with git and ssh (containers/git) that scripts/test builds in the rootful
/// service and copies into the rootless one, which has no agent image.
const GIT_IMAGE: &str = "localhost/ags-git:latest";

/// An image with git and ssh in this mode's service: the agent image where the service has it
/// (the image users run), else [`GIT_IMAGE`]. `None` when neither is there; scripts/test sets
/// `AGS_TEST_GIT_IMAGE` after building and copying the git image, and then a missing image
/// fails the test instead of skipping the container half.
fn git_image(env: &TestEnv) -> Option<&'static str> {
    let socket = env.mode().socket();
    let found = [AGENT_IMAGE, GIT_IMAGE]
        .into_iter()
        .find(|image| common::api::image_exists(&socket, image).unwrap_or(false));
    if found.is_none() {
        assert!(
            std::env::var_os("AGS_TEST_GIT_IMAGE").is_none(),
            "{}: neither {AGENT_IMAGE} nor {GIT_IMAGE} is in the service although \
             AGS_TEST_GIT_IMAGE is set (scripts/test builds and copies the git image)",
            env.mode()
        );
    }
    found
}

/// The SKIP note when [`git_image`] found none.
fn no_git_image(env: &TestEnv) -> String {
    format!(
        "{}: neither {AGENT_IMAGE} nor {GIT_IMAGE} in this service (scripts/test builds the \
         git image from containers/git and copies it into the rootless service)",
        env.mode()
    )
}

/// `git ARGS` on the host as the mode's user, in `dir`.
fn git_in(env: &TestEnv, dir: &Path, args: &[&str]) -> Output {
    let mut all = vec!["-C".to_string(), dir.display().to_string()];
    all.extend(args.iter().map(|s| s.to_string()));
    let out = run_command(env.command(tool("git"), all), None, RUN_TIMEOUT);
    assert!(out.status.success(), "git {args:?}: {}", show(&out));
    out
}

/// A repository in the workspace with one commit (made with an explicit identity).
fn init_repo(env: &TestEnv, dir: &Path) {
    git_in(env, dir, &["init", "-q", "-b", "main"]);
    git_in(
        env,
        dir,
        &[
            "-c",
            "user.name=Init",
            "-c",
            "user.email=init@example.org",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "first",
        ],
    );
}

/// `ags` with the test's label and `extra` options, `cmd` in the container, with `more_env`
/// added to its environment.
fn ags(env: &TestEnv, image: &str, extra: &[&str], cmd: &[&str], more_env: &[(&str, &Path)]) -> Output {
    let mut args = vec!["--tty=false", "--image", image, "--label"];
    let label = env.label();
    args.push(&label);
    args.extend_from_slice(extra);
    args.push("--");
    args.extend_from_slice(cmd);
    let mut command = env.cmd(&args);
    for (k, v) in more_env {
        command.env(k, v);
    }
    run_command(command, None, RUN_TIMEOUT)
}

fn plan_json(env: &TestEnv, extra: &[&str], more_env: &[(&str, &Path)]) -> Value {
    let mut args = vec!["plan", "--json"];
    args.extend_from_slice(extra);
    let mut command = env.cmd(&args);
    for (k, v) in more_env {
        command.env(k, v);
    }
    let out = run_command(command, None, RUN_TIMEOUT);
    assert!(out.status.success(), "{}", show(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_hosts_identity_reaches_the_agent_and_nothing_else_of_its_git_config() {
    each_mode(|env| {
        env.write_file(
            env.home().join(".gitconfig"),
            "[user]\n\tname = Host Person\n\temail = host@example.org\n[credential]\n\thelper = store --file /host/secret\n",
            0o644,
        );
        let work = env.work_dir();
        init_repo(env, &work);
        let plan = plan_json(env, &[], &[]);
        assert_eq!(plan["git_identity"]["name"], "Host Person", "{plan}");
        assert_eq!(plan["git_identity"]["email"], "host@example.org", "{plan}");
        assert!(!plan.to_string().contains("/host/secret"), "{plan}");
        if let Some(image) = git_image(env) {
            let script = "set -e; echo x > f; git add f; git commit -q -m agent; \
                git config --get credential.helper || echo NO-HELPER; echo DONE";
            let out = ags(env, image, &[], &["sh", "-c", script], &[]);
            assert!(stdout(&out).ends_with("NO-HELPER\nDONE\n"), "{}", show(&out));
            let log = git_in(env, &work, &["log", "-1", "--format=%an <%ae>|%cn <%ce>|%s"]);
            assert_eq!(
                stdout(&log).trim(),
                "Host Person <host@example.org>|Host Person <host@example.org>|agent",
                "{}: the commit made in the container has the host's identity",
                env.mode()
            );
        } else {
            println!("{}: the identity checked in the environment", no_git_image(env));
            let script = "echo \"$GIT_CONFIG_COUNT|$GIT_CONFIG_KEY_0=$GIT_CONFIG_VALUE_0|$GIT_CONFIG_KEY_1=$GIT_CONFIG_VALUE_1\"";
            let out = ags(env, &env.image(), &[], &["sh", "-c", script], &[]);
            assert_eq!(
                stdout(&out).trim(),
                "2|user.name=Host Person|user.email=host@example.org",
                "{}",
                show(&out)
            );
        }
        // The repository's own setting wins, as in `git config --get` on the host.
        git_in(env, &work, &["config", "user.email", "repo@example.org"]);
        assert_eq!(
            plan_json(env, &[], &[])["git_identity"]["email"],
            "repo@example.org"
        );
        env.write_global_config("[git]\nidentity = false\n");
        let plan = plan_json(env, &[], &[]);
        assert!(plan["git_identity"].is_null(), "{plan}");
        assert!(!plan["env"].to_string().contains("GIT_CONFIG_COUNT"), "{plan}");
        assert_clean(env);
    });
}

/// OpenSSH (server and so client) on this machine: scripts/test installs it.
fn has_openssh() -> bool {
    let there = Path::new("/usr/sbin/sshd").exists();
    if !there {
        println!("SKIP: no /usr/sbin/sshd (openssh-server; scripts/test installs it)");
    }
    there
}

/// A real `ssh-agent` run as the mode's user, killed on drop.
struct SshAgent {
    pid: i32,
    socket: PathBuf,
}

impl Drop for SshAgent {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid), nix::sys::signal::SIGTERM);
    }
}

/// Start an agent, load a fresh key into it and delete the private key file; returns the
/// agent and the public key line.
fn ssh_agent_with_key(env: &TestEnv) -> (SshAgent, String) {
    let dir = env.mkdir("ssh", 0o700);
    let key = dir.join("id_test");
    let key_arg = key.display().to_string();
    let keygen = ["-q", "-t", "ed25519", "-N", "", "-C", "ags-test", "-f", &key_arg];
    let out = run_command(env.command(tool("ssh-keygen"), keygen), None, RUN_TIMEOUT);
    assert!(out.status.success(), "{}", show(&out));
    let socket = dir.join("agent.sock");
    let socket_arg = socket.display().to_string();
    let out = run_command(
        env.command(tool("ssh-agent"), ["-s", "-a", &socket_arg]),
        None,
        RUN_TIMEOUT,
    );
    assert!(out.status.success(), "{}", show(&out));
    let text = stdout(&out);
    let pid = text
        .split("SSH_AGENT_PID=")
        .nth(1)
        .and_then(|s| s.split(';').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no agent pid in {text}"));
    let agent = SshAgent { pid, socket };
    let mut add = env.command(tool("ssh-add"), [&key]);
    add.env("SSH_AUTH_SOCK", &agent.socket);
    let out = run_command(add, None, RUN_TIMEOUT);
    assert!(out.status.success(), "{}", show(&out));
    std::fs::remove_file(&key).unwrap();
    let public = std::fs::read_to_string(key.with_extension("pub")).unwrap();
    (agent, public.trim().to_string())
}

/// The static agent probe (tests/support/agent_probe.c), built into `dir`.
fn build_probe(env: &TestEnv, dir: &Path) -> PathBuf {
    let out_path = dir.join("agent_probe");
    let source = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/agent_probe.c");
    let out = Command::new(tool("cc"))
        .args(["-static", "-O2", "-o"])
        .arg(&out_path)
        .arg(source)
        .output()
        .expect("running cc");
    assert!(out.status.success(), "cc: {}", show(&out));
    env.give_tree(&out_path);
    out_path
}

#[test]
fn the_forwarded_ssh_agent_answers_in_the_container_and_keys_stay_on_the_host() {
    each_mode(|env| {
        if !has_openssh() {
            return;
        }
        let (agent, _public) = ssh_agent_with_key(env);
        build_probe(env, &env.work_dir());
        let sock: &[(&str, &Path)] = &[("SSH_AUTH_SOCK", &agent.socket)];
        let plan = plan_json(env, &["--ssh-agent"], sock);
        assert_eq!(
            plan["ssh_agent"]["socket"],
            agent.socket.canonicalize().unwrap().display().to_string(),
            "{plan}"
        );
        let script = "./agent_probe; echo \"SOCK=$SSH_AUTH_SOCK\"; ls -a ~/.ssh 2>/dev/null; echo END";
        let out = ags(env, &env.image(), &["--ssh-agent"], &["sh", "-c", script], sock);
        let said = stdout(&out);
        assert!(said.contains("IDENTITIES 1\n"), "{}: {}", env.mode(), show(&out));
        assert!(said.contains("SOCK=/run/ags-ssh-agent.sock\n"), "{}", show(&out));
        assert!(!said.contains("id_test"), "{}", show(&out));
        // Without the option nothing is forwarded.
        let out = ags(env, &env.image(), &[], &["sh", "-c", script], sock);
        assert!(!stdout(&out).contains("IDENTITIES"), "{}", show(&out));
        // Refused: no agent, or a socket that is not one.
        let missing: &[(&str, &Path)] = &[("SSH_AUTH_SOCK", Path::new("/nonexistent/agent.sock"))];
        let out = ags(env, &env.image(), &["--ssh-agent"], &["true"], missing);
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        let not_socket = env.write_file("not-a-socket", "", 0o600);
        let out = ags(
            env,
            &env.image(),
            &["--ssh-agent"],
            &["true"],
            &[("SSH_AUTH_SOCK", &not_socket)],
        );
        assert_eq!(out.status.code(), Some(125), "{}", show(&out));
        assert!(
            common::launch::stderr(&out).contains("not a socket"),
            "{}",
            show(&out)
        );
        assert_clean(env);
    });
}

/// What `ssh-add -l` says about the agent, run on the host.
fn host_listing(env: &TestEnv, agent: &SshAgent) -> String {
    let mut list = env.command(tool("ssh-add"), ["-l"]);
    list.env("SSH_AUTH_SOCK", &agent.socket);
    stdout(&run_command(list, None, RUN_TIMEOUT))
}

/// A new key pair in the test's ssh directory: (private key file text, public key line, its
/// fingerprint).
fn new_key(env: &TestEnv, name: &str) -> (PathBuf, String, String) {
    let key = env.root().join("ssh").join(name);
    let key_arg = key.display().to_string();
    let keygen = ["-q", "-t", "ed25519", "-N", "", "-C", name, "-f", &key_arg];
    let out = run_command(env.command(tool("ssh-keygen"), keygen), None, RUN_TIMEOUT);
    assert!(out.status.success(), "{}", show(&out));
    let public = std::fs::read_to_string(key.with_extension("pub")).unwrap();
    let out = run_command(
        env.command(tool("ssh-keygen"), ["-l", "-f", &format!("{key_arg}.pub")]),
        None,
        RUN_TIMEOUT,
    );
    let fp = stdout(&out).split_whitespace().nth(1).unwrap().to_string();
    (key, public.trim().to_string(), fp)
}

/// Issue 22, finding 7: the container speaks the raw agent protocol to the forwarded socket
/// (remove all identities, lock with its own passphrase, add a key of its own); the filter
/// answers each with a failure, the host's agent still lists its one key afterwards (not
/// emptied, not locked, nothing added), and the refusals are in the egress log. With
/// `[git] ssh_keys`, a second key of the agent is neither listed nor used for signing.
#[test]
fn the_container_cannot_empty_lock_or_load_the_forwarded_agent() {
    each_mode(|env| {
        if !has_openssh() {
            return;
        }
        let (agent, public) = ssh_agent_with_key(env);
        let before = host_listing(env, &agent);
        assert!(before.contains("ags-test"), "{before}");
        let (extra, extra_public, extra_fp) = new_key(env, "extra");
        let add = add_identity_hex(&std::fs::read_to_string(&extra).unwrap());
        build_probe(env, &env.work_dir());
        let lock = hex::encode([&[22u8][..], &ssh_string(b"hunter2")].concat());
        let script = format!("./agent_probe send 13 {lock} {add} 0b; ./agent_probe; echo END");
        let sock: &[(&str, &Path)] = &[("SSH_AUTH_SOCK", &agent.socket)];
        let out = ags(env, &env.image(), &["--ssh-agent"], &["sh", "-c", &script], sock);
        let said = stdout(&out);
        assert!(
            said.starts_with("REPLY 5\nREPLY 5\nREPLY 5\nREPLY 12\nIDENTITIES 1\nEND"),
            "{}: {}",
            env.mode(),
            show(&out)
        );
        assert_eq!(
            host_listing(env, &agent),
            before,
            "{}: the host's agent changed",
            env.mode()
        );
        let log = env.run(["log", "--egress", "--json", "-n", "100"]);
        let records: Vec<Value> = stdout(&log)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .filter(|r: &Value| r["kind"] == "ssh-agent")
            .collect();
        let reasons: Vec<&str> = records.iter().map(|r| r["reason"].as_str().unwrap()).collect();
        assert_eq!(reasons.len(), 3, "{reasons:?}");
        for (reason, what) in reasons
            .iter()
            .zip(["message 19 (", "message 22 (", "message 17 ("])
        {
            assert!(reason.starts_with(what), "{reasons:?}");
        }
        assert!(records.iter().all(|r| r["decision"] == "refused"), "{records:?}");

        // Two keys in the agent, one configured: only it is listed and signs.
        let mut add = env.command(tool("ssh-add"), [&extra]);
        add.env("SSH_AUTH_SOCK", &agent.socket);
        assert!(run_command(add, None, RUN_TIMEOUT).status.success());
        let first_fp = before.split_whitespace().nth(1).unwrap().to_string();
        assert_ne!(first_fp, extra_fp);
        env.write_global_config(&format!("[git]\nssh_keys = [\"{first_fp}\"]\n"));
        let script = format!(
            "./agent_probe; ./agent_probe send {} {}",
            sign_hex(&public),
            sign_hex(&extra_public)
        );
        let out = ags(env, &env.image(), &["--ssh-agent"], &["sh", "-c", &script], sock);
        assert_eq!(
            stdout(&out),
            "IDENTITIES 1\nREPLY 14\nREPLY 5\n",
            "{}: {}",
            env.mode(),
            show(&out)
        );
        assert_clean(env);
    });
}

/// `sshd` on this machine for the test (its own port, host key and authorized key), killed on
/// drop.
struct Sshd {
    child: Child,
    addr: String,
    port: u16,
    host_key: String,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn host_address() -> String {
    let out = Command::new("hostname").arg("-I").output().expect("hostname -I");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .find(|a| a.parse::<std::net::Ipv4Addr>().is_ok_and(|ip| !ip.is_loopback()))
        .map(String::from)
        .expect("a non-loopback IPv4 address")
}

fn start_sshd(dir: &Path, authorized: &str) -> Sshd {
    std::fs::create_dir_all("/run/sshd").unwrap();
    let host_key = dir.join("host_key");
    let out = Command::new(tool("ssh-keygen"))
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(&host_key)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));
    std::fs::write(dir.join("authorized_keys"), format!("{authorized}\n")).unwrap();
    let addr = host_address();
    let port = TcpListener::bind((addr.as_str(), 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = dir.join("sshd_config");
    // UsePAM: without PAM, sshd refuses an account whose password is locked (the rootless test
    // user's is) even for a key.
    std::fs::write(
        &config,
        format!(
            "Port {port}\nListenAddress {addr}\nHostKey {}\nAuthorizedKeysFile {}\nStrictModes no\nUsePAM yes\n\
             PasswordAuthentication no\nKbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\n\
             PidFile none\nLogLevel VERBOSE\n",
            host_key.display(),
            dir.join("authorized_keys").display()
        ),
    )
    .unwrap();
    let child = Command::new("/usr/sbin/sshd")
        .args(["-D", "-e", "-f"])
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("sshd.log")).unwrap())
        .spawn()
        .expect("starting sshd");
    let host_key = std::fs::read_to_string(host_key.with_extension("pub")).unwrap();
    let mut sshd = Sshd {
        child,
        addr,
        port,
        host_key: host_key.split_whitespace().take(2).collect::<Vec<_>>().join(" "),
    };
    // Ready when it answers with its banner; bounded, with room for a loaded machine.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while std::time::Instant::now() < deadline {
        if let Ok(mut s) = TcpStream::connect((sshd.addr.as_str(), sshd.port)) {
            let _ = s.set_read_timeout(Some(std::time::Duration::from_secs(10)));
            let mut banner = [0u8; 4];
            if s.read_exact(&mut banner).is_ok() && &banner == b"SSH-" {
                return sshd;
            }
        }
        if let Ok(Some(status)) = sshd.child.try_wait() {
            let log = std::fs::read_to_string(dir.join("sshd.log")).unwrap_or_default();
            panic!("sshd exited ({status}): {log}");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("sshd did not answer within 60 s");
}

#[test]
fn git_fetch_and_push_over_ssh_through_the_forwarded_agent() {
    each_mode(|env| {
        if !has_openssh() {
            return;
        }
        if nix::unistd::geteuid().as_raw() != 0 {
            println!("SKIP: {}: sshd needs a root test process", env.mode());
            return;
        }
        let Some(image) = git_image(env) else {
            println!("SKIP: {}", no_git_image(env));
            return;
        };
        let (agent, public) = ssh_agent_with_key(env);
        let sshd_dir = env.mkdir("sshd", 0o700);
        let sshd = start_sshd(&sshd_dir, &public);
        // A bare repository served by sshd, with a commit the workspace does not have.
        let seed = env.mkdir("seed", 0o755);
        init_repo(env, &seed);
        git_in(
            env,
            &seed,
            &[
                "-c",
                "user.name=R",
                "-c",
                "user.email=r@example.org",
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                "remote-only",
            ],
        );
        let bare = env.root().join("remote.git");
        git_in(
            env,
            env.root(),
            &[
                "clone",
                "-q",
                "--bare",
                &seed.display().to_string(),
                &bare.display().to_string(),
            ],
        );
        let remote_head = stdout(&git_in(env, &bare, &["rev-parse", "main"]))
            .trim()
            .to_string();
        let work = env.work_dir();
        init_repo(env, &work);
        // sshd logs in as the mode's user (rootless: agstest), who owns the repository: git
        // refuses a repository of another owner.
        let url = format!(
            "ssh://{}@{}:{}{}",
            env.account().name,
            sshd.addr,
            sshd.port,
            bare.display()
        );
        git_in(env, &work, &["remote", "add", "origin", &url]);
        let known = env.write_file(
            "known_hosts",
            format!("[{}]:{} {}\n", sshd.addr, sshd.port, sshd.host_key),
            0o644,
        );
        env.write_global_config(&format!("[git]\nknown_hosts = \"{}\"\n", known.display()));
        env.write_file(
            env.home().join(".gitconfig"),
            "[user]\nname = Host Person\nemail = host@example.org\n",
            0o644,
        );
        // `ssh-add -D` (remove all identities) is refused by the filter: the fetch still works.
        let script = "ssh-add -D 2>&1 || echo REMOVE-REFUSED; set -e; git fetch -q origin; git rev-parse origin/main; \
            git commit -q --allow-empty -m from-agent; git push -q origin HEAD:refs/heads/agent; \
            ls /etc/ssh/ssh_known_hosts; echo > /etc/ssh/ssh_known_hosts 2>/dev/null && echo KNOWN-HOSTS-WRITABLE; echo DONE";
        let sock: &[(&str, &Path)] = &[("SSH_AUTH_SOCK", &agent.socket)];
        let out = ags(
            env,
            image,
            &["--ssh-agent", "--network", "open"],
            &["sh", "-c", script],
            sock,
        );
        let said = stdout(&out);
        let log = std::fs::read_to_string(sshd_dir.join("sshd.log")).unwrap_or_default();
        assert!(
            said.contains(&format!("{remote_head}\n")),
            "{}\n--- sshd\n{log}",
            show(&out)
        );
        assert!(
            said.ends_with("DONE\n")
                && said.contains("REMOVE-REFUSED")
                && !said.contains("KNOWN-HOSTS-WRITABLE"),
            "{}",
            show(&out)
        );
        let pushed = git_in(env, &bare, &["log", "-1", "--format=%an|%s", "agent"]);
        assert_eq!(stdout(&pushed).trim(), "Host Person|from-agent");
        // Without the forwarded agent the same fetch cannot authenticate.
        let out = ags(
            env,
            image,
            &["--network", "open"],
            &["sh", "-c", "git fetch -q origin && echo FETCHED"],
            sock,
        );
        assert!(!stdout(&out).contains("FETCHED"), "{}", show(&out));
        drop(sshd);
        assert_clean(env);
    });
}
