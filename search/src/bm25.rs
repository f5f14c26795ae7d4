//! BM25: the lexical ranking.
//!
//! Its place in the flow: step 2, over documents already turned into weighted stems
//! ([`crate::words`]); [`crate::index`] keeps one over the tools and one over the
//! plugins, and ranks with both.

use std::collections::HashMap;

/// BM25's term-frequency saturation and length normalisation.
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// BM25 over a set of documents, as postings: stem → (document, weighted count).
pub(crate) struct Bm25 {
    postings: HashMap<String, Vec<(usize, f64)>>,
    lengths: Vec<f64>,
    average_length: f64,
}

impl Bm25 {
    pub(crate) fn new(documents: &[HashMap<String, f64>]) -> Self {
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

    /// Every stem of the documents, in no order.
    pub(crate) fn stems(&self) -> impl Iterator<Item = &String> {
        self.postings.keys()
    }

    /// Each document's score for `wanted` (one list of weighted variants per query
    /// word; a word counts once, through its best variant).
    pub(crate) fn scores(&self, wanted: &[Vec<(String, f64)>]) -> Vec<f64> {
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
