//! `tools.$search`'s sense of meaning: the sentence encoder ([`crate::encoder`]), the
//! text each tool is embedded as, and the cache of those embeddings.
//!
//! Its place in the flow: the executor holds one [`Semantic`] (when a model is
//! installed: [`find_model`]); each new catalog's search index asks it for every tool's
//! vector in the background ([`crate::index::SearchIndex::build_dense`]) while BM25
//! answers alone, and every search asks it for the query's vector.
//!
//! - **What a tool is, in words** ([`tool_text`]): its plugin and the plugin's summary,
//!   the words of its name, its description, and its parameters' names (measured on
//!   the project's query files: parameters' names lifted the fused top 5 by 3 points;
//!   their descriptions too made it lower, and "name words: description" alone lower
//!   still).
//! - **The cache**: a vector is kept under the SHA-256 of its text, in memory and in a
//!   file of the model's own (`$XDG_CACHE_HOME/codemode/embeddings/`, named after the
//!   SHA-256 of the weights), so a restart or a plugin's change embeds only what
//!   changed. The file is read when the first catalog is embedded (off the listener's
//!   path), through [`crate::bounded_file`]: no link followed, a regular file only, at
//!   most [`cache_bound`] bytes (four catalogs' vectors: the file only grows, by appends,
//!   as catalogs change), and each record carries a check (8 bytes of the SHA-256 of its
//!   digest and vector). A file that is refused, over its bound, torn or with a record
//!   that fails its check is not read at all: it is said on stderr (a warning) and
//!   rewritten whole, with this catalog's vectors, through a new file renamed into its
//!   place (so a link or FIFO there is replaced, never written through).
//! - **Where the model is** ([`find_model`]): `[server] search_model`, then
//!   `$XDG_DATA_HOME/codemode/models/all-MiniLM-L6-v2` (`~/.local/share/...`), then the
//!   container image's `/usr/share/codemode/models/all-MiniLM-L6-v2`.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use sha2::Digest;

use crate::bounded_file::{self, FileError, OpenFor};
use crate::encoder::{Encoder, EncoderError, DIMENSIONS, MODEL_NAME};

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
    let name_words = crate::words::split_words(name).join(" ");
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
    state: CacheState,
}

/// Where the cache file stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CacheState {
    /// Not read yet (it is read with the first catalog's texts, which set its bound).
    Unread,
    /// Read and sound: new vectors are appended.
    Appending,
    /// Missing, refused or damaged: written whole (through a new file) at the next
    /// [`Cache::keep`].
    Rewrite,
}

/// What a cache file starts with (`02`: records carry their check).
const CACHE_MAGIC: &[u8; 8] = b"CMEMB02\n";
/// One record: the text's digest, its vector, and 8 bytes of the SHA-256 of both.
const RECORD: usize = 32 + DIMENSIONS * 4 + CHECK;
/// The bytes of a record's check.
const CHECK: usize = 8;
/// Records a cache file may hold, at least (so that small catalogs never rewrite it).
const CACHE_MIN_RECORDS: u64 = 4096;

/// The largest cache file read for a catalog of `tools` tools: four catalogs' records
/// (the file keeps earlier catalogs' vectors too), at least `CACHE_MIN_RECORDS`:
/// 6.5 MB for up to 1,024 tools, 11.5 MB for the 1,818 of the catalog fixture. A file
/// over it is rewritten with this catalog's vectors alone.
pub fn cache_bound(tools: usize) -> u64 {
    CACHE_MAGIC.len() as u64 + RECORD as u64 * (4 * tools as u64).max(CACHE_MIN_RECORDS)
}

/// A record's check: 8 bytes of the SHA-256 of its digest and vector.
fn record_check(body: &[u8]) -> [u8; CHECK] {
    let digest = sha2::Sha256::digest(body);
    let mut check = [0u8; CHECK];
    check.copy_from_slice(&digest[..CHECK]);
    check
}

