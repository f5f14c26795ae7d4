//! `codemode run` as people and scripts use it: the agent's text, `--json`, exit codes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::codemode_cli;

fn codemode(args: &[&str], stdin: &str) -> (i32, String, String) {
    codemode_cli(args, stdin, &[])
}

#[test]
fn run_prints_what_the_agent_reads() {
    let (code, out, err) =
        codemode(&["run", "--example-tools", "-"], "async (tools) => (await tools.math.add({ a: 1, b: 2 }))");
    assert_eq!((code, out.as_str(), err.as_str()), (0, "3\n", ""));
    let (code, out, _) = codemode(&["run", "--example-tools", "-"], "console.log('hi'); return { a: [1, 'x'] }");
    assert_eq!((code, out.as_str()), (0, "{\"a\":[1,\"x\"]}\n\nConsole output:\nhi\n"));
}

#[test]
fn run_reads_a_file() {
    let path = std::env::temp_dir().join(format!("codemode-cli-{}.js", std::process::id()));
    std::fs::write(&path, "return 'from a file'").unwrap();
    let (code, out, _) = codemode(&["run", path.to_str().unwrap()], "");
    std::fs::remove_file(&path).unwrap();
    assert_eq!((code, out.as_str()), (0, "from a file\n"));
    let (code, _, err) = codemode(&["run", "/nonexistent/program.js"], "");
    assert_eq!(code, 2, "a missing program is a usage mistake");
    assert!(err.contains("cannot read the program /nonexistent/program.js: No such file"), "{err}");
}

#[test]
fn usage_mistakes_exit_2_with_what_was_wrong_in_the_users_units() {
    let (code, _, err) = codemode(&["run", "--memory-mib", "0", "-"], "return 1");
    assert_eq!((code, err.trim()), (2, "codemode: --memory-mib 0: must be between 16 and 65536"));
    let (code, _, err) = codemode(&["run", "--cpu-step-ms", "5", "-"], "return 1");
    assert_eq!((code, err.trim()), (2, "codemode: --cpu-step-ms 5: must be between 10 and 86400000"));
    let (code, out, err) = codemode(&["run", "-"], "  \n\t\n");
    assert_eq!((code, out.as_str()), (2, ""));
    assert!(err.contains("the program (standard input) is empty"), "{err}");
    let (code, _, err) = codemode(&["run", "--no-such-flag", "-"], "1");
    assert_eq!(code, 2, "{err}");
}

#[test]
fn null_is_null_and_logs_carry_no_colour_codes_off_a_terminal() {
    let (code, out, _) = codemode(&["run", "--json", "-"], "return null");
    assert_eq!(code, 0);
    let outcome: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(outcome["value"], "null", "{out}");
    let (code, out, _) = codemode(&["run", "-"], "return null");
    assert_eq!((code, out.as_str()), (0, "null\n"));
    // A warning logged while stderr is a pipe: plain text.
    let (_, _, err) = codemode(&["--log", "debug", "run", "-"], "return 1");
    assert!(!err.is_empty(), "debug logging wrote nothing");
    assert!(!err.contains('\u{1b}'), "colour codes off a terminal: {err:?}");
}

#[test]
fn json_prints_the_structured_outcome() {
    let (code, out2, _) = codemode(&["run", "--json", "--cpu-step-ms", "200", "-"], "while (true) {}");
    assert_eq!(code, 3);
    let v: serde_json::Value = serde_json::from_str(&out2).unwrap();
    assert_eq!(v["kind"], "cpu_limit");
    assert_eq!(v["limit_ms"], 200);
}

#[test]
fn exit_codes_tell_ok_error_and_limit_apart() {
    assert_eq!(codemode(&["run", "-"], "return 1").0, 0);
    assert_eq!(codemode(&["run", "-"], "throw new Error('x')").0, 1);
    assert_eq!(codemode(&["run", "-"], "await new Promise(() => {})").0, 1);
    assert_eq!(
        codemode(&["run", "--memory-mib", "32", "-"], "const a = []; while (true) a.push(new Array(1e5).fill(1))").0,
        3
    );
    assert_eq!(codemode(&["run", "--worker", "/nonexistent/worker", "-"], "1").0, 4);
    assert_eq!(codemode(&["run"], "").0, 2);
}

