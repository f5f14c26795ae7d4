//! README.md and docs/ checked against the real build.
//!
//! 1. Every shell command in README.md's `sh` blocks must be one this file knows
//!    (`COMMANDS`), so a new command in the README fails here until a test runs it.
//! 2. Every tour command is run from the repository's folder against the real
//!    `codemode` binary, and what it prints is checked against what the README shows
//!    (its `text` blocks, its program and its registration JSON); `codemode mcp` is
//!    spoken to over stdio as an agent's client would.
//! 3. The two set-up commands are run by CI itself (`.ci/run` runs `scripts/test.sh`);
//!    `scripts/demo.sh` ends in a `codemode run` that is run here, minus the system
//!    set-up.
//! 4. docs/ is laid out for mdBook: every `SUMMARY.md` entry exists, every page is in
//!    it, and every relative link in README.md and docs/ resolves, anchors included.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

/// How a command the README shows is run.
#[derive(Clone, Copy, Debug)]
enum Runner {
    /// A set-up command: `.ci/run` runs `scripts/test.sh`; `scripts/demo.sh`'s
    /// `codemode run` is run by `the_demo_runs_the_readme_tour_program`.
    SetUp,
    /// Run with `bash -c` in the repository's folder, checked by `tour_commands`.
    Shell,
    /// `codemode mcp`, spoken to over stdio by `an_agent_connects_over_stdio`.
    McpStdio,
}

/// Every shell command README.md shows, as written (comments removed).
const COMMANDS: &[(&str, Runner)] = &[
    ("scripts/demo.sh", Runner::SetUp),
    ("scripts/test.sh", Runner::SetUp),
    ("./target/release/codemode run --example-tools scripts/examples/weather-report.js", Runner::Shell),
    (
        "echo 'async (tools) => (await tools.math.add({ a: 1, b: 2 }))' | ./target/release/codemode run --example-tools -",
        Runner::Shell,
    ),
    ("./target/release/codemode tools --config plugins/codemode.toml", Runner::Shell),
    ("./target/release/codemode run --config plugins/codemode.toml scripts/examples/notes-report.js", Runner::Shell),
    ("./target/release/codemode mcp --config plugins/codemode.toml", Runner::McpStdio),
    ("./target/release/codemode tools --config plugins/codemode.toml --description", Runner::Shell),
    ("./target/release/codemode sandbox-check", Runner::Shell),
];

/// The program the tour's agent sends to `execute`, and what it reads back.
const AGENT_PROGRAM_STARTS: &str = "const { rows } = await tools.sqlite_notes.query(";
const AGENT_READS: &str = r#"["Ship the sandbox","Read the MCP spec"]"#;

/// Held by each test that starts plugins/codemode.toml's plugins: the sqlite-notes
/// example seeds its database on first start, and two first starts at once could both
/// seed it.
fn example_plugins() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().unwrap()
}

fn readme() -> String {
    std::fs::read_to_string(repo().join("README.md")).unwrap()
}

/// The fenced code blocks of a Markdown text whose info string is `lang`, in order
/// (fences may be indented, as in list items).
fn code_blocks(markdown: &str, lang: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<(String, String, usize)> = None; // (lang, text, indent)
    for line in markdown.lines() {
        let trimmed = line.trim_start();
        match current.take() {
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    current = Some((info.trim().to_string(), String::new(), line.len() - trimmed.len()));
                }
            }
            Some((info, mut text, indent)) => {
                if trimmed == "```" {
                    if info == lang {
                        blocks.push(text);
                    }
                } else {
                    let cut = line.len() - trimmed.len();
                    text.push_str(&line[cut.min(indent)..]);
                    text.push('\n');
                    current = Some((info, text, indent));
                }
            }
        }
    }
    assert!(current.is_none(), "a code block is not closed");
    blocks
}

