//! Searching the catalog in words: what `tools.$search(query)` answers inside a
//! program when the catalog is too large to declare in the execute description.
//!
//! A lexical ranker, BM25 over each tool's fields, with no model and no network:
//! - each tool is one document made of its name (weighted most), its plugin's name and
//!   summary, its description, and its parameters' names and descriptions;
//! - words are lower-cased, split at `_`, `-`, `.`, `/` and camelCase humps, stripped of
//!   stop words and stemmed (Snowball English), so "listing repositories" meets
//!   `list_repos`' "repository";
//! - each query word also matches the other words of its concept group ([`CONCEPTS`]:
//!   general vocabulary, "remove" for "delete", "ticket" for "issue"), at a discount, so
//!   a request written in the user's words still finds the tool written in the
//!   vendor's.
//!
//! The index is built once per catalog (the catalog caches it) and a search over a
//! thousand tools takes well under a millisecond.

use std::collections::HashMap;

use rust_stemmers::{Algorithm, Stemmer};
use serde_json::Value;

use super::semantic::Semantic;
use super::Catalog;

/// How much a query word's concept-group relatives count, next to the word itself.
const RELATIVE_WEIGHT: f64 = 0.6;

/// BM25's term-frequency saturation and length normalisation.
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// The fields of a tool and how much a word in each counts.
const NAME_WEIGHT: f64 = 3.0;
const PLUGIN_WEIGHT: f64 = 1.5;
const DESCRIPTION_WEIGHT: f64 = 1.0;
const PARAMETER_WEIGHT: f64 = 0.4;

/// Words that say nothing about which tool is meant.
const STOP_WORDS: &str =
    "a an the and or of to in on for from by with without into onto at as is are be been being was were \
    it its this that these those there here my me i we you your our their his her them they all any some each every \
    can could should would will shall may might must do does did done please want need needs like just also then than \
    so such what which who whom whose when where how why if else not no yes via using use used one two given s t";

