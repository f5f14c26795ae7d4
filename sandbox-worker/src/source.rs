//! A program's text, as an agent wrote it, turned into the one function of `tools` the
//! engine compiles. Runs inside the sandboxed worker, on the program's own CPU step,
//! between the lock-down and the compile ([`crate::engine::Engine::compile`]).
//!
//! The forms understood, in the order they are tried:
//! 1. a Markdown code fence around the program is blanked (its lines stay, empty);
//! 2. one JavaScript expression: `tools.a.b(1)`, `async (tools) => ...` (a function
//!    value is called with `tools`);
//! 3. the body of an async function: JavaScript, and when that does not parse,
//!    TypeScript with its types blanked out (swc's strip-only mode, so every line and
//!    column stays where the author wrote it; plain JavaScript never reaches it);
//! 4. a module whose only export is `export default` (of a function, called with
//!    `tools`, or of a value); the two words become `return`, padded to the same width.
//!
//! In the body form, a program with no `return` of its own returns the value of its
//! last expression statement (the one deliberate extension of "the body of an async
//! function"): `return ` is inserted before it and [`Positions`] takes the insertion
//! back out of every position an error reports.
//!
//! Text that none of the forms parses is compiled as a JavaScript body all the same, so
//! the engine reports its own SyntaxError; TypeScript that parses but cannot be stripped
//! without rewriting code (an `enum`, a `namespace` with values, parameter properties)
//! is refused here with the construct and its position.

use std::borrow::Cow;
use std::sync::{Arc, Mutex};

use swc_common::errors::{DiagnosticBuilder, Emitter, Handler};
use swc_common::sync::Lrc;
use swc_common::{FileName, SourceMap, Spanned};
use swc_ecma_ast::{
    ArrowExpr, Class, EsVersion, Expr, Function, GetterProp, ModuleDecl, ModuleItem, ReturnStmt, SetterProp, Stmt,
};
use swc_ecma_parser::{parse_file_as_module, parse_file_as_script, EsSyntax, Syntax, TsSyntax};
use swc_ecma_visit::{Visit, VisitWith};

/// Text before the program on line 1 in the body form.
const BODY_PREFIX: &str = "(async function (tools) { ";
/// Text after the program in the body form (on a line of its own, so a trailing line
/// comment cannot swallow it).
const BODY_SUFFIX: &str = "\n})";
/// Text before the program on line 1 in the expression form.
const EXPRESSION_PREFIX: &str = "(async function (tools) { return (";
/// Text after the program in the expression form.
const EXPRESSION_SUFFIX: &str = "\n); })";
/// What a last expression statement gets in front of it.
const COMPLETION_RETURN: &str = "return ";

/// The language a program was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    /// Plain JavaScript (compiled as written).
    JavaScript,
    /// TypeScript, compiled with its types blanked out.
    TypeScript,
}

/// A program ready for the engine.
#[derive(Debug)]
pub struct Prepared {
    /// The script to compile: one parenthesised async function of `tools`.
    pub source: String,
    /// How positions in `source` map back to the program's own text.
    pub positions: Positions,
    /// True when a function value the program evaluates to is called with `tools`
    /// (the expression form and `export default`).
    pub calls_function_value: bool,
    /// The language the program was read as.
    pub language: Language,
}

/// A program this module refuses, with the position the author should look at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// What is wrong and what to write instead.
    pub message: String,
    /// 1-based line in the program's text.
    pub line: u32,
    /// 1-based column in the program's text.
    pub column: u32,
}

/// Text inserted into the compiled source, as positions in that source: on `line`,
/// `by` characters were inserted before column `at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Insertion {
    line: u32,
    at: u32,
    by: u32,
}

/// Maps a compiled source's line/column positions back to the program's own text. The
/// insertions are kept in source order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Positions {
    insertions: Vec<Insertion>,
}

