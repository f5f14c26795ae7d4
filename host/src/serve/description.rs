//! The texts the model reads: the `execute` tool's description and the server's
//! instructions.
//!
//! The description is the whole contract of code mode for the model: what a program may
//! do, the two forms it may take, the limits in force with their values, how results and
//! failures come back, the output cap, and then every tool the program may call, as
//! TypeScript declarations ([`crate::typescript`]). It is rebuilt from the current
//! catalog whenever the tool list is read, so it always matches what programs can call.

use crate::limits::{human_bytes, human_duration, Limits};
use crate::tool::{Approval, Catalog};
use crate::typescript::access_path;

/// The `execute` tool's description for `catalog` under `limits`, with results cut at
/// `output_bytes`.
pub fn execute_description(catalog: &Catalog, limits: &Limits, output_bytes: usize) -> String {
    let asking = |level: Approval| -> Vec<String> {
        catalog
            .plugins()
            .flat_map(|(plugin, tools)| {
                tools
                    .filter(|t| t.definition.requires_approval == level)
                    .map(|t| format!("tools{}{}", access_path(plugin), access_path(&t.definition.name)))
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    let mut approval_note = String::new();
    for (level, when) in
        [(Approval::Always, "each call"), (Approval::OncePerSession, "their first call in this session")]
    {
        let tools = asking(level);
        if !tools.is_empty() {
            approval_note.push_str(&format!(
                "\nThese tools ask a person to approve {when} first; a declined call rejects with an Error saying so: {}.\n",
                tools.join(", ")
            ));
        }
    }
    let tool_count: usize = catalog.plugins().map(|(_, tools)| tools.count()).sum();
    format!(
        r#"Runs a JavaScript program that calls tools, and returns what the program returns.

Write the program as the body of an async function (use `await` and `return`), or as one expression such as an async arrow function `async (tools) => ...`, which is called with `tools`; TypeScript, a Markdown code fence around the program, `export default` of such a function, and a last expression without `return` (whose value is returned) work too. Call a tool as `await tools.<plugin>.<tool>(input)`; names with characters other than letters, digits, `_` and `$` are also reachable with `_` in their place (`tools.my_db.search_rows` for plugin my-db, tool search-rows). Calls started together run together: use `Promise.all` for independent calls, and loop, filter and combine results in the program so that only what you need comes back.

Example:
const [oslo, rome] = await Promise.all([tools.weather.forecast({{ city: "Oslo" }}), tools.weather.forecast({{ city: "Rome" }})]);
return {{ warmer: oslo.high_c > rome.high_c ? "Oslo" : "Rome" }};

The program runs in a sandboxed JavaScript runtime with the language and nothing else: no files, network, timers, modules, `fetch` or `require`; tools are its only way out. `console.log` (and warn, error) output comes back after the result.

Limits: {memory} of memory; {cpu} of JavaScript between two tool answers (waiting for tools does not count); {wall} in all; {console} of console output; at most {in_flight} tool calls in flight at once. A program that waits for a promise nothing will settle fails at once.

Results: the returned value as JSON text (a string as it is), then the console output. A result longer than {output} is cut to fit, keeping the JSON valid, with a marker that says what was cut: return less (filter, slice, pick fields) rather than more. A failed program (an uncaught error with its stack, a limit with its value, a stuck promise, a crash) is an error result whose text says why.

A tool call resolves with the tool's structured result when its declaration below has a return type, otherwise with its text (JSON.parse it if it is JSON), or with its content list when the result holds anything but text (images, audio, resources). A failed call rejects with an Error whose message is the tool's message: catch it to try something else.
{approval_note}
The {tool_count} tools, as TypeScript declarations (`tools` is `Tools`):

```ts
{declarations}```"#,
        memory = human_bytes(limits.memory_bytes),
        cpu = human_duration(limits.cpu_step),
        wall = human_duration(limits.wall_clock),
        console = human_bytes(limits.console_bytes),
        in_flight = limits.tool_calls_in_flight,
        output = human_bytes(output_bytes as u64),
        declarations = crate::typescript::declarations(catalog),
    )
}

/// The server's instructions: how to use codemode, then each enabled plugin's rules
/// under a heading with its name (`rules` comes from the configuration).
pub fn instructions(rules: &str, code_mode: bool) -> String {
    let intro = if code_mode {
        "codemode gives you one tool, `execute`, which runs a JavaScript program that calls the plugin tools declared in its description. Prefer one program that does the whole task (calls, filtering, combining) over many small ones."
    } else {
        "codemode gives you the plugin tools, each as a tool named `<plugin>__<tool>`."
    };
    if rules.trim().is_empty() {
        intro.to_string()
    } else {
        format!("{intro}\n\n# Plugin rules\n\n{}", rules.trim())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::{Tool, ToolDefinition, ToolResult};
    use serde_json::json;

    fn catalog() -> Catalog {
        let mut approve = ToolDefinition::new(
            "delete",
            "Deletes a note.",
            json!({ "type": "object", "properties": { "id": { "type": "integer" } }, "required": ["id"] }),
        );
        approve.requires_approval = crate::tool::Approval::Always;
        Catalog::new()
            .with("weather", Tool::from_fn(ToolDefinition::new("forecast", "Forecast for a city.", json!({ "type": "object", "properties": { "city": { "type": "string" } }, "required": ["city"] })), |_, _| async { ToolResult::text("x") }))
            .unwrap()
            .with("notes", Tool::from_fn(approve, |_, _| async { ToolResult::text("x") }))
            .unwrap()
    }

    #[test]
    fn the_description_states_the_limits_the_cap_and_every_tool() {
        let text = execute_description(&catalog(), &Limits::default(), 64 * 1024);
        assert!(text.contains("Limits: 256 MiB of memory; 10 s of JavaScript between two tool answers (waiting for tools does not count); 15 min in all; 64 KiB of console output"), "{text}");
        assert!(text.contains("A result longer than 64 KiB is cut to fit"), "{text}");
        assert!(text.contains("These tools ask a person to approve each call first; a declined call rejects with an Error saying so: tools.notes.delete."), "{text}");
        assert!(text.contains("The 2 tools, as TypeScript declarations"), "{text}");
        assert!(text.contains("forecast(input: {"), "{text}");
        assert!(text.trim_end().ends_with("```"), "{text}");
    }

    #[test]
    fn instructions_carry_the_rules_under_their_headings() {
        assert_eq!(
            instructions("## notes\n\nCite ids.\n", true).split("\n\n# Plugin rules\n\n").nth(1),
            Some("## notes\n\nCite ids.")
        );
        assert!(!instructions("", false).contains("Plugin rules"));
    }
}
