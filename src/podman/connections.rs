//! Podman's named connections (`podman system connection`), read where Podman reads them, so
//! `--connection NAME` (or `CONTAINER_CONNECTION`) means the same service for `ags` as for
//! `podman --connection NAME`:
//!
//! 1. `podman-connections.json` (Podman 5): `$PODMAN_CONNECTIONS_CONF`, else
//!    `$XDG_CONFIG_HOME/containers/podman-connections.json` (`~/.config/containers/…`);
//!    `{"Connection": {"Connections": {"NAME": {"URI": …, "Identity": …}}}}`.
//! 2. `containers.conf` `[engine.service_destinations.NAME]` (`uri`, `identity`): the files
//!    Podman merges, later ones winning — `$CONTAINERS_CONF` alone when set, else
//!    `/usr/share/containers/containers.conf`, `/etc/containers/containers.conf`,
//!    `/etc/containers/containers.conf.d/*.conf` and, for a non-root user,
//!    `$XDG_CONFIG_HOME/containers/containers.conf` and its `containers.conf.d/*.conf`; then
//!    `$CONTAINERS_CONF_OVERRIDE`.
//!
//! Part of stage 4 (`podman`): reads those files, nothing else. The default connection
//! (`Connection.Default`, `[engine] active_service`) is not used implicitly: `ags` talks to
//! the local service unless told otherwise, as `podman` without `--remote` does.
//! Ref: <https://docs.podman.io/en/latest/markdown/podman-system-connection.1.html>,
//! containers.conf(5).

use std::path::{Path, PathBuf};

/// One named connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connection {
    pub name: String,
    /// The service URL.
    pub uri: String,
    /// The SSH identity file, if the connection names one.
    pub identity: Option<PathBuf>,
    /// The file it was found in.
    pub file: PathBuf,
}

/// Why a named connection could not be found or read.
#[derive(Debug, thiserror::Error)]
pub enum ConnectionError {
    #[error(
        "no Podman connection named {name:?} (looked in {files}); list them with `podman system connection list`, or give the URL with --url"
    )]
    NotFound { name: String, files: String },
    #[error("reading Podman's connections from {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{}: {why}; fix the file or use --url", file.display())]
    Bad { file: PathBuf, why: String },
}

/// Where Podman keeps connections, for the environment `env` and effective uid `euid`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sources {
    /// `podman-connections.json`.
    pub json: Option<PathBuf>,
    /// The `containers.conf` files, in merge order (later wins).
    pub confs: Vec<PathBuf>,
}

impl Sources {
    /// The files Podman reads (see the module doc); `env` looks up environment variables.
    pub fn locate(env: &dyn Fn(&str) -> Option<String>, euid: u32) -> Sources {
        let set = |k: &str| env(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        let config_home = set("XDG_CONFIG_HOME").or_else(|| set("HOME").map(|h| h.join(".config")));
        let json = set("PODMAN_CONNECTIONS_CONF").or_else(|| {
            config_home
                .as_ref()
                .map(|c| c.join("containers/podman-connections.json"))
        });
        let mut confs = Vec::new();
        if let Some(only) = set("CONTAINERS_CONF") {
            confs.push(only);
        } else {
            confs.push(PathBuf::from("/usr/share/containers/containers.conf"));
            confs.push(PathBuf::from("/etc/containers/containers.conf"));
            confs.extend(dropins(Path::new("/etc/containers/containers.conf.d")));
            if euid != 0
                && let Some(home) = &config_home
            {
                confs.push(home.join("containers/containers.conf"));
                confs.extend(dropins(&home.join("containers/containers.conf.d")));
            }
        }
        confs.extend(set("CONTAINERS_CONF_OVERRIDE"));
        Sources { json, confs }
    }

    /// Find connection `name`: `podman-connections.json` first, then `containers.conf`.
    pub fn find(&self, name: &str) -> Result<Connection, ConnectionError> {
        if let Some(json) = &self.json
            && let Some(found) = read_optional(json)?
            && let Some(c) = from_json(&found, name, json)?
        {
            return Ok(c);
        }
        let mut found = None;
        for conf in &self.confs {
            if let Some(text) = read_optional(conf)?
                && let Some(c) = from_toml(&text, name, conf)?
            {
                found = Some(c);
            }
        }
        found.ok_or_else(|| {
            let mut files: Vec<String> = self.json.iter().map(|p| p.display().to_string()).collect();
            files.extend(self.confs.iter().map(|p| p.display().to_string()));
            ConnectionError::NotFound {
                name: name.into(),
                files: files.join(", "),
            }
        })
    }
}

/// The `*.conf` files of a drop-in directory, in name order (missing directory: none).
fn dropins(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "conf"))
        .collect();
    out.sort();
    out
}

/// A file's text, `None` when it does not exist.
fn read_optional(path: &Path) -> Result<Option<String>, ConnectionError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ConnectionError::Read {
            path: path.into(),
            source,
        }),
    }
}