impl Positions {
    /// The program's own column for `column` on `line` of the compiled source. A
    /// position inside inserted text maps to where the insertion was made.
    pub fn column(&self, line: u32, column: u32) -> u32 {
        let mut column = column;
        // Right to left (the insertions are in source order), so each one sees columns
        // as they were before the ones after it on the same line were taken out.
        for insertion in self.insertions.iter().rev().filter(|i| i.line == line) {
            if column >= insertion.at + insertion.by {
                column -= insertion.by;
            } else if column >= insertion.at {
                column = insertion.at;
            }
        }
        column.max(1)
    }

    /// `stack` with every `program.js:LINE:COLUMN` rewritten to the program's own column.
    pub fn fix_stack(&self, stack: &str, script_name: &str) -> String {
        let needle = format!("{script_name}:");
        let mut out = String::with_capacity(stack.len());
        let mut rest = stack;
        while let Some(at) = rest.find(&needle) {
            let (before, after) = rest.split_at(at + needle.len());
            out.push_str(before);
            rest = after;
            let line_digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            let Ok(line) = rest[..line_digits].parse::<u32>() else { continue };
            if rest.as_bytes().get(line_digits) != Some(&b':') {
                continue;
            }
            let column_text = &rest[line_digits + 1..];
            let column_digits = column_text.bytes().take_while(u8::is_ascii_digit).count();
            let Ok(column) = column_text[..column_digits].parse::<u32>() else { continue };
            out.push_str(&format!("{line}:{}", self.column(line, column)));
            rest = &column_text[column_digits..];
        }
        out.push_str(rest);
        out
    }

    /// The insertions as `[line, at, by, ...]`, for the JavaScript describer.
    pub fn flat(&self) -> Vec<u32> {
        self.insertions.iter().flat_map(|i| [i.line, i.at, i.by]).collect()
    }

    fn prefix(prefix: &str) -> Self {
        Self { insertions: vec![Insertion { line: 1, at: 1, by: chars(prefix) }] }
    }
}

/// Turns a program's text into the function the engine compiles (see the module docs).
pub fn prepare(code: &str) -> Result<Prepared, Refusal> {
    let text = unfence(code);
    // Text nested deeper than swc's recursion can take goes to the engine as a body,
    // unread: the engine checks its own stack and reports what it finds.
    if plugin_format::nesting::too_deep(&text) {
        return Ok(Prepared {
            source: format!("{BODY_PREFIX}{text}{BODY_SUFFIX}"),
            positions: Positions::prefix(BODY_PREFIX),
            calls_function_value: false,
            language: Language::JavaScript,
        });
    }
    if !starts_with_statement(&text) {
        let source = format!("{EXPRESSION_PREFIX}{text}{EXPRESSION_SUFFIX}");
        if parse_script(&source, Syntax::Es(EsSyntax::default())).is_some() {
            return Ok(Prepared {
                source,
                positions: Positions::prefix(EXPRESSION_PREFIX),
                calls_function_value: true,
                language: Language::JavaScript,
            });
        }
    }
    if let Some(prepared) = prepare_body(&text, false)? {
        return Ok(prepared);
    }
    if let Some(rewritten) = export_default_as_return(&text)? {
        if let Some(prepared) = prepare_body(&rewritten, true)? {
            return Ok(prepared);
        }
    }
    // Nothing understood it. When the text reads as TypeScript further than as
    // JavaScript (it has types, and a mistake after them), TypeScript's complaint is
    // the one that points at the mistake; otherwise the engine reports its own.
    let wrapped = format!("{BODY_PREFIX}{text}{BODY_SUFFIX}");
    if let (Some(js), Stripped::Invalid(ts)) = (script_error(&wrapped), strip_types(&wrapped, false)) {
        if (ts.line, ts.column) > js {
            let column = Positions::prefix(BODY_PREFIX).column(ts.line, ts.column);
            return Err(Refusal { column, ..ts });
        }
    }
    Ok(Prepared {
        source: format!("{BODY_PREFIX}{text}{BODY_SUFFIX}"),
        positions: Positions::prefix(BODY_PREFIX),
        calls_function_value: false,
        language: Language::JavaScript,
    })
}

