//! MCP servers as plugins, end to end through the official SDK (rmcp): a small stdio
//! MCP server in Python (tests/plugins/mcp_server.py), and, opt-in, the MCP reference
//! "everything" server from npm (`scripts/test-mcp-everything.sh`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use codemode::plugins::mcp::{HttpServer, McpConfig, McpPlugin, McpTransport};
use codemode::plugins::settings::SettingValue;
use codemode::plugins::PluginHost;
use codemode::{Catalog, Executor, LaunchMode, Limits};
use common::*;
use serde_json::json;

struct Setup {
    executor: Arc<Executor>,
    _host: Arc<PluginHost>,
    cancel_log: PathBuf,
}

async fn setup(name: &str, command: &str, args: Vec<String>, timeout: Duration) -> Setup {
    let cancel_log = std::env::temp_dir().join(format!("codemode-mcp-cancel-{}-{name}.log", std::process::id()));
    let _ = std::fs::remove_file(&cancel_log);
    let server = McpPlugin::new(McpConfig {
        name: name.into(),
        transport: McpTransport::Stdio {
            command: command.into(),
            args,
            env: vec![("CANCEL_LOG".into(), SettingValue::Literal(cancel_log.display().to_string().into()))],
            cwd: None,
        },
        call_timeout: timeout,
        protocol: Default::default(),
    });
    let host = Arc::new(PluginHost::new(Catalog::new(), vec![]).with_mcp(vec![server]));
    let (catalog, problems) = host.catalog().await;
    assert!(problems.is_empty(), "{problems:?}");
    let executor = Arc::new(
        Executor::builder()
            .launch_mode(LaunchMode::Template)
            .limits(Limits::default())
            .catalog(catalog)
            .build()
            .await
            .unwrap(),
    );
    host.keep_current(Arc::clone(&executor));
    Setup { executor, _host: host, cancel_log }
}

async fn python_server(timeout: Duration) -> Setup {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/plugins/mcp_server.py");
    setup("test-mcp", "python3", vec![script.display().to_string()], timeout).await
}

#[tokio::test]
async fn an_mcp_servers_tools_answer_programs() {
    let s = python_server(Duration::from_secs(10)).await;
    let v = ok_value(
        &s.executor
            .run("return await Promise.all([tools.test_mcp.add({ a: 2, b: 3 }), tools.test_mcp.stats({ text: 'hi' })])")
            .await,
    );
    assert_eq!(v, json!(["5", { "length": 2, "upper": "HI" }]));
    let v = ok_value(&s.executor.run("try { await tools.test_mcp.fail() } catch (e) { return e.message }").await);
    assert_eq!(v, json!("the server refused"));
    let v = ok_value(
        &s.executor.run("try { await tools.test_mcp.add({ a: 'two', b: 3 }) } catch (e) { return e.message }").await,
    );
    assert_eq!(v, json!("invalid input for test-mcp.add: input.a: \"two\" is not of type \"number\""));
}

#[tokio::test]
async fn a_server_started_as_a_command_gets_only_path_and_its_own_env() {
    // Secrets the host holds must not reach a plugin that was not given them.
    std::env::set_var("CODEMODE_TOKEN", "a-secret-token");
    std::env::set_var("AWS_SECRET_ACCESS_KEY", "a-cloud-credential");
    let s = python_server(Duration::from_secs(10)).await;
    let v = ok_value(&s.executor.run("return JSON.parse(await tools.test_mcp.env())").await);
    let names: Vec<&str> = v.as_array().unwrap().iter().filter_map(|n| n.as_str()).collect();
    assert!(names.contains(&"PATH") && names.contains(&"CANCEL_LOG"), "{names:?}");
    // (python3 may add its own, such as LC_CTYPE, or a version manager's shim variables.)
    for leaked in ["CODEMODE_TOKEN", "AWS_SECRET_ACCESS_KEY", "HOME", "CARGO_MANIFEST_DIR"] {
        assert!(!names.contains(&leaked), "the MCP server received the host's {leaked}: {names:?}");
    }
}

#[tokio::test]
async fn a_call_that_times_out_is_cancelled_at_the_server() {
    let s = python_server(Duration::from_millis(300)).await;
    let v = ok_value(
        &s.executor.run("try { await tools.test_mcp.sleep({ ms: 5000 }) } catch (e) { return e.message }").await,
    );
    assert_eq!(v, json!("tool test-mcp.sleep timed out after 0.3 s"));
    let mut log = String::new();
    for _ in 0..50 {
        log = std::fs::read_to_string(&s.cancel_log).unwrap_or_default();
        if !log.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(log.lines().count(), 1, "notifications/cancelled must reach the server: {log:?}");
}

#[tokio::test]
async fn a_changed_tool_list_reaches_later_programs() {
    let s = python_server(Duration::from_secs(10)).await;
    assert_eq!(ok_value(&s.executor.run("return await tools.test_mcp.grow({ name: 'fresh' })").await), json!("grown"));
    for _ in 0..100 {
        if s.executor.catalog().get("test-mcp", "fresh").is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(ok_value(&s.executor.run("return await tools.test_mcp.fresh()").await), json!("fresh says hi"));
}

/// Opt-in: needs the MCP reference server from npm (`scripts/test-mcp-everything.sh`
/// installs it and runs this test).
#[tokio::test]
#[ignore = "needs @modelcontextprotocol/server-everything from npm; run scripts/test-mcp-everything.sh"]
async fn the_mcp_everything_server() {
    let bin = std::env::var("MCP_EVERYTHING_BIN").expect("MCP_EVERYTHING_BIN names the server-everything executable");
    let s = setup("everything", &bin, vec!["stdio".into()], Duration::from_secs(30)).await;
    let names: Vec<String> = s
        .executor
        .catalog()
        .plugins()
        .flat_map(|(_, tools)| tools.map(|t| t.definition.name.clone()).collect::<Vec<_>>())
        .collect();
    assert!(names.iter().any(|n| n == "echo"), "{names:?}");
    let v = ok_value(&s.executor.run("return await tools.everything.echo({ message: 'hello' })").await);
    assert_eq!(v, json!("Echo: hello"));
}

/// The same server in its streamable-HTTP mode, reached as a `url` plugin (opt-in, as
/// above).
#[tokio::test]
#[ignore = "needs @modelcontextprotocol/server-everything from npm; run scripts/test-mcp-everything.sh"]
async fn the_mcp_everything_server_over_http() {
    let bin = std::env::var("MCP_EVERYTHING_BIN").expect("MCP_EVERYTHING_BIN names the server-everything executable");
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut server = tokio::process::Command::new(&bin)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
        assert!(std::time::Instant::now() < deadline, "the everything server did not listen on {port}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let plugin = McpPlugin::new(McpConfig {
        name: "everything".into(),
        transport: McpTransport::Http(HttpServer::new(format!("http://127.0.0.1:{port}/mcp"))),
        call_timeout: Duration::from_secs(30),
        protocol: Default::default(),
    });
    let host = Arc::new(PluginHost::new(Catalog::new(), vec![]).with_mcp(vec![plugin]));
    let (catalog, problems) = host.catalog().await;
    assert!(problems.is_empty(), "{problems:?}");
    let executor = Executor::builder().launch_mode(LaunchMode::Template).catalog(catalog).build().await.unwrap();
    let v = ok_value(&executor.run("return await tools.everything.echo({ message: 'over http' })").await);
    assert_eq!(v, json!("Echo: over http"));
    let _ = server.kill().await;
}
