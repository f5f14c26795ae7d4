//! Searching a large catalog in the user's words: 1,000+ tools written down from real
//! MCP servers' tool lists (`fixtures/catalog/servers/`), and natural queries written
//! before the ranker, none containing its tool's name or plugin
//! (`fixtures/catalog/queries-*.json`, checked by `fixtures/catalog/check.py`). It
//! prints the top-1 and top-5 hit rates per query file (the misses only for the files
//! the ranker was developed against, never for `queries-heldout.json`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

#[path = "common/catalog_fixture.rs"]
mod catalog_fixture;
use catalog_fixture::{fixture_catalog, fixtures};

use codemode::tool::search::Ranking;
use codemode::tool::semantic::Semantic;
use codemode::tool::Catalog;
use serde_json::Value;

/// The search model the evaluation uses: `CODEMODE_SEARCH_MODEL`, else where codemode
/// finds it ([`codemode::tool::semantic::find_model`]); none: BM25 is measured alone.
fn semantic() -> Option<Arc<Semantic>> {
    let configured = std::env::var_os("CODEMODE_SEARCH_MODEL").map(std::path::PathBuf::from);
    let env = |name: &str| std::env::var(name).ok();
    let model = codemode::tool::semantic::find_model(configured.as_deref(), &env)?;
    let cache = codemode::tool::semantic::cache_folder(&env);
    Some(Arc::new(Semantic::load(&model, cache.as_deref()).unwrap_or_else(|e| panic!("{e}"))))
}

/// Hit counts of one ranker on one query file.
#[derive(Default, Clone, Copy)]
struct Rates {
    queries: usize,
    top1: usize,
    top5: usize,
    top10: usize,
    in_plugin5: usize,
}

impl Rates {
    fn add(&mut self, other: Rates) {
        self.queries += other.queries;
        self.top1 += other.top1;
        self.top5 += other.top5;
        self.top10 += other.top10;
        self.in_plugin5 += other.in_plugin5;
    }

    fn percent(&self, n: usize) -> f64 {
        100.0 * n as f64 / self.queries.max(1) as f64
    }

    fn line(&self) -> String {
        format!(
            "top 1 {:.1}%, top 5 {:.1}%, top 10 {:.1}%; top 5 within the right plugin {:.1}%",
            self.percent(self.top1),
            self.percent(self.top5),
            self.percent(self.top10),
            self.percent(self.in_plugin5)
        )
    }
}

/// How `ranking` does on `queries`: the rank of the expected tool among all tools, and
/// among its plugin's (as when the search names the plugin an agent picked from the
/// listing's summaries). The misses are printed only for the files the ranker was
/// developed against, never for the held-out ones.
fn rate(catalog: &Catalog, semantic: Option<&Semantic>, ranking: Ranking, name: &str, queries: &[Value]) -> Rates {
    let index = catalog.search_index();
    let mut rates = Rates { queries: queries.len(), ..Rates::default() };
    for q in queries {
        let (query, expect) = (q["query"].as_str().expect("query"), q["expect"].as_str().expect("expect"));
        let (plugin, tool) = expect.split_once('.').expect("plugin.tool");
        assert!(catalog.get(plugin, tool).is_some(), "query {query:?} expects {expect}, which is not in the catalog");
        let phrasing = [query.to_string()];
        let hits = index.search_ranked(&phrasing, None, 10, semantic, ranking);
        let scoped = index.search_ranked(&phrasing, Some(plugin), 5, semantic, ranking);
        rates.in_plugin5 += usize::from(scoped.iter().any(|h| h.tool == tool));
        match hits.iter().position(|h| h.plugin == plugin && h.tool == tool) {
            Some(rank) => {
                rates.top10 += 1;
                rates.top5 += usize::from(rank < 5);
                rates.top1 += usize::from(rank == 0);
            }
            None if !name.contains("heldout") && std::env::var_os("CODEMODE_SEARCH_MISSES").is_some() => println!(
                "  missed {query:?}: wanted {expect}, got {}",
                hits.iter().take(5).map(|h| format!("{}.{}", h.plugin, h.tool)).collect::<Vec<_>>().join(", ")
            ),
            None => {}
        }
    }
    rates
}