/// The body form, as JavaScript and then as TypeScript; `None` when neither parses.
fn prepare_body(text: &str, default_export: bool) -> Result<Option<Prepared>, Refusal> {
    let source = format!("{BODY_PREFIX}{text}{BODY_SUFFIX}");
    let (source, language) = if parse_script(&source, Syntax::Es(EsSyntax::default())).is_some() {
        (source, Language::JavaScript)
    } else {
        match strip_types(&source, false) {
            Stripped::Code(code) => (code, Language::TypeScript),
            Stripped::Invalid(_) => return Ok(None),
            Stripped::Unsupported(refusal) => {
                let column = Positions::prefix(BODY_PREFIX).column(refusal.line, refusal.column);
                return Err(Refusal { column, ..refusal });
            }
        }
    };
    let mut positions = Positions::prefix(BODY_PREFIX);
    let source = match parse_script(&source, Syntax::Es(EsSyntax::default())).and_then(|s| completion_offset(&s)) {
        Some(offset) => {
            let (line, at) = line_and_column(&source, offset);
            positions.insertions.push(Insertion { line, at, by: chars(COMPLETION_RETURN) });
            let mut with_return = String::with_capacity(source.len() + COMPLETION_RETURN.len());
            with_return.push_str(&source[..offset]);
            with_return.push_str(COMPLETION_RETURN);
            with_return.push_str(&source[offset..]);
            with_return
        }
        None => source,
    };
    Ok(Some(Prepared { source, positions, calls_function_value: default_export, language }))
}

/// Where the JavaScript parser first gives up on `source`, as (line, column).
fn script_error(source: &str) -> Option<(u32, u32)> {
    let map: Lrc<SourceMap> = Lrc::default();
    let file = map.new_source_file(Lrc::new(FileName::Anon), source.to_string());
    let mut recovered = Vec::new();
    let syntax = Syntax::Es(EsSyntax::default());
    let fatal = parse_file_as_script(&file, syntax, EsVersion::latest(), None, &mut recovered).err();
    // The earliest complaint, fatal or recovered from.
    let lo = fatal.iter().chain(&recovered).map(|e| e.span().lo).min()?;
    let offset = usize::try_from(lo.0.checked_sub(file.start_pos.0)?).ok()?;
    Some(line_and_column(source, offset.min(source.len())))
}

/// A parsed script with the source map its spans refer to.
struct Parsed {
    script: swc_ecma_ast::Script,
    /// Byte position of the source's first byte in the source map.
    start: u32,
}

fn parse_script(source: &str, syntax: Syntax) -> Option<Parsed> {
    let map: Lrc<SourceMap> = Lrc::default();
    let file = map.new_source_file(Lrc::new(FileName::Anon), source.to_string());
    let mut recovered = Vec::new();
    let script = parse_file_as_script(&file, syntax, EsVersion::latest(), None, &mut recovered).ok()?;
    recovered.is_empty().then_some(Parsed { script, start: file.start_pos.0 })
}

/// Where `return ` goes in a body-form script: before the wrapper's last expression
/// statement, when the body has no `return` of its own. `None` when the script is not
/// the wrapper alone (its text closed the wrapper).
fn completion_offset(parsed: &Parsed) -> Option<usize> {
    let [Stmt::Expr(wrapper)] = parsed.script.body.as_slice() else { return None };
    let Expr::Paren(paren) = wrapper.expr.as_ref() else { return None };
    let Expr::Fn(function) = paren.expr.as_ref() else { return None };
    let body = function.function.body.as_ref()?;
    let mut finder = ReturnFinder(false);
    body.stmts.iter().for_each(|s| s.visit_with(&mut finder));
    if finder.0 {
        return None;
    }
    match body.stmts.iter().rev().find(|s| !matches!(s, Stmt::Empty(_)))? {
        Stmt::Expr(last) => usize::try_from(last.span().lo.0.checked_sub(parsed.start)?).ok(),
        _ => None,
    }
}

/// Finds a `return` of the function being visited (not of the functions inside it).
struct ReturnFinder(bool);

impl Visit for ReturnFinder {
    fn visit_return_stmt(&mut self, _: &ReturnStmt) {
        self.0 = true;
    }
    fn visit_function(&mut self, _: &Function) {}
    fn visit_arrow_expr(&mut self, _: &ArrowExpr) {}
    fn visit_class(&mut self, _: &Class) {}
    fn visit_getter_prop(&mut self, _: &GetterProp) {}
    fn visit_setter_prop(&mut self, _: &SetterProp) {}
}

