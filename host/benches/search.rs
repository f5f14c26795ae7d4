//! `cargo bench -p codemode --bench search`: what `tools.$search` costs with the search
//! model, on the catalog fixture (1,818 tools from 85 real servers' tool lists).
//!
//! Prints:
//! - the model's load time and the host's RSS with it loaded;
//! - embedding the whole catalog cold (no cache: what a first start does in the
//!   background while BM25 answers), on every core, then warm (a restart: every vector
//!   from the cache file);
//! - a search's p50 and p95 over the query files' queries: by words alone (BM25), one
//!   phrasing by meaning and words, and four phrasings at once, and the query's
//!   embedding alone.
//!
//! The model is `CODEMODE_SEARCH_MODEL`, else where codemode finds it
//! (`scripts/demo.sh` and `scripts/test.sh` install it).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use codemode::tool::semantic::{find_model, Semantic};
use serde_json::Value;

#[path = "../tests/common/catalog_fixture.rs"]
mod catalog_fixture;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn report(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    println!(
        "{name:<52} n={:<5} p50 {:>9.2?}  p95 {:>9.2?}",
        samples.len(),
        percentile(&samples, 0.5),
        percentile(&samples, 0.95)
    );
}

fn rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib: f64 = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    kib / 1024.0
}

fn main() {
    let env = |name: &str| std::env::var(name).ok();
    let configured = std::env::var_os("CODEMODE_SEARCH_MODEL").map(std::path::PathBuf::from);
    let catalog = catalog_fixture::fixture_catalog();
    let tools: usize = catalog.plugins().map(|(_, t)| t.count()).sum();
    let queries: Vec<String> = catalog_fixture::json_files(catalog_fixture::fixtures(), "queries-")
        .iter()
        .flat_map(|file| file.as_array().cloned().unwrap_or_default())
        .filter_map(|q| q.get("query").and_then(Value::as_str).map(str::to_string))
        .collect();
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    println!("codemode search benchmark: {tools} tools, {} queries, {cores} cores", queries.len());

    let index = catalog.search_index();
    let words: Vec<Duration> = queries
        .iter()
        .map(|q| {
            let t = Instant::now();
            std::hint::black_box(index.search_phrasings(std::slice::from_ref(q), None, 5, None));
            t.elapsed()
        })
        .collect();
    report("search by words alone (BM25)", words);

    let Some(model) = find_model(configured.as_deref(), &env) else {
        println!("no search model installed (scripts/demo.sh installs it): nothing more to measure");
        return;
    };
    let before = rss_mib();
    let loads: Vec<Duration> = (0..5)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(Semantic::load(&model, None).expect("the model loads"));
            t.elapsed()
        })
        .collect();
    report("load the model", loads);
    let cache = tempfile_dir();
    let semantic = Semantic::load(&model, Some(&cache)).expect("the model loads");
    println!("{:<52} {} weights, host RSS {:.0} MiB more", "  loaded", semantic.precision(), rss_mib() - before);

    let t = Instant::now();
    index.build_dense(&semantic);
    let cold = t.elapsed();
    println!(
        "{:<52} {:.1} s ({:.1} ms a tool, {cores} threads)",
        "embed the catalog cold",
        cold.as_secs_f64(),
        cold.as_secs_f64() * 1e3 / tools as f64
    );
    let restarted = Semantic::load(&model, Some(&cache)).expect("the model loads");
    let fresh = catalog_fixture::fixture_catalog();
    let t = Instant::now();
    fresh.search_index().build_dense(&restarted);
    println!("{:<52} {:.3} s", "  warm (a restart: every vector from the cache)", t.elapsed().as_secs_f64());
    println!("{:<52} {:.0} MiB", "  host RSS with the model and the vectors", rss_mib());

    let timed = |phrasings: &dyn Fn(&str) -> Vec<String>| -> Vec<Duration> {
        queries
            .iter()
            .map(|q| {
                let asked = phrasings(q);
                let t = Instant::now();
                std::hint::black_box(index.search_phrasings(&asked, None, 5, Some(&semantic)));
                t.elapsed()
            })
            .collect()
    };
    report("search by meaning and words, one phrasing", timed(&|q| vec![q.to_string()]));
    report(
        "  four phrasings at once",
        timed(&|q| (0..4).map(|i| format!("{q} {}", ["", "please", "now", "for me"][i])).collect()),
    );
    let embeds: Vec<Duration> = queries
        .iter()
        .map(|q| {
            let t = Instant::now();
            std::hint::black_box(semantic.embed_query(q));
            t.elapsed()
        })
        .collect();
    report("  of which the query's embedding", embeds);
    let _ = std::fs::remove_dir_all(&cache);
}

/// A fresh folder for the benchmark's embedding cache.
fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("codemode-search-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    dir
}