/// `line` without a trailing `# comment` (a `#` after whitespace, outside quotes).
fn strip_comment(line: &str) -> &str {
    let (mut single, mut double) = (false, false);
    let mut previous = ' ';
    for (at, c) in line.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && previous.is_whitespace() => return line[..at].trim_end(),
            _ => {}
        }
        previous = c;
    }
    line.trim_end()
}

/// The shell commands of README.md's `sh` blocks, continuation lines joined.
fn readme_commands() -> Vec<String> {
    let mut commands = Vec::new();
    for block in code_blocks(&readme(), "sh") {
        let mut pending = String::new();
        for line in block.lines() {
            let line = strip_comment(line);
            if let Some(head) = line.strip_suffix('\\') {
                pending.push_str(head.trim());
                pending.push(' ');
                continue;
            }
            pending.push_str(line.trim());
            if !pending.is_empty() {
                commands.push(std::mem::take(&mut pending));
            }
        }
        assert!(pending.is_empty(), "a continued command ends its block: {pending}");
    }
    commands
}

/// `command` (as the README writes it) through `bash -c` in the repository's folder,
/// with the binary under test in place of `./target/release/codemode`, in a session of
/// its own with no terminal: (exit code, stdout, stderr).
fn shell(command: &str) -> (i32, String, String) {
    use std::os::unix::process::CommandExt;
    let command = command.replace("./target/release/codemode", env!("CARGO_BIN_EXE_codemode"));
    let mut bash = Command::new("bash");
    bash.args(["-c", &command]).current_dir(repo()).stdin(Stdio::null());
    // SAFETY: between fork and exec the child only calls setsid, which is
    // async-signal-safe.
    unsafe {
        bash.pre_exec(|| if libc::setsid() < 0 { Err(std::io::Error::last_os_error()) } else { Ok(()) });
    }
    let out = bash.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs a README command, asserting it exits with 0; its stdout.
fn run_ok(command: &str) -> String {
    let (code, out, err) = shell(command);
    assert_eq!(code, 0, "`{command}` failed:\n{out}\n{err}");
    out
}

/// README.md's `text` blocks (what it shows a command printing).
fn readme_outputs() -> Vec<String> {
    code_blocks(&readme(), "text")
}

/// Asserts that `out` is exactly one of the README's `text` blocks.
fn assert_shown(command: &str, out: &str) {
    assert!(
        readme_outputs().iter().any(|block| block.trim_end() == out.trim_end()),
        "README.md does not show what `{command}` prints:\n{out}"
    );
}

#[test]
fn every_readme_command_is_known_and_every_known_command_is_shown() {
    let shown = readme_commands();
    let known: BTreeSet<&str> = COMMANDS.iter().map(|(command, _)| *command).collect();
    for command in &shown {
        assert!(
            known.contains(command.as_str()),
            "README.md shows a command no test runs: `{command}`; run it in host/tests/readme.rs and add it to COMMANDS"
        );
    }
    for command in &known {
        assert!(shown.iter().any(|c| c == command), "COMMANDS lists `{command}`, which README.md no longer shows");
    }
}

#[test]
fn the_readme_is_a_newcomers_page() {
    let lines = readme().lines().count();
    assert!(lines <= 250, "README.md has {lines} lines; the reference belongs in docs/");
}

#[test]
fn tour_commands_print_what_the_readme_shows() {
    let _plugins = example_plugins();
    for (command, runner) in COMMANDS {
        if !matches!(runner, Runner::Shell) {
            continue;
        }
        let out = run_ok(command);
        if command.ends_with("weather-report.js") || command.ends_with("notes-report.js") {
            assert_shown(command, &out);
        } else if command.starts_with("echo ") {
            assert_eq!(out, "3\n", "`{command}`");
            assert!(readme().contains("It prints `3`."));
        } else if command.ends_with("--description") {
            assert!(out.starts_with("Runs a JavaScript program that calls tools"), "`{command}`:\n{out}");
            assert!(out.contains("The 8 tools, as TypeScript declarations"), "`{command}`:\n{out}");
        } else if command.ends_with("tools --config plugins/codemode.toml") {
            let listing = readme_outputs().into_iter().find(|b| b.starts_with("tools.")).expect("the tools listing");
            assert!(
                out.contains(&listing),
                "`{command}` no longer prints what README.md shows:\n{listing}\nbut:\n{out}"
            );
        } else if command.ends_with("sandbox-check") {
            for layer in ["user_namespace", "empty_root", "landlock", "seccomp"] {
                let line = out.lines().find(|l| l.starts_with(layer)).unwrap_or_else(|| panic!("no {layer}:\n{out}"));
                assert!(line.contains(" active "), "`{command}`: {line}");
            }
        } else {
            panic!("`{command}` is run but not checked: check what it prints");
        }
    }
}

/// The README's program blocks are the files (or the program) they stand for.
#[test]
fn the_readme_shows_the_real_program_and_configuration() {
    let readme = readme();
    let weather = std::fs::read_to_string(repo().join("scripts/examples/weather-report.js")).unwrap();
    let programs = code_blocks(&readme, "js");
    assert!(
        programs.iter().any(|p| weather.contains(p.as_str())),
        "README.md's weather program is not weather-report.js"
    );
    assert!(programs.iter().any(|p| p.starts_with(AGENT_PROGRAM_STARTS)), "README.md's agent program is gone");
    assert!(readme.contains(&format!("and reads `{AGENT_READS}`")));

    // Each setting the README shows is a line of plugins/codemode.toml (comments aside).
    let setting = |line: &str| strip_comment(line).split_whitespace().collect::<Vec<_>>().join(" ");
    let config = std::fs::read_to_string(repo().join("plugins/codemode.toml")).unwrap();
    let lines: BTreeSet<String> = config.lines().map(setting).collect();
    let toml = code_blocks(&readme, "toml");
    assert_eq!(toml.len(), 1);
    for line in toml[0].lines().map(setting).filter(|l| !l.is_empty()) {
        assert!(lines.contains(&line), "README.md shows `{line}`, which plugins/codemode.toml does not hold");
    }
}

/// `scripts/demo.sh`, the main job, ends in the `codemode run` the tour shows: run it
/// (the system set-up and the build before it are what `scripts/test.sh` does too).
#[test]
fn the_demo_runs_the_readme_tour_program() {
    let _plugins = example_plugins();
    let demo = std::fs::read_to_string(repo().join("scripts/demo.sh")).unwrap();
    let last = demo.lines().rfind(|l| !l.trim().is_empty()).unwrap();
    assert_eq!(
        last,
        r#"exec ./target/release/codemode run --config plugins/codemode.toml "${1:-scripts/examples/notes-report.js}""#
    );
    let command = "./target/release/codemode run --config plugins/codemode.toml scripts/examples/notes-report.js";
    assert!(COMMANDS.iter().any(|(c, _)| *c == command));
    assert_shown(command, &run_ok(command));
}

/// A line-delimited JSON-RPC client of `codemode mcp` over stdio.
struct McpClient {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: std::sync::mpsc::Receiver<String>,
}

impl McpClient {
    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends a request and waits (at most 60 s) for its response.
    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        loop {
            let line = self.lines.recv_timeout(Duration::from_secs(60)).expect("codemode mcp answers");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == json!(id) {
                assert!(message.get("error").is_none(), "{method}: {message}");
                return message["result"].clone();
            }
        }
    }
}

