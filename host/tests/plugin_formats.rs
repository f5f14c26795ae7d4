//! Every seed system's tool format, loaded as its authors lay it out, with the real npm
//! packages they would install (`scripts/npm-fixtures.sh` puts them in target/formats),
//! and called through `codemode run` and `codemode tools` as a person would.
//!
//! Each format shows: the declarations carry the real types of its schemas (zod 3,
//! zod 4, ArkType, JSON Schema), a wrong input is refused naming the field, defaults and
//! transforms reach the handler, the network allowlist holds, settings arrive where the
//! format reads them, every documented `ctx`/`host` member exists (those codemode has
//! nothing behind throw `codemode does not offer <name>`), and what codemode does not
//! honour is said at load. The MCP side (approvals through elicitation) is in
//! tests/mcp/test_plugin_formats.py.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A fixture installed by `scripts/npm-fixtures.sh`.
fn fixture(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/formats").join(name);
    assert!(
        dir.is_dir(),
        "{} is missing: run scripts/npm-fixtures.sh first (scripts/test.sh does), it installs the fixtures' npm packages",
        dir.display()
    );
    std::fs::canonicalize(dir).unwrap()
}

/// A fresh folder with `files` (and their folders).
fn folder(label: &str, files: &[(&str, &str)]) -> PathBuf {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let dir = std::env::temp_dir().join(format!("codemode-formats-{label}-{}-{nanos}", std::process::id()));
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::canonicalize(dir).unwrap()
}

/// A configuration file holding `entries`, in a folder of its own.
fn config(entries: &str) -> PathBuf {
    let dir = folder("config", &[]);
    let path = dir.join("codemode.toml");
    std::fs::write(&path, entries).unwrap();
    path
}

/// `codemode ARGS` with `stdin`, and extra environment: (exit code, stdout, stderr).
fn codemode(args: &[&str], stdin: &str, env: &[(&str, &str)]) -> (i32, String, String) {
    common::codemode_cli(args, stdin, env)
}

/// The value a program returns under `config` (it must succeed).
fn run(config: &Path, program: &str, env: &[(&str, &str)]) -> Value {
    let (code, out, err) = codemode(&["run", "--json", "--config", config.to_str().unwrap(), "-"], program, env);
    let outcome: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}\n{err}"));
    assert_eq!((code, &outcome["kind"]), (0, &json!("ok")), "{outcome:#}\n{err}");
    serde_json::from_str(outcome["value"].as_str().unwrap()).unwrap()
}

/// The message a call rejects with (the program catches it).
fn rejection(config: &Path, call: &str) -> String {
    rejection_with(config, call, &[])
}

/// [`rejection`] with extra environment.
fn rejection_with(config: &Path, call: &str, env: &[(&str, &str)]) -> String {
    let program = format!("try {{ await {call}; return null }} catch (e) {{ return e.message }}");
    let v = run(config, &program, env);
    v.as_str().unwrap_or_else(|| panic!("{call} did not reject: {v}")).to_string()
}

/// `codemode tools` (with `--typescript`): (exit code, stdout, stderr).
fn tools(config: &Path, typescript: bool, env: &[(&str, &str)]) -> (i32, String, String) {
    let mut args = vec!["tools", "--config", config.to_str().unwrap()];
    if typescript {
        args.push("--typescript");
    }
    codemode(&args, "", env)
}

/// A tiny HTTP server answering `routes` (path → JSON body), 404 otherwise.
async fn http_server(routes: Vec<(&'static str, Value)>) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else { return };
            let routes = routes.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    let n = socket.read(&mut buf).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    head.extend_from_slice(&buf[..n]);
                }
                let head = String::from_utf8_lossy(&head).to_string();
                let path = head.split_whitespace().nth(1).unwrap_or("/").split('?').next().unwrap_or("/").to_string();
                let (status, body) = match routes.iter().find(|(p, _)| *p == path) {
                    Some((_, body)) => ("200 OK", body.to_string()),
                    None => ("404 Not Found", "{}".to_string()),
                };
                let answer = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(answer.as_bytes()).await;
            });
        }
    });
    port
}