/// Groups of words that mean the same thing to someone asking for a tool. General
/// vocabulary of software, services and everyday tasks, not any catalog's names.
const CONCEPTS: &[&[&str]] = &[
    &[
        "create", "make", "add", "new", "open", "start", "file", "submit", "register", "insert", "compose", "draft",
        "write", "post", "publish",
    ],
    &["delete", "remove", "erase", "drop", "destroy", "discard", "trash", "purge", "clear", "unlink"],
    &["update", "edit", "change", "modify", "set", "rename", "patch", "adjust", "alter", "replace"],
    &[
        "get", "fetch", "read", "retrieve", "show", "view", "open", "load", "look", "inspect", "detail", "details",
        "info", "describe",
    ],
    &["list", "all", "enumerate", "browse", "index", "every", "show"],
    &["search", "find", "query", "lookup", "look", "locate", "discover", "filter", "match", "grep"],
    &["send", "post", "message", "notify", "deliver", "dispatch", "text", "dm", "reply"],
    &["issue", "bug", "ticket", "defect", "problem", "task", "incident"],
    &["pull", "pr", "merge", "request", "change", "patch", "review"],
    &["repository", "repo", "project", "codebase"],
    &["branch", "ref", "fork"],
    &["commit", "revision", "changeset", "sha"],
    &["comment", "note", "remark", "annotation", "reply", "feedback"],
    &["user", "person", "member", "people", "account", "profile", "contact", "employee", "teammate", "customer"],
    &["team", "group", "organization", "org", "workspace", "company"],
    &["email", "mail", "inbox", "gmail", "message", "letter"],
    &["file", "document", "doc", "attachment", "upload", "blob", "object"],
    &["folder", "directory", "dir", "path"],
    &["event", "meeting", "appointment", "calendar", "schedule", "invite", "booking"],
    &["channel", "room", "chat", "conversation", "thread"],
    &["page", "wiki", "article", "document", "note"],
    &["database", "db", "table", "sql", "records", "rows", "query"],
    &["row", "record", "entry", "item"],
    &["log", "logs", "trace", "events", "output"],
    &["error", "exception", "crash", "failure", "fault", "issue", "stacktrace"],
    &["metric", "metrics", "measurement", "stat", "stats", "statistics", "gauge", "timeseries", "monitor"],
    &["alert", "alarm", "warning", "notification", "page", "incident"],
    &["deploy", "deployment", "release", "ship", "rollout", "publish"],
    &["build", "pipeline", "workflow", "job", "ci", "run", "action"],
    &["container", "docker", "image", "pod"],
    &["cluster", "kubernetes", "k8s", "namespace", "node"],
    &["server", "instance", "machine", "vm", "host", "compute"],
    &["bucket", "storage", "object", "s3", "blob"],
    &["secret", "credential", "key", "token", "password", "apikey"],
    &["permission", "role", "access", "grant", "policy", "acl"],
    &["payment", "charge", "pay", "transaction", "purchase"],
    &["refund", "reimburse", "return", "reverse"],
    &["invoice", "bill", "billing", "receipt"],
    &["subscription", "plan", "recurring", "membership"],
    &["customer", "client", "buyer", "shopper", "account"],
    &["product", "item", "sku", "merchandise", "goods", "catalog"],
    &["order", "purchase", "checkout", "cart"],
    &["price", "cost", "amount", "fee", "rate", "quote"],
    &["price", "stock", "share", "ticker", "quote", "market", "equity"],
    &["weather", "forecast", "temperature", "rain", "climate", "conditions"],
    &["location", "place", "address", "map", "geocode", "coordinates", "nearby", "directions", "route"],
    &["flight", "airline", "airport", "fly", "plane", "travel", "trip"],
    &["hotel", "lodging", "accommodation", "stay", "room"],
    &["song", "track", "music", "playlist", "album", "artist", "audio"],
    &["play", "playback", "resume", "listen"],
    &["pause", "stop", "halt", "suspend"],
    &["video", "movie", "clip", "stream", "watch"],
    &["image", "picture", "photo", "screenshot", "png", "jpeg", "snapshot", "capture"],
    &["click", "press", "tap", "select"],
    &["navigate", "visit", "go", "browse", "url", "link", "webpage"],
    &["type", "fill", "enter", "input", "keyboard"],
    &["web", "internet", "online", "website", "site", "page"],
    &["paper", "article", "publication", "research", "study", "preprint"],
    &["summary", "summarize", "overview", "digest", "abstract", "brief"],
    &["translate", "translation", "language"],
    &["time", "clock", "timezone", "date", "now", "current"],
    &["convert", "conversion", "transform", "format"],
    &["count", "number", "total", "many"],
    &["archive", "close", "resolve", "complete", "finish", "done"],
    &["assign", "assignee", "owner", "delegate", "allocate"],
    &["label", "tag", "category", "topic"],
    &["status", "state", "progress", "health"],
    &["download", "export", "save", "backup", "dump"],
    &["upload", "import", "attach"],
    &["share", "invite", "collaborator"],
    &["star", "favorite", "bookmark", "like", "react", "reaction", "emoji"],
    &["light", "lights", "lamp", "switch", "turn", "toggle"],
    &["thermostat", "heating", "temperature", "climate", "hvac"],
    &["sms", "text", "phone", "call", "mobile", "number"],
    &["lead", "deal", "opportunity", "prospect", "pipeline", "crm"],
    &["design", "frame", "component", "layer", "mockup", "figma"],
    &["tweet", "post", "status", "timeline"],
    &["followers", "follow", "following", "subscribers", "subscribe"],
    &["memory", "remember", "knowledge", "graph", "entity", "recall"],
    &["board", "card", "column", "kanban", "list"],
    &["sprint", "cycle", "iteration", "milestone", "roadmap"],
    &["sheet", "spreadsheet", "cell", "cells", "range", "workbook"],
    &["slide", "presentation", "deck"],
    &["cancel", "abort", "revoke", "terminate", "kill"],
    &["restart", "reboot", "reload", "rerun", "retry"],
    &["scale", "resize", "replicas", "autoscale"],
    &["dns", "domain", "record", "zone"],
    &["certificate", "cert", "tls", "ssl"],
    &["cost", "spend", "usage", "budget", "billing"],
    &["schema", "structure", "columns", "fields", "describe"],
    &["diff", "difference", "compare", "changes"],
    &["history", "past", "previous", "recent", "activity", "timeline"],
];

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
/// Tuned on the project's query files (`tests/catalog_search.rs`), never on the
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

/// BM25 over a set of documents, as postings: stem → (document, weighted count).
struct Bm25 {
    postings: HashMap<String, Vec<(usize, f64)>>,
    lengths: Vec<f64>,
    average_length: f64,
}