/// Measures every ranker on every query file and prints the table (top 1, 5 and 10,
/// and top 5 within the right plugin). Asserts floors under what the rankers reached
/// when this test was written, so that a change that makes search worse fails here:
/// BM25's always, the fused ranker's when the search model is installed (the README's
/// two commands install it).
#[test]
fn the_right_tool_is_found_for_natural_queries() {
    let catalog = fixture_catalog();
    let tools: usize = catalog.plugins().map(|(_, t)| t.count()).sum();
    assert!(tools >= 1_000, "the fixture catalog has {tools} tools; the test needs at least 1,000");
    let semantic = semantic();
    if let Some(semantic) = &semantic {
        let started = std::time::Instant::now();
        catalog.search_index().build_dense(semantic);
        println!("{} tools embedded (or read from the cache) in {:.1} s", tools, started.elapsed().as_secs_f64());
    } else {
        println!("no search model installed: BM25 alone (scripts/test.sh installs the model)");
    }
    let mut files: Vec<_> = std::fs::read_dir(fixtures())
        .expect("fixtures")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("queries-")))
        .collect();
    files.sort();
    let rankings: &[(Ranking, &str)] = if semantic.is_some() {
        &[(Ranking::Words, "BM25"), (Ranking::Meaning, "dense"), (Ranking::Fused, "fused")]
    } else {
        &[(Ranking::Words, "BM25")]
    };
    let mut totals = vec![Rates::default(); rankings.len()];
    let mut developed = vec![Rates::default(); rankings.len()];
    let mut heldout = vec![Rates::default(); rankings.len()];
    for file in &files {
        let queries: Vec<Value> =
            serde_json::from_str(&std::fs::read_to_string(file).expect("readable")).expect("JSON");
        let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        for (i, (ranking, label)) in rankings.iter().enumerate() {
            let rates = rate(&catalog, semantic.as_deref(), *ranking, &name, &queries);
            println!("{name} ({} queries), {label}: {}", queries.len(), rates.line());
            totals[i].add(rates);
            if name.contains("heldout") {
                heldout[i].add(rates);
            } else {
                developed[i].add(rates);
            }
        }
    }
    for (i, (_, label)) in rankings.iter().enumerate() {
        println!("all ({} queries), {label}: {}", totals[i].queries, totals[i].line());
        println!("  the project's query files, {label}: {}", developed[i].line());
        println!("  the held-out files, {label}: {}", heldout[i].line());
    }
    let words = totals[0];
    assert!(words.queries >= 50, "{} queries; the test needs at least 50", words.queries);
    let at_least = |rates: &Rates, n: usize, floor: f64, what: &str| {
        let rate = rates.percent(n) / 100.0;
        assert!(rate >= floor, "{what} fell to {:.1}% (it was at least {:.0}%)", 100.0 * rate, 100.0 * floor);
    };
    at_least(&words, words.top5, BM25_FLOOR, "BM25's top-5 hit rate");
    at_least(&words, words.in_plugin5, BM25_PLUGIN_FLOOR, "BM25's top-5 hit rate within the right plugin");
    if semantic.is_some() {
        let fused = totals[2];
        at_least(&developed[2], developed[2].top5, FUSED_FLOOR, "the fused top-5 hit rate on the project's files");
        at_least(&heldout[2], heldout[2].top5, FUSED_HELDOUT_FLOOR, "the fused top-5 hit rate on the held-out files");
        at_least(&fused, fused.in_plugin5, FUSED_PLUGIN_FLOOR, "the fused top-5 hit rate within the right plugin");
    }
}

/// BM25's top-5 hit rate over every query file when this test was written, less a
/// little: falling under it means search got worse.
const BM25_FLOOR: f64 = 0.45;
/// The same within the right plugin.
const BM25_PLUGIN_FLOOR: f64 = 0.70;
/// The fused ranker's floors (measured, less a little).
const FUSED_FLOOR: f64 = 0.70;
const FUSED_HELDOUT_FLOOR: f64 = 0.60;
const FUSED_PLUGIN_FLOOR: f64 = 0.85;