/// Why a cache file's records are not used (it is rewritten).
#[derive(Debug, thiserror::Error)]
enum CacheProblem {
    #[error(transparent)]
    File(#[from] FileError),
    #[error("{path} is not a cache file of this version")]
    Magic { path: PathBuf },
    #[error("{path} ends in a torn record")]
    Torn { path: PathBuf },
    #[error("{path} has a damaged record (number {record})")]
    Damaged { path: PathBuf, record: usize },
}

/// The records of the cache file `path`, read within `bound` bytes.
fn read_cache(path: &Path, bound: u64) -> Result<HashMap<[u8; 32], Vec<f32>>, CacheProblem> {
    let bytes = bounded_file::read(path, bound)?;
    let Some(records) = bytes.strip_prefix(CACHE_MAGIC.as_slice()) else {
        return Err(CacheProblem::Magic { path: path.to_path_buf() });
    };
    if records.len() % RECORD != 0 {
        return Err(CacheProblem::Torn { path: path.to_path_buf() });
    }
    let mut vectors = HashMap::with_capacity(records.len() / RECORD);
    for (n, record) in records.chunks_exact(RECORD).enumerate() {
        let (body, check) = record.split_at(RECORD - CHECK);
        if record_check(body) != check {
            return Err(CacheProblem::Damaged { path: path.to_path_buf(), record: n + 1 });
        }
        let mut key = [0u8; 32];
        key.copy_from_slice(&body[..32]);
        let vector = body[32..].chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        vectors.insert(key, vector);
    }
    Ok(vectors)
}

/// `vectors` as cache records.
fn records<'a>(vectors: impl Iterator<Item = (&'a [u8; 32], &'a Vec<f32>)>) -> Vec<u8> {
    let mut bytes = Vec::new();
    for (key, vector) in vectors {
        let start = bytes.len();
        bytes.extend_from_slice(key);
        bytes.extend(vector.iter().flat_map(|v| v.to_le_bytes()));
        let check = record_check(&bytes[start..]);
        bytes.extend_from_slice(&check);
    }
    bytes
}

impl Cache {
    /// A cache kept in `file` (none: in memory only), read at the first [`Cache::load`].
    fn new(file: Option<PathBuf>) -> Self {
        Self { vectors: HashMap::new(), file, state: CacheState::Unread }
    }

    /// Reads the file once, for a catalog of `tools` tools (see the module docs).
    fn load(&mut self, tools: usize) {
        if self.state != CacheState::Unread {
            return;
        }
        self.state = CacheState::Rewrite;
        let Some(file) = &self.file else { return };
        match read_cache(file, cache_bound(tools)) {
            Ok(vectors) => {
                self.vectors = vectors;
                self.state = CacheState::Appending;
            }
            Err(CacheProblem::File(FileError::Missing { .. })) => {}
            Err(problem) => {
                tracing::warn!(
                    "the embedding cache is not used ({problem}); it is rewritten with this catalog's vectors"
                )
            }
        }
    }

    /// Keeps new vectors, in memory and in the file: appended to a sound file, else
    /// the file is rewritten whole (a failure to write only costs the next start their
    /// embedding again).
    fn keep(&mut self, new: Vec<([u8; 32], Vec<f32>)>) {
        let appended = new.iter().map(|(k, v)| (k, v));
        let bytes = if self.state == CacheState::Appending { records(appended) } else { Vec::new() };
        self.vectors.extend(new);
        let Some(file) = self.file.clone() else { return };
        let written = match self.state {
            CacheState::Appending => bounded_file::open_regular(&file, OpenFor::Appending)
                .map_err(|e| e.to_string())
                .and_then(|mut out| out.write_all(&bytes).map_err(|e| e.to_string())),
            CacheState::Unread | CacheState::Rewrite => self.rewrite(&file).map_err(|e| e.to_string()),
        };
        match written {
            Ok(()) => self.state = CacheState::Appending,
            Err(e) => {
                tracing::debug!("the embedding cache {} was not written: {e}", file.display());
                self.state = CacheState::Rewrite;
            }
        }
    }