/// A configuration with the bundled example plugins (Python, SQLite, JavaScript) and a
/// database of the test's own.
/// Each test has its own (`label`): tests run in parallel, and each plugin start seeds
/// an empty database.
fn example_config(label: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("codemode-cli-config-{label}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let plugins = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../plugins").canonicalize().unwrap();
    let db = dir.join("notes.sqlite");
    let _ = std::fs::remove_file(&db);
    let config = format!(
        "example_tools = true\n\n[[plugin]]\nname = \"py-tools\"\nkind = \"process\"\ncommand = \"python3\"\nargs = [\"{p}/py-tools/plugin.py\"]\n\n[[plugin]]\nname = \"sqlite-notes\"\nkind = \"process\"\ncommand = \"python3\"\nargs = [\"{p}/sqlite-notes/plugin.py\"]\nenv = {{ NOTES_DB = \"{db}\" }}\n\n[[plugin]]\nname = \"hello\"\nkind = \"javascript\"\npath = \"{p}/hello-tools\"\n",
        p = plugins.display(),
        db = db.display()
    );
    let path = dir.join("codemode.toml");
    std::fs::write(&path, config).unwrap();
    path
}

#[test]
fn tools_lists_every_plugin_tool_with_its_signature() {
    let config = example_config("t1");
    let (code, out, _) = codemode(&["tools", "--config", config.to_str().unwrap()], "");
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("tools.sqlite_notes.query(input: {\n  /** A SELECT statement */\n  sql: string;\n  /** Values for ? placeholders */\n  params?: unknown[];\n}): Promise<{\n  columns: string[];\n  rows: unknown[][];\n}>\n"),
        "{out}"
    );
    assert!(out.contains("tools.py_tools.slugify(input: {\n  title: string;\n}): Promise<string>\n    Turns a title into a URL slug (lowercase, dashes).\n"), "{out}");
    assert!(out.contains("tools.weather.forecast(input: {\n  city: string;\n})"), "{out}");
    assert!(out.contains("tools.hello.greet(input: {\n  /** Who to greet */\n  name: string;\n  /** Defaults to en */\n  language?: \"en\" | \"no\";\n}): Promise<string>\n"), "{out}");
}

#[test]
fn rules_come_from_the_configuration_and_from_plugin_manifests() {
    let config = example_config("t2");
    let (code, out, _) = codemode(&["rules", "--config", config.to_str().unwrap()], "");
    assert_eq!(code, 0, "{out}");
    let hello = std::fs::read_to_string(
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../plugins/hello-tools/rules.md"),
    )
    .unwrap();
    assert!(out.contains(&format!("## hello\n\n{}", hello.trim())), "{out}");
}

#[test]
fn the_example_program_uses_four_plugins() {
    let config = example_config("t3");
    let program = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scripts/examples/notes-report.js");
    let (code, out, err) = codemode(&["run", "--config", config.to_str().unwrap(), program.to_str().unwrap()], "");
    assert_eq!((code, out.as_str()), (0, "{\"greeting\":\"Hei, team!\",\"notes\":[\"ship-the-sandbox\",\"read-the-mcp-spec\"],\"words\":12,\"top\":\"the\",\"oslo\":\"windy\"}\n\nConsole output:\n2 work notes\n"), "{err}");
    let (code, out, _) = codemode(
        &["run", "--config", config.to_str().unwrap(), "-"],
        "return await tools.sqlite_notes.query({ sql: 'DELETE FROM notes' }).catch((e) => e.message)",
    );
    assert_eq!((code, out.as_str()), (0, "query runs SELECT statements only; use add-note to write\n"));
}

#[test]
fn a_bad_configuration_is_named() {
    let path = std::env::temp_dir().join(format!("codemode-bad-{}.toml", std::process::id()));
    std::fs::write(&path, "[[plugin]]\nname = \"x\"\nkind = \"process\"\n").unwrap();
    let (code, _, err) = codemode(&["run", "--config", path.to_str().unwrap(), "-"], "1");
    assert_eq!(code, 2);
    assert!(err.contains("plugin \"x\": a process plugin needs `command`"), "{err}");
    // A missing rules file is the same error for every command, and names the file.
    std::fs::write(
        &path,
        "[[plugin]]\nname = \"x\"\nkind = \"process\"\ncommand = \"true\"\nrules = [\"nowhere.md\"]\n",
    )
    .unwrap();
    for command in [
        &["run", "--config", path.to_str().unwrap(), "-"][..],
        &["tools", "--config", path.to_str().unwrap()],
        &["rules", "--config", path.to_str().unwrap()],
        &["mcp", "--config", path.to_str().unwrap()],
    ] {
        let (code, _, err) = codemode(command, "1");
        assert_eq!(code, 2, "{command:?}: {err}");
        assert!(
            err.contains("plugin \"x\": the rules file ") && err.contains("nowhere.md cannot be read"),
            "{command:?}: {err}"
        );
    }
}
