//! A test-only plugin runtime kind: tools served in-process from a list the test
//! changes, or a reason it is unavailable.
//!
//! It shows what adding a runtime kind takes: this one module, implementing
//! [`PluginRuntime`]. Nothing in [`PluginHost`] names it: listing, change
//! announcements, unavailability, recovery and the background retries all go through the
//! trait. A real kind adds, besides its module, the one configuration variant that
//! builds it and hands it to [`PluginHost::with_runtimes`].

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::json;

use super::runtime::{Listed, PluginRuntime};
use super::{PluginHost, Severity};
use codemode_core::tool::catalog::CatalogFeed;
use codemode_core::tool::{Catalog, FnTool, ToolDefinition, ToolHandler, ToolResult};

/// The test-only kind: its tools are names; each answers with its own name.
struct Fixed {
    name: String,
    /// What it offers now: tool names, or why it is unavailable.
    offer: Mutex<Result<Vec<String>, String>>,
    changed: tokio::sync::watch::Sender<u64>,
    /// How many times it was asked for its tools.
    listed: AtomicUsize,
}

impl Fixed {
    fn new(name: &str, offer: Result<&[&str], &str>) -> Arc<Self> {
        let offer = offer.map(|tools| tools.iter().map(|t| t.to_string()).collect()).map_err(str::to_string);
        Arc::new(Self {
            name: name.into(),
            offer: Mutex::new(offer),
            changed: tokio::sync::watch::channel(0).0,
            listed: AtomicUsize::new(0),
        })
    }

    /// Offers `offer` from now on, and announces it when `announce`.
    fn set(&self, offer: Result<&[&str], &str>, announce: bool) {
        *self.offer.lock().unwrap() =
            offer.map(|tools| tools.iter().map(|t| t.to_string()).collect()).map_err(str::to_string);
        if announce {
            self.changed.send_modify(|n| *n += 1);
        }
    }
}

impl PluginRuntime for Fixed {
    fn name(&self) -> &str {
        &self.name
    }

    fn list(self: Arc<Self>) -> BoxFuture<'static, Result<Listed, String>> {
        self.listed.fetch_add(1, Ordering::Relaxed);
        let offer = self.offer.lock().unwrap().clone();
        Box::pin(async move {
            let tools = offer?
                .into_iter()
                .map(|tool| {
                    let definition: ToolDefinition =
                        serde_json::from_value(json!({ "name": tool, "description": "Answers its name." })).unwrap();
                    let answer = tool.clone();
                    let handler = FnTool(move |_: serde_json::Value, _: codemode_core::tool::CallContext| {
                        let answer = answer.clone();
                        async move { ToolResult::text(answer) }
                    });
                    (Arc::new(handler) as Arc<dyn ToolHandler>, definition)
                })
                .collect();
            Ok(Listed { tools, notes: vec!["a fixed list".into()] })
        })
    }

    fn retry_in(&self) -> Duration {
        Duration::ZERO
    }

    fn watch_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changed.subscribe()
    }
}

/// The executor's part, as the host sees it: where catalogs go.
#[derive(Default)]
struct Feed {
    catalog: Mutex<Arc<Catalog>>,
    replaced: AtomicUsize,
}

impl CatalogFeed for Feed {
    fn current(&self) -> Arc<Catalog> {
        Arc::clone(&self.catalog.lock().unwrap())
    }

    fn replace(&self, catalog: Catalog) {
        *self.catalog.lock().unwrap() = Arc::new(catalog);
        self.replaced.fetch_add(1, Ordering::Relaxed);
    }
}

fn host(runtimes: &[&Arc<Fixed>]) -> Arc<PluginHost> {
    let runtimes = runtimes.iter().map(|r| Arc::clone(r) as Arc<dyn PluginRuntime>).collect();
    Arc::new(PluginHost::with_runtimes(Catalog::new(), runtimes))
}

/// Waits (at most 5 s) until `done`.
async fn eventually(done: impl Fn() -> bool) -> bool {
    for _ in 0..500 {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    done()
}

#[tokio::test]
async fn a_new_kind_lists_its_tools_and_its_unavailability_through_the_trait() {
    let up = Fixed::new("up", Ok(&["a", "b"]));
    let down = Fixed::new("down", Err("it is switched off"));
    let (catalog, problems) = host(&[&up, &down]).catalog().await;
    assert!(catalog.get("up", "a").is_some() && catalog.get("up", "b").is_some());
    assert_eq!(catalog.unavailable("down").map(|u| u.reason.as_str()), Some("it is switched off"));
    let said: Vec<String> = problems.iter().map(|p| p.describe()).collect();
    assert_eq!(said, ["plugin down is unavailable: it is switched off", "plugin up (note): a fixed list"]);
    assert_eq!(problems[0].severity, Severity::Unavailable);
}

#[tokio::test]
async fn a_new_kind_announcing_a_change_replaces_the_feeds_catalog() {
    let runtime = Fixed::new("fixed", Ok(&["a"]));
    let host = host(&[&runtime]);
    let feed = Arc::new(Feed::default());
    let (catalog, _) = host.catalog().await;
    feed.replace(catalog);
    host.keep_current(Arc::clone(&feed));
    runtime.set(Ok(&["a", "late"]), true);
    assert!(eventually(|| feed.current().get("fixed", "late").is_some()).await, "the change reached the feed");
    // Asked again with nothing changed: the catalog stays as it is and nobody is told.
    let replaced = feed.replaced.load(Ordering::Relaxed);
    let listed = runtime.listed.load(Ordering::Relaxed);
    runtime.set(Ok(&["a", "late"]), true);
    assert!(eventually(|| runtime.listed.load(Ordering::Relaxed) > listed).await);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(feed.replaced.load(Ordering::Relaxed), replaced);
}

#[tokio::test]
async fn a_new_kind_that_comes_back_is_recovered_when_called() {
    let runtime = Fixed::new("flaky", Err("not yet"));
    let host = host(&[&runtime]);
    let feed = Arc::new(Feed::default());
    let (catalog, _) = host.catalog().await;
    feed.replace(catalog);
    host.keep_current(Arc::clone(&feed));
    runtime.set(Ok(&["echo"]), false);
    // What the executor does when a program calls a tool of an unavailable plugin.
    let recover = feed.current().unavailable("flaky").and_then(|u| u.recover.clone()).expect("a way to recover");
    recover.recover().await;
    assert!(feed.current().get("flaky", "echo").is_some(), "the recovered plugin is in the feed's catalog");
    assert!(feed.current().unavailable("flaky").is_none());
}
