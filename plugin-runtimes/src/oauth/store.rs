//! Where the tokens of one MCP server live: a file of its own in the user's data folder
//! (`$XDG_DATA_HOME/codemode/oauth/`, else `~/.local/share/codemode/oauth/`), mode 0600
//! in a folder of mode 0700, replaced atomically on every save.
//!
//! The folder is checked before every use ([`private_folder`]): it must belong to this
//! user and be no symbolic link; a folder others could write to is made private again
//! (with a warning), since a file planted there would be taken for this user's tokens.
//! Saves write a temporary file of a random name created exclusively (`O_EXCL`,
//! `O_NOFOLLOW`), so a link planted in the folder is never followed; token files and
//! the lock file are opened without following links either.
//!
//! A file that is not what codemode writes is reported by the field that is wrong,
//! never by its value: the values are tokens ([`StoreError::Damaged`]).
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
    /// The file is not JSON.
    #[error("the token file {path} is damaged (it is not JSON: line {line}, column {column}); `codemode auth logout` removes it")]
    NotJson {
        /// The file.
        path: PathBuf,
        /// Where the text stops being JSON.
        line: usize,
        /// The column there.
        column: usize,
    },
    /// A field of the file is not what codemode writes. Names the field, never its
    /// value (which may be a token).
    #[error("the token file {path} is damaged (its field `{field}` is not what codemode writes); `codemode auth logout` removes it")]
    Damaged {
        /// The file.
        path: PathBuf,
        /// The field, as a path (`credentials.token_response`).
        field: String,
    },
    /// The folder cannot be trusted with tokens.
    #[error("the OAuth folder {path} {problem}; codemode keeps tokens only in a private folder of its own user")]
    Unsafe {
        /// The folder.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
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
        let folder = self.path.parent().unwrap_or(Path::new("."));
        match std::fs::symlink_metadata(folder) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            _ => private_folder(folder)?,
        }
        let opened = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(&self.path);
        let text = match opened.and_then(|mut file| {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut file, &mut text).map(|_| text)
        }) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(StoreError::Io { action: "reading", path: self.path.clone(), source }),
        };
        Ok(parse_saved(&self.path, &text)?.filter(|saved| saved.server == self.server))
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

    /// Writes `saved` to a new file of mode 0600 beside the old one (a random name,
    /// created exclusively, never through a link), then renames it over.
    fn write(&self, saved: &Saved) -> Result<(), StoreError> {
        let folder = self.path.parent().unwrap_or(Path::new("."));
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(folder).map_err(|source| StoreError::Io {
            action: "creating",
            path: folder.into(),
            source,
        })?;
        private_folder(folder)?;
        let text = serde_json::to_vec_pretty(saved).map_err(|e| StoreError::Io {
            action: "writing",
            path: self.path.clone(),
            source: std::io::Error::other(e.to_string()),
        })?;
        let mut random = [0u8; 8];
        getrandom::fill(&mut random).map_err(|e| StoreError::Io {
            action: "naming a temporary file for",
            path: self.path.clone(),
            source: std::io::Error::other(e.to_string()),
        })?;
        let suffix: String = random.iter().map(|b| format!("{b:02x}")).collect();
        let temporary = self.path.with_extension(format!("tmp-{suffix}"));
        let written = (|| {
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .custom_flags(libc::O_NOFOLLOW)
                .mode(0o600)
                .open(&temporary)?;
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
            private_folder(folder)?;
        }
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .custom_flags(libc::O_NOFOLLOW)
            .mode(0o600)
            .open(&path)
            .map_err(io)?;
        nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
            .map_err(|(_, errno)| io(std::io::Error::from(errno)))
    }
}

/// `text` as what a token file saves; an error names the wrong field (or where the
/// text stops being JSON), never a value.
fn parse_saved(path: &Path, text: &str) -> Result<Option<Saved>, StoreError> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| StoreError::NotJson {
        path: path.to_path_buf(),
        line: e.line(),
        column: e.column(),
    })?;
    serde_path_to_error::deserialize::<_, Saved>(value).map(Some).map_err(|e| StoreError::Damaged {
        path: path.to_path_buf(),
        field: match e.path().to_string() {
            field if field == "." => "(the whole file)".to_string(),
            field => field,
        },
    })
}