impl Bm25 {
    fn new(documents: &[HashMap<String, f64>]) -> Self {
        let mut postings: HashMap<String, Vec<(usize, f64)>> = HashMap::new();
        for (i, terms) in documents.iter().enumerate() {
            for (stem, tf) in terms {
                postings.entry(stem.clone()).or_default().push((i, *tf));
            }
        }
        let lengths: Vec<f64> = documents.iter().map(|t| t.values().sum()).collect();
        let average_length = (lengths.iter().sum::<f64>() / lengths.len().max(1) as f64).max(1.0);
        Self { postings, lengths, average_length }
    }

    /// Each document's score for `wanted` (one list of weighted variants per query
    /// word; a word counts once, through its best variant).
    fn scores(&self, wanted: &[Vec<(String, f64)>]) -> Vec<f64> {
        let count = self.lengths.len() as f64;
        let mut totals = vec![0.0; self.lengths.len()];
        for variants in wanted {
            let mut best: HashMap<usize, f64> = HashMap::new();
            for (stem, weight) in variants {
                let Some(postings) = self.postings.get(stem) else { continue };
                let n = postings.len() as f64;
                let idf = ((count - n + 0.5) / (n + 0.5) + 1.0).ln();
                for &(doc, tf) in postings {
                    let norm = K1 * (1.0 - B + B * self.lengths[doc] / self.average_length);
                    let score = weight * idf * tf * (K1 + 1.0) / (tf + norm);
                    let entry = best.entry(doc).or_default();
                    *entry = entry.max(score);
                }
            }
            for (doc, score) in best {
                totals[doc] += score;
            }
        }
        totals
    }
}

/// The catalog, indexed for search. Built by [`Catalog::search_index`].
pub struct SearchIndex {
    /// Plugin, tool name, hidden: by document number.
    tools: Vec<(String, String, bool)>,
    /// Each tool in words, as the semantic ranker embeds it ([`super::semantic::tool_text`]).
    texts: Vec<String>,
    /// The tools' vectors, once [`SearchIndex::build_dense`] made them.
    dense: std::sync::OnceLock<DenseIndex>,
    /// Held while the vectors are made, so that two callers do not embed twice.
    embedding: std::sync::Mutex<()>,
    /// Each tool's plugin, as the number of its document in `by_plugin`.
    tool_plugin: Vec<usize>,
    by_tool: Bm25,
    by_plugin: Bm25,
    /// Every stem of the catalog, sorted, for prefix matches.
    vocabulary: Vec<String>,
    words: Words,
}