/// Whether `code` has `import` or `export` declarations (so that a `.js` file without a
/// `package.json` `"type"` is an ES module, as Node's syntax detection decides).
pub fn has_module_declarations(code: &str) -> bool {
    if plugin_format::nesting::too_deep(code) {
        // Too deep to parse safely: Node's rule by the words alone.
        return code.contains("export ") || code.contains("import ");
    }
    let map: Lrc<SourceMap> = Lrc::default();
    let file = map.new_source_file(Lrc::new(FileName::Anon), code.to_string());
    let mut recovered = Vec::new();
    parse_file_as_module(&file, Syntax::Es(EsSyntax::default()), EsVersion::latest(), None, &mut recovered)
        .is_ok_and(|module| module.body.iter().any(|item| matches!(item, ModuleItem::ModuleDecl(_))))
}

/// A TypeScript module (a plugin's `.ts` file) with its types blanked out, every
/// position kept; a refusal with the position of what does not parse or cannot be
/// stripped.
pub fn strip_module(code: &str) -> Result<String, Refusal> {
    if plugin_format::nesting::too_deep(code) {
        return Err(Refusal {
            message: format!(
                "brackets nest more than {} levels deep, more than codemode reads as TypeScript",
                plugin_format::nesting::MAX_NESTING
            ),
            line: 1,
            column: 1,
        });
    }
    match strip_types(code, true) {
        Stripped::Code(code) => Ok(code),
        Stripped::Invalid(refusal) | Stripped::Unsupported(refusal) => Err(refusal),
    }
}

/// What stripping TypeScript's types gave.
enum Stripped {
    /// JavaScript, with every position where it was.
    Code(String),
    /// The text is not TypeScript either: the parser's first complaint.
    Invalid(Refusal),
    /// TypeScript that cannot be stripped without rewriting code.
    Unsupported(Refusal),
}

/// Blanks the types out of TypeScript (swc's strip-only mode), as a module or a script.
fn strip_types(source: &str, module: bool) -> Stripped {
    let map: Lrc<SourceMap> = Lrc::default();
    let diagnostics = Arc::new(Mutex::new(Vec::new()));
    let handler = Handler::with_emitter(true, false, Box::new(Diagnostics(Arc::clone(&diagnostics))));
    let options = swc_ts_fast_strip::Options { module: Some(module), ..Default::default() };
    let error = match swc_ts_fast_strip::operate(&map, &handler, source.to_string(), options) {
        Ok(output) => return Stripped::Code(output.code),
        Err(error) => error,
    };
    let found = diagnostics.lock().map(|d| d.first().cloned()).unwrap_or(None);
    let (message, lo) = found.unwrap_or_else(|| (error.message.clone(), None));
    // Source-map positions start at 1 for the map's first (and only) file.
    let (line, column) = lo
        .and_then(|lo| lo.checked_sub(1))
        .and_then(|offset| usize::try_from(offset).ok())
        .map_or((1, 1), |offset| line_and_column(source, offset.min(source.len())));
    if matches!(error.code, swc_ts_fast_strip::ErrorCode::UnsupportedSyntax) {
        Stripped::Unsupported(Refusal { message: unsupported_message(&message), line, column })
    } else {
        Stripped::Invalid(Refusal { message, line, column })
    }
}

/// swc's message for TypeScript it cannot strip, with what to write instead.
fn unsupported_message(swc: &str) -> String {
    let what = swc.split(" is not supported").next().unwrap_or(swc).trim();
    let instead = if what.contains("enum") {
        "an object of constants (`const Color = { Red: 0 }`)"
    } else if what.contains("namespace") || what.contains("module") {
        "plain objects and functions"
    } else if what.contains("parameter propert") {
        "fields assigned in the constructor"
    } else {
        "plain JavaScript for that part"
    };
    format!(
        "{what} is not supported: codemode runs TypeScript by removing its types, and this construct has code of its own; write {instead}"
    )
}

