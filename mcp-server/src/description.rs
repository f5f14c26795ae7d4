//! The texts the model reads: the `execute` tool's description and the server's
//! instructions.
//!
//! The description is the whole contract of code mode for the model: what a program may
//! do, the two forms it may take, the limits in force with their values, how results and
//! failures come back, the output cap, and then the tools the program may call. It is
//! rebuilt from the current catalog whenever the tool list is read, so it always
//! matches what programs can call.
//!
//! How the tools are shown depends on the catalog's size ([`CatalogBudget`]): while
//! their TypeScript declarations ([`codemode_core::typescript`]) fit the budget, every tool is
//! declared in full (seed 000's rule); past it, each plugin gets one line (its summary
//! and tool names) and the program finds declarations with `tools.$search`, so a
//! thousand tools do not cost every session a quarter of a million characters.

use serde_json::Value;

use super::settings::{CatalogBudget, ServerMode, ToolNames};
use codemode_core::limits::{human_bytes, human_duration, Limits};
use codemode_core::tool::{Approval, Catalog, Tool};
use codemode_core::typescript::{access_path, property_key};

/// The plugin listing of a large catalog grows to at most this many times the budget
/// (16,000 characters at the default budget), by naming fewer of each plugin's tools.
const LISTING_BUDGET_FACTOR: usize = 2;
/// A plugin's line names at most this many of its tools (then how many more).
const LISTED_NAMES: usize = 12;
/// Fewer names than this say too little of a plugin to be worth their room.
const FEWEST_NAMES: usize = 3;

/// The `execute` tool's description for `catalog` under `limits`, with results cut at
/// `output_bytes` and the tools declared in full while they fit `budget`; `ranker`
/// names how `tools.$search` ranks (`codemode_core::dispatch::builtin::search_ranker`).
pub fn execute_description(
    catalog: &Catalog,
    limits: &Limits,
    output_bytes: usize,
    budget: CatalogBudget,
    ranker: &str,
) -> String {
    let declarations = codemode_core::typescript::declarations(catalog);
    let tool_count: usize =
        catalog.plugins().map(|(_, tools)| tools.filter(|t| t.definition.is_public()).count()).sum();
    let tools_section = match budget {
        CatalogBudget::Chars(limit) if declarations.len() > limit => large_catalog(catalog, tool_count, limit, ranker),
        _ => format!(
            "The {tool_count} tools, as TypeScript declarations (`tools` is `Tools`):\n\n```ts\n{declarations}```"
        ),
    };
    format!(
        r#"Runs a JavaScript program that calls tools, and returns what the program returns.

Write the program as the body of an async function (use `await` and `return`), or as one expression such as an async arrow function `async (tools) => ...`, which is called with `tools`; TypeScript, a Markdown code fence around the program, `export default` of such a function, and a last expression without `return` (whose value is returned) work too. Call a tool as `await tools.<plugin>.<tool>(input)`; names with characters other than letters, digits, `_` and `$` are also reachable with `_` in their place (`tools.my_db.search_rows` for plugin my-db, tool search-rows). Calls started together run together: use `Promise.all` for independent calls, and loop, filter and combine results in the program so that only what you need comes back.

Example:
{example}
The program runs in a sandboxed JavaScript runtime with the language and nothing else: no files, network, timers, modules, `fetch` or `require`; tools are its only way out. `console.log` (and warn, error) output comes back after the result.

Limits: {memory} of memory; {cpu} of JavaScript between two tool answers (waiting for tools does not count); {wall} in all; {console} of console output; at most {in_flight} tool calls in flight at once. A program that waits for a promise nothing will settle fails at once.

Results: the returned value as JSON text (a string as it is), then the console output. A result longer than {output} is cut to fit, keeping the JSON valid, with a marker that says what was cut: return less (filter, slice, pick fields) rather than more. A failed program (an uncaught error with its stack, a limit with its value, a stuck promise, a crash) is an error result whose text says why. A failed tool call rejects with an Error whose message is the tool's: catch it to try something else.
{approval_note}
{tools_section}{skills_section}"#,
        example = example_program(catalog),
        memory = human_bytes(limits.memory_bytes),
        cpu = human_duration(limits.cpu_step),
        wall = human_duration(limits.wall_clock),
        console = human_bytes(limits.console_bytes),
        in_flight = limits.tool_calls_in_flight,
        output = human_bytes(output_bytes as u64),
        approval_note = approval_note(catalog),
        skills_section = skills_section(catalog),
    )
}