impl SearchIndex {
    /// Indexes every tool of `catalog` (hidden ones too: they are callable, but count
    /// half).
    pub fn build(catalog: &Catalog) -> Self {
        let words = Words::new();
        let mut tools = Vec::new();
        let mut texts = Vec::new();
        let mut tool_plugin = Vec::new();
        let mut tool_terms: Vec<HashMap<String, f64>> = Vec::new();
        let mut plugin_terms: Vec<HashMap<String, f64>> = Vec::new();
        for (plugin, plugin_tools) in catalog.plugins() {
            let summary = catalog.summary(plugin).unwrap_or_default();
            let mut whole: HashMap<String, f64> = HashMap::new();
            let mut add_whole = |text: &str, weight: f64| {
                for stem in words.stems(text) {
                    *whole.entry(stem).or_default() += weight;
                }
            };
            add_whole(plugin, 3.0);
            add_whole(summary, 2.0);
            for tool in plugin_tools {
                let d = &tool.definition;
                let mut terms: HashMap<String, f64> = HashMap::new();
                let mut add = |text: &str, weight: f64| {
                    for stem in words.stems(text) {
                        *terms.entry(stem).or_default() += weight;
                    }
                };
                add(&d.name, NAME_WEIGHT);
                add(plugin, PLUGIN_WEIGHT);
                add(summary, PLUGIN_WEIGHT * 0.5);
                add(&d.description, DESCRIPTION_WEIGHT);
                let parameters = parameters(&d.input_schema);
                for (name, description) in &parameters {
                    add(name, PARAMETER_WEIGHT);
                    add(description, PARAMETER_WEIGHT * 0.5);
                }
                texts.push(super::semantic::tool_text(plugin, summary, &d.name, &d.description, &parameters));
                add_whole(&d.name, 1.0);
                add_whole(&d.description, 0.5);
                tools.push((plugin.to_string(), d.name.clone(), d.hidden));
                tool_plugin.push(plugin_terms.len());
                tool_terms.push(terms);
            }
            plugin_terms.push(whole);
        }
        let by_tool = Bm25::new(&tool_terms);
        let by_plugin = Bm25::new(&plugin_terms);
        let mut vocabulary: Vec<String> = by_tool.postings.keys().cloned().collect();
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
    /// vectors are there and `semantic` is given ([`fuse`]), by words alone otherwise.
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
                            let mut score = f64::from(super::semantic::similarity(&vector, v));
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

/// Tokenising, stemming and concept expansion.
struct Words {
    stemmer: Stemmer,
    /// Stem → the stems of its concept groups' other words.
    relatives: HashMap<String, Vec<String>>,
    stop_words: std::collections::HashSet<&'static str>,
}

impl Words {
    fn new() -> Self {
        let stemmer = Stemmer::create(Algorithm::English);
        let mut relatives: HashMap<String, Vec<String>> = HashMap::new();
        for group in CONCEPTS {
            let stems: Vec<String> = group.iter().map(|w| stemmer.stem(w).into_owned()).collect();
            for stem in &stems {
                let entry = relatives.entry(stem.clone()).or_default();
                for other in &stems {
                    if other != stem && !entry.contains(other) {
                        entry.push(other.clone());
                    }
                }
            }
        }
        Self { stemmer, relatives, stop_words: STOP_WORDS.split_whitespace().collect() }
    }

    /// The stems of `text`'s words, stop words left out.
    fn stems(&self, text: &str) -> Vec<String> {
        split_words(text)
            .into_iter()
            .filter(|w| !self.stop_words.contains(w.as_str()))
            .map(|w| self.stemmer.stem(&w).into_owned())
            .collect()
    }

    /// Each query word as its stem (weight 1) and its relatives' stems (discounted);
    /// a word said twice counts once. Linear in the query's length.
    fn expand(&self, query: &str) -> Vec<Vec<(String, f64)>> {
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for stem in self.stems(query) {
            if !seen.insert(stem.clone()) {
                continue;
            }
            let mut variants = vec![(stem.clone(), 1.0)];
            for relative in self.relatives.get(&stem).into_iter().flatten() {
                variants.push((relative.clone(), RELATIVE_WEIGHT));
            }
            out.push(variants);
        }
        out
    }
}

/// Lower-case words of `text`, split at anything but letters and digits and at
/// camelCase humps (`listRepos` → `list`, `repos`).
pub(crate) fn split_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && previous_lower && !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
            previous_lower = c.is_lowercase() || c.is_ascii_digit();
            current.extend(c.to_lowercase());
        } else {
            previous_lower = false;
            if !current.is_empty() {
                words.push(std::mem::take(&mut current));
            }
        }
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

/// A schema's top-level parameters: name and description.
fn parameters(schema: &Value) -> Vec<(String, String)> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| {
            properties
                .iter()
                .map(|(name, p)| {
                    (name.clone(), p.get("description").and_then(Value::as_str).unwrap_or_default().to_string())
                })
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::tool::{Tool, ToolDefinition, ToolResult};
    use serde_json::json;

    fn catalog() -> Catalog {
        let tool = |name: &str, description: &str| {
            Tool::from_fn(
                ToolDefinition::new(
                    name,
                    description,
                    json!({ "type": "object", "properties": { "repo": { "type": "string", "description": "owner/name" } } }),
                ),
                |_, _| async { ToolResult::text("x") },
            )
        };
        Catalog::new()
            .with("github", tool("create_issue", "Create a new issue in a repository."))
            .unwrap()
            .with("github", tool("listPullRequests", "List pull requests of a repository."))
            .unwrap()
            .with("weather", tool("forecast", "Tomorrow's forecast for a city."))
            .unwrap()
    }

    #[test]
    fn words_are_split_stemmed_and_stop_words_dropped() {
        assert_eq!(
            split_words("listPullRequests my-db/search_rows HTTPServer"),
            ["list", "pull", "requests", "my", "db", "search", "rows", "httpserver"]
        );
        let words = Words::new();
        assert_eq!(words.stems("Listing the repositories"), ["list", "repositori"]);
    }

    #[test]
    fn the_users_words_find_the_vendors_tool() {
        let index = SearchIndex::build(&catalog());
        let top = |q: &str| index.search(q, None, 1).first().map(|h| format!("{}.{}", h.plugin, h.tool));
        assert_eq!(top("report a bug in a repo").as_deref(), Some("github.create_issue"));
        assert_eq!(top("show merge requests").as_deref(), Some("github.listPullRequests"));
        assert_eq!(top("will it rain tomorrow").as_deref(), Some("weather.forecast"));
        assert_eq!(index.search("zebra", None, 5), vec![]);
        assert!(index.search("pull request", Some("weather"), 5).is_empty());
    }
}
