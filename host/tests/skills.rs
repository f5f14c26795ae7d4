//! Seed 001's skills, agents and deferred catalog in code mode, with the document's own
//! example layout (`tests/plugins/skills/my-plugin`, loaded unchanged) in the real
//! plugin runtime, through `codemode::app` as `codemode mcp` builds it: private tools
//! are loaded and checked with the plugin but callable only once their skill is loaded
//! (`tools.$skills.load`) or their agent selected, per session, with least-recently-used
//! unloading past the maximum; a hidden tool is in no search. The MCP side (the first
//! description, sessions, separate-tools mode) is tests/mcp/test_skills.py.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use codemode::app::{App, AppOptions};
use codemode::config::Config;
use codemode::executor::Program;
use codemode::tool::skills::{LoadSettings, SkillSession};
use serde_json::{json, Value};

/// The seed's example plugin.
fn my_plugin() -> PathBuf {
    std::fs::canonicalize(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/plugins/skills/my-plugin")).unwrap()
}

/// A fresh folder (for a configuration, or a changed copy of a plugin).
fn scratch(label: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let dir = std::env::temp_dir().join(format!("codemode-skills-{label}-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Copies the folder `from` to `to`.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// The app for a configuration text (plugin paths inside it are absolute).
async fn app(config_text: &str) -> (App, Config) {
    let dir = scratch("config");
    let path = dir.join("codemode.toml");
    std::fs::write(&path, config_text).unwrap();
    let config = Config::load(&path).unwrap();
    let app = App::from_config(&config, AppOptions { warm_workers: 0, ..AppOptions::of(&config) })
        .await
        .expect("the app starts (is sandbox-worker built? scripts/test builds it)");
    (app, config)
}

fn plugin_entry(name: &str, path: &Path) -> String {
    format!("[[plugin]]\nname = \"{name}\"\nkind = \"javascript\"\npath = \"{}\"\n", path.display())
}

/// What `program` returns in `session`.
async fn run(app: &App, session: &Arc<SkillSession>, program: &str) -> Value {
    let outcome = app.executor.run(Program::new(program).skills(Arc::clone(session))).await;
    common::ok_value(&outcome)
}

/// The message `call` rejects with in `session`.
async fn rejection(app: &App, session: &Arc<SkillSession>, call: &str) -> String {
    let v = run(app, session, &format!("try {{ await {call}; return null }} catch (e) {{ return e.message }}")).await;
    v.as_str().unwrap_or_else(|| panic!("{call} did not reject: {v}")).to_string()
}

const NOT_LOADED: &str = "tools.my_plugin.short_url__normalize is private to skill short-url of plugin my-plugin, which this session has not loaded (or has unloaded to make room): load it first with `await tools.$skills.load(\"short-url\")`";

#[tokio::test(flavor = "multi_thread")]
async fn the_seed_layout_loads_and_a_skill_unlocks_its_tool_for_its_session_only() {
    let (app, _) = app(&plugin_entry("my-plugin", &my_plugin())).await;
    let problems: Vec<String> = app.problems.iter().map(|p| p.describe()).collect();
    assert!(
        problems.iter().all(|p| p.contains("a hook of the agent's turns; code mode has no turns to hook")),
        "only the hooks are notes: {problems:?}"
    );
    assert_eq!(problems.len(), 4, "{problems:?}");
    let catalog = app.executor.catalog();
    let owners: Vec<(String, Option<String>)> = catalog
        .plugins()
        .flat_map(|(_, tools)| tools.map(|t| (t.definition.name.clone(), t.definition.owner.clone())))
        .collect();
    assert_eq!(
        owners,
        [
            ("reviewer__check-result".to_string(), Some("agents/reviewer".to_string())),
            ("reviewer__review__check-result".to_string(), Some("agents/reviewer/skills/review".to_string())),
            ("short-url".to_string(), None),
            ("short-url__normalize".to_string(), Some("skills/short-url".to_string())),
        ]
    );

    let session = Arc::new(SkillSession::default());
    let call = r#"tools.my_plugin.short_url__normalize({ url: "https://Example.COM/a/?utm_source=x" })"#;
    assert_eq!(rejection(&app, &session, call).await, NOT_LOADED);
    // Load, read the instructions and the declaration, call it in the same program.
    let v = run(
        &app,
        &session,
        &format!(
            r#"const skill = await tools.$skills.load("short-url");
               const normalized = await {call};
               const short = await tools.my_plugin.short_url({{ url: normalized }});
               return {{ skill, normalized, short }};"#
        ),
    )
    .await;
    assert_eq!(v["skill"]["skill"], json!("short-url"));
    assert_eq!(v["skill"]["plugin"], json!("my-plugin"));
    assert_eq!(
        v["skill"]["instructions"],
        json!("# Short links\n\n1. Normalize the link with `normalize`: it lower-cases the host and drops tracking parameters and the trailing slash.\n2. Shorten the normalized link with `short-url`.")
    );
    assert_eq!(
        v["skill"]["declarations"],
        json!("/** Normalize a URL: lower-case host, no tracking parameters, no trailing slash */\ntools.my_plugin.short_url__normalize(input: {\n  /** The URL as written */\n  url: string;\n}): Promise<string>;\n")
    );
    assert_eq!(v["skill"]["tools"], json!(["tools.my_plugin.short_url__normalize"]));
    assert_eq!(v["skill"]["unloaded"], json!([]));
    assert_eq!(v["normalized"], json!("https://example.com/a"));
    assert!(v["short"].as_str().unwrap().starts_with("https://s.example/"), "{v}");
    // The next program of the session calls it too; another session cannot.
    assert_eq!(run(&app, &session, &format!("return await {call}")).await, json!("https://example.com/a"));
    let other = Arc::new(SkillSession::default());
    assert_eq!(rejection(&app, &other, call).await, NOT_LOADED);
    // A program with no session of its own (`codemode run`) starts with nothing loaded.
    let outcome = app.executor.run(format!("try {{ await {call} }} catch (e) {{ return e.message }}")).await;
    assert_eq!(common::ok_value(&outcome), json!(NOT_LOADED));

    // The agent's tools and skills are not offered until the agent is selected.
    assert_eq!(
        rejection(&app, &session, r#"tools.my_plugin.reviewer__check_result({ short: "x" })"#).await,
        "tools.my_plugin.reviewer__check_result is private to agent reviewer of plugin my-plugin, which this session has not selected: select it with `[server] agent = \"reviewer\"`, `--agent reviewer` or the request's `_meta` \"codemode/agent\""
    );
    assert_eq!(
        rejection(&app, &session, r#"tools.$skills.load("review")"#).await,
        "tools.$skills.load: there is no skill \"review\"; the skills are \"short-url\""
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn discover_ranks_skills_and_tools_and_past_the_maximum_the_oldest_is_unloaded() {
    let (app, _) = app(&plugin_entry("my-plugin", &my_plugin())).await;
    let session = Arc::new(SkillSession::default());
    let hits =
        run(&app, &session, r#"return await tools.$skills.discover("make a link shorter for a chat message")"#).await;
    let kinds: Vec<(String, String)> = hits
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (h["kind"].as_str().unwrap().to_string(), h["skill"].as_str().or(h["tool"].as_str()).unwrap().to_string())
        })
        .collect();
    assert!(kinds.contains(&("skill".to_string(), "short-url".to_string())), "{hits:#}");
    assert!(!kinds.iter().any(|(_, n)| n.contains("reviewer")), "another agent's tools are not offered: {hits:#}");
    let skill = hits.as_array().unwrap().iter().find(|h| h["kind"] == "skill").unwrap();
    assert_eq!(skill["load"], json!("tools.$skills.load(\"short-url\")"));
    // A private tool found is loaded by name (it has no declaration until then).
    let normalize = hits.as_array().unwrap().iter().find(|h| h["tool"] == "short-url__normalize");
    if let Some(found) = normalize {
        assert_eq!(found["load"], json!("tools.$skills.loadTool(\"my-plugin.short-url__normalize\")"));
        assert!(found.get("declaration").is_none(), "{found}");
    }

    // One tool at most: the agent's skill's tool unloads the skill's.
    let settings = LoadSettings { max_loaded: 1, agents: vec!["reviewer".into()], ..LoadSettings::default() };
    let session = Arc::new(SkillSession::new(settings));
    let v = run(
        &app,
        &session,
        r#"await tools.$skills.load("short-url");
           const review = await tools.$skills.load("review");
           return { unloaded: review.unloaded, checked: await tools.my_plugin.reviewer__review__check_result({ short: "https://s.example/abc" }) };"#,
    )
    .await;
    assert_eq!(v, json!({ "unloaded": ["tools.my_plugin.short_url__normalize"], "checked": "ok" }));
    assert_eq!(
        rejection(&app, &session, r#"tools.my_plugin.short_url__normalize({ url: "https://a.example" })"#).await,
        NOT_LOADED
    );
    // The selected agent's own tool needs no loading.
    assert_eq!(
        run(&app, &session, r#"return await tools.my_plugin.reviewer__check_result({ short: "nope" })"#).await,
        json!("not a short link")
    );
    // loadTool loads one tool by name, and says what it unloaded.
    let v = run(&app, &session, r#"return await tools.$skills.loadTool("my-plugin.short-url__normalize")"#).await;
    assert_eq!(v["call"], json!("tools.my_plugin.short_url__normalize"));
    assert_eq!(v["unloaded"], json!(["tools.my_plugin.reviewer__review__check_result"]));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_broken_private_tool_makes_the_plugin_report_it() {
    let copy = scratch("broken").join("my-plugin");
    copy_tree(&my_plugin(), &copy);
    std::fs::write(
        copy.join("skills/short-url/tools/normalize/index.ts"),
        "import { defineAgentTool } from '@zhin.js/tool';\nexport default defineAgentTool({ execute: async () => 'x' });\n",
    )
    .unwrap();
    let (app, _) = app(&plugin_entry("my-plugin", &copy)).await;
    let problems: Vec<String> = app.problems.iter().map(|p| p.describe()).collect();
    assert!(
        problems.iter().any(|p| p.contains(
            "skills/short-url/tools/normalize/index.ts: `description` is required: say what the tool does and when to use it"
        )),
        "{problems:?}"
    );
    assert!(app.executor.catalog().unavailable("my-plugin").is_some());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hidden_tool_is_callable_but_never_found() {
    let dir = scratch("hidden");
    for (name, hidden) in [("rotate-keys", true), ("list-keys", false)] {
        let tool = dir.join("tools").join(name);
        std::fs::create_dir_all(&tool).unwrap();
        std::fs::write(
            tool.join("index.ts"),
            format!(
                "import {{ defineAgentTool }} from '@zhin.js/tool';\nexport default defineAgentTool({{ description: 'Rotate or list the signing keys of the vault', hidden: {hidden}, requiresApproval: 'never', execute: async () => '{name} done' }});\n"
            ),
        )
        .unwrap();
    }
    let (app, _) = app(&plugin_entry("vault", &dir)).await;
    let session = Arc::new(SkillSession::default());
    let v = run(
        &app,
        &session,
        r#"const hits = await tools.$search("rotate the vault's signing keys", { limit: 50 });
           const found = await tools.$skills.discover("rotate the vault's signing keys", { topK: 50 });
           return { search: hits.map((h) => h.call), discover: found.map((h) => h.call), called: await tools.vault.rotate_keys({}) };"#,
    )
    .await;
    assert_eq!(
        v,
        json!({ "search": ["tools.vault.list_keys"], "discover": ["tools.vault.list_keys"], "called": "rotate-keys done" })
    );
    assert_eq!(
        rejection(&app, &session, r#"tools.$skills.loadTool("vault.rotate-keys")"#).await,
        "tools.$skills.loadTool: there is no tool \"vault.rotate-keys\"; find one with tools.$skills.discover(\"what it should do\")"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_configured_agent_brings_its_instructions_and_standalone_skills_load_without_tools() {
    let skills = scratch("standalone");
    std::fs::create_dir_all(skills.join("release-notes")).unwrap();
    std::fs::write(
        skills.join("release-notes/SKILL.md"),
        "---\nname: release-notes\ndescription: Write release notes from merged changes.\n---\nGroup changes by area.\n",
    )
    .unwrap();
    std::fs::create_dir_all(skills.join("not-a-skill")).unwrap();
    let (app, config) = app(&format!(
        "{}\n[server]\nagent = \"reviewer\"\n\n[[skills]]\npath = \"{}\"\n",
        plugin_entry("my-plugin", &my_plugin()),
        skills.display()
    ))
    .await;
    let rules = config.rules_text().unwrap();
    assert_eq!(
        rules,
        "## my-plugin: AGENTS.md\n\n# my-plugin\n\nLinks in answers are short links made with `short-url`; never invent a link.\n\n## my-plugin: agent reviewer\n\n## reviewer: system.md\n\nYou review short links before they are posted: each must lead where its message says.\n\n## reviewer: boundaries.md\n\nNever post a link yourself; report what you found.\n\n## reviewer: conventions.md\n\nCheck every short link with `check-result` before you approve a message."
    );
    let session = Arc::new(SkillSession::new(config.server.load_settings()));
    let v = run(
        &app,
        &session,
        r#"const notes = await tools.$skills.load("release-notes");
           return { notes, checked: await tools.my_plugin.reviewer__check_result({ short: "https://s.example/x1" }) };"#,
    )
    .await;
    assert_eq!(
        v,
        json!({
            "notes": { "skill": "release-notes", "plugin": null, "instructions": "Group changes by area.", "declarations": "", "tools": [], "unloaded": [] },
            "checked": "ok"
        })
    );
}
