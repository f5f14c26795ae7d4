//! `tools.$search`'s rankers: which tools of a catalog a program's query means, by
//! words, by meaning, or both fused. The crate indexes plain documents (a plugin's name
//! and summary, each tool's name, description and parameters) and answers hits (a
//! plugin's and a tool's name, with a score); it knows nothing of the host's catalog,
//! its tools' handlers or MCP.
//!
//! The flow, as the host drives it:
//! 1. at start-up, off the listener's path, the host finds the model
//!    ([`semantic::find_model`]) and loads it ([`semantic::Semantic::load`]): the
//!    sentence encoder ([`encoder`], its int8 kernel in `encoder/int8.rs`) and the
//!    embeddings cache, every file read through [`bounded_file`] (no link, a regular file
//!    only, within a bound); `codemode pack-search-model` packs the model
//!    ([`encoder::pack`]);
//! 2. for each catalog, the host builds a [`SearchIndex`] from its
//!    [`PluginDocuments`]: each tool's words (`words.rs`: split, stemmed, expanded to
//!    concept groups) counted for BM25 (`bm25.rs`), and its text for the encoder;
//! 3. in the background, [`SearchIndex::build_dense`] embeds every tool (cached
//!    vectors are not embedded again); searches meanwhile rank by words alone;
//! 4. each `tools.$search` asks [`SearchIndex::search_phrasings`] for the best
//!    [`Hit`]s: BM25's ranking and the encoder's, fused by reciprocal rank
//!    ([`index`]).
//!
//! Dependencies run one way: `index` → `semantic` → `encoder` → `bounded_file`, and
//! `index`, `semantic` → `words`; `index` → `bm25`.

mod bm25;
pub mod bounded_file;
pub mod encoder;
pub mod index;
pub mod semantic;
mod words;

pub use index::{Document, Hit, PluginDocuments, Ranking, SearchIndex};
pub use semantic::Semantic;
