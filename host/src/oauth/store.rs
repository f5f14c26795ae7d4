//! Where the tokens of one MCP server live: a file of its own in the user's data folder
//! (`$XDG_DATA_HOME/codemode/oauth/`, else `~/.local/share/codemode/oauth/`), mode 0600
//! in a folder of mode 0700, replaced atomically on every save.
//!
//! The file is keyed by the server's URL, not by the plugin's name: tokens belong to the
//! server that accepts them, so two configurations naming one server share its login,
//! and a plugin whose `url` changes is never handed another server's tokens (the file
//! also records its URL, and a mismatch reads as no file).
//!
//! [`TokenFile`] is rmcp's [`CredentialStore`] for that file. A refresh holds an
//! exclusive `flock` on a lock file beside it from loading the refresh token to saving
//! its successor, so two codemode processes never spend the same refresh token twice.
//!
//! Besides rmcp's credentials the file keeps what rmcp does not: the client secret a
//! dynamically registered client was given, the redirect URI it was registered with,
//! and the scopes a server asked for when it refused a call (`wanted_scopes`), which the
//! next `codemode auth login` requests.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use rmcp::transport::auth::{AuthError, CredentialRefreshGuard, CredentialStore, StoredCredentials};
use serde::{Deserialize, Serialize};
use sha2::Digest;

/// Why the token file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Neither `XDG_DATA_HOME` nor `HOME` names a folder.
    #[error("cannot tell where to keep OAuth tokens: set XDG_DATA_HOME or HOME")]
    NoDataFolder,
    /// Reading, writing or locking failed.
    #[error("{action} {path}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// Why it failed.
        source: std::io::Error,
    },
    /// The file is not what codemode writes.
    #[error("the token file {path} is damaged ({message}); `codemode auth logout` removes it")]
    Damaged {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

impl From<StoreError> for AuthError {
    fn from(error: StoreError) -> Self {
        AuthError::CredentialStoreError(error.to_string())
    }
}

/// The folder codemode keeps its data in: `$XDG_DATA_HOME/codemode` when that is an
/// absolute path, else `$HOME/.local/share/codemode`; `None` without either.
pub fn data_folder(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let xdg = env("XDG_DATA_HOME").map(PathBuf::from).filter(|p| p.is_absolute());
    let base = xdg.or_else(|| env("HOME").filter(|h| !h.is_empty()).map(|h| Path::new(&h).join(".local/share")))?;
    Some(base.join("codemode"))
}

/// The token file's name for `server`: its host (letters, digits, `.` and `-` only, for
/// a person looking in the folder) and the start of the URL's SHA-256 (which is what
/// keeps two servers apart).
pub fn file_name(server: &str) -> String {
    let host = url::Url::parse(server).ok().and_then(|u| u.host_str().map(str::to_owned)).unwrap_or_default();
    let readable: String =
        host.chars().filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-')).take(64).collect();
    let readable = readable.trim_start_matches(['.', '-']);
    let digest = sha2::Sha256::digest(server.as_bytes());
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("{}-{hex}.json", if readable.is_empty() { "server" } else { readable })
}

/// Everything saved for one server.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Saved {
    /// The server's URL, as configured.
    pub server: String,
    /// rmcp's credentials: the client id and the token response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<StoredCredentials>,
    /// The secret a dynamically registered client was given (pre-registered secrets stay
    /// in the configuration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// The redirect URI the client was registered or authorized with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect_uri: Option<String>,
    /// Scopes the server asked for when it refused a call for lack of them; the next
    /// login asks for them too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub wanted_scopes: Vec<String>,
}

impl Saved {
    /// The token response as JSON (`access_token`, `expires_in`, `refresh_token`,
    /// `scope`), for status reports; never logged.
    pub fn token_json(&self) -> Option<serde_json::Value> {
        let credentials = self.credentials.as_ref()?;
        let json = serde_json::to_value(credentials).ok()?;
        json.get("token_response").filter(|t| !t.is_null()).cloned()
    }

    /// When the access token expires, in seconds since the epoch, when the server said.
    pub fn expires_at(&self) -> Option<u64> {
        let credentials = self.credentials.as_ref()?;
        let expires_in = self.token_json()?.get("expires_in")?.as_u64()?;
        Some(credentials.token_received_at? + expires_in)
    }

    /// True when a refresh token is stored.
    pub fn can_refresh(&self) -> bool {
        self.token_json().is_some_and(|t| t.get("refresh_token").is_some_and(|r| !r.is_null()))
    }

    /// True when an access token is stored.
    pub fn has_token(&self) -> bool {
        self.token_json().is_some()
    }
}

/// One server's token file.
#[derive(Debug, Clone)]
pub struct TokenFile {
    server: String,
    path: PathBuf,
}

impl TokenFile {
    /// The token file of `server` in `folder` (the data folder's `oauth/`).
    pub fn in_folder(folder: &Path, server: &str) -> Self {
        Self { server: server.to_string(), path: folder.join(file_name(server)) }
    }