/// The most characters the skills and agents section takes (its lines past it are
/// counted, not shown: `tools.$skills.discover` finds them).
const SKILLS_BUDGET: usize = 4_000;
/// The longest description a skill's or agent's line shows.
const SKILL_LINE_CHARS: usize = 100;

/// Seed 001's first view: one line per root skill and agent (name, plugin, description)
/// and how to load them; empty when the catalog has none. A skill's or agent's own
/// tools are not declared here.
fn skills_section(catalog: &Catalog) -> String {
    let shorten = |text: &str| -> String {
        let line = text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or_default();
        match line.char_indices().nth(SKILL_LINE_CHARS) {
            Some((cut, _)) => format!("{}…", &line[..cut]),
            None => line.to_string(),
        }
    };
    let of_plugin = |plugin: Option<&str>| plugin.map(|p| format!(" (tools{})", access_path(p))).unwrap_or_default();
    let skills: Vec<String> = catalog
        .skills()
        .filter(|(_, skill)| skill.agent.is_none())
        .map(|(plugin, skill)| format!("- {}{}: {}\n", skill.name, of_plugin(plugin), shorten(&skill.description)))
        .collect();
    let agents: Vec<String> = catalog
        .guidances()
        .flat_map(|(plugin, g)| g.agents.iter().map(move |a| (plugin, a)))
        .map(|(plugin, agent)| {
            format!("- {}{}: {}\n", agent.name, of_plugin(Some(plugin)), shorten(&agent.description))
        })
        .collect();
    if skills.is_empty() && agents.is_empty() {
        return String::new();
    }
    let mut text = String::from(
        "\n\nSkills are instructions, often with tools of their own, loaded when a task needs them: `await tools.$skills.load(\"name\")` resolves with `{ skill, plugin, instructions, declarations, tools, unloaded }` (follow `instructions`; `declarations` declares the skill's tools), and from then on its tools are callable, in this program and the session's later ones. `await tools.$skills.discover(\"what you need to do\")` ranks tools and skills together, best first (5 unless `{ topK }` says otherwise; `{ plugin }` narrows it); `await tools.$skills.loadTool(\"plugin.tool\")` loads one tool and resolves with `{ call, declaration, unloaded }`. A session keeps a limited number of tools loaded: loading more unloads the least recently used (`unloaded` names them).\n",
    );
    let mut room = SKILLS_BUDGET;
    let mut push_lines = |text: &mut String, heading: &str, lines: &[String]| {
        if lines.is_empty() {
            return;
        }
        text.push_str(heading);
        let mut shown = 0;
        for line in lines {
            if line.len() > room {
                break;
            }
            room -= line.len();
            text.push_str(line);
            shown += 1;
        }
        if shown < lines.len() {
            text.push_str(&format!("- … {} more: find them with `tools.$skills.discover`\n", lines.len() - shown));
        }
    };
    push_lines(&mut text, "\nThe skills:\n", &skills);
    push_lines(
        &mut text,
        "\nThe agents (roles a session selects: the server's `agent` setting or the request `_meta` key \"codemode/agent\"; a selected agent's own tools and skills become callable and loadable):\n",
        &agents,
    );
    text
}

