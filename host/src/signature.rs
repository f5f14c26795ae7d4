//! Short, readable type signatures from JSON Schemas, for `codemode tools`.

use serde_json::Value;

/// Fields keep the order the schema's author gave them.
///
/// A TypeScript-like type for a schema: `{ city: string; days?: number }`, `string[]`,
/// `"a" | "b"`; `unknown` for what it cannot express.
pub fn type_of(schema: &Value) -> String {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return values.iter().map(Value::to_string).collect::<Vec<_>>().join(" | ");
    }
    if let Some(options) = schema.get("anyOf").or_else(|| schema.get("oneOf")).and_then(Value::as_array) {
        return options.iter().map(type_of).collect::<Vec<_>>().join(" | ");
    }
    match schema.get("type") {
        Some(Value::Array(types)) => types.iter().map(|t| type_of(&serde_json::json!({ "type": t }))).collect::<Vec<_>>().join(" | "),
        Some(Value::String(t)) => match t.as_str() {
            "string" => "string".into(),
            "number" | "integer" => "number".into(),
            "boolean" => "boolean".into(),
            "null" => "null".into(),
            "array" => {
                let item = schema.get("items").map_or("unknown".to_string(), type_of);
                if item.contains(' ') {
                    format!("({item})[]")
                } else {
                    format!("{item}[]")
                }
            }
            "object" => object_type(schema),
            _ => "unknown".into(),
        },
        _ if schema.get("properties").is_some() => object_type(schema),
        _ => "unknown".into(),
    }
}

fn object_type(schema: &Value) -> String {
    let required: Vec<&str> = schema.get("required").and_then(Value::as_array).map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return "{}".into();
    };
    if properties.is_empty() {
        return "{}".into();
    }
    let fields: Vec<String> = properties
        .iter()
        .map(|(name, s)| format!("{name}{}: {}", if required.contains(&name.as_str()) { "" } else { "?" }, type_of(s)))
        .collect();
    format!("{{ {} }}", fields.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn objects_arrays_enums_and_optional_fields() {
        let schema = json!({
            "type": "object",
            "properties": { "city": { "type": "string" }, "days": { "type": "integer" }, "units": { "enum": ["c", "f"] }, "tags": { "type": "array", "items": { "type": "string" } } },
            "required": ["city"]
        });
        assert_eq!(type_of(&schema), r#"{ city: string; days?: number; units?: "c" | "f"; tags?: string[] }"#);
        assert_eq!(type_of(&json!({ "type": ["string", "null"] })), "string | null");
        assert_eq!(type_of(&json!({ "type": "array", "items": { "anyOf": [{ "type": "string" }, { "type": "number" }] } })), "(string | number)[]");
        assert_eq!(type_of(&json!({ "not": {} })), "unknown");
    }
}
