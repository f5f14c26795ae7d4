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

/// `tools --description` prints what `codemode mcp` gives agents: the whole execute
/// description under the configuration's budget, and its size on standard error.
#[test]
fn tools_prints_the_execute_description_agents_read() {
    let config = example_config("t3");
    let (code, out, err) = codemode(&["tools", "--config", config.to_str().unwrap(), "--description"], "");
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.starts_with("Runs a JavaScript program that calls tools, and returns what the program returns.\n"),
        "{out}"
    );
    assert!(out.contains("The 8 tools, as TypeScript declarations"), "{out}");
    assert!(out.contains("      /** Who to greet */\n      name: string;"), "{out}");
    assert!(err.contains(&format!("codemode: {} characters for 8 tools", out.trim_end().chars().count())), "{err}");

    // Past the budget the tools are listed, not declared.
    let small = config.with_file_name("small.toml");
    std::fs::write(&small, format!("{}\n[server]\ncatalog_budget = 100\n", std::fs::read_to_string(&config).unwrap()))
        .unwrap();
    let (code, out, _) = codemode(&["tools", "--config", small.to_str().unwrap(), "--description"], "");
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("There are 8 tools in 5 plugins, too many to declare here."), "{out}");
    assert!(!out.contains("name: string;"), "{out}");
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

/// `codemode ARGS` in `dir`, with only the given config-folder variables.
fn codemode_in(dir: &std::path::Path, args: &[&str], env: &[(&str, &std::path::Path)]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_codemode"))
        .args(args)
        .current_dir(dir)
        .env_remove("XDG_CONFIG_HOME")
        .env("HOME", dir)
        .envs(env.iter().map(|(k, v)| (*k, v.as_os_str())))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_configuration_is_found_without_flags_and_init_writes_one() {
    let root = std::env::temp_dir().join(format!("codemode-discovery-{}", std::process::id()));
    let (repo, empty, cfg) = (root.join("repo"), root.join("empty"), root.join("cfg"));
    for d in [&repo, &empty, &cfg] {
        std::fs::create_dir_all(d).unwrap();
    }
    let xdg = [("XDG_CONFIG_HOME", cfg.as_path())];

    // Nothing anywhere: said, with what to do.
    let (code, out, err) = codemode_in(&empty, &["tools"], &xdg);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "");
    assert!(
        err.contains(&format!("no configuration found (looked for ./codemode.toml and {}/codemode/config.toml); `codemode init` writes a commented starter one, or pass --config FILE", cfg.display())),
        "{err}"
    );

    // `codemode init` writes the starter; a second one refuses to overwrite it.
    let (code, _, err) = codemode_in(&repo, &["init"], &xdg);
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::read_to_string(repo.join("codemode.toml")).unwrap().contains("example_tools = true"));
    let (code, _, err) = codemode_in(&repo, &["init"], &xdg);
    assert_eq!(code, 2);
    assert!(err.contains("codemode.toml already exists; pass --force to replace it"), "{err}");

    // The current folder's file is read by `tools` and `run`, and announced by its path.
    let (code, out, err) = codemode_in(&repo, &["tools"], &xdg);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("tools.math.add(input: {"), "{out}");
    assert!(
        err.contains(&format!("codemode: reading {}/codemode.toml (found in the current folder", repo.display())),
        "{err}"
    );

    // The user's file, from anywhere.
    std::fs::create_dir_all(cfg.join("codemode")).unwrap();
    std::fs::write(cfg.join("codemode/config.toml"), "example_tools = true\n").unwrap();
    let (code, out, err) = codemode_in(&empty, &["tools"], &xdg);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("tools.weather.forecast(input: {"), "{out}");
    assert_eq!(err.trim(), format!("codemode: reading {}/codemode/config.toml", cfg.display()));

    // A cloned repository's codemode.toml never starts its plugins under `codemode mcp`.
    std::fs::write(
        repo.join("codemode.toml"),
        "[[plugin]]\nname = \"sneaky\"\nkind = \"process\"\ncommand = \"sh\"\nargs = [\"-c\", \"touch STARTED; sleep 5\"]\ntimeout_ms = 500\n",
    )
    .unwrap();
    let _ = codemode_in(&repo, &["mcp"], &xdg);
    assert!(!repo.join("STARTED").exists(), "codemode mcp started a plugin from the current folder");
    // The control: `codemode tools` there does read it (the plugin starts).
    let _ = codemode_in(&repo, &["tools"], &xdg);
    assert!(repo.join("STARTED").exists(), "codemode tools should have read ./codemode.toml");
    std::fs::remove_dir_all(&root).unwrap();
}