/// One swc diagnostic: its message and the byte position of its primary span.
type Diagnostic = (String, Option<u32>);

/// Collects swc's diagnostics.
struct Diagnostics(Arc<Mutex<Vec<Diagnostic>>>);

impl Emitter for Diagnostics {
    fn emit(&mut self, db: &mut DiagnosticBuilder<'_>) {
        let lo = db.span.primary_span().map(|s| s.lo.0);
        if let Ok(mut all) = self.0.lock() {
            all.push((db.message(), lo));
        }
    }
}

/// For a program that only parses as a module: its text with `export default` turned
/// into `return` (padded to the same width). `None` when it is no module either, or has
/// no `export default`; a refusal when it imports or exports anything else.
fn export_default_as_return(text: &str) -> Result<Option<String>, Refusal> {
    let map: Lrc<SourceMap> = Lrc::default();
    let file = map.new_source_file(Lrc::new(FileName::Anon), text.to_string());
    let mut recovered = Vec::new();
    let syntax = Syntax::Typescript(TsSyntax::default());
    let Ok(module) = parse_file_as_module(&file, syntax, EsVersion::latest(), None, &mut recovered) else {
        return Ok(None);
    };
    let start = file.start_pos.0;
    let offset = |pos: swc_common::BytePos| pos.0.checked_sub(start).and_then(|o| usize::try_from(o).ok());
    let mut keyword: Option<(usize, usize)> = None;
    for item in &module.body {
        let ModuleItem::ModuleDecl(decl) = item else { continue };
        let value_start = match decl {
            ModuleDecl::ExportDefaultExpr(e) => e.expr.span().lo,
            ModuleDecl::ExportDefaultDecl(d) => d.decl.span().lo,
            other => {
                let (line, column) = line_and_column(text, offset(other.span().lo).unwrap_or(0).min(text.len()));
                return Err(Refusal {
                    message: "a program is the body of an async function: it cannot `import` or `export` (only `export default` of a function of `tools`, or of a value); call plugins as `tools.<plugin>.<tool>(input)`".into(),
                    line,
                    column,
                });
            }
        };
        match (offset(decl.span().lo), offset(value_start)) {
            (Some(from), Some(to)) if from < to && to <= text.len() => keyword = Some((from, to)),
            _ => return Ok(None),
        }
    }
    let Some((from, to)) = keyword else { return Ok(None) };
    // `export default` (and any comment between the words) becomes `return` and
    // spaces; newlines stay, so every later position stays where it was.
    let replaced: String = text[from..to]
        .char_indices()
        .map(|(i, c)| match (i, c) {
            (_, '\n') => '\n',
            (i, _) if i < "return".len() => "return".as_bytes()[i] as char,
            _ => ' ',
        })
        .collect();
    Ok(Some(format!("{}{replaced}{}", &text[..from], &text[to..])))
}

/// A program fenced as Markdown (```js ... ```) with the two fence lines blanked, so
/// every line keeps its number.
pub fn unfence(code: &str) -> Cow<'_, str> {
    let trimmed = code.trim();
    let Some(after_open) = trimmed.strip_prefix("```") else { return Cow::Borrowed(code) };
    let Some(inside) = after_open.strip_suffix("```") else { return Cow::Borrowed(code) };
    let Some((tag, _)) = inside.split_once('\n') else { return Cow::Borrowed(code) };
    if !tag.trim().chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        return Cow::Borrowed(code);
    }
    let open = code.find("```").unwrap_or(0);
    let close = code.rfind("```").unwrap_or(code.len());
    let tag_end = code[open..].find('\n').map_or(code.len(), |n| open + n);
    let mut text = String::with_capacity(code.len());
    text.push_str(&code[..open]);
    text.push_str(&code[tag_end..close]);
    text.push_str(&code[close + 3..]);
    Cow::Owned(text)
}