    /// The token file of `server` in the user's data folder.
    pub fn for_server(server: &str) -> Result<Self, StoreError> {
        let env = |name: &str| std::env::var(name).ok();
        let folder = data_folder(&env).ok_or(StoreError::NoDataFolder)?;
        Ok(Self::in_folder(&folder.join("oauth"), server))
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What is saved, or `None` when nothing is (or it was saved for another URL).
    pub fn read(&self) -> Result<Option<Saved>, StoreError> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(StoreError::Io { action: "reading", path: self.path.clone(), source }),
        };
        let saved: Saved = serde_json::from_str(&text)
            .map_err(|e| StoreError::Damaged { path: self.path.clone(), message: e.to_string() })?;
        Ok((saved.server == self.server).then_some(saved))
    }

    /// Changes what is saved (starting from nothing), atomically.
    pub fn update(&self, change: impl FnOnce(&mut Saved)) -> Result<(), StoreError> {
        let mut saved = self.read()?.unwrap_or_else(|| Saved { server: self.server.clone(), ..Saved::default() });
        change(&mut saved);
        self.write(&saved)
    }

    /// Removes the file; true when there was one.
    pub fn remove(&self) -> Result<bool, StoreError> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(StoreError::Io { action: "removing", path: self.path.clone(), source }),
        }
    }

    /// Writes `saved` to a new file of mode 0600 beside the old one, then renames it over.
    fn write(&self, saved: &Saved) -> Result<(), StoreError> {
        let folder = self.path.parent().unwrap_or(Path::new("."));
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(folder).map_err(|source| StoreError::Io {
            action: "creating",
            path: folder.into(),
            source,
        })?;
        let text = serde_json::to_vec_pretty(saved)
            .map_err(|e| StoreError::Damaged { path: self.path.clone(), message: e.to_string() })?;
        let temporary = self.path.with_extension(format!("tmp{}", std::process::id()));
        let written = (|| {
            let mut file =
                std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(&temporary)?;
            file.write_all(&text)?;
            file.sync_all()?;
            std::fs::rename(&temporary, &self.path)
        })();
        if let Err(source) = written {
            let _ = std::fs::remove_file(&temporary);
            return Err(StoreError::Io { action: "writing", path: self.path.clone(), source });
        }
        Ok(())
    }

    /// Takes the exclusive lock that serialises refreshes (blocking until it is free).
    fn lock(&self) -> Result<nix::fcntl::Flock<std::fs::File>, StoreError> {
        let path = self.path.with_extension("lock");
        let io = |source| StoreError::Io { action: "locking", path: path.clone(), source };
        if let Some(folder) = path.parent() {
            std::fs::DirBuilder::new().recursive(true).mode(0o700).create(folder).map_err(io)?;
        }
        let file =
            std::fs::OpenOptions::new().write(true).create(true).truncate(false).mode(0o600).open(&path).map_err(io)?;
        nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
            .map_err(|(_, errno)| io(std::io::Error::from(errno)))
    }
}

#[async_trait]
impl CredentialStore for TokenFile {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        Ok(self.read()?.and_then(|s| s.credentials))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        Ok(self.update(|saved| saved.credentials = Some(credentials))?)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        Ok(self.update(|saved| saved.credentials = None)?)
    }

    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let file = self.clone();
        let lock = tokio::task::spawn_blocking(move || file.lock())
            .await
            .map_err(|e| AuthError::CredentialStoreError(e.to_string()))??;
        Ok(Some(CredentialRefreshGuard::new(lock)))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn temp_folder(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("codemode-store-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn the_data_folder_follows_xdg_then_home() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
        };
        assert_eq!(data_folder(&env(&[("XDG_DATA_HOME", "/x"), ("HOME", "/h")])), Some(PathBuf::from("/x/codemode")));
        assert_eq!(
            data_folder(&env(&[("XDG_DATA_HOME", "relative"), ("HOME", "/h")])),
            Some(PathBuf::from("/h/.local/share/codemode"))
        );
        assert_eq!(data_folder(&env(&[])), None);
    }

    #[test]
    fn file_names_keep_servers_apart_and_stay_readable() {
        let a = file_name("https://mcp.example.com/mcp");
        let b = file_name("https://mcp.example.com/other");
        assert!(a.starts_with("mcp.example.com-") && a.ends_with(".json"), "{a}");
        assert_ne!(a, b);
        for hostile in ["http://../../etc/passwd", "https://a/../b", "not a url", "file:///etc/passwd"] {
            let name = file_name(hostile);
            assert!(!name.contains('/') && !name.starts_with('.'), "{hostile} -> {name}");
        }
    }

    #[test]
    fn saved_files_are_private_and_belong_to_one_url() {
        let dir = temp_folder("private");
        let file = TokenFile::in_folder(&dir, "https://one.example/mcp");
        assert!(file.read().unwrap().is_none());
        file.update(|s| s.wanted_scopes = vec!["write".into()]).unwrap();
        let mode = std::fs::metadata(file.path()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let folder_mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(folder_mode, 0o700);
        assert_eq!(file.read().unwrap().unwrap().wanted_scopes, ["write"]);
        // Another URL whose file name collided would not read this one's tokens.
        let other = TokenFile { server: "https://two.example/mcp".into(), path: file.path().to_path_buf() };
        assert!(other.read().unwrap().is_none());
        assert!(file.remove().unwrap());
        assert!(!file.remove().unwrap());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[tokio::test]
    async fn credentials_round_trip_through_the_store() {
        let dir = temp_folder("round-trip");
        let file = TokenFile::in_folder(&dir, "https://one.example/mcp");
        let token: rmcp::transport::auth::OAuthTokenResponse = serde_json::from_value(serde_json::json!({
            "access_token": "at", "token_type": "bearer", "expires_in": 3600, "refresh_token": "rt", "scope": "a b"
        }))
        .unwrap();
        let credentials = StoredCredentials::new("client-1".into(), Some(token), vec!["a".into()], Some(1_000));
        file.save(credentials).await.unwrap();
        let saved = file.read().unwrap().unwrap();
        assert_eq!(saved.expires_at(), Some(4_600));
        assert!(saved.can_refresh() && saved.has_token());
        assert_eq!(file.load().await.unwrap().unwrap().client_id, "client-1");
        let _guard = file.acquire_refresh_guard().await.unwrap();
        file.clear().await.unwrap();
        assert!(!file.read().unwrap().unwrap().has_token());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
