//! `tools.$search`'s sense of meaning: the sentence encoder ([`super::encoder`]), the
//! text each tool is embedded as, and the cache of those embeddings.
//!
//! Its place in the flow: the executor holds one [`Semantic`] (when a model is
//! installed: [`find_model`]); each new catalog's search index asks it for every tool's
//! vector in the background ([`super::search::SearchIndex::build_dense`]) while BM25
//! answers alone, and every search asks it for the query's vector.
//!
//! - **What a tool is, in words** ([`tool_text`]): its plugin and the plugin's summary,
//!   the words of its name, its description, and its parameters' names (measured on
//!   the project's query files: parameters' names lifted the fused top 5 by 3 points;
//!   their descriptions too made it lower, and "name words: description" alone lower
//!   still).
//! - **The cache**: a vector is kept under the SHA-256 of its text, in memory and in a
//!   file of the model's own (`$XDG_CACHE_HOME/codemode/embeddings/`), so a restart or a
//!   plugin's change embeds only what changed.
//! - **Where the model is** ([`find_model`]): `[server] search_model`, then
//!   `$XDG_DATA_HOME/codemode/models/all-MiniLM-L6-v2` (`~/.local/share/...`), then the
//!   container image's `/usr/share/codemode/models/all-MiniLM-L6-v2`.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use sha2::Digest;

use super::encoder::{Encoder, EncoderError, DIMENSIONS, MODEL_NAME};

/// The fused ranker's name.
pub const RANKER: &str = "all-MiniLM-L6-v2 + BM25";

/// Where the container image keeps the model.
pub const IMAGE_MODEL_DIR: &str = "/usr/share/codemode/models/all-MiniLM-L6-v2";

/// The folder of the search model: `configured` when given, else the first of the
/// user's data folder's copy and the image's that holds `model.safetensors`.
pub fn find_model(configured: Option<&Path>, env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    if let Some(path) = configured {
        return Some(path.to_path_buf());
    }
    let data = env("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| env("HOME").filter(|h| !h.is_empty()).map(|h| Path::new(&h).join(".local/share")));
    let candidates = data
        .map(|d| d.join("codemode/models").join(MODEL_NAME))
        .into_iter()
        .chain(std::iter::once(PathBuf::from(IMAGE_MODEL_DIR)));
    candidates.into_iter().find(|dir| dir.join("model.safetensors").is_file())
}

/// The text a tool is embedded as (see the module docs).
pub fn tool_text(
    plugin: &str,
    summary: &str,
    name: &str,
    description: &str,
    parameters: &[(String, String)],
) -> String {
    let name_words = super::search::split_words(name).join(" ");
    let mut text = if summary.is_empty() {
        format!("{plugin} / {name_words}: {description}")
    } else {
        format!("{plugin} ({summary}) / {name_words}: {description}")
    };
    if !parameters.is_empty() {
        let names: Vec<&str> = parameters.iter().map(|(name, _)| name.as_str()).collect();
        text.push_str(&format!(" Parameters: {}", names.join(", ")));
    }
    text
}

/// The encoder and its cache.
pub struct Semantic {
    encoder: Encoder,
    cache: Mutex<Cache>,
}

impl std::fmt::Debug for Semantic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Semantic").field("ranker", &RANKER).finish_non_exhaustive()
    }
}

/// Vectors by the SHA-256 of their text, and the file they are kept in.
struct Cache {
    vectors: HashMap<[u8; 32], Vec<f32>>,
    file: Option<PathBuf>,
}

/// What a cache file starts with.
const CACHE_MAGIC: &[u8; 8] = b"CMEMB01\n";
/// One record: the text's digest, then its vector.
const RECORD: usize = 32 + DIMENSIONS * 4;

impl Cache {
    /// The vectors `file` holds (none when it is missing or not a cache file).
    fn open(file: Option<PathBuf>) -> Self {
        let mut vectors = HashMap::new();
        if let Some(bytes) = file.as_ref().and_then(|f| std::fs::read(f).ok()) {
            if bytes.starts_with(CACHE_MAGIC) {
                for record in bytes[CACHE_MAGIC.len()..].chunks_exact(RECORD) {
                    let mut key = [0u8; 32];
                    key.copy_from_slice(&record[..32]);
                    let vector =
                        record[32..].chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
                    vectors.insert(key, vector);
                }
            }
        }
        Self { vectors, file }
    }

    /// Keeps new vectors, in memory and appended to the file (a failure to write only
    /// costs the next start their embedding again).
    fn keep(&mut self, new: Vec<([u8; 32], Vec<f32>)>) {
        if let Some(file) = &self.file {
            let written = (|| -> std::io::Result<()> {
                if let Some(folder) = file.parent() {
                    std::fs::create_dir_all(folder)?;
                }
                let fresh = !file.exists();
                let mut out = std::fs::OpenOptions::new().create(true).append(true).open(file)?;
                let mut bytes = Vec::with_capacity(new.len() * RECORD + CACHE_MAGIC.len());
                if fresh {
                    bytes.extend_from_slice(CACHE_MAGIC);
                }
                for (key, vector) in &new {
                    bytes.extend_from_slice(key);
                    bytes.extend(vector.iter().flat_map(|v| v.to_le_bytes()));
                }
                out.write_all(&bytes)
            })();
            if let Err(e) = written {
                tracing::debug!("the embedding cache {} was not written: {e}", file.display());
            }
        }
        self.vectors.extend(new);
    }
}