    /// Writes every vector to a new file beside `file` and renames it into its place.
    fn rewrite(&self, file: &Path) -> std::io::Result<()> {
        if let Some(folder) = file.parent() {
            std::fs::create_dir_all(folder)?;
        }
        let mut name = file.as_os_str().to_owned();
        name.push(format!(".{}.new", std::process::id()));
        let fresh = PathBuf::from(name);
        let _ = std::fs::remove_file(&fresh);
        let written = (|| {
            // create_new: O_EXCL, which never follows a link either.
            let mut out = std::fs::OpenOptions::new().write(true).create_new(true).open(&fresh)?;
            out.write_all(CACHE_MAGIC)?;
            out.write_all(&records(self.vectors.iter()))?;
            out.sync_all()?;
            std::fs::rename(&fresh, file)
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&fresh);
        }
        written
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
        // A cache file per model (the SHA-256 of its weights names it), so that another
        // model never reads these vectors.
        let fingerprint = encoder.weights_sha256.get(..16).unwrap_or("unchecked").to_string();
        let file = cache_folder.map(|folder| folder.join(format!("{MODEL_NAME}-{fingerprint}.bin")));
        Ok(Self { encoder, cache: Mutex::new(Cache::new(file)) })
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
            let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
            cache.load(texts.len());
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

    /// A cache in a fresh folder, holding one vector once kept.
    fn cache_in(name: &str) -> (PathBuf, PathBuf) {
        let dir = std::env::temp_dir().join(format!("codemode-cache-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("folder");
        let file = dir.join("cache.bin");
        (dir, file)
    }

    fn vector(seed: f32) -> Vec<f32> {
        (0..DIMENSIONS).map(|i| seed + i as f32).collect()
    }

    /// `file` after a cache was read from it and kept one new vector: what it held,
    /// and what it holds afterwards.
    fn read_then_keep(file: &Path) -> (usize, HashMap<[u8; 32], Vec<f32>>) {
        let mut cache = Cache::new(Some(file.to_path_buf()));
        cache.load(10);
        let found = cache.vectors.len();
        cache.keep(vec![([9; 32], vector(9.0))]);
        (found, read_cache(file, cache_bound(10)).expect("a sound cache file"))
    }

    #[test]
    fn a_cache_is_appended_to_and_read_back() {
        let (dir, file) = cache_in("sound");
        let (found, after) = read_then_keep(&file);
        assert_eq!((found, after.len()), (0, 1));
        let mut cache = Cache::new(Some(file.clone()));
        cache.load(10);
        assert_eq!(cache.state, CacheState::Appending);
        cache.keep(vec![([7; 32], vector(7.0))]);
        let after = read_cache(&file, cache_bound(10)).expect("sound");
        assert_eq!(after.get(&[7; 32]), Some(&vector(7.0)));
        assert_eq!(after.get(&[9; 32]), Some(&vector(9.0)));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_hostile_or_damaged_cache_is_not_read_and_is_replaced_by_a_sound_one() {
        let (dir, file) = cache_in("hostile");
        let sound = |file: &Path| {
            let (found, after) = read_then_keep(file);
            assert_eq!(found, 0, "nothing was read from {}", file.display());
            assert_eq!(after.keys().collect::<Vec<_>>(), vec![&[9u8; 32]]);
            assert!(std::fs::symlink_metadata(file).expect("there").file_type().is_file());
        };
        // A link to /dev/zero: replaced by a file, never written through.
        std::os::unix::fs::symlink("/dev/zero", &file).expect("link");
        sound(&file);
        // A FIFO: neither read nor written (either would wait forever).
        std::fs::remove_file(&file).expect("removed");
        nix::unistd::mkfifo(&file, nix::sys::stat::Mode::S_IRWXU).expect("fifo");
        sound(&file);
        // A sparse file far over the bound, starting with the magic.
        let mut out = std::fs::File::create(&file).expect("file");
        out.write_all(CACHE_MAGIC).expect("magic");
        out.set_len(8 << 30).expect("sparse");
        drop(out);
        sound(&file);
        // A flipped byte in a vector: its record's check fails.
        let mut bytes = std::fs::read(&file).expect("cache");
        bytes[CACHE_MAGIC.len() + 40] ^= 0xff;
        std::fs::write(&file, &bytes).expect("damaged");
        assert!(matches!(read_cache(&file, cache_bound(10)), Err(CacheProblem::Damaged { record: 1, .. })));
        sound(&file);
        // A torn record at its end.
        let mut bytes = std::fs::read(&file).expect("cache");
        bytes.truncate(bytes.len() - 1);
        std::fs::write(&file, &bytes).expect("torn");
        sound(&file);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_cache_bound_follows_the_catalog() {
        assert_eq!(cache_bound(10), 8 + 4096 * 1576);
        assert_eq!(cache_bound(1818), 8 + 4 * 1818 * 1576);
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
