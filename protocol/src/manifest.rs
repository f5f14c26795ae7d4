//! The manifest of a JavaScript plugin (`manifest.json` in the plugin's folder).
//!
//! Both sides read it: the host for the plugin's rules and its network allowlist (which
//! the host enforces, since the host performs every request), the plugin runtime for its
//! main module and whether it may register tools. One definition keeps them agreeing.
//!
//! ```json
//! { "name": "hello-tools", "version": "0.1.0", "main": "main.js",
//!   "permissions": {
//!     "tools.provide": { "reason": "Give agents the greeting tools" },
//!     "net": { "hosts": ["api.example.com", "*.example.org", "127.0.0.1:8080"], "reason": "…" } },
//!   "contributes": { "rules": ["rules.md"] } }
//! ```

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The file name of a plugin's manifest.
pub const MANIFEST_FILE: &str = "manifest.json";

/// A parsed, checked manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The plugin's own name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// The main module, relative to the folder (a plugin with only rules has none).
    #[serde(default)]
    pub main: Option<String>,
    /// What the plugin may do.
    #[serde(default)]
    pub permissions: Permissions,
    /// What the plugin adds besides tools.
    #[serde(default)]
    pub contributes: Contributions,
    /// Free-form fields a plugin author may add (description, author, ...).
    #[serde(flatten)]
    pub extra: BTreeMap<String, serde_json::Value>,
}

/// `permissions`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Permissions {
    /// `tools.provide`: the plugin may register tools.
    #[serde(rename = "tools.provide", default)]
    pub tools_provide: Option<Reason>,
    /// `net`: the hosts `api.net.fetch` may reach.
    #[serde(default)]
    pub net: Option<NetPermission>,
    /// Permissions this runtime does not know; kept so that a manifest written for a
    /// richer host still loads (they grant nothing here).
    #[serde(flatten)]
    pub other: BTreeMap<String, serde_json::Value>,
}

/// A permission's stated reason.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Reason {
    /// Why the plugin asks for it (shown to the person who enables it).
    #[serde(default)]
    pub reason: Option<String>,
}

/// `permissions.net`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NetPermission {
    /// `host`, `host:port` or `*.domain` entries.
    pub hosts: Vec<String>,
    /// Why.
    #[serde(default)]
    pub reason: Option<String>,
}

/// `contributes`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Contributions {
    /// Markdown files with rules for agents, relative to the folder.
    #[serde(default)]
    pub rules: Vec<String>,
}

/// Why a manifest could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The file is missing or unreadable.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The manifest's path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a manifest.
    #[error("{path} is not a valid plugin manifest: {message}")]
    Invalid {
        /// The manifest's path.
        path: PathBuf,
        /// What is wrong, and where.
        message: String,
    },
}

impl Manifest {
    /// Reads and checks `<dir>/manifest.json`.
    pub fn load(dir: &Path) -> Result<Self, ManifestError> {
        let path = dir.join(MANIFEST_FILE);
        let text =
            std::fs::read_to_string(&path).map_err(|source| ManifestError::Read { path: path.clone(), source })?;
        Self::parse(&text).map_err(|message| ManifestError::Invalid { path, message })
    }

    /// Parses and checks a manifest's text.
    pub fn parse(text: &str) -> Result<Self, String> {
        let manifest: Manifest = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if manifest.name.trim().is_empty() {
            return Err("`name` must not be empty".into());
        }
        for (field, file) in manifest
            .main
            .iter()
            .map(|m| ("main", m))
            .chain(manifest.contributes.rules.iter().map(|r| ("contributes.rules", r)))
        {
            if !is_inside(file) {
                return Err(format!("`{field}` entry {file:?} must be a relative path inside the plugin's folder"));
            }
        }
        if let Some(net) = &manifest.permissions.net {
            for host in &net.hosts {
                HostEntry::parse(host).map_err(|why| format!("`permissions.net.hosts` entry {host:?} {why}"))?;
            }
        }
        Ok(manifest)
    }

    /// True when the plugin may register tools.
    pub fn may_provide_tools(&self) -> bool {
        self.permissions.tools_provide.is_some()
    }

    /// The hosts the plugin may reach (empty: no network).
    pub fn net_hosts(&self) -> &[String] {
        self.permissions.net.as_ref().map_or(&[], |n| n.hosts.as_slice())
    }
}

/// True for a relative path that stays inside its folder (no `..`, no root).
pub fn is_inside(path: &str) -> bool {
    let p = Path::new(path);
    !path.is_empty() && p.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

/// One `net.hosts` entry, parsed: `host`, `host:port` or `*.domain` (no scheme or path).
/// The manifest checks entries with it; the host matches URLs against it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostEntry {
    /// The host name, lowercase, without `*.`.
    pub host: String,
    /// True for `*.domain`: subdomains of `host` only.
    pub subdomains: bool,
    /// The port, when the entry names one (otherwise the scheme's default).
    pub port: Option<u16>,
}