impl Drop for McpClient {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn an_agent_connects_over_stdio() {
    let _plugins = example_plugins();
    let (command, _) = COMMANDS.iter().find(|(_, r)| matches!(r, Runner::McpStdio)).unwrap();
    let args: Vec<&str> = command.split_whitespace().skip(1).collect();

    // The registration JSON starts the same command.
    let registration = code_blocks(&readme(), "json");
    let registration: Value = serde_json::from_str(&registration[0]).unwrap();
    let server = &registration["mcpServers"]["codemode"];
    assert!(server["command"].as_str().unwrap().ends_with(&command.split_whitespace().next().unwrap()[1..]));
    let registered: Vec<&str> = server["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    assert_eq!(registered.len(), args.len());
    for (registered, arg) in registered.iter().zip(&args) {
        assert!(registered.ends_with(arg), "{registered} is not {arg}");
    }

    let mut child = Command::new(env!("CARGO_BIN_EXE_codemode"))
        .args(&args)
        .current_dir(repo())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut mcp = McpClient { child, stdin, lines };
    let init = mcp.request(
        1,
        "initialize",
        json!({ "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "readme-tour", "version": "1" } }),
    );
    assert_eq!(init["serverInfo"]["name"], "codemode", "{init}");
    mcp.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));

    // One tool, execute, described as `codemode tools --description` prints it.
    let list = mcp.request(2, "tools/list", json!({}));
    let tools = list["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1, "{list}");
    assert_eq!(tools[0]["name"], "execute");
    let description = run_ok("./target/release/codemode tools --config plugins/codemode.toml --description");
    assert_eq!(tools[0]["description"].as_str().unwrap().trim_end(), description.trim_end());

    // The README's program, as the agent sends it.
    let program = code_blocks(&readme(), "js").into_iter().find(|p| p.starts_with(AGENT_PROGRAM_STARTS)).unwrap();
    let result = mcp.request(3, "tools/call", json!({ "name": "execute", "arguments": { "code": program } }));
    assert_ne!(result["isError"], json!(true), "{result}");
    assert_eq!(result["content"][0]["text"], AGENT_READS, "{result}");
}

/// The heading anchors of a Markdown page, as GitHub and mdBook make them.
fn anchors(markdown: &str) -> BTreeSet<String> {
    let mut in_code = false;
    let mut anchors = BTreeSet::new();
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        }
        if in_code || !line.starts_with('#') {
            continue;
        }
        let title = line.trim_start_matches('#').trim();
        let slug: String = title
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                _ => None,
            })
            .collect();
        anchors.insert(slug);
    }
    anchors
}