#[test]
fn seed_000_effect_and_zod_over_effect_3_and_4() {
    for effect in ["effect3", "effect4"] {
        let dir = fixture(effect);
        let cfg =
            config(&format!("[[plugin]]\nname = \"words\"\nkind = \"javascript\"\npath = \"{}\"\n", dir.display()));
        // Declarations from the zod schemas: `minLength` has a default, so it is optional.
        let (code, out, err) = tools(&cfg, true, &[]);
        assert_eq!(code, 0, "{effect}: {err}");
        for needle in [
            "\"word-count\"(input: {\n      text: string;",
            "minLength?: number;",
            "Default: `1`.",
            "}): Promise<{\n      words: number;\n    }>;",
            "\"slow-echo\"(input: {",
        ] {
            assert!(out.contains(needle), "{effect}: {needle:?} in\n{out}");
        }
        // The input is parsed (the default reaches run), the result parsed against `output`.
        let v = run(&cfg, r#"return await tools.words["word-count"]({ text: "a bb ccc dddd" })"#, &[]);
        assert_eq!(v, json!({ "words": 4 }), "{effect}");
        let v = run(&cfg, r#"return await tools.words.word_count({ text: "a bb ccc dddd", minLength: 3 })"#, &[]);
        assert_eq!(v, json!({ "words": 2 }), "{effect}");
        // Effect.sleep runs on the runtime's timers.
        let v = run(&cfg, r#"return await tools.words.slow_echo({ text: "hi", ms: 30 })"#, &[]);
        assert_eq!(v, json!("echo: hi"), "{effect}");
        assert_eq!(
            rejection(&cfg, r#"tools.words.word_count({ text: 7 })"#),
            "invalid input for words.word-count: input.text: 7 is not of type \"string\"",
            "{effect}"
        );
        assert_eq!(
            rejection(&cfg, "tools.words.broken_output({})"),
            "tool broken-output returned a value that does not match its output schema: output.words: Invalid input: expected number, received string",
            "{effect}"
        );
        // The manifest's rules reach agents.
        let (_, rules, _) = codemode(&["rules", "--config", cfg.to_str().unwrap()], "", &[]);
        assert!(rules.contains("## words\n\nCount words with"), "{rules}");
    }
}

#[test]
fn seed_001_zhin_tools_named_after_their_folders() {
    let dir = fixture("zhin");
    let cfg = config(&format!(
        "[[plugin]]\nname = \"bot\"\nkind = \"javascript\"\npath = \"{}\"\nsettings = {{ prefix = \"> \", base = \"https://t.example\" }}\n",
        dir.display()
    ));
    let (code, out, err) = tools(&cfg, false, &[]);
    assert_eq!(code, 0, "notes do not fail the listing: {err}");
    assert!(
        out.contains("tools.bot.echo(input: {\n  /**\n   * What to echo\n   * At least 1 character.\n   */\n  message: string;\n  /** Integer, 1 to 5. Default: `1`. */\n  times?: number;"),
        "zod's constraints and default are in the declaration: {out}"
    );
    assert!(out.contains("tools.bot.short_url(input: {"), "{out}");
    assert!(out.contains("tools.bot.say(input: {"), "{out}");
    assert!(out.contains("Promise<string>  // hidden: callable, but not shown to agents"), "{out}");
    // The agent's own tool is loaded and listed, and declared to no session that has
    // not selected the agent (tests/mcp/test_skills.py, host/tests/skills.rs).
    assert!(
        out.contains("tools.bot.reviewer__check_result(input?: {}): Promise<string>  // private to agent reviewer: shown once a session loads it"),
        "{out}"
    );
    assert!(
        out.contains("! plugin bot (note): tool admin-only (tools/admin-only/index.ts) is not offered: `permissions` restricts who may call it"),
        "{out}"
    );
    assert!(!out.contains("admin_only"), "{out}");
    let (_, declarations, _) = tools(&cfg, true, &[]);
    assert!(!declarations.contains("touch"), "a hidden tool is not declared:\n{declarations}");
    assert!(!declarations.contains("check_result"), "an agent's tool is not declared:\n{declarations}");
    // zod 4's defaults reach execute; the configuration's settings arrive as context.config.
    assert_eq!(run(&cfg, r#"return await tools.bot.echo({ message: "hi" })"#, &[]), json!("> echo: hi"));
    assert_eq!(run(&cfg, r#"return await tools.bot.echo({ message: "hi", times: 2 })"#, &[]), json!("> echo: hi hi"));
    assert!(
        rejection(&cfg, r#"tools.bot.echo({ message: "" })"#).starts_with("invalid input for bot.echo: input.message:")
    );
    // 'once', and the default 'on-risk' for a tool not marked read-only (the document's own
    // echo example, `say`, and a destructive one), need a person: under `codemode run`
    // nobody can be asked. `touch` says `readOnlyHint`, so on-risk lets it run (below).
    for call in [
        r#"tools.bot.short_url({ url: "https://example.com/a" })"#,
        r#"tools.bot.wipe({ user: "ann" })"#,
        r#"tools.bot.say({ message: "hi" })"#,
    ] {
        let e = rejection(&cfg, call);
        assert!(
            e.contains("needs a person's approval (")
                && e.contains("), and there is no terminal to ask on (/dev/tty")
                && e.contains(": pass --approve bot."),
            "{call}: {e}"
        );
    }
    // A hidden tool is callable; every documented context member exists.
    let members =
        ["config", "owner", "signal", "use", "generation", "origin", "principal", "policy", "question", "$client"];
    let v = run(
        &cfg,
        &format!("return await Promise.all({}.map((member) => tools.bot.touch({{ member }})))", json!(members)),
        &[],
    );
    let offered = ["config: object", "owner: string", "signal: object"].map(|s| json!(s));
    let not_offered = members[3..].iter().map(|m| json!(format!("codemode does not offer context.{m}")));
    assert_eq!(v, Value::Array(offered.into_iter().chain(not_offered).collect()));
    // Allowed, the document's echo example runs.
    let (code, out, err) = codemode(
        &["run", "--json", "--approve", "bot.say", "--config", cfg.to_str().unwrap(), "-"],
        r#"return await tools.bot.say({ message: "hi" })"#,
        &[],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap()["value"], json!("\"echo: hi\""));
}

/// zhin.js's Path Two, the document's own `lottery` example: `definePlugin({ name,
/// setup(context) })` adds its tools with `context.addTool` when `context.config.get()`
/// allows; a plugin whose setup throws offers nothing and says why.
#[test]
fn seed_001_zhin_path_two_plugins_add_their_tools_in_setup() {
    const LOTTERY: &str = r#"// plugins/utils/lottery/plugin.ts (excerpt)
import { definePlugin } from 'zhin.js';
import { defineAgentTool } from '@zhin.js/tool';

export default definePlugin({
  name: 'lottery',
  async setup(context) {
    if (!context.config.get().agentToolsEnabled) return;
    context.addTool('lottery_sync', defineAgentTool({
      description: 'Synchronize lottery draws',
      requiresApproval: 'always',
      inputSchema: { type: 'object', properties: {} },
      execute: async (_input, toolContext) => toolContext.use(lotteryDatabaseToken).sync(),
    }));
  },
});
"#;
    let dir = folder("zhin-lottery", &[("plugin.ts", LOTTERY)]);
    let entry = |settings: &str| {
        config(&format!(
            "[[plugin]]\nname = \"lottery\"\nkind = \"javascript\"\npath = \"{}\"\nsettings = {{ {settings} }}\n",
            dir.display()
        ))
    };
    let enabled = entry("agentToolsEnabled = true");
    let (code, out, err) = tools(&enabled, false, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("tools.lottery.lottery_sync(input?: {}): Promise<string>\n    Synchronize lottery draws"),
        "{out}"
    );
    // 'always' asks; allowed, the handler runs, and what codemode has nothing behind is named.
    let (code, out, err) = codemode(
        &["run", "--json", "--approve", "lottery.lottery_sync", "--config", enabled.to_str().unwrap(), "-"],
        "try { await tools.lottery.lottery_sync({}) } catch (e) { return e.message }",
        &[],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap()["value"], json!("\"codemode does not offer context.use\""));
    // The configuration decides: without agentToolsEnabled, setup adds nothing.
    let (_, out, _) = tools(&entry("agentToolsEnabled = false"), false, &[]);
    assert!(
        out.contains("plugin lottery cannot load: plugin.ts: setup() added no tools (it did not call context.addTool), so the plugin offers none"),
        "{out}"
    );

    // Tools added with the configuration's values; one whose setup throws after an
    // addTool offers none of them.
    let greeter = r#"import { definePlugin } from 'zhin.js';
import { defineAgentTool } from '@zhin.js/tool';

export default definePlugin({
  name: 'greeter',
  setup(context) {
    const { greeting } = context.config.get();
    context.addTool('greet', defineAgentTool({
      description: 'Greets someone',
      requiresApproval: 'never',
      inputSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
      execute: async ({ name }) => `${greeting}, ${name}`,
    }));
    if (greeting === 'boom') throw new Error('the greetings database is unreachable');
  },
});
"#;
    let dir = folder("zhin-greeter", &[("plugin.ts", greeter)]);
    let entry = |greeting: &str| {
        config(&format!(
            "[[plugin]]\nname = \"greeter\"\nkind = \"javascript\"\npath = \"{}\"\nsettings = {{ greeting = \"{greeting}\" }}\n",
            dir.display()
        ))
    };
    assert_eq!(run(&entry("Hello"), r#"return await tools.greeter.greet({ name: "Ann" })"#, &[]), json!("Hello, Ann"));
    let failing = entry("boom");
    let (_, out, _) = tools(&failing, false, &[]);
    assert!(
        out.contains("plugin greeter cannot load: plugin.ts: setup() threw, so none of the tools it added are offered: the greetings database is unreachable"),
        "{out}"
    );
    assert!(!out.contains("greet("), "{out}");
}

#[test]
fn seed_002_plico_tool_files_with_zod_3_arktype_and_commonjs_packages() {
    let dir = fixture("plico");
    let cfg = config(&format!(
        "[[plugin]]\nname = \"plico\"\nkind = \"javascript\"\npath = \"{}\"\nsettings = {{ PLICO_TOKEN = {{ env = \"TEST_PLICO_TOKEN\" }} }}\n",
        dir.display()
    ));
    let env = [("TEST_PLICO_TOKEN", "s3cret")];
    let (code, out, err) = tools(&cfg, true, &env);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("add(input: {\n      a: number;"), "{out}");
    assert!(out.contains("b?: number;") && out.contains("Default: `0`."), "zod 3's default makes b optional:\n{out}");
    assert!(out.contains("slug(input: {\n      title: string;\n      maxLength?: number;"), "ArkType's schema:\n{out}");
    // The seed's own example: b defaults to 0 in the handler.
    assert_eq!(run(&cfg, "return await tools.plico.add({ a: 2 })", &env), json!("2"));
    assert_eq!(
        rejection_with(&cfg, r#"tools.plico.add({ a: "x" })"#, &env),
        "invalid input for plico.add: input.a: \"x\" is not of type \"number\""
    );
    // CommonJS packages from npm: named and default imports.
    let v = run(&cfg, r#"return JSON.parse(await tools.plico.version({ text: "release v1.2 final" }))"#, &env);
    assert_eq!(v, json!({ "version": "1.2.0", "ms": 172_800_000 }));
    // ctx: the call's context, an idempotency key, the signal, the artifacts (kept for an
    // MCP session: tests/mcp/test_files.py); the secret setting arrives as process.env,
    // read from codemode's own environment.
    let v = run(&cfg, "return JSON.parse(await tools.plico.whoami({}))", &env);
    assert_eq!(v["context"], Value::Null);
    assert_eq!(v["key"], json!("plico:whoami:1"));
    assert_eq!(v["aborted"], json!(false));
    assert_eq!(v["artifacts"], json!("[object Object]"));
    assert_eq!(v["token"], json!("s3cret"));
    // Each call of a program has its own idempotency key.
    let keys = run(
        &cfg,
        "return [JSON.parse(await tools.plico.whoami({})).key, JSON.parse(await tools.plico.whoami({})).key]",
        &env,
    );
    assert_eq!(keys, json!(["plico:whoami:1", "plico:whoami:2"]));
    // The secret is never logged nor shown.
    let (_, out, err) = codemode(&["run", "--config", cfg.to_str().unwrap(), "--log", "debug", "-"], "return 1", &env);
    assert!(!out.contains("s3cret") && !err.contains("s3cret"), "{out}\n{err}");
    // approval.required: nobody can approve under `codemode run`.
    let e = rejection_with(&cfg, r#"tools.plico.slug({ title: "Hello World" })"#, &env);
    assert!(
        e.starts_with(
            "tools.plico.slug needs a person's approval (for each call), and there is no terminal to ask on (/dev/tty"
        ) && e.ends_with("pass --approve plico.slug (or --approve-all) to allow it"),
        "{e}"
    );
    // A setting whose variable is not set: the plugin is unavailable, saying which.
    let (code, out, _) = tools(&cfg, false, &[]);
    assert_eq!(code, 1);
    assert!(
        out.contains("setting PLICO_TOKEN reads the environment variable TEST_PLICO_TOKEN, which is not set"),
        "{out}"
    );
}

/// What seed 003's `host.media` throws.
const MEDIA: &str = "host.media is not available in codemode: uploading and transcoding audio is a service of the agent's app, which an MCP server does not have; return audio as MCP content ({ content: [{ type: \"audio\", data, mimeType }] }) instead";

/// Seed 003's `host.llm`, `host.decide`, `host.session.llm` and seed 000's
/// `api.models.prompt` under `codemode run`, which has no model (through an MCP client
/// they ask its model: tests/mcp/test_sampling.py); the members that cannot exist under
/// an MCP server (the rest of `host.session`, `host.media`, `api.host.kernel` in the
/// document's own `run_command`) throw saying which and why.
#[test]
fn seed_003_and_000_model_calls_and_members_an_mcp_server_cannot_have() {
    let plugins = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/plugins/model-calls");
    let plugins = std::fs::canonicalize(plugins).unwrap();
    let cfg = config(&format!(
        "[[plugin]]\nname = \"model\"\nkind = \"javascript\"\npath = \"{}\"\n\n[[plugin]]\nname = \"models\"\nkind = \"javascript\"\npath = \"{}\"\n",
        plugins.join("globals").display(),
        plugins.join("manifest").display()
    ));
    let no_model = |api: &str| {
        format!("{api} needs a model, and codemode has none of its own: it asks the model of the MCP client that runs the program (MCP sampling), and this program has no MCP client (codemode run); run it through codemode mcp or codemode serve")
    };
    assert_eq!(rejection(&cfg, "tools.model.summarize({ text: 'x' })"), no_model("host.llm"));
    assert_eq!(rejection(&cfg, "tools.model.triage({ message: 'x' })"), no_model("host.decide"));
    assert_eq!(rejection(&cfg, "tools.model.reply({ message: 'x' })"), no_model("host.session.llm"));
    assert_eq!(rejection(&cfg, "tools.models.ask({ question: 'x' })"), no_model("api.models.prompt"));
    assert_eq!(
        rejection(&cfg, "tools.models.run_command({ id: 'build' })"),
        "api.host.kernel is not available in codemode: codemode has no app commands for it to run (an MCP server offers the agent tools, not the commands of an app); a tool that should run something does the work itself"
    );
    let members = ["llm", "conversation", "post", "posts", "todos", "timers", "peers", "media"];
    let v = run(
        &cfg,
        &format!("return await Promise.all({}.map((name) => tools.model.session_member({{ name }})))", json!(members)),
        &[],
    );
    let session = |member: &str, why: &str| json!(format!("host.session.{member} is not available in codemode: {why}"));
    assert_eq!(
        v,
        json!([
            "function",
            session("conversation", "an MCP server is given a tool call's arguments, never the agent's conversation, so there is none to read; pass what the tool needs as its input"),
            session("post", "an MCP server cannot write into the agent's chat; return the text from the tool, and the agent reads it"),
            session("posts", "an MCP server cannot read or write the agent's chat; return the text from the tool, and the agent reads it"),
            session("todos", "MCP gives a server no access to the agent's todo list; return what is left to do in the tool's result"),
            session("timers", "an MCP server cannot wake the agent later: a tool call ends when it answers, and MCP has no way to start a turn in the chat afterwards"),
            session("peers", "an MCP server knows no other agents or chats of the client and cannot message them"),
            MEDIA,
        ])
    );
}

#[tokio::test]
async fn seed_003_a_globals_script_with_host_fetch_and_its_egress() {
    let port = http_server(vec![(
        "/v1/forecast",
        json!({ "daily": { "temperature_2m_min": [1, 2], "temperature_2m_max": [5, 9] } }),
    )])
    .await;
    let text =
        std::fs::read_to_string(fixture("globals").join("weather.ts")).unwrap().replace("__PORT__", &port.to_string());
    let dir = folder("globals", &[("weather.ts", &text)]);
    let cfg = config(&format!(
        "[[plugin]]\nname = \"weather\"\nkind = \"javascript\"\npath = \"{}\"\nsettings = {{ units = \"metric\" }}\n",
        dir.display()
    ));
    let cfg2 = cfg.clone();
    tokio::task::spawn_blocking(move || {
        let cfg = cfg2;
        assert_eq!(
            run(&cfg, "return JSON.parse(await tools.weather.get_forecast({ latitude: 59.9, longitude: 10.7 }))", &[]),
            json!({ "minC": 2, "maxC": 9 })
        );
        assert_eq!(
            rejection(&cfg, "tools.weather.get_forecast({ latitude: 'north' })"),
            "invalid input for weather.get_forecast: input: \"longitude\" is a required property; input.latitude: \"north\" is not of type \"number\""
        );
        let e = rejection(&cfg, "tools.weather.elsewhere({})");
        assert_eq!(e, format!("fetch: plugin weather may not reach 127.0.0.2:{port}: its globalThis.manifest.egress allows only 127.0.0.1:{port}; add \"127.0.0.2:{port}\" to globalThis.manifest.egress to allow it"));
        let members = ["fetch", "settings", "crypto", "log", "session", "workspace", "agents", "models", "llm", "decide", "media"];
        let v = run(
            &cfg,
            &format!("return await Promise.all({}.map((name) => tools.weather.host_member({{ name }})))", json!(members)),
            &[],
        );
        // host.workspace works beneath the session's workspace (tests/mcp/test_files.py).
        let offered = ["function", "object", "object", "function", "object", "object"].map(|s| json!(s));
        let not_offered = members[6..8].iter().map(|m| json!(format!("codemode does not offer host.{m}")));
        // The model calls ask the MCP client's model (tests/mcp/test_sampling.py); media cannot exist.
        let models = ["function", "function", MEDIA].map(|s| json!(s));
        assert_eq!(v, Value::Array(offered.into_iter().chain(not_offered).chain(models).collect()));
        let v = run(&cfg, "return JSON.parse(await tools.weather.settings({}))", &[]);
        assert_eq!(v, json!({ "settings": { "units": "metric" }, "id": 36 }));
    })
    .await
    .unwrap();
}

/// Seed 003's own `save_note` derives `host:workspace:write`, shown when the plugin is
/// enabled; under `codemode run` no client names a workspace, so it is refused saying
/// where one comes from (over MCP it works: tests/mcp/test_files.py).
#[test]
fn seed_003_host_workspace_derives_its_permission_and_needs_a_workspace() {
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/plugins/files/notes.ts");
    let cfg = config(&format!("[[plugin]]\nname = \"notes\"\nkind = \"javascript\"\npath = \"{}\"\n", file.display()));
    let (code, out, _) = tools(&cfg, false, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("! plugin notes (note): permission host:workspace:read: can read the agent's files (host.workspace.read and list, beneath the session's workspace)\n"), "{out}");
    assert!(out.contains("! plugin notes (note): permission host:workspace:write: can write the agent's files (host.workspace.write, beneath the session's workspace)\n"), "{out}");
    assert_eq!(
        rejection(&cfg, r#"tools.notes.save_note({ title: "Shopping List", text: "milk" })"#),
        "host.workspace.write: this call has no workspace: an MCP client gives one as its first file:// root (roots/list) or as _meta.workspace"
    );
}

#[tokio::test]
async fn seed_004_a_podcode_module_with_fetch_config_and_attachments() {
    let port =
        http_server(vec![("/status/api", json!({ "health": "green", "release": "v42", "deployedAt": "today" }))]).await;
    let file = fixture("podcode").join("deploy-status.mjs");
    let entry = |hosts: &str| {
        config(&format!(
            "[[plugin]]\nname = \"deploy\"\nkind = \"javascript\"\npath = \"{}\"\nsettings = {{ endpoint = \"http://127.0.0.1:{port}\" }}\n{hosts}",
            file.display()
        ))
    };
    let (cfg, closed) = (entry(&format!("net_hosts = [\"127.0.0.1:{port}\"]\n")), entry(""));
    tokio::task::spawn_blocking(move || {
        let (code, out, _) = tools(&cfg, false, &[]);
        assert_eq!(code, 0);
        assert!(out.contains("tools.deploy.deploy_status(input: {\n  /** Service name, e.g. 'api' or 'web'. */\n  service: string;"), "{out}");
        assert!(!out.contains("truncation"), "`truncation` is honoured, so nothing is said about it: {out}");
        assert_eq!(
            run(&cfg, r#"return await tools.deploy.deploy_status({ service: "api" })"#, &[]),
            json!("Service api is green on release v42, deployed today.")
        );
        assert_eq!(rejection(&cfg, r#"tools.deploy.deploy_status({ service: "web" })"#), "status 404 for web");
        // Without net_hosts, the global fetch reaches nothing.
        let e = rejection(&closed, r#"tools.deploy.deploy_status({ service: "api" })"#);
        assert_eq!(e, format!("fetch: plugin deploy may not reach 127.0.0.1:{port}: its configuration entry's net_hosts allows no hosts; add \"127.0.0.1:{port}\" to net_hosts in the plugin's configuration entry to allow it"));
        // ctx: identity, abort, recordChange; messages cannot exist under MCP; ask needs a person.
        let v = run(&cfg, "return JSON.parse(await tools.deploy.context({}))", &[]);
        assert_eq!(v, json!({ "sessionID": null, "callID": "1", "agent": null, "aborted": false }));
        for (member, expected) in [
            ("sessionID", "undefined"),
            ("messageID", "undefined"),
            ("callID", "string"),
            ("parentID", "undefined"),
            ("rootID", "undefined"),
            ("agent", "undefined"),
            ("messages", "ctx.messages is not available in codemode: an MCP server is never sent the agent's conversation (MCP carries no chat history to the tools it calls), so there are no messages to read; pass what the tool needs in its arguments"),
            ("mainCwd", "undefined"),
            ("abort", "object"),
            ("metadata", "function"),
            ("ask", "function"),
            ("recordChange", "function"),
        ] {
            let v = run(&cfg, &format!(r#"return await tools.deploy.context({{ member: "{member}" }})"#), &[]);
            assert_eq!(v, json!(expected), "{member}");
        }
        let e = rejection(&cfg, r#"tools.deploy.rollback({ service: "api" })"#);
        assert!(
            e.starts_with("the person did not allow deploy: there is no terminal to ask on (/dev/tty")
                && e.ends_with("pass --approve deploy.rollback (or --approve-all) to allow it"),
            "{e}"
        );
    })
    .await
    .unwrap();
}

/// The whole `codemode run --json` outcome of `program` under `config` with `args` (it
/// must succeed).
fn outcome_of(config: &Path, program: &str, args: &[&str], env: &[(&str, &str)]) -> Value {
    let mut all = vec!["run", "--json", "--config", config.to_str().unwrap()];
    all.extend_from_slice(args);
    all.push("-");
    let (code, out, err) = codemode(&all, program, env);
    let outcome: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}\n{err}"));
    assert_eq!((code, &outcome["kind"]), (0, &json!("ok")), "{outcome:#}\n{err}");
    outcome
}

/// The 64-byte numbered lines of `notes.mjs`'s build log of `kb` KiB.
fn build_log(kb: usize) -> String {
    (0..kb * 1024 / 64).map(|i| format!("{:.<63}\n", format!("line {i:06} "))).collect()
}

/// Podcode's `truncation`: an output over 50 KiB keeps its end (`tail`) or its start
/// (`head`, the default), with a marker saying how much was cut.
#[test]
fn seed_004_truncation_keeps_the_chosen_end_with_a_marker() {
    let file = fixture("podcode").join("notes.mjs");
    let cfg = config(&format!("[[plugin]]\nname = \"notes\"\nkind = \"javascript\"\npath = \"{}\"\n", file.display()));
    let log = build_log(200);
    assert_eq!(log.len(), 204_800);
    let tail = run(&cfg, "return await tools.notes.build_log({ kb: 200 })", &[]);
    let marker = "[output cut: the first 153600 of 204800 bytes were left out; this tool keeps the end of an oversized output (truncation \"tail\")]\n";
    assert_eq!(tail, json!(format!("{marker}{}", &log[log.len() - 51_200..])));
    let head = run(&cfg, "return await tools.notes.build_log_head({ kb: 200 })", &[]);
    let marker = "\n[output cut: the last 153600 of 204800 bytes were left out; this tool keeps the start of an oversized output (truncation \"head\")]";
    assert_eq!(head, json!(format!("{}{marker}", &log[..51_200])));
    // An output within 50 KiB is whole.
    assert_eq!(run(&cfg, "return await tools.notes.build_log({ kb: 50 })", &[]), json!(build_log(50)));
}

/// Podcode's own recordChange pattern: after the write, `ctx.recordChange` does not
/// throw, the call succeeds, and the journal is in `codemode run --json`'s outcome.
#[test]
fn seed_004_record_change_after_a_write_reaches_the_outcome() {
    let file = fixture("podcode").join("notes.mjs");
    let cfg = config(&format!("[[plugin]]\nname = \"notes\"\nkind = \"javascript\"\npath = \"{}\"\n", file.display()));
    let program = r#"const a = await tools.notes.write_note({ path: "notes/today.md", body: "first" });
const b = await tools.notes.write_note({ path: "notes/today.md", body: "second" });
return [a, b]"#;
    let outcome = outcome_of(&cfg, program, &["--approve", "notes.write_note"], &[]);
    assert_eq!(
        serde_json::from_str::<Value>(outcome["value"].as_str().unwrap()).unwrap(),
        json!(["Wrote 5 bytes to notes/today.md.", "Wrote 6 bytes to notes/today.md."])
    );
    assert_eq!(
        outcome["changes"],
        json!([
            { "call": "tools.notes.write_note", "file": "notes/today.md", "op": "create", "oldContent": null, "newContent": "first" },
            { "call": "tools.notes.write_note", "file": "notes/today.md", "op": "modify", "oldContent": "first", "newContent": "second" },
        ])
    );
    // The text an agent reads lists them after the value.
    let (code, out, _) = codemode(
        &["run", "--approve", "notes.write_note", "--config", cfg.to_str().unwrap(), "-"],
        r#"await tools.notes.write_note({ path: "a.md", body: "x" }); return "done""#,
        &[],
    );
    assert_eq!(
        (code, out.trim_end()),
        (0, "done\n\nChanges recorded by tools (1):\n- create a.md (tools.notes.write_note)")
    );
    // A program without changes has no `changes` key.
    assert_eq!(outcome_of(&cfg, "return 1", &[], &[]).get("changes"), None);
}

/// Node's rule for bare imports (seed 004: "a node_modules next to the file, or a
/// directory above it"): the document's example in `plugins/` finds zod in the
/// `node_modules` one folder above, wherever the home folder is; a copy under `/tmp`
/// (outside any home) finds it the same way; a package installed nowhere above is
/// reported with every folder codemode looked in.
#[tokio::test(flavor = "multi_thread")]
async fn seed_004_zod_from_a_node_modules_above_the_plugin_as_node_walks() {
    let port =
        http_server(vec![("/status/api", json!({ "health": "green", "release": "v42", "deployedAt": "today" }))]).await;
    let base = fixture("podcode-above");
    assert!(!base.join("plugins/node_modules").exists() && base.join("node_modules/zod").is_dir());
    let entry = move |file: &Path| {
        config(&format!(
            "[[plugin]]\nname = \"deploy\"\nkind = \"javascript\"\npath = \"{}\"\nsettings = {{ endpoint = \"http://127.0.0.1:{port}\" }}\nnet_hosts = [\"127.0.0.1:{port}\"]\n",
            file.display()
        ))
    };
    tokio::task::spawn_blocking(move || {
        let status = json!("Service api is green on release v42, deployed today.");
        let program = r#"return await tools.deploy.deploy_status({ service: "api" })"#;
        // A home folder elsewhere changes nothing.
        let cfg = entry(&base.join("plugins/deploy-status.mjs"));
        assert_eq!(run(&cfg, program, &[("HOME", "/nonexistent-home")]), status);
        // /tmp/x/plugins/ with zod in /tmp/x/node_modules (a container's /app, /srv, /opt alike).
        let x = PathBuf::from(format!("/tmp/codemode-walk-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&x);
        std::fs::create_dir_all(x.join("plugins")).unwrap();
        std::fs::copy(base.join("plugins/deploy-status.mjs"), x.join("plugins/deploy-status.mjs")).unwrap();
        let copied = std::process::Command::new("cp").arg("-r").arg(base.join("node_modules")).arg(&x).status().unwrap();
        assert!(copied.success());
        let cfg = entry(&x.join("plugins/deploy-status.mjs"));
        assert_eq!(run(&cfg, program, &[("HOME", "/root")]), status);
        // Installed nowhere above: the error names every folder looked in.
        std::fs::remove_dir_all(x.join("node_modules")).unwrap();
        let (_, out, _) = tools(&cfg, false, &[]);
        let looked: Vec<String> =
            x.ancestors().map(|a| a.join("node_modules").display().to_string()).collect();
        let expected = format!(
            "deploy-status.mjs imports the package \"zod\", which is not installed in the plugin's folder nor in a node_modules of a folder above it (codemode looked, as Node does, in {}); run `npm install zod` in {}",
            looked.join(", "),
            x.join("plugins").display()
        );
        let _ = std::fs::remove_dir_all(&x);
        assert!(out.contains(&expected), "{expected}\nin\n{out}");
    })
    .await
    .unwrap();
}

#[test]
fn layouts_are_told_by_their_shape_not_the_examples_file_names() {
    let schema = r#"{ type: "object", properties: { n: { type: "number" } }, required: ["n"] }"#;
    let zhin = folder(
        "zhin-shape",
        &[(
            "tools/double/index.mjs",
            &format!("import {{ defineAgentTool }} from '@zhin.js/tool';\nexport default defineAgentTool({{ description: 'Doubles', inputSchema: {schema}, annotations: {{ readOnlyHint: true }}, execute: ({{ n }}) => n * 2 }});"),
        )],
    );
    let plico = folder(
        "plico-shape",
        &[(
            "tools/triple.tool.mjs",
            &format!("import {{ defineTool }} from '@plico-ai/sdk';\nexport default defineTool({{ name: 'triple', description: 'Triples', inputSchema: {schema}, capabilities: [], approval: {{ required: false }}, handler: ({{ n }}) => n * 3 }});"),
        )],
    );
    let podcode = folder(
        "podcode-shape",
        &[(
            "my-plugin.ts",
            &format!("export default {{ id: 'x', server: () => ({{ tool: () => [{{ id: 'square', description: 'Squares', parameters: {schema}, execute: async ({{ n }}: {{ n: number }}) => String(n * n) }}] }}) }};"),
        )],
    );
    let globals = folder(
        "globals-shape",
        &[("script.js", &format!("globalThis.tools.negate = {{ description: 'Negates', parameters: {schema}, handler: ({{ n }}) => -n }};"))],
    );
    let cfg = config(&format!(
        "[[plugin]]\nname = \"z\"\nkind = \"javascript\"\npath = \"{}\"\n\n[[plugin]]\nname = \"p\"\nkind = \"javascript\"\npath = \"{}\"\n\n[[plugin]]\nname = \"c\"\nkind = \"javascript\"\npath = \"{}\"\n\n[[plugin]]\nname = \"g\"\nkind = \"javascript\"\npath = \"{}\"\n",
        zhin.display(),
        plico.display(),
        podcode.display(),
        globals.display()
    ));
    let v = run(&cfg, "return [await tools.z.double({ n: 2 }), await tools.p.triple({ n: 2 }), await tools.c.square({ n: 3 }), await tools.g.negate({ n: 4 })]", &[]);
    assert_eq!(v, json!(["4", "6", "9", "-4"]));
}

#[test]
fn what_is_wrong_with_a_plugin_is_said_at_load() {
    let manifest =
        r#"{ "name": "b", "version": "1", "main": "main.js", "permissions": { "tools.provide": { "reason": "t" } } }"#;
    let cases: Vec<(&str, &str, &str)> = vec![
        (
            "export function activate(api) { api.tools.register({ name: 't', description: 'd', inputSchema: 'string', run: () => 1 }) }",
            "",
            "tool t: inputSchema must be a JSON Schema object or a zod / Standard Schema schema; got a string",
        ),
        (
            "export function activate(api) { api.tools.register({ name: 't', description: 'd', inputSchema: { foo: 1 }, run: () => 1 }) }",
            "",
            "tool t: inputSchema must be a JSON Schema object or a zod / Standard Schema schema",
        ),
        (
            "export default { tools: [] };",
            "",
            "the main module main.js exports no activate(api) function (it exports default) and assigns no globalThis.tools, so the plugin offers no tools",
        ),
        ("import fs from 'node:fs';\nexport function activate() {}", "", "main.js imports \"node:fs\", Node.js's node:fs module, which codemode's sandbox cannot offer"),
        ("import { z } from 'zod';\nexport function activate() {}", "", "main.js imports the package \"zod\", which is not installed in the plugin's folder nor in a node_modules of a folder above it (codemode looked, as Node does, in /tmp/node_modules, /node_modules); run `npm install zod` in"),
        ("import v from './view.tsx';\nexport function activate() {}", "view.tsx", "view.tsx is TSX: codemode runs TypeScript without JSX; move the code into a .ts file"),
    ];
    for (main, extra, expected) in cases {
        let mut files = vec![("manifest.json", manifest), ("main.js", main)];
        if !extra.is_empty() {
            files.push((extra, "export default 1;"));
        }
        let dir = folder("broken", &files);
        let cfg = config(&format!("[[plugin]]\nname = \"b\"\nkind = \"javascript\"\npath = \"{}\"\n", dir.display()));
        let (code, out, _) = tools(&cfg, false, &[]);
        assert_eq!(code, 1, "{main}: {out}");
        assert!(
            out.contains("! plugin b is unavailable: ") && out.contains(expected),
            "{main}: {expected:?} in\n{out}"
        );
    }
    // A symbolic link out of the folder: the import is refused by name, and the target is never read.
    let outside = folder("secret", &[("secret.js", "export const stolen = 1;")]);
    let dir = folder(
        "linked",
        &[
            ("manifest.json", manifest),
            ("main.js", "import { stolen } from './leak/secret.js';\nexport function activate() {}"),
        ],
    );
    std::os::unix::fs::symlink(&outside, dir.join("leak")).unwrap();
    let cfg = config(&format!("[[plugin]]\nname = \"b\"\nkind = \"javascript\"\npath = \"{}\"\n", dir.display()));
    let (_, out, _) = tools(&cfg, false, &[]);
    assert!(
        out.contains(&format!("main.js imports \"./leak/secret.js\" through /plugin/leak, a symbolic link out of the plugin's folder (to {})", outside.display())),
        "{out}"
    );
    // A file nested deeper than a parse can take is refused before it is parsed: the
    // plugin is unavailable, the others load (exit 1: the listing names a problem).
    let deep = format!("export default {}1{};", "[".repeat(20_000), "]".repeat(20_000));
    let dir = folder("deep", &[("plugin.mjs", &deep)]);
    let cfg = config(&format!(
        "example_tools = true\n\n[[plugin]]\nname = \"d\"\nkind = \"javascript\"\npath = \"{}\"\n",
        dir.display()
    ));
    let (code, out, err) = tools(&cfg, false, &[]);
    assert_eq!(code, 1, "{err}");
    assert!(out.contains("tools.math.add("), "the other tools are listed: {out}");
    assert!(
        out.contains("! plugin d is unavailable: ")
            && out.contains("plugin.mjs: line 1, column 1: brackets nest more than 500 levels deep"),
        "{out}"
    );
    // One nested without brackets past any parser's stack (400,000 `!`): the reader
    // process runs out of stack, never the host.
    let deep = format!("export default {{ id: 'x', server: () => {}1 }};", "!".repeat(400_000));
    let dir = folder("bangs", &[("plugin.mjs", &deep)]);
    let cfg = config(&format!(
        "example_tools = true\n\n[[plugin]]\nname = \"d\"\nkind = \"javascript\"\npath = \"{}\"\n",
        dir.display()
    ));
    let (code, out, err) = tools(&cfg, false, &[]);
    assert_eq!(code, 1, "{err}");
    assert!(out.contains("tools.math.add("), "the other tools are listed: {out}");
    assert!(
        out.contains("! plugin d is unavailable: its files cannot be read: one of its modules nests more deeply than codemode's parser can follow"),
        "{out}"
    );
    // A folder no format fits: unavailable, with the formats listed.
    let dir = folder("nothing", &[("README.md", "hi")]);
    let cfg = config(&format!("[[plugin]]\nname = \"n\"\nkind = \"javascript\"\npath = \"{}\"\n", dir.display()));
    let (code, out, err) = tools(&cfg, false, &[]);
    assert_eq!(code, 1, "{err}");
    assert!(
        out.contains("! plugin n is unavailable: ")
            && out.contains("is not a plugin codemode knows: it holds README.md; a plugin is one of: manifest ("),
        "{out}"
    );
}

#[test]
fn seed_000_every_ctx_and_api_member_subagents_and_scopes() {
    let manifest = r#"{ "name": "m", "version": "2.0.0", "main": "main.ts", "permissions": { "tools.provide": { "reason": "t" } } }"#;
    let main = r#"
export function activate(api: any) {
  api.tools.register({
    name: "member",
    description: "Reads ctx.<name>, or api.<name> when api is set.",
    inputSchema: { type: "object", properties: { name: { type: "string" }, api: { type: "boolean" } }, required: ["name"] },
    run({ name, api: onApi }: { name: string; api?: boolean }, ctx: any) {
      try {
        const value = (onApi ? api : ctx)[name];
        return `${name}: ${typeof value}`;
      } catch (e) {
        return (e as Error).message;
      }
    },
  });
  api.tools.register({
    name: "research",
    description: "Does its work as a subagent.",
    async run(_input: object, ctx: any) {
      const sub = await ctx.subagent.start({ title: "Research", agent: "codex", prompt: "q" });
      sub.step("Reading");
      const row = sub.tool({ name: "fetch", title: "Fetch", kind: "fetch" });
      row.output("200 OK");
      row.end("completed");
      sub.text("two endpoints");
      sub.usage({ usedTokens: 10 });
      await sub.end({ status: "completed", summary: "done" });
      return { shown: sub.shown, settings: api.settings, version: api.plugin.version };
    },
  });
  api.tools.register({ name: "workspace-only", description: "Offered in one scope.", scope: "plugins-workspace", run: () => "in scope" });
  api.tools.register({
    name: "left_running",
    description: "Starts a subagent and never ends it.",
    async run(_input: object, ctx: any) {
      const sub = await ctx.subagent.start({ title: "Research", agent: "codex", prompt: "q" });
      sub.step("Reading");
      return { shown: sub.shown };
    },
  });
}
"#;
    let dir = folder("members", &[("manifest.json", manifest), ("main.ts", main)]);
    let entry = format!(
        "[[plugin]]\nname = \"m\"\nkind = \"javascript\"\npath = \"{}\"\nsettings = {{ mode = \"test\" }}\n",
        dir.display()
    );
    let cfg = config(&entry);
    let members = ["workspace", "workspaceId", "agentId", "chatId", "callId", "signal", "subagent", "scope", "approve"];
    let v = run(
        &cfg,
        &format!("return await Promise.all({}.map((name) => tools.m.member({{ name }})))", json!(members)),
        &[],
    );
    assert_eq!(
        v,
        json!([
            "workspace: undefined",
            "workspaceId: undefined",
            "agentId: undefined",
            "chatId: undefined",
            "callId: string",
            "signal: object",
            "subagent: object",
            "scope: undefined",
            "approve: function"
        ])
    );
    let v = run(
        &cfg,
        r#"return [await tools.m.member({ name: "host", api: true }), await tools.m.member({ name: "models", api: true })]"#,
        &[],
    );
    assert_eq!(v, json!(["host: object", "models: object"]));
    assert_eq!(
        run(&cfg, "return JSON.parse(await tools.m.research({}))", &[]),
        json!({ "shown": false, "settings": { "mode": "test" }, "version": "2.0.0" })
    );
    // A subagent the call leaves running ends with it: the call answers at once (not at
    // the plugin's 30 s timeout), and the subagent is reported ended (in the log here,
    // where nobody is shown it).
    let started = std::time::Instant::now();
    let (code, out, err) = codemode(
        &["run", "--json", "--log", "info", "--config", cfg.to_str().unwrap(), "-"],
        "return JSON.parse(await tools.m.left_running({}))",
        &[],
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "took {:?}", started.elapsed());
    let outcome: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}\n{err}"));
    assert_eq!((code, &outcome["value"]), (0, &json!("{\"shown\":false}")), "{outcome:#}\n{err}");
    assert!(err.contains("tools.m.left_running: subagent Research: step Reading"), "{err}");
    assert!(err.contains("tools.m.left_running: subagent Research ended: completed with the call"), "{err}");
    // A scoped tool is offered only where its scope is configured.
    let (_, out, _) = tools(&cfg, false, &[]);
    assert!(out.contains("! plugin m (note): tool workspace-only is offered only in the scope \"plugins-workspace\", which this configuration does not serve; add scopes = [\"plugins-workspace\"] to offer it"), "{out}");
    assert_eq!(
        rejection(&cfg, "tools.m.workspace_only({})"),
        "Unknown tool tools.m.workspace_only. Did you mean tools.m.research, tools.m.left_running, tools.m.member?"
    );
    let scoped = config(&format!("scopes = [\"plugins-workspace\"]\n\n{entry}"));
    assert_eq!(run(&scoped, "return await tools.m.workspace_only({})", &[]), json!("in scope"));
}
