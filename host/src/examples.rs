//! Bundled example tools, served in-process: `weather.forecast` and `math.add`.
//!
//! They let `codemode run --example-tools` (the README's first command) and the
//! benchmarks run without any plugin. The weather is made up from the city's name, so
//! results are stable and nothing leaves the machine.

use serde_json::{json, Value};

use crate::tool::{Catalog, Tool, ToolDefinition, ToolResult};

/// A catalog with the example tools.
pub fn example_catalog() -> Catalog {
    let mut catalog = Catalog::new();
    let forecast = Tool::from_fn(
        ToolDefinition::new(
            "forecast",
            "Tomorrow's forecast for a city (example data).",
            json!({ "type": "object", "properties": { "city": { "type": "string" } }, "required": ["city"] }),
        )
        .with_output_schema(json!({
            "type": "object",
            "properties": { "city": { "type": "string" }, "high_c": { "type": "number" }, "low_c": { "type": "number" }, "sky": { "type": "string" } }
        })),
        |input, _| async move {
            let Some(city) = input.get("city").and_then(Value::as_str) else {
                return ToolResult::error("forecast: `city` must be a string, for example { city: \"Oslo\" }");
            };
            let seed = city.bytes().fold(7u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
            let high = 5 + (seed % 25) as i64;
            let sky = ["clear", "cloudy", "rain", "snow", "windy"][(seed / 25 % 5) as usize];
            ToolResult::json(json!({ "city": city, "high_c": high, "low_c": high - 6, "sky": sky }))
        },
    );
    let add = Tool::from_fn(
        ToolDefinition::new(
            "add",
            "Adds two numbers.",
            json!({ "type": "object", "properties": { "a": { "type": "number" }, "b": { "type": "number" } }, "required": ["a", "b"] }),
        ),
        |input, _| async move {
            match (input.get("a").and_then(Value::as_f64), input.get("b").and_then(Value::as_f64)) {
                (Some(a), Some(b)) => ToolResult::text(format_number(a + b)),
                _ => ToolResult::error("add: `a` and `b` must be numbers"),
            }
        },
    );
    for (plugin, tool) in [("weather", forecast), ("math", add)] {
        if let Err(e) = catalog.add(plugin, tool) {
            unreachable!("example tools are valid: {e}");
        }
    }
    catalog
}

fn format_number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        n.to_string()
    }
}
