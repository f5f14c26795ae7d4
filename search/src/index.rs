//! The index: what `tools.$search(query)` answers inside a program when the catalog is
//! too large to declare in the execute description.
//!
//! Its place in the flow: the last step, the one the host calls; it ranks by words
//! (`bm25.rs`), by meaning ([`crate::semantic`]) or both, fused.
//!
//! It indexes plain documents, knowing nothing of where they come from: one
//! [`PluginDocuments`] per plugin (its name, its summary and a [`Document`] per tool:
//! name, description, parameters, hidden or not); the host builds them from its catalog
//! and asks for hits, each a plugin's and tool's name with a score.
//!
//! - **By words** (no model, no network): BM25 over each tool's fields, one document
//!   made of its name (weighted most), its plugin's name and summary, its description,
//!   and its parameters' names and descriptions (`words.rs`: split, stemmed,
//!   expanded to each word's concept group); a query word also matches the catalog's
//!   words that share its first letters, and each plugin's relevance to the whole query
//!   lifts its tools.
//! - **By meaning**: each tool's vector ([`SearchIndex::build_dense`], in the
//!   background) against the query's.
//! - **Fused** by reciprocal rank (`RRF_K` and the weights beside it).
//!
//! The index is built once per catalog (the host caches it) and a search over a
//! thousand tools by words takes well under a millisecond.

use std::collections::HashMap;

use crate::bm25::Bm25;
use crate::semantic::Semantic;
use crate::words::Words;

/// One plugin's tools, in words: what [`SearchIndex::build`] indexes.
#[derive(Debug, Clone, PartialEq)]
pub struct PluginDocuments<'a> {
    /// The plugin's name.
    pub name: &'a str,
    /// What the plugin is for, in a sentence (empty when it has no summary).
    pub summary: &'a str,
    /// Its tools, in the order the host lists them.
    pub tools: Vec<Document<'a>>,
}

/// One tool, in words.
#[derive(Debug, Clone, PartialEq)]
pub struct Document<'a> {
    /// The tool's name (a hit names the tool by it).
    pub name: &'a str,
    /// Its description.
    pub description: &'a str,
    /// Its top-level parameters: name and description (empty when it has none).
    pub parameters: Vec<(String, String)>,
    /// Whether the tool is hidden (callable, but ranked lower).
    pub hidden: bool,
}

/// The fields of a tool and how much a word in each counts.
const NAME_WEIGHT: f64 = 3.0;
const PLUGIN_WEIGHT: f64 = 1.5;
const DESCRIPTION_WEIGHT: f64 = 1.0;
const PARAMETER_WEIGHT: f64 = 0.4;

/// One search hit: a tool and its score (higher is better).
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// The tool's plugin.
    pub plugin: String,
    /// The tool's name.
    pub tool: String,
    /// Its score for the query.
    pub score: f64,
}

/// How much a query word that only shares its first letters with a catalog word
/// ("dependabot" for "dependency") counts, and how long the shared start must be.
const PREFIX_WEIGHT: f64 = 0.5;
const MIN_PREFIX: usize = 5;

/// How much the plugin's relevance to the whole query adds to each of its tools: a
/// query that names the product in other words ("our error tracker") lifts that
/// plugin's tools over look-alikes elsewhere.
const PLUGIN_RELEVANCE: f64 = 0.5;

/// How the two rankings are fused: reciprocal-rank fusion, each tool scoring
/// `weight / (RRF_K + rank)` in each ranking it appears in (its best FUSED_DEPTH), summed
/// over the rankings and over the query's phrasings.
///
/// Tuned on the project's query files (`host/tests/catalog_search.rs`), never on the
/// held-out ones: k = 20 (60, the usual, ranked 2 points lower), meaning weighted 1.5
/// against words 1 (1 ranked lower). A third ranking of plugins by their tools' best
/// similarity (a plugin-first stage) did not help, and was left out.
const RRF_K: f64 = 20.0;
const LEXICAL_WEIGHT: f64 = 1.0;
const MEANING_WEIGHT: f64 = 1.5;
const FUSED_DEPTH: usize = 100;
/// How much a hidden tool loses of its similarity (it is callable, but counts less).
const HIDDEN_PENALTY: f64 = 0.05;

/// Which ranking a search uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ranking {
    /// BM25 alone.
    Words,
    /// The sentence encoder's similarity alone (BM25 when there are no vectors).
    Meaning,
    /// Both, fused (BM25 when there are no vectors).
    Fused,
}

/// The tools' unit vectors, in document order.
struct DenseIndex {
    vectors: Vec<Vec<f32>>,
}

/// The tools of a catalog, indexed for search. Built by [`SearchIndex::build`].
pub struct SearchIndex {
    /// Plugin, tool name, hidden: by document number.
    tools: Vec<(String, String, bool)>,
    /// Each tool in words, as the semantic ranker embeds it ([`crate::semantic::tool_text`]).
    texts: Vec<String>,
    /// The tools' vectors, once [`SearchIndex::build_dense`] made them.
    dense: std::sync::OnceLock<DenseIndex>,
    /// Held while the vectors are made, so that two callers do not embed twice.
    embedding: std::sync::Mutex<()>,
    /// Each tool's plugin, as the number of its document in `by_plugin`.
    tool_plugin: Vec<usize>,
    by_tool: Bm25,
    by_plugin: Bm25,
    /// Every stem of the tools, sorted, for prefix matches.
    vocabulary: Vec<String>,
    words: Words,
}