impl HostEntry {
    /// Parses and checks an entry; the error says what is wrong with it.
    pub fn parse(entry: &str) -> Result<Self, &'static str> {
        if entry.contains("://") || entry.contains('/') {
            return Err("must be a host name, not a URL (write \"api.example.com\", not \"https://api.example.com/\")");
        }
        let (host, port) = match entry.rsplit_once(':') {
            Some((host, port)) if !host.contains(':') => {
                (host, Some(port.parse::<u16>().map_err(|_| "has a port that is not a number from 0 to 65535")?))
            }
            _ => (entry, None),
        };
        let (name, subdomains) = match host.strip_prefix("*.") {
            Some(domain) => (domain, true),
            None => (host, false),
        };
        if name.is_empty()
            || name.contains('*')
            || !name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
        {
            return Err("must be a host name, optionally with :port or a leading *. for subdomains");
        }
        if subdomains && (!name.contains('.') || name.split('.').all(|label| label.chars().all(|c| c.is_ascii_digit())))
        {
            return Err("is too broad: a *. entry needs a domain of at least two labels (\"*.example.com\"), not a top-level domain or numbers");
        }
        Ok(Self { host: name.to_ascii_lowercase(), subdomains, port })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_documented_shape() {
        let m = Manifest::parse(
            r#"{ "name": "weather", "version": "0.1.0", "main": "main.js", "description": "x",
                 "permissions": { "tools.provide": { "reason": "r" }, "net": { "hosts": ["wttr.in", "*.example.org", "127.0.0.1:8080"], "reason": "r" } },
                 "contributes": { "rules": ["rules.md"] } }"#,
        )
        .unwrap();
        assert!(m.may_provide_tools());
        assert_eq!(m.net_hosts(), ["wttr.in", "*.example.org", "127.0.0.1:8080"]);
        assert_eq!(m.main.as_deref(), Some("main.js"));
        assert_eq!(m.contributes.rules, ["rules.md"]);
    }

    #[test]
    fn rules_only_plugins_need_no_main_or_permissions() {
        let m = Manifest::parse(
            r#"{ "name": "house-style", "version": "0.1.0", "contributes": { "rules": ["rules.md"] } }"#,
        )
        .unwrap();
        assert!(!m.may_provide_tools());
        assert!(m.net_hosts().is_empty());
        assert_eq!(m.main, None);
    }

    #[test]
    fn host_entries_parse_into_name_port_and_scope() {
        assert_eq!(
            HostEntry::parse("API.example.com"),
            Ok(HostEntry { host: "api.example.com".into(), subdomains: false, port: None })
        );
        assert_eq!(
            HostEntry::parse("*.example.org:8443"),
            Ok(HostEntry { host: "example.org".into(), subdomains: true, port: Some(8443) })
        );
        assert_eq!(
            HostEntry::parse("127.0.0.1:8080"),
            Ok(HostEntry { host: "127.0.0.1".into(), subdomains: false, port: Some(8080) })
        );
    }

    #[test]
    fn mistakes_are_named() {
        let e = Manifest::parse(r#"{ "name": "x", "version": "1", "main": "../outside.js" }"#).unwrap_err();
        assert_eq!(e, "`main` entry \"../outside.js\" must be a relative path inside the plugin's folder");
        let e = Manifest::parse(
            r#"{ "name": "x", "version": "1", "permissions": { "net": { "hosts": ["https://a.com/"] } } }"#,
        )
        .unwrap_err();
        assert!(
            e.starts_with("`permissions.net.hosts` entry \"https://a.com/\" must be a host name, not a URL"),
            "{e}"
        );
        let e = Manifest::parse(
            r#"{ "name": "x", "version": "1", "permissions": { "net": { "hosts": ["a.com:http"] } } }"#,
        )
        .unwrap_err();
        assert!(e.contains("port that is not a number"), "{e}");
        let e = Manifest::parse(r#"{ "name": "x", "version": "1", "permissions": { "net": { "hosts": ["*.com"] } } }"#)
            .unwrap_err();
        assert!(e.contains("is too broad"), "{e}");
        let e =
            Manifest::parse(r#"{ "name": "x", "version": "1", "permissions": { "net": { "hosts": ["*.0.0.1"] } } }"#)
                .unwrap_err();
        assert!(e.contains("is too broad"), "{e}");
        let e = Manifest::parse(r#"{ "version": "1" }"#).unwrap_err();
        assert!(e.contains("missing field `name`"), "{e}");
    }
}