/// Which tools ask a person first, by level; empty when none do.
fn approval_note(catalog: &Catalog) -> String {
    let asking = |level: Approval| -> Vec<String> {
        catalog
            .plugins()
            .flat_map(|(plugin, tools)| {
                tools
                    .filter(|t| t.definition.requires_approval == level && t.definition.is_public())
                    .map(|t| format!("tools{}{}", access_path(plugin), access_path(&t.definition.name)))
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    let mut note = String::new();
    for (level, when) in
        [(Approval::Always, "each call"), (Approval::OncePerSession, "their first call in this session")]
    {
        let tools = asking(level);
        if !tools.is_empty() {
            note.push_str(&format!(
                "\nThese tools ask a person to approve {when} first; a declined call rejects with an Error saying so: {}.\n",
                tools.join(", ")
            ));
        }
    }
    note
}

/// The tools section of a catalog too large to declare: how to search it, then each
/// plugin with its summary and tool names.
fn large_catalog(catalog: &Catalog, tool_count: usize, budget: usize, ranker: &str) -> String {
    let plugins: Vec<(&str, Vec<&Tool>)> = catalog
        .plugins()
        .map(|(plugin, tools)| (plugin, tools.filter(|t| t.definition.is_public()).collect::<Vec<_>>()))
        .filter(|(_, tools)| !tools.is_empty())
        .collect();
    let mut text = format!(
        r#"There are {tool_count} tools in {plugins} plugins, too many to declare here. Find the ones you need inside the program, then call them in the same program: `await tools.$search("what the tool should do")` resolves with the best matches, best first, each `{{ call, plugin, tool, description, declaration, score, ranker }}` where `declaration` is its TypeScript declaration (read its input and what it resolves with there); it ranks by {ranker}. Give several phrasings at once to widen it (`tools.$search(["open a bug", "file an issue"])`); `tools.$search(query, {{ plugin: "name", limit: 10 }})` searches one plugin or returns more (at most 50). Return the declarations you need when you want to read them before calling. A tool declared `Promise<string>` resolves with its text (`JSON.parse` it when it holds JSON); one whose result holds an image, audio or a resource resolves with its MCP content list.

The plugins and their tools:
"#,
        plugins = plugins.len(),
        ranker = ranker_words(ranker),
    );
    let room = budget.saturating_mul(LISTING_BUDGET_FACTOR).saturating_sub(text.len());
    // Every plugin gets its line (name, count, summary) and the same number of its tool
    // names: as many as fit the room, at most LISTED_NAMES, none when fewer than
    // FEWEST_NAMES would fit.
    let line = |plugin: &str, tools: &[&Tool], names: usize| {
        let summary = catalog.summary(plugin).map(|s| format!(": {s}")).unwrap_or_default();
        let mut line = format!("- tools{} ({} tools){summary}", access_path(plugin), tools.len());
        if names > 0 {
            let shown: Vec<&str> = tools.iter().map(|t| t.definition.name.as_str()).take(names).collect();
            line.push_str(&format!(" — {}", shown.join(", ")));
            if tools.len() > names {
                line.push_str(&format!(", … {} more", tools.len() - names));
            }
        }
        line.push('\n');
        line
    };
    let listing =
        |names: usize| -> String { plugins.iter().map(|(plugin, tools)| line(plugin, tools, names)).collect() };
    let listed =
        (FEWEST_NAMES..=LISTED_NAMES).rev().map(listing).find(|l| l.len() <= room).unwrap_or_else(|| listing(0));
    text.push_str(&listed);
    text
}

/// How a ranker's name reads in a sentence.
fn ranker_words(ranker: &str) -> String {
    if ranker.starts_with("BM25") {
        "the query's words (BM25)".to_string()
    } else {
        format!("meaning and words together ({ranker})")
    }
}

/// A two-call example with a tool the catalog really has (inputs made from its
/// schema), or a generic one naming no tool when the catalog is empty.
fn example_program(catalog: &Catalog) -> String {
    let Some((plugin, tool)) = catalog
        .plugins()
        .flat_map(|(plugin, tools)| tools.filter(|t| t.definition.is_public()).map(move |t| (plugin, t)))
        .max_by_key(|(_, t)| (t.definition.requires_approval.is_never(), t.definition.output_schema.is_some()))
    else {
        return "const [a, b] = await Promise.all([tools.<plugin>.<tool>(inputA), tools.<plugin>.<tool>(inputB)]);\nreturn { a, b };\n".to_string();
    };
    let call = format!("tools{}{}", access_path(plugin), access_path(&tool.definition.name));
    let input = |n: usize| sample_input(&tool.definition.input_schema, n);
    format!(
        "const [first, second] = await Promise.all([{call}({}), {call}({})]);\nreturn {{ first, second }};\n",
        input(0),
        input(1)
    )
}

/// An input for `schema` written as JavaScript: its required properties (at most
/// three) with values from their `const`, `enum`, `examples` or `default`, or a
/// placeholder of their type (`"city 1"` for a string named city); `n` picks a
/// different example where there are several.
fn sample_input(schema: &Value, n: usize) -> String {
    let required: Vec<&str> =
        schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let properties = schema.get("properties").and_then(Value::as_object);
    let fields: Vec<String> = required
        .iter()
        .take(3)
        .map(|name| {
            let property = properties.and_then(|p| p.get(*name)).unwrap_or(&Value::Null);
            format!("{}: {}", property_key(name), sample_value(name, property, n))
        })
        .collect();
    if fields.is_empty() {
        String::new()
    } else {
        format!("{{ {} }}", fields.join(", "))
    }
}

fn sample_value(name: &str, schema: &Value, n: usize) -> String {
    let pick = |values: &Vec<Value>| values.get(n % values.len().max(1)).map(Value::to_string);
    if let Some(value) = schema.get("const") {
        return value.to_string();
    }
    for key in ["enum", "examples"] {
        if let Some(text) = schema.get(key).and_then(Value::as_array).filter(|v| !v.is_empty()).and_then(pick) {
            return text;
        }
    }
    if let Some(value) = schema.get("default") {
        return value.to_string();
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("integer" | "number") => {
            let low = schema.get("minimum").and_then(Value::as_f64).unwrap_or(1.0);
            format!("{}", low + n as f64)
        }
        Some("boolean") => "true".into(),
        Some("array") => "[]".into(),
        Some("object") => "{}".into(),
        _ => Value::String(format!("{name} {}", n + 1)).to_string(),
    }
}

/// The server's instructions: how to use codemode, then each enabled plugin's rules
/// under a heading with its name (`rules` comes from the configuration).
pub fn instructions(rules: &str, mode: ServerMode, names: ToolNames) -> String {
    let intro = match (mode, names) {
        (ServerMode::Code, _) => "codemode gives you one tool, `execute`, which runs a JavaScript program that calls the plugin tools declared in its description. Prefer one program that does the whole task (calls, filtering, combining) over many small ones.",
        (ServerMode::Tools, ToolNames::Own) => "codemode gives you the plugin tools, each as a tool of its own under its own name (`<plugin>_<tool>` where two plugins have a tool of the same name).",
        (ServerMode::Tools, ToolNames::Prefixed) => "codemode gives you the plugin tools, each as a tool named `<plugin>__<tool>`.",
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
    use codemode_core::tool::{ToolDefinition, ToolResult};
    use serde_json::json;

    fn catalog() -> Catalog {
        let mut approve = ToolDefinition::new(
            "delete",
            "Deletes a note.",
            json!({ "type": "object", "properties": { "id": { "type": "integer" } }, "required": ["id"] }),
        );
        approve.requires_approval = codemode_core::tool::Approval::Always;
        Catalog::new()
            .with("weather", Tool::from_fn(ToolDefinition::new("forecast", "Forecast for a city.", json!({ "type": "object", "properties": { "city": { "type": "string" } }, "required": ["city"] })), |_, _| async { ToolResult::text("x") }))
            .unwrap()
            .with("notes", Tool::from_fn(approve, |_, _| async { ToolResult::text("x") }))
            .unwrap()
    }

    #[test]
    fn the_description_states_the_limits_the_cap_and_every_tool() {
        let text = execute_description(&catalog(), &Limits::default(), 64 * 1024, CatalogBudget::DEFAULT, "BM25");
        assert!(text.contains("Limits: 256 MiB of memory; 10 s of JavaScript between two tool answers (waiting for tools does not count); 15 min in all; 64 KiB of console output"), "{text}");
        assert!(text.contains("A result longer than 64 KiB is cut to fit"), "{text}");
        assert!(text.contains("These tools ask a person to approve each call first; a declined call rejects with an Error saying so: tools.notes.delete."), "{text}");
        assert!(text.contains("The 2 tools, as TypeScript declarations"), "{text}");
        assert!(text.contains("forecast(input: {"), "{text}");
        assert!(text.trim_end().ends_with("```"), "{text}");
    }

    /// Sentences of a text, for finding repeats.
    fn sentences(text: &str) -> Vec<String> {
        text.split(['.', '\n']).map(str::trim).filter(|s| s.len() > 20).map(str::to_string).collect()
    }

    #[test]
    fn the_example_calls_a_tool_that_exists_and_no_sentence_is_written_twice() {
        let text = execute_description(&catalog(), &Limits::default(), 64 * 1024, CatalogBudget::DEFAULT, "BM25");
        assert!(
            text.contains("Example:\nconst [first, second] = await Promise.all([tools.weather.forecast({ city: \"city 1\" }), tools.weather.forecast({ city: \"city 2\" })]);\nreturn { first, second };\n"),
            "{text}"
        );
        let empty = execute_description(&Catalog::new(), &Limits::default(), 64 * 1024, CatalogBudget::DEFAULT, "BM25");
        assert!(empty.contains("tools.<plugin>.<tool>(inputA)"), "{empty}");
        let all = sentences(&text);
        for (i, sentence) in all.iter().enumerate() {
            assert!(!all[..i].contains(sentence), "written twice: {sentence:?}");
        }
    }

    /// A catalog of `plugins` × `tools` tools with long schemas.
    fn large(plugins: usize, tools: usize) -> Catalog {
        let mut catalog = Catalog::new();
        for p in 0..plugins {
            for t in 0..tools {
                let definition = ToolDefinition::new(
                    format!("tool_{t}"),
                    "Does one thing of many, described at some length so that declarations grow as real ones do.",
                    json!({ "type": "object", "properties": { "query": { "type": "string", "description": "What to look for, in words." }, "limit": { "type": "integer", "minimum": 1, "maximum": 100 } }, "required": ["query"] }),
                );
                catalog
                    .add(&format!("plugin{p}"), Tool::from_fn(definition, |_, _| async { ToolResult::text("x") }))
                    .unwrap();
            }
            catalog.set_summary(&format!("plugin{p}"), &format!("Plugin number {p}.\nMore lines are not shown."));
        }
        catalog
    }

    #[test]
    fn past_the_budget_plugins_are_listed_and_programs_search() {
        let catalog = large(40, 25);
        let full = execute_description(&catalog, &Limits::default(), 64 * 1024, CatalogBudget::Unlimited, "BM25");
        assert!(full.contains("The 1000 tools, as TypeScript declarations"));
        let text = execute_description(&catalog, &Limits::default(), 64 * 1024, CatalogBudget::DEFAULT, "BM25");
        assert!(text.contains("There are 1000 tools in 40 plugins, too many to declare here."), "{text}");
        assert!(text.contains("`await tools.$search(\"what the tool should do\")`"), "{text}");
        assert!(text.contains("- tools.plugin0 (25 tools): Plugin number 0. — tool_0, tool_1, tool_10,"), "{text}");
        assert!(!text.contains("```ts"), "no declarations past the budget");
        assert!(full.len() > 10 * text.len(), "{} vs {}", full.len(), text.len());
        // The listing names fewer tools of every plugin to stay within twice the budget,
        // none when fewer than three would fit; every plugin is still there.
        let tight = execute_description(&catalog, &Limits::default(), 64 * 1024, CatalogBudget::Chars(2_300), "BM25");
        let lines: Vec<&str> = tight.lines().filter(|l| l.starts_with("- tools.")).collect();
        assert_eq!(lines.len(), 40, "{tight}");
        assert!(lines.iter().all(|l| l.ends_with(", … 22 more")), "three names each: {lines:?}");
        assert!(
            tight.contains("- tools.plugin0 (25 tools): Plugin number 0. — tool_0, tool_1, tool_10, … 22 more\n"),
            "{tight}"
        );
        let tighter = execute_description(&catalog, &Limits::default(), 64 * 1024, CatalogBudget::Chars(1_000), "BM25");
        assert!(tighter.contains("- tools.plugin0 (25 tools): Plugin number 0.\n"), "{tighter}");
        assert!(tighter.contains("- tools.plugin39 (25 tools): Plugin number 39.\n"), "{tighter}");
        // A thousand tools cost an agent under 20,000 characters, and the ranker is named.
        assert!(text.chars().count() < 20_000, "{} characters", text.chars().count());
        assert!(text.contains("it ranks by the query's words (BM25)."), "{text}");
        let meaning = execute_description(
            &catalog,
            &Limits::default(),
            64 * 1024,
            CatalogBudget::DEFAULT,
            codemode_core::tool::semantic::RANKER,
        );
        assert!(meaning.contains("it ranks by meaning and words together (all-MiniLM-L6-v2 + BM25)."), "{meaning}");
        // Below the budget, the seed's rule holds unchanged.
        let small = large(2, 2);
        assert!(execute_description(&small, &Limits::default(), 64 * 1024, CatalogBudget::DEFAULT, "BM25")
            .contains("The 4 tools, as TypeScript declarations"));
    }

    #[test]
    fn skills_and_agents_get_one_line_each_and_their_tools_none() {
        use codemode_core::tool::skills::{Agent, Guidance, Skill};
        let skill = |n: usize| Skill {
            name: format!("skill-{n}"),
            description: format!("Use it for task number {n}, described at the length real skill descriptions have."),
            instructions: "Step one, then step two.".into(),
            folder: format!("skills/skill-{n}"),
            agent: None,
        };
        let mut catalog = large(40, 25);
        let mut private = ToolDefinition::new("skill-0__normalize", "Normalizes.", json!({ "type": "object" }));
        private.owner = Some("skills/skill-0".into());
        catalog.add("plugin0", Tool::from_fn(private, |_, _| async { ToolResult::text("x") })).unwrap();
        let agent = Agent {
            name: "reviewer".into(),
            description: "Reviews results".into(),
            instructions: "## reviewer: system.md\n\nYou review.".into(),
            folder: "agents/reviewer".into(),
            tools: Vec::new(),
        };
        catalog.set_guidance(
            "plugin0",
            Guidance { skills: (0..50).map(skill).collect(), agents: vec![agent], main_agent: None },
        );
        let text = execute_description(&catalog, &Limits::default(), 64 * 1024, CatalogBudget::DEFAULT, "BM25");
        assert!(text.contains("\nThe skills:\n- skill-0 (tools.plugin0): Use it for task number 0, described at the length real skill descriptions have.\n"), "{text}");
        assert!(text.contains("- reviewer (tools.plugin0): Reviews results\n"), "{text}");
        assert!(text.contains("There are 1000 tools in 40 plugins"), "the private tool is not counted: {text}");
        assert!(!text.contains("normalize"), "{text}");
        // A thousand tools and fifty skills cost an agent under 20,000 characters.
        assert!(text.chars().count() < 20_000, "{} characters", text.chars().count());
        let small = large(1, 1);
        let mut small = small;
        let mut private = ToolDefinition::new("s__t", "Private.", json!({ "type": "object" }));
        private.owner = Some("skills/s".into());
        small.add("plugin0", Tool::from_fn(private, |_, _| async { ToolResult::text("x") })).unwrap();
        let text = execute_description(&small, &Limits::default(), 64 * 1024, CatalogBudget::DEFAULT, "BM25");
        assert!(text.contains("The 1 tools, as TypeScript declarations") && !text.contains("s__t"), "{text}");
        assert!(!text.contains("tools.$skills.load"), "no skills, no section: {text}");
    }

    #[test]
    fn instructions_carry_the_rules_under_their_headings() {
        assert_eq!(
            instructions("## notes\n\nCite ids.\n", ServerMode::Code, ToolNames::Own)
                .split("\n\n# Plugin rules\n\n")
                .nth(1),
            Some("## notes\n\nCite ids.")
        );
        assert!(!instructions("", ServerMode::Tools, ToolNames::Own).contains("Plugin rules"));
    }
}