impl SearchIndex {
    /// Indexes every tool of `plugins` (hidden ones too: they are callable, but count
    /// half).
    pub fn build(plugins: &[PluginDocuments<'_>]) -> Self {
        let words = Words::new();
        let mut tools = Vec::new();
        let mut texts = Vec::new();
        let mut tool_plugin = Vec::new();
        let mut tool_terms: Vec<HashMap<String, f64>> = Vec::new();
        let mut plugin_terms: Vec<HashMap<String, f64>> = Vec::new();
        for PluginDocuments { name: plugin, summary, tools: plugin_tools } in plugins {
            let mut whole: HashMap<String, f64> = HashMap::new();
            let mut add_whole = |text: &str, weight: f64| {
                for stem in words.stems(text) {
                    *whole.entry(stem).or_default() += weight;
                }
            };
            add_whole(plugin, 3.0);
            add_whole(summary, 2.0);
            for d in plugin_tools {
                let mut terms: HashMap<String, f64> = HashMap::new();
                let mut add = |text: &str, weight: f64| {
                    for stem in words.stems(text) {
                        *terms.entry(stem).or_default() += weight;
                    }
                };
                add(d.name, NAME_WEIGHT);
                add(plugin, PLUGIN_WEIGHT);
                add(summary, PLUGIN_WEIGHT * 0.5);
                add(d.description, DESCRIPTION_WEIGHT);
                for (name, description) in &d.parameters {
                    add(name, PARAMETER_WEIGHT);
                    add(description, PARAMETER_WEIGHT * 0.5);
                }
                texts.push(crate::semantic::tool_text(plugin, summary, d.name, d.description, &d.parameters));
                add_whole(d.name, 1.0);
                add_whole(d.description, 0.5);
                tools.push((plugin.to_string(), d.name.to_string(), d.hidden));
                tool_plugin.push(plugin_terms.len());
                tool_terms.push(terms);
            }
            plugin_terms.push(whole);
        }
        let by_tool = Bm25::new(&tool_terms);
        let by_plugin = Bm25::new(&plugin_terms);
        let mut vocabulary: Vec<String> = by_tool.stems().cloned().collect();
        vocabulary.sort();
        Self {
            tools,
            texts,
            dense: std::sync::OnceLock::new(),
            embedding: std::sync::Mutex::new(()),
            tool_plugin,
            by_tool,
            by_plugin,
            vocabulary,
            words,
        }
    }

    /// Embeds every tool with `semantic` (cached vectors are not embedded again), so
    /// that later searches fuse meaning with words. Slow the first time (tens of
    /// seconds for a thousand tools): run it in the background; searches meanwhile
    /// rank by words alone.
    pub fn build_dense(&self, semantic: &Semantic) {
        let _one_at_a_time = self.embedding.lock().unwrap_or_else(|p| p.into_inner());
        if self.dense.get().is_some() {
            return;
        }
        let vectors = semantic.vectors(&self.texts);
        let _ = self.dense.set(DenseIndex { vectors });
    }

    /// True once the tools' vectors are there.
    pub fn has_dense(&self) -> bool {
        self.dense.get().is_some()
    }

    /// The `limit` best tools for any of `queries` (phrasings of one need), best first,
    /// only from `plugin` when given: by meaning and words together when the tools'
    /// vectors are there and `semantic` is given (fused by reciprocal rank), by words alone otherwise.
    /// Each hit's score is its fused score (or BM25's).
    pub fn search_phrasings(
        &self,
        queries: &[String],
        plugin: Option<&str>,
        limit: usize,
        semantic: Option<&Semantic>,
    ) -> Vec<Hit> {
        self.search_ranked(queries, plugin, limit, semantic, Ranking::Fused)
    }

    /// [`SearchIndex::search_phrasings`] with one ranking or both (for measuring each).
    pub fn search_ranked(
        &self,
        queries: &[String],
        plugin: Option<&str>,
        limit: usize,
        semantic: Option<&Semantic>,
        ranking: Ranking,
    ) -> Vec<Hit> {
        let dense = semantic.zip(self.dense.get()).filter(|_| ranking != Ranking::Words);
        let mut fused: HashMap<usize, f64> = HashMap::new();
        for query in queries {
            let lexical = self.ranked(query, plugin);
            let meaning: Vec<(f64, usize)> = match dense {
                Some((semantic, index)) => {
                    let vector = semantic.embed_query(query);
                    let mut scored: Vec<(f64, usize)> = index
                        .vectors
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| plugin.is_none_or(|p| self.tools[*i].0 == p))
                        .map(|(i, v)| {
                            let mut score = f64::from(crate::semantic::similarity(&vector, v));
                            if self.tools[i].2 {
                                score -= HIDDEN_PENALTY;
                            }
                            (score, i)
                        })
                        .collect();
                    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
                    scored.truncate(FUSED_DEPTH);
                    scored
                }
                None => Vec::new(),
            };
            if meaning.is_empty() {
                for (score, i) in lexical {
                    *fused.entry(i).or_default() += score;
                }
                continue;
            }
            if ranking == Ranking::Meaning {
                for (score, i) in meaning {
                    *fused.entry(i).or_default() += score;
                }
                continue;
            }
            for (rank, (_, i)) in lexical.iter().take(FUSED_DEPTH).enumerate() {
                *fused.entry(*i).or_default() += LEXICAL_WEIGHT / (RRF_K + rank as f64 + 1.0);
            }
            for (rank, (_, i)) in meaning.iter().enumerate() {
                *fused.entry(*i).or_default() += MEANING_WEIGHT / (RRF_K + rank as f64 + 1.0);
            }
        }
        let mut hits: Vec<(f64, usize)> = fused.into_iter().map(|(i, score)| (score, i)).collect();
        hits.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        hits.into_iter()
            .take(limit)
            .map(|(score, i)| Hit { plugin: self.tools[i].0.clone(), tool: self.tools[i].1.clone(), score })
            .collect()
    }