impl Semantic {
    /// Loads the model in `model` and the cache file in `cache_folder` (none: vectors
    /// are kept in memory only).
    pub fn load(model: &Path, cache_folder: Option<&Path>) -> Result<Self, EncoderError> {
        let started = std::time::Instant::now();
        let encoder = Encoder::load(model)?;
        tracing::info!(
            "search model {} ({}) loaded in {:.0} ms",
            model.display(),
            encoder.precision,
            started.elapsed().as_secs_f64() * 1000.0
        );
        // A cache file per model (its weights' size and first bytes name it), so that
        // another model never reads these vectors.
        let file = cache_folder.map(|folder| folder.join(format!("{MODEL_NAME}-{}.bin", model_fingerprint(model))));
        Ok(Self { encoder, cache: Mutex::new(Cache::open(file)) })
    }

    /// How the model's weights were stored (`f32`, or `int8` as packed).
    pub fn precision(&self) -> &'static str {
        self.encoder.precision
    }

    /// The query's unit vector.
    pub fn embed_query(&self, query: &str) -> Vec<f32> {
        self.encoder.embed_one(query)
    }

    /// The unit vector of each text: from the cache, else embedded now (on this
    /// thread) and kept.
    pub fn vectors(&self, texts: &[String]) -> Vec<Vec<f32>> {
        let keys: Vec<[u8; 32]> = texts.iter().map(|t| sha2::Sha256::digest(t.as_bytes()).into()).collect();
        let missing: Vec<usize> = {
            let cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            (0..texts.len()).filter(|i| !cache.vectors.contains_key(&keys[*i])).collect()
        };
        if !missing.is_empty() {
            let wanted: Vec<String> = missing.iter().map(|i| texts[*i].clone()).collect();
            let started = std::time::Instant::now();
            let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
            let embedded = self.encoder.embed_batch(&wanted, threads);
            tracing::info!(
                "embedded {} tool descriptions for search in {:.1} s ({} were cached)",
                wanted.len(),
                started.elapsed().as_secs_f64(),
                texts.len() - wanted.len()
            );
            let new = missing.iter().map(|i| keys[*i]).zip(embedded).collect();
            self.cache.lock().unwrap_or_else(|p| p.into_inner()).keep(new);
        }
        let cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        keys.iter().map(|k| cache.vectors.get(k).cloned().unwrap_or_else(|| vec![0.0; DIMENSIONS])).collect()
    }
}

/// A short name for the model's weights: their size and the SHA-256 of their first MiB.
fn model_fingerprint(model: &Path) -> String {
    let weights = model.join("model.safetensors");
    let size = std::fs::metadata(&weights).map(|m| m.len()).unwrap_or(0);
    let mut head = vec![0u8; 1 << 20];
    let read = std::fs::File::open(&weights).and_then(|mut f| std::io::Read::read(&mut f, &mut head)).unwrap_or(0);
    let digest = sha2::Sha256::digest(&head[..read]);
    format!("{size}-{}", digest.iter().take(6).map(|b| format!("{b:02x}")).collect::<String>())
}

/// The cache folder: `$XDG_CACHE_HOME/codemode/embeddings`, else
/// `~/.cache/codemode/embeddings`.
pub fn cache_folder(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let base = env("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| env("HOME").filter(|h| !h.is_empty()).map(|h| Path::new(&h).join(".cache")))?;
    Some(base.join("codemode/embeddings"))
}

/// The dot product of two unit vectors: their cosine similarity.
pub fn similarity(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_is_embedded_as_its_plugin_summary_name_words_description_and_parameters() {
        let text = tool_text(
            "github",
            "GitHub repositories and issues",
            "listPullRequests",
            "List pull requests.",
            &[("repo".into(), "owner/name".into()), ("state".into(), String::new())],
        );
        assert_eq!(
            text,
            "github (GitHub repositories and issues) / list pull requests: List pull requests. Parameters: repo, state"
        );
        assert_eq!(tool_text("x", "", "get-it", "Gets it.", &[]), "x / get it: Gets it.");
    }

    #[test]
    fn the_model_is_found_where_configured_then_in_the_data_folder() {
        let configured = Path::new("/opt/model");
        assert_eq!(find_model(Some(configured), &|_| None), Some(configured.to_path_buf()));
        let dir = std::env::temp_dir().join(format!("codemode-models-{}", std::process::id()));
        let model = dir.join("codemode/models").join(MODEL_NAME);
        std::fs::create_dir_all(&model).expect("folder");
        let env = |name: &str| (name == "XDG_DATA_HOME").then(|| dir.display().to_string());
        assert_eq!(find_model(None, &env), None, "no weights there yet");
        std::fs::write(model.join("model.safetensors"), b"x").expect("file");
        assert_eq!(find_model(None, &env), Some(model));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