fn from_json(text: &str, name: &str, file: &Path) -> Result<Option<Connection>, ConnectionError> {
    let root: serde_json::Value =
        serde_json::from_str(text).map_err(|e| bad(file, format!("not valid JSON ({e})")))?;
    let escaped = name.replace('~', "~0").replace('/', "~1");
    let Some(entry) = root.pointer(&format!("/Connection/Connections/{escaped}")) else {
        return Ok(None);
    };
    let field = |key: &str| entry.get(key).and_then(|v| v.as_str());
    let no_uri = format!("connection {name:?} has no URI");
    connection(name, file, (field("URI"), field("Identity")), no_uri).map(Some)
}

fn from_toml(text: &str, name: &str, file: &Path) -> Result<Option<Connection>, ConnectionError> {
    let root: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| bad(file, format!("not valid TOML ({})", e.message())))?;
    let Some(entry) = root
        .get("engine")
        .and_then(|e| e.get("service_destinations"))
        .and_then(|d| d.get(name))
    else {
        return Ok(None);
    };
    let field = |key: &str| entry.get(key).and_then(|v| v.as_str());
    let no_uri = format!("[engine.service_destinations.{name}] has no uri");
    connection(name, file, (field("uri"), field("identity")), no_uri).map(Some)
}

/// Connection `name` found in `file` with its `(uri, identity)` values (`no_uri`: the error
/// without a URI; an empty identity is none).
fn connection(
    name: &str,
    file: &Path,
    (uri, identity): (Option<&str>, Option<&str>),
    no_uri: String,
) -> Result<Connection, ConnectionError> {
    Ok(Connection {
        name: name.into(),
        uri: uri.ok_or_else(|| bad(file, no_uri))?.into(),
        identity: identity.filter(|s| !s.is_empty()).map(PathBuf::from),
        file: file.into(),
    })
}

fn bad(file: &Path, why: String) -> ConnectionError {
    ConnectionError::Bad {
        file: file.into(),
        why,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
    }

    #[test]
    fn locations_follow_podman() {
        let s = Sources::locate(&env(&[("HOME", "/home/u")]), 1000);
        assert_eq!(
            s.json.as_deref(),
            Some(Path::new("/home/u/.config/containers/podman-connections.json"))
        );
        assert_eq!(
            s.confs.first().unwrap(),
            Path::new("/usr/share/containers/containers.conf")
        );
        assert!(
            s.confs
                .contains(&PathBuf::from("/home/u/.config/containers/containers.conf"))
        );
        let root = Sources::locate(&env(&[("HOME", "/root")]), 0);
        assert!(!root.confs.iter().any(|p| p.starts_with("/root")), "{root:?}");
        let only = Sources::locate(
            &env(&[
                ("CONTAINERS_CONF", "/x/c.conf"),
                ("CONTAINERS_CONF_OVERRIDE", "/x/o.conf"),
                ("PODMAN_CONNECTIONS_CONF", "/x/c.json"),
            ]),
            1000,
        );
        assert_eq!(
            only.confs,
            [PathBuf::from("/x/c.conf"), PathBuf::from("/x/o.conf")]
        );
        assert_eq!(only.json.as_deref(), Some(Path::new("/x/c.json")));
    }

    #[test]
    fn json_wins_then_the_last_conf() {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("c.json");
        std::fs::write(
            &json,
            r#"{"Connection":{"Default":"a","Connections":{"a":{"URI":"ssh://u@h:2/run/a.sock","Identity":"/k/a","IsMachine":false}}},"Farm":{}}"#,
        )
        .unwrap();
        let c1 = dir.path().join("1.conf");
        let c2 = dir.path().join("2.conf");
        std::fs::write(&c1, "[engine]\nactive_service = \"b\"\n[engine.service_destinations.a]\nuri = \"ssh://x/y.sock\"\n[engine.service_destinations.b]\nuri = \"tcp://h:1\"\n").unwrap();
        std::fs::write(
            &c2,
            "[engine.service_destinations.b]\nuri = \"ssh://h/b.sock\"\nidentity = \"/k/b\"\n",
        )
        .unwrap();
        let s = Sources {
            json: Some(json.clone()),
            confs: vec![c1, c2.clone(), dir.path().join("missing.conf")],
        };
        let a = s.find("a").unwrap();
        assert_eq!(
            (a.uri.as_str(), a.identity.as_deref(), a.file.as_path()),
            ("ssh://u@h:2/run/a.sock", Some(Path::new("/k/a")), json.as_path())
        );
        let b = s.find("b").unwrap();
        assert_eq!(
            (b.uri.as_str(), b.identity.as_deref(), b.file.as_path()),
            ("ssh://h/b.sock", Some(Path::new("/k/b")), c2.as_path())
        );
        let e = s.find("nope").unwrap_err().to_string();
        assert!(
            e.contains("no Podman connection named \"nope\"") && e.contains("podman system connection list"),
            "{e}"
        );
    }

    #[test]
    fn broken_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let conf = dir.path().join("c.conf");
        std::fs::write(&conf, "[engine.service_destinations.a]\nidentity = \"/k\"\n").unwrap();
        let s = Sources {
            json: None,
            confs: vec![conf.clone()],
        };
        let e = s.find("a").unwrap_err().to_string();
        assert!(
            e.contains("has no uri") && e.contains(&conf.display().to_string()),
            "{e}"
        );
        std::fs::write(&conf, "[engine\n").unwrap();
        assert!(s.find("a").unwrap_err().to_string().contains("not valid TOML"));
    }
}
