//! The bundle step: each runtime's JavaScript files, written as modules with explicit
//! `import { a } from "./x.js";` and `export { a };` lines, become one script that
//! deno_core runs once (`execute_script`).
//!
//! Where it sits: before compilation. `engine.rs` (programs) and `plugin/runtime.rs`
//! (plugins) include the bundles this writes to `OUT_DIR`. Each file becomes its own
//! function, which receives only what its `import` lines name and returns only what its
//! `export` line names; all of them sit inside one function of deno_core's
//! `primordials`, so nothing is a global and no file sees another's names. The build
//! fails when a file imports from a file that is not earlier in its bundle, or a name
//! that file does not export, or has an `import`/`export` line of another shape.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The program runtime: what both runtimes share, then the program's own.
const PROGRAM_RUNTIME: &[&str] = &["src/js/common.js", "src/js/bootstrap.js"];

/// The plugin runtime: the shared part, the schema forms, the web pieces, the seed
/// formats' adapters, and the runtime itself.
const PLUGIN_RUNTIME: &[&str] = &[
    "src/js/common.js",
    "src/plugin/js/plugin_schema.js",
    "src/plugin/js/plugin_web.js",
    "src/plugin/js/plugin_formats.js",
    "src/plugin/js/plugin.js",
];

/// One file of a bundle, read.
struct Module {
    path: PathBuf,
    /// `(names, the file they come from)`, in the file's order.
    imports: Vec<(Vec<String>, PathBuf)>,
    exports: Vec<String>,
    body: String,
}

fn main() -> Result<(), String> {
    let out = PathBuf::from(std::env::var("OUT_DIR").map_err(|e| format!("OUT_DIR: {e}"))?);
    for (files, name) in [(PROGRAM_RUNTIME, "program_runtime.js"), (PLUGIN_RUNTIME, "plugin_runtime.js")] {
        for file in files {
            println!("cargo:rerun-if-changed={file}");
        }
        let text = bundle(files)?;
        std::fs::write(out.join(name), text).map_err(|e| format!("writing {name}: {e}"))?;
    }
    Ok(())
}

/// The names inside `{ ... }` of an import or export line.
fn names(list: &str, line: &str, path: &Path) -> Result<Vec<String>, String> {
    let names: Vec<String> = list.split(',').map(|n| n.trim().to_string()).filter(|n| !n.is_empty()).collect();
    let valid = |n: &String| n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if names.is_empty() || !names.iter().all(valid) {
        return Err(format!("{}: `{line}` must name plain identifiers", path.display()));
    }
    Ok(names)
}

/// Reads one file: its import and export lines, and the rest.
fn read(file: &str) -> Result<Module, String> {
    let path = PathBuf::from(file);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{file}: {e}"))?;
    let mut module = Module { path: path.clone(), imports: Vec::new(), exports: Vec::new(), body: String::new() };
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("import ") {
            let parsed = rest
                .strip_prefix('{')
                .and_then(|r| r.split_once("} from \""))
                .and_then(|(list, from)| Some((list, from.strip_suffix("\";")?)));
            let Some((list, from)) = parsed else {
                return Err(format!("{file}: an import must read `import {{ a, b }} from \"./x.js\";`, not `{line}`"));
            };
            let from = path.parent().unwrap_or(Path::new("")).join(from);
            let from = normalise(&from);
            module.imports.push((names(list, line, &path)?, from));
            module.body.push('\n'); // keeps the file's line numbers
        } else if let Some(rest) = line.strip_prefix("export ") {
            let Some(list) = rest.strip_prefix('{').and_then(|r| r.strip_suffix("};")) else {
                return Err(format!("{file}: an export must read `export {{ a, b }};`, not `{line}`"));
            };
            if !module.exports.is_empty() {
                return Err(format!("{file}: one export line per file"));
            }
            module.exports = names(list, line, &path)?;
            module.body.push('\n');
        } else {
            module.body.push_str(line);
            module.body.push('\n');
        }
    }
    Ok(module)
}

/// `a/b/../c` as `a/c`.
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The variable holding `path`'s exports inside the bundle.
fn binding(path: &Path) -> String {
    let text = path.display().to_string();
    format!("__module_{}", text.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect::<String>())
}

/// One script of `files`, in order.
fn bundle(files: &[&str]) -> Result<String, String> {
    let mut read_so_far: Vec<Module> = Vec::new();
    for file in files {
        let module = read(file)?;
        for (names, from) in &module.imports {
            let Some(source) = read_so_far.iter().find(|m| &m.path == from) else {
                return Err(format!(
                    "{}: imports from {}, which is not earlier in its bundle",
                    module.path.display(),
                    from.display()
                ));
            };
            if let Some(missing) = names.iter().find(|n| !source.exports.contains(n)) {
                return Err(format!(
                    "{}: imports {missing} from {}, which does not export it",
                    module.path.display(),
                    from.display()
                ));
            }
        }
        read_so_far.push(module);
    }
    let mut text = String::from("(function (primordials) {\n\"use strict\";\n");
    for module in &read_so_far {
        let parameters: Vec<String> =
            module.imports.iter().map(|(names, _)| format!("{{ {} }}", names.join(", "))).collect();
        let arguments: Vec<String> = module.imports.iter().map(|(_, from)| binding(from)).collect();
        let exports: String = module.exports.iter().map(|name| format!(", {name}")).collect();
        let _ = write!(
            text,
            "// {}\nconst {} = (function ({}) {{\n{}return {{ __proto__: null{exports} }};\n}})({});\n",
            module.path.display(),
            binding(&module.path),
            parameters.join(", "),
            module.body,
            arguments.join(", "),
        );
    }
    text.push_str("})(globalThis.__bootstrap.primordials);\n");
    Ok(text)
}
