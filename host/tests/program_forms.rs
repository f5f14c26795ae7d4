//! The forms agents write programs in, run in the real worker: TypeScript (types blanked
//! in the sandbox, positions kept), a Markdown fence, `export default`, and a last
//! expression returned when the program has no `return`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use codemode::OutcomeKind;
use common::*;
use serde_json::json;

/// `(name, message, line, column)` of an error outcome.
fn error_at(outcome: &codemode::Outcome) -> (String, String, Option<u32>, Option<u32>) {
    match &outcome.kind {
        OutcomeKind::Error { name, message, line, column, .. } => (name.clone(), message.clone(), *line, *column),
        other => panic!("expected an error, got {other:?}"),
    }
}

#[tokio::test]
async fn typescript_programs_run_with_their_types_removed() {
    let ex = executor().await;
    let program = r#"interface Sum { total: number }
type Pair = [number, number];
const pairs: Pair[] = [[1, 2], [3, 4]];
const sums: Sum[] = [];
for (const [a, b] of pairs) {
  const text = (await tools.math.add({ a, b })) as string;
  sums.push({ total: Number(text) } satisfies Sum);
}
function total<T extends Sum>(list: T[]): number { return list.reduce((n, s) => n + s.total, 0)!; }
return { sums, total: total(sums) };"#;
    assert_eq!(ok_value(&ex.run(program).await), json!({ "sums": [{ "total": 3 }, { "total": 7 }], "total": 10 }));
    // The agents' first attempt from the report: a typed declaration.
    assert_eq!(ok_value(&ex.run("const n: number = 1;\nreturn n + 1;").await), json!(2));
}

#[tokio::test]
async fn typescript_errors_point_at_the_authors_line_and_column() {
    let ex = executor().await;
    // Thrown at run time: the stack's positions are the program's own.
    let outcome = ex.run("const a: number = 1;\nconst b: string = 'x';\n    null!.f;\nreturn a;").await;
    let (name, _, line, column) = error_at(&outcome);
    assert_eq!((name.as_str(), line, column), ("TypeError", Some(3), Some(11)), "{:?}", outcome.kind);
    // What has code of its own is refused before it runs, with its position.
    let (name, message, line, column) =
        error_at(&ex.run("const a: number = 1;\n  enum Color { Red }\nreturn a;").await);
    assert_eq!((name.as_str(), line, column), ("SyntaxError", Some(2), Some(3)));
    assert!(message.starts_with("TypeScript enum is not supported"), "{message}");
    // Text that is neither JavaScript nor TypeScript keeps the engine's own error.
    let (name, _, line, _) = error_at(&ex.run("const a: number = 1;\nreturn a +;").await);
    assert_eq!((name.as_str(), line), ("SyntaxError", Some(2)));
}

#[tokio::test]
async fn a_fenced_program_runs_and_keeps_its_line_numbers() {
    let ex = executor().await;
    assert_eq!(ok_value(&ex.run("```js\nreturn await tools.math.add({ a: 2, b: 2 });\n```").await), json!("4"));
    assert_eq!(ok_value(&ex.run("```typescript\nconst n: number = 5;\nn * 2\n```\n").await), json!(10));
    let (_, _, line, _) = error_at(&ex.run("```\nconst a = 1;\nthrow new Error('on line 3');\n```").await);
    assert_eq!(line, Some(3), "the fence is line 1 of what the agent wrote");
}

#[tokio::test]
async fn export_default_of_a_function_is_called_with_tools() {
    let ex = executor().await;
    let outcome =
        ex.run("export default async (tools) => {\n  return await tools.math.add({ a: 20, b: 22 });\n};").await;
    assert_eq!(ok_value(&outcome), json!("42"));
    let outcome = ex
        .run("export default async function main(tools: any): Promise<number> {\n  const s: string = await tools.math.add({ a: 1, b: 1 });\n  return Number(s);\n}")
        .await;
    assert_eq!(ok_value(&outcome), json!(2));
    // A value is returned as it is.
    assert_eq!(ok_value(&ex.run("const found = { ok: true };\nexport default found;").await), json!({ "ok": true }));
    // Anything else a module does is not a program's.
    let (name, message, line, column) = error_at(&ex.run("import fs from 'fs';\nexport default fs;").await);
    assert_eq!((name.as_str(), line, column), ("SyntaxError", Some(1), Some(1)));
    assert!(message.contains("cannot `import` or `export`"), "{message}");
}

#[tokio::test]
async fn the_last_expression_is_the_value_when_there_is_no_return() {
    let ex = executor().await;
    assert_eq!(ok_value(&ex.run("const x = 1;\nx + 1;").await), json!(2));
    assert_eq!(ok_value(&ex.run("const r = await tools.math.add({ a: 1, b: 2 });\nNumber(r) * 10").await), json!(30));
    // A `return` anywhere in the program's own code wins, even one not taken.
    assert_eq!(ex.run("if (false) { return 1 }\n'never returned'").await.kind, OutcomeKind::Ok { value: None });
    // A return inside a nested function is not the program's.
    assert_eq!(ok_value(&ex.run("const f = () => { return 7 };\nf()").await), json!(7));
    // Errors after the inserted `return` keep the author's column.
    let (_, _, line, column) = error_at(&ex.run("const o = null;\no.missing").await);
    assert_eq!((line, column), (Some(2), Some(3)));
}