/// True when the program's first token is a keyword that can only start a statement,
/// so the expression form is not worth parsing.
pub fn starts_with_statement(code: &str) -> bool {
    const STATEMENT_KEYWORDS: [&str; 14] = [
        "const",
        "let",
        "var",
        "return",
        "if",
        "for",
        "while",
        "do",
        "throw",
        "try",
        "switch",
        "import",
        "export",
        "interface",
    ];
    let mut rest = code;
    loop {
        rest = rest.trim_start();
        if let Some(after) = rest.strip_prefix("//") {
            rest = after.split_once('\n').map_or("", |(_, tail)| tail);
        } else if let Some(after) = rest.strip_prefix("/*") {
            rest = after.split_once("*/").map_or("", |(_, tail)| tail);
        } else {
            break;
        }
    }
    let word: &str =
        &rest[..rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$')).unwrap_or(rest.len())];
    STATEMENT_KEYWORDS.contains(&word)
}

/// 1-based line and column (in characters) of byte `offset` of `text`.
fn line_and_column(text: &str, offset: usize) -> (u32, u32) {
    let before = &text[..floor_char_boundary(text, offset)];
    let line = before.bytes().filter(|&b| b == b'\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |n| n + 1);
    let column = before[line_start..].chars().count() + 1;
    (u32::try_from(line).unwrap_or(u32::MAX), u32::try_from(column).unwrap_or(u32::MAX))
}

fn floor_char_boundary(text: &str, offset: usize) -> usize {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

fn chars(text: &str) -> u32 {
    u32::try_from(text.chars().count()).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(source: &str) -> &str {
        source.strip_prefix(BODY_PREFIX).and_then(|s| s.strip_suffix(BODY_SUFFIX)).expect("the body wrapper")
    }

    #[test]
    fn plain_javascript_is_compiled_as_written() {
        let p = prepare("const a = await tools.x.y({});\nreturn a.b;").unwrap();
        assert_eq!(body(&p.source), "const a = await tools.x.y({});\nreturn a.b;");
        assert_eq!(p.language, Language::JavaScript);
        assert!(!p.calls_function_value);
        let p = prepare("async (tools) => 1").unwrap();
        assert_eq!(p.source, format!("{EXPRESSION_PREFIX}async (tools) => 1{EXPRESSION_SUFFIX}"));
        assert!(p.calls_function_value);
    }

    #[test]
    fn typescript_is_stripped_in_place() {
        let code = "interface Row { id: number }\nconst n: number = 1;\nconst rows = (await tools.db.q({})) as Row[];\nreturn rows.filter((r: Row): boolean => r.id > n)!;";
        let p = prepare(code).unwrap();
        assert_eq!(p.language, Language::TypeScript);
        let stripped = body(&p.source);
        assert_eq!(stripped.len(), code.len(), "{stripped}");
        for (a, b) in stripped.lines().zip(code.lines()) {
            assert_eq!(a.len(), b.len());
        }
        assert!(stripped.contains("const n         = 1;"), "{stripped}");
        assert!(!stripped.contains("number") && !stripped.contains("Row[]"), "{stripped}");
    }

    #[test]
    fn a_last_expression_is_returned_when_there_is_no_return() {
        let p = prepare("const a = 1;\na + 1;\n").unwrap();
        assert_eq!(body(&p.source), "const a = 1;\nreturn a + 1;\n");
        // The error column of `+` on line 2 is the author's.
        assert_eq!(p.positions.column(2, 3 + COMPLETION_RETURN.len() as u32), 3);
        // A return inside a nested function is not the program's own.
        let p = prepare("const f = () => { return 2 };\nf()").unwrap();
        assert_eq!(body(&p.source), "const f = () => { return 2 };\nreturn f()");
        // With a return of its own, nothing changes.
        let p = prepare("if (x) { return 1 }\nx + 1").unwrap();
        assert_eq!(body(&p.source), "if (x) { return 1 }\nx + 1");
        // The last statement is not an expression: nothing changes.
        let p = prepare("let a = 1;\nfor (;;) { break }").unwrap();
        assert_eq!(body(&p.source), "let a = 1;\nfor (;;) { break }");
        // On line 1, both the wrapper and the insertion come out.
        let p = prepare("let a = 1; a").unwrap();
        assert_eq!(body(&p.source), "let a = 1; return a");
        let compiled_column_of_a = (BODY_PREFIX.len() + "let a = 1; return ".len() + 1) as u32;
        assert_eq!(p.positions.column(1, compiled_column_of_a), 12);
    }

    #[test]
    fn export_default_becomes_return() {
        let p = prepare("export default async (tools) => {\n  const n: number = 2;\n  return n;\n};").unwrap();
        assert!(p.calls_function_value);
        assert_eq!(p.language, Language::TypeScript);
        assert!(body(&p.source).starts_with("return         async (tools) => {\n"), "{}", p.source);
        let p = prepare("const v = 3;\nexport default { v };").unwrap();
        assert_eq!(body(&p.source), "const v = 3;\nreturn         { v };");
        let e = prepare("import x from 'y';\nexport default x;").unwrap_err();
        assert_eq!((e.line, e.column), (1, 1));
        assert!(e.message.contains("cannot `import` or `export`"), "{}", e.message);
        let e = prepare("const a = 1;\nexport const b = 2;").unwrap_err();
        assert_eq!((e.line, e.column), (2, 1));
    }

    #[test]
    fn typescript_that_has_code_of_its_own_is_refused_with_its_position() {
        let e = prepare("const a = 1;\nenum Color { Red }\nreturn Color.Red;").unwrap_err();
        assert_eq!((e.line, e.column), (2, 1), "{e:?}");
        assert!(e.message.starts_with("TypeScript enum is not supported"), "{}", e.message);
        assert!(e.message.contains("const Color = { Red: 0 }"), "{}", e.message);
    }

    #[test]
    fn typescript_modules_are_stripped_or_refused_with_a_position() {
        assert_eq!(
            strip_module("import type { A } from './a.ts';\nexport const f = (a: A): number => 1;").unwrap(),
            ";                               \nexport const f = (a   )         => 1;"
        );
        let e = strip_module("export const a = 1;\nexport const b: = 2;").unwrap_err();
        assert_eq!((e.line, e.column), (2, 17), "{e:?}");
        assert!(e.message.contains("xpected"), "{}", e.message);
    }

    #[test]
    fn text_nothing_parses_goes_to_the_engine_as_a_body() {
        let p = prepare("return 1 +").unwrap();
        assert_eq!(body(&p.source), "return 1 +");
        assert_eq!(p.language, Language::JavaScript);
    }

    #[test]
    fn fences_are_blanked_and_lines_keep_their_numbers() {
        assert_eq!(unfence("```ts\nconst a = 1;\nreturn a;\n```"), "\nconst a = 1;\nreturn a;\n");
        assert_eq!(unfence("  ```\nreturn 1\n```\n"), "  \nreturn 1\n\n");
        assert_eq!(unfence("return '```'"), "return '```'");
        assert_eq!(unfence("```js return 1```"), "```js return 1```");
        let p = prepare("```typescript\nconst a: number = 1;\na\n```").unwrap();
        assert_eq!(body(&p.source), "\nconst a         = 1;\nreturn a\n");
    }

    #[test]
    fn stack_positions_lose_every_insertion() {
        let positions =
            Positions { insertions: vec![Insertion { line: 1, at: 1, by: 25 }, Insertion { line: 3, at: 5, by: 7 }] };
        let stack = "Error: x\n    at f (program.js:1:40)\n    at program.js:3:20\n    at program.js:3:4\n    at program.js:2:9";
        assert_eq!(
            positions.fix_stack(stack, "program.js"),
            "Error: x\n    at f (program.js:1:15)\n    at program.js:3:13\n    at program.js:3:4\n    at program.js:2:9"
        );
        assert_eq!(positions.column(3, 8), 5, "inside the insertion: where it was made");
        assert_eq!(positions.flat(), vec![1, 1, 25, 3, 5, 7]);
    }

    #[test]
    fn statement_keywords_skip_the_expression_attempt() {
        for code in ["return 1", "const a = 1", "  // note\n/* block */ let x", "if (a) {}", "interface A {}"] {
            assert!(starts_with_statement(code), "{code}");
        }
        for code in ["async (tools) => 1", "1 + 1", "await tools.a.b()", "constant", "returned()", "", "// c"] {
            assert!(!starts_with_statement(code), "{code}");
        }
    }
}