/// The targets of the inline links `[text](target)` of a Markdown page, outside code.
fn links(markdown: &str) -> Vec<String> {
    let mut in_code = false;
    let mut targets = Vec::new();
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        }
        if in_code {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            targets.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    targets
}

/// Every relative link of `page` names a file that exists and, with `#anchor`, a
/// heading of that file.
fn assert_links_resolve(page: &Path) {
    let text = std::fs::read_to_string(page).unwrap();
    for target in links(&text) {
        if target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        let (file, anchor) = target.split_once('#').unwrap_or((&target, ""));
        let file = if file.is_empty() { page.to_path_buf() } else { page.parent().unwrap().join(file) };
        assert!(file.exists(), "{}: the link {target} names no file", page.display());
        if !anchor.is_empty() {
            let headings = anchors(&std::fs::read_to_string(&file).unwrap());
            assert!(
                headings.contains(anchor),
                "{}: the link {target} names no heading of {}",
                page.display(),
                file.display()
            );
        }
    }
}

#[test]
fn the_docs_are_an_mdbook_whose_links_resolve() {
    let docs = repo().join("docs");
    let summary = std::fs::read_to_string(docs.join("SUMMARY.md")).unwrap();
    let listed: BTreeSet<String> = links(&summary).into_iter().collect();
    for entry in &listed {
        assert!(docs.join(entry).is_file(), "SUMMARY.md lists {entry}, which does not exist");
    }
    let mut pages = 0;
    for file in std::fs::read_dir(&docs).unwrap().map(|e| e.unwrap().path()) {
        if file.extension().is_some_and(|e| e == "md") {
            let name = file.file_name().unwrap().to_string_lossy().into_owned();
            assert!(name == "SUMMARY.md" || listed.contains(&name), "docs/{name} is not in SUMMARY.md");
            assert_links_resolve(&file);
            pages += 1;
        }
    }
    assert!(pages > 10, "docs/ holds {pages} pages");
    assert_links_resolve(&repo().join("README.md"));
}
