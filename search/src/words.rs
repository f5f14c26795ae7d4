//! Words: how a document's and a query's text become stems.
//!
//! Its place in the flow: step 1 of the lexical ranking ([`crate::bm25`] counts the
//! stems, [`crate::index`] expands the query's) and of the text the encoder embeds
//! ([`crate::semantic::tool_text`] joins a name's words).
//!
//! - words are lower-cased, split at anything but letters and digits (`_`, `-`, `.`,
//!   `/`) and at camelCase humps, stripped of stop words and stemmed (Snowball
//!   English), so "listing repositories" meets `list_repos`' "repository";
//! - each query word also matches the other words of its concept group ([`CONCEPTS`]:
//!   general vocabulary, "remove" for "delete", "ticket" for "issue"), at a discount, so
//!   a request written in the user's words still finds the tool written in the
//!   vendor's.

use std::collections::HashMap;

use rust_stemmers::{Algorithm, Stemmer};

/// How much a query word's concept-group relatives count, next to the word itself.
const RELATIVE_WEIGHT: f64 = 0.6;

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

/// Tokenising, stemming and concept expansion.
pub(crate) struct Words {
    stemmer: Stemmer,
    /// Stem → the stems of its concept groups' other words.
    relatives: HashMap<String, Vec<String>>,
    stop_words: std::collections::HashSet<&'static str>,
}

impl Words {
    pub(crate) fn new() -> Self {
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
    pub(crate) fn stems(&self, text: &str) -> Vec<String> {
        split_words(text)
            .into_iter()
            .filter(|w| !self.stop_words.contains(w.as_str()))
            .map(|w| self.stemmer.stem(&w).into_owned())
            .collect()
    }

    /// Each query word as its stem (weight 1) and its relatives' stems (discounted);
    /// a word said twice counts once. Linear in the query's length.
    pub(crate) fn expand(&self, query: &str) -> Vec<Vec<(String, f64)>> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_split_stemmed_and_stop_words_dropped() {
        assert_eq!(
            split_words("listPullRequests my-db/search_rows HTTPServer"),
            ["list", "pull", "requests", "my", "db", "search", "rows", "httpserver"]
        );
        let words = Words::new();
        assert_eq!(words.stems("Listing the repositories"), ["list", "repositori"]);
    }
}
