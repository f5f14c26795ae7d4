//! A tool's JSON Schemas, compiled once when the tool joins a catalog, and the messages
//! that say which field of an input or output is wrong. A large value is described,
//! not quoted: the message about a 30 MiB string must not be 30 MiB.

use serde_json::Value;

/// A tool's schemas, compiled.
pub struct Schemas {
    input: jsonschema::Validator,
    output: Option<jsonschema::Validator>,
}

impl Schemas {
    /// Compiles an input schema and an optional output schema; `Err` names the schema
    /// that is not valid and why.
    pub fn compile(input: &Value, output: Option<&Value>) -> Result<Self, (&'static str, String)> {
        let input = jsonschema::validator_for(input)
            .map_err(|e| ("inputSchema", format!("is not a valid JSON Schema: {e}")))?;
        let output = match output {
            None => None,
            Some(schema) if !schema.is_object() => return Err(("outputSchema", "must be a JSON Schema object".into())),
            Some(schema) => Some(
                jsonschema::validator_for(schema)
                    .map_err(|e| ("outputSchema", format!("is not a valid JSON Schema: {e}")))?,
            ),
        };
        Ok(Self { input, output })
    }

    /// Checks an input: `Err` lists what is wrong, field by field.
    pub fn check_input(&self, input: &Value) -> Result<(), String> {
        describe_errors(&self.input, input, "input")
    }

    /// Checks a `structuredContent` against the output schema, when there is one.
    pub fn check_output(&self, output: &Value) -> Option<Result<(), String>> {
        self.output.as_ref().map(|validator| describe_errors(validator, output, "output"))
    }

    /// True when the tool has an output schema.
    pub fn has_output(&self) -> bool {
        self.output.is_some()
    }
}

/// Every validation error as `<root>.a.b: message` (`root` is `input` or `output`),
/// joined by `; `, at most five.
fn describe_errors(validator: &jsonschema::Validator, value: &Value, root: &str) -> Result<(), String> {
    let errors: Vec<String> = validator
        .iter_errors(value)
        .take(5)
        .map(|e| {
            let path = e.instance_path().to_string();
            let field = format!("{root}{}", path.replace('/', "."));
            match brief(e.instance()) {
                None => format!("{field}: {e}"),
                Some(placeholder) => format!("{field}: {}", e.masked_with(placeholder)),
            }
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

/// Longest value quoted in a validation message.
const MAX_QUOTED_CHARS: usize = 200;

/// A short description of a value too large to quote; `None` when it can be quoted.
fn brief(value: &Value) -> Option<String> {
    let mut room = MAX_QUOTED_CHARS;
    if fits(value, &mut room) {
        return None;
    }
    Some(match value {
        Value::String(s) => format!("a string of {} characters", s.chars().count()),
        Value::Array(items) => format!("an array of {} items", items.len()),
        Value::Object(map) => format!("an object with {} properties", map.len()),
        other => other.to_string(),
    })
}

/// True when `value` written as JSON takes at most `room` characters (roughly; it
/// stops counting as soon as it does not).
fn fits(value: &Value, room: &mut usize) -> bool {
    let mut take = |n: usize| match room.checked_sub(n) {
        Some(left) => {
            *room = left;
            true
        }
        None => false,
    };
    match value {
        Value::Null | Value::Bool(_) | Value::Number(_) => take(8),
        Value::String(s) => take(s.len() + 2),
        Value::Array(items) => take(2) && items.iter().all(|v| fits(v, room)),
        Value::Object(map) => {
            take(2)
                && map
                    .iter()
                    .all(|(k, v)| room.checked_sub(k.len() + 4).map(|left| *room = left).is_some() && fits(v, room))
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn errors_name_the_field_and_large_values_are_described() {
        let s = Schemas::compile(&json!({"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}}, "required": ["city"]}), None).unwrap();
        assert_eq!(s.check_input(&json!({"city": "Oslo", "days": 2})), Ok(()));
        assert_eq!(s.check_input(&json!({"city": 5})).unwrap_err(), "input.city: 5 is not of type \"string\"");
        assert_eq!(s.check_input(&json!({})).unwrap_err(), "input: \"city\" is a required property");
        assert!(s
            .check_input(&json!({"city": "x", "days": 0}))
            .unwrap_err()
            .contains("input.days: 0 is less than the minimum of 1"));
        let huge = "x".repeat(100_000);
        assert_eq!(s.check_input(&json!({"city": 5, "days": huge})).unwrap_err(), "input.city: 5 is not of type \"string\"; input.days: a string of 100000 characters is not of type \"integer\"");
    }

    #[test]
    fn invalid_schemas_are_named() {
        assert_eq!(
            Schemas::compile(&json!({"type": "object", "properties": {"a": {"type": 12}}}), None).err().unwrap().0,
            "inputSchema"
        );
        assert_eq!(
            Schemas::compile(&json!({"type": "object"}), Some(&json!(true))).err().unwrap(),
            ("outputSchema", "must be a JSON Schema object".to_string())
        );
    }
}