/// Checks that `folder` may hold tokens: a folder (no link) of this user; one that
/// others could read or write is made private again, with a warning.
pub fn private_folder(folder: &Path) -> Result<(), StoreError> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let unsafe_because = |problem: String| StoreError::Unsafe { path: folder.to_path_buf(), problem };
    let meta = std::fs::symlink_metadata(folder).map_err(|source| StoreError::Io {
        action: "checking",
        path: folder.to_path_buf(),
        source,
    })?;
    if meta.file_type().is_symlink() {
        return Err(unsafe_because("is a symbolic link".into()));
    }
    if !meta.is_dir() {
        return Err(unsafe_because("is not a folder".into()));
    }
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        return Err(unsafe_because(format!("belongs to user {}, not to this user ({me})", meta.uid())));
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        tracing::warn!(
            "the OAuth folder {} had mode {mode:o} (others could read or plant tokens); made it 700",
            folder.display()
        );
        std::fs::set_permissions(folder, std::fs::Permissions::from_mode(0o700)).map_err(|source| StoreError::Io {
            action: "making private",
            path: folder.to_path_buf(),
            source,
        })?;
    }
    Ok(())
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

    #[test]
    fn a_damaged_file_names_the_field_never_the_tokens() {
        let dir = temp_folder("damaged");
        let file = TokenFile::in_folder(&dir, "https://one.example/mcp");
        file.update(|_| {}).unwrap();
        for (damaged, field) in [
            (
                r#"{"server":"https://one.example/mcp","credentials":{"client_id":"c","token_response":"SECRET-AT SECRET-RT"}}"#,
                "credentials.token_response",
            ),
            (r#"{"server":"https://one.example/mcp","credentials":"SECRET-AT"}"#, "credentials"),
            (r#"{"server":"https://one.example/mcp","client_secret":["SECRET-CS"]}"#, "client_secret"),
        ] {
            std::fs::write(file.path(), damaged).unwrap();
            let error = file.read().unwrap_err().to_string();
            assert!(!error.contains("SECRET"), "{error}");
            assert_eq!(
                error,
                format!("the token file {} is damaged (its field `{field}` is not what codemode writes); `codemode auth logout` removes it", file.path().display())
            );
        }
        std::fs::write(file.path(), "{\"server\": \"SECRET").unwrap();
        let error = file.read().unwrap_err().to_string();
        assert!(!error.contains("SECRET") && error.contains("it is not JSON: line 1, column"), "{error}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_folder_is_made_private_and_links_are_never_followed() {
        let dir = temp_folder("folder");
        let file = TokenFile::in_folder(&dir, "https://one.example/mcp");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        file.update(|s| s.wanted_scopes = vec!["a".into()]).unwrap();
        assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
        // A link planted as the token file is neither read nor written through.
        let target = std::env::temp_dir().join(format!("codemode-store-target-{}", std::process::id()));
        std::fs::write(&target, "someone else's file").unwrap();
        std::fs::remove_file(file.path()).unwrap();
        std::os::unix::fs::symlink(&target, file.path()).unwrap();
        assert!(matches!(file.read(), Err(StoreError::Io { action: "reading", .. })));
        assert!(file.update(|s| s.wanted_scopes = vec!["b".into()]).is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "someone else's file");
        // Nor is the lock file's.
        let lock = file.path().with_extension("lock");
        let _ = std::fs::remove_file(&lock);
        std::os::unix::fs::symlink(&target, &lock).unwrap();
        assert!(file.lock().is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "someone else's file");
        std::fs::remove_file(&lock).unwrap();
        std::fs::remove_file(file.path()).unwrap();
        // A folder that is a link is refused.
        let linked = temp_folder("linked");
        std::os::unix::fs::symlink(&dir, &linked).unwrap();
        let through = TokenFile::in_folder(&linked, "https://one.example/mcp");
        assert!(through.read().unwrap_err().to_string().contains("is a symbolic link"));
        let _ = std::fs::remove_file(&target);
        let _ = std::fs::remove_file(&linked);
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