    /// The `limit` best tools for `query` by words alone (BM25), best first, only from
    /// `plugin` when given; tools that match no word of the query are left out.
    pub fn search(&self, query: &str, plugin: Option<&str>, limit: usize) -> Vec<Hit> {
        self.ranked(query, plugin)
            .into_iter()
            .take(limit)
            .map(|(score, i)| Hit { plugin: self.tools[i].0.clone(), tool: self.tools[i].1.clone(), score })
            .collect()
    }

    /// Every tool that matches a word of `query`, with its BM25 score, best first.
    fn ranked(&self, query: &str, plugin: Option<&str>) -> Vec<(f64, usize)> {
        let mut wanted = self.words.expand(query);
        for variants in &mut wanted {
            let stem = variants[0].0.clone();
            for other in self.sharing_start(&stem) {
                if !variants.iter().any(|(s, _)| *s == other) {
                    variants.push((other, PREFIX_WEIGHT));
                }
            }
        }
        let tool_scores = self.by_tool.scores(&wanted);
        let plugin_scores = self.by_plugin.scores(&wanted);
        let top_plugin = plugin_scores.iter().copied().fold(0.0, f64::max);
        let mut hits: Vec<(f64, usize)> = tool_scores
            .iter()
            .enumerate()
            .filter(|(i, score)| **score > 0.0 && plugin.is_none_or(|p| self.tools[*i].0 == p))
            .map(|(i, score)| {
                let relevance = if top_plugin > 0.0 { plugin_scores[self.tool_plugin[i]] / top_plugin } else { 0.0 };
                let mut score = score * (1.0 + PLUGIN_RELEVANCE * relevance);
                if self.tools[i].2 {
                    score *= 0.5;
                }
                (score, i)
            })
            .collect();
        hits.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        hits
    }

    /// The catalog's stems that share a start of at least [`MIN_PREFIX`] letters with
    /// `stem` as a whole (one is the other's beginning).
    fn sharing_start(&self, stem: &str) -> Vec<String> {
        if stem.len() < MIN_PREFIX {
            return Vec::new();
        }
        let from = self.vocabulary.partition_point(|v| v.as_str() < stem);
        let mut out: Vec<String> = self.vocabulary[from..]
            .iter()
            .take_while(|v| v.starts_with(stem))
            .filter(|v| *v != stem)
            .cloned()
            .collect();
        for end in MIN_PREFIX..stem.len() {
            if let Some(prefix) = stem.get(..end) {
                if self.vocabulary.binary_search_by(|v| v.as_str().cmp(prefix)).is_ok() {
                    out.push(prefix.to_string());
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two plugins' tools, each with a `repo` parameter, as the host's catalog gives them.
    fn plugins() -> Vec<PluginDocuments<'static>> {
        let tool = |name, description| Document {
            name,
            description,
            parameters: vec![("repo".to_string(), "owner/name".to_string())],
            hidden: false,
        };
        vec![
            PluginDocuments {
                name: "github",
                summary: "",
                tools: vec![
                    tool("create_issue", "Create a new issue in a repository."),
                    tool("listPullRequests", "List pull requests of a repository."),
                ],
            },
            PluginDocuments {
                name: "weather",
                summary: "",
                tools: vec![tool("forecast", "Tomorrow's forecast for a city.")],
            },
        ]
    }

    #[test]
    fn the_users_words_find_the_vendors_tool() {
        let index = SearchIndex::build(&plugins());
        let top = |q: &str| index.search(q, None, 1).first().map(|h| format!("{}.{}", h.plugin, h.tool));
        assert_eq!(top("report a bug in a repo").as_deref(), Some("github.create_issue"));
        assert_eq!(top("show merge requests").as_deref(), Some("github.listPullRequests"));
        assert_eq!(top("will it rain tomorrow").as_deref(), Some("weather.forecast"));
        assert_eq!(index.search("zebra", None, 5), vec![]);
        assert!(index.search("pull request", Some("weather"), 5).is_empty());
    }
}