/// A configuration whose `hello.greet` needs approval and whose `js.approve` asks the
/// person itself (`ctx.approve`).
fn approval_config() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("codemode-cli-approvals-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().unwrap();
    let config = format!(
        "[[plugin]]\nname = \"hello\"\nkind = \"javascript\"\npath = \"{r}/plugins/hello-tools\"\nrequire_approval = [\"greet\"]\n\n[[plugin]]\nname = \"js\"\nkind = \"javascript\"\npath = \"{r}/tests/plugins/js-test\"\n",
        r = root.display()
    );
    std::fs::write(dir.join("approvals.toml"), config).unwrap();
    std::fs::write(
        dir.join("program.js"),
        r#"const out = {};
           try { out.greet = await tools.hello.greet({ name: "Ann" }); } catch (e) { out.greet = e.message; }
           out.plugin = JSON.parse(await tools.js.approve());
           return out;"#,
    )
    .unwrap();
    dir
}

/// `codemode run` on `approval_config`'s program with `flags`, in a new session with no
/// controlling terminal, or with a pseudo-terminal as its terminal where `answers` are
/// typed after each prompt: (exit code, stdout, what the terminal showed).
fn run_with_approvals(flags: &[&str], answers: Option<&[&str]>) -> (i32, String, String) {
    use std::io::{Read, Write};
    use std::os::unix::process::CommandExt;
    let dir = approval_config();
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_codemode"));
    command.arg("run").arg("--config").arg(dir.join("approvals.toml")).args(flags).arg(dir.join("program.js"));
    command.stdin(std::process::Stdio::null()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::null());
    let (mut master, slave) = match answers {
        None => (None, -1),
        Some(_) => {
            let (mut m, mut s) = (0, 0);
            // SAFETY: openpty writes two descriptors into the given ints; the name,
            // termios and window-size pointers may be null.
            let rc = unsafe { libc::openpty(&mut m, &mut s, std::ptr::null_mut(), std::ptr::null(), std::ptr::null()) };
            assert_eq!(rc, 0, "openpty");
            // SAFETY: `m` is a fresh descriptor that nothing else owns.
            (Some(unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(m) }), s)
        }
    };
    // SAFETY: between fork and exec the child only calls async-signal-safe functions
    // (setsid, ioctl) on values it owns.
    unsafe {
        command.pre_exec(move || {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if slave >= 0 && libc::ioctl(slave, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = command.spawn().unwrap();
    if slave >= 0 {
        // SAFETY: the parent's copy of the slave is closed once; the child has its own.
        unsafe { libc::close(slave) };
    }
    let mut shown = String::new();
    if let (Some(m), Some(answers)) = (master.as_mut(), answers) {
        for answer in answers {
            // Read until the prompt's question mark and bracket arrive, then answer.
            let mut seen = String::new();
            let mut buf = [0u8; 4096];
            while !seen.contains("[y/N] ") {
                let n = m.read(&mut buf).unwrap();
                assert!(n > 0, "the terminal closed before a prompt: {seen}");
                seen.push_str(&String::from_utf8_lossy(&buf[..n]));
            }
            shown.push_str(&seen);
            m.write_all(format!("{answer}\n").as_bytes()).unwrap();
        }
    }
    let out = child.wait_with_output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), shown)
}

#[test]
fn run_asks_on_the_terminal_or_takes_approve_flags() {
    // No terminal: refused, saying which flag allows it; the plugin's own question too.
    let (code, out, _) = run_with_approvals(&[], None);
    assert_eq!(code, 0, "{out}");
    let value: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        value["greet"],
        "tools.hello.greet needs a person's approval (for each call), and there is no terminal to ask on (/dev/tty: No such device or address (os error 6)): pass --approve hello.greet (or --approve-all) to allow it"
    );
    assert_eq!(value["plugin"]["approved"], false, "{value}");

    // The flags allow without asking.
    let (_, out, _) = run_with_approvals(&["--approve", "hello.greet"], None);
    assert_eq!(serde_json::from_str::<serde_json::Value>(&out).unwrap()["greet"], "Hello, Ann!");
    let (_, out, _) = run_with_approvals(&["--approve-all"], None);
    let value: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!((value["greet"].as_str(), value["plugin"]["approved"].as_bool()), (Some("Hello, Ann!"), Some(true)));
    let (code, _, _) = run_with_approvals(&["--approve", "greet"], None);
    assert_eq!(code, 2, "a name without its plugin is a usage mistake");

    // A terminal: the person reads the call and its input, and answers.
    let (_, out, shown) = run_with_approvals(&[], Some(&["y", "n"]));
    let value: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(value["greet"], "Hello, Ann!", "{shown}");
    assert_eq!(value["plugin"]["approved"], false, "{shown}");
    assert!(shown.contains("codemode: allow tools.hello.greet to run with this input?"), "{shown}");
    assert!(shown.contains("\"name\": \"Ann\""), "{shown}");
    assert!(shown.contains("codemode: tools.js.approve asks: Delete a.txt?"), "the plugin's own question: {shown}");
    let (_, out, _) = run_with_approvals(&[], Some(&["no", "yes"]));
    let value: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(value["greet"], "the person declined the call to tools.hello.greet");
    assert_eq!(value["plugin"]["approved"], true);
}
