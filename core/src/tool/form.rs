//! A form a tool's server asks a person to fill in during a call (MCP elicitation's
//! `requestedSchema`: an object of flat fields, each text, a number, an integer, a
//! yes/no or a choice from a list), read once so every place that asks (the terminal,
//! codemode's own MCP client) treats it alike.
//!
//! Pure functions: [`Form::from_schema`] reads the schema, [`Form::complete`] fills the
//! fields an answer left out with their defaults (SEP-1034: the client, not the server,
//! applies them), [`Form::parse`] turns what a person typed into a field's value.

use serde_json::{Map, Value};

/// One field's type.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind {
    /// Text (with a `format` such as `email`, when given).
    Text {
        /// The schema's `format`.
        format: Option<String>,
    },
    /// Any number.
    Number,
    /// A whole number.
    Integer,
    /// Yes or no.
    Boolean,
    /// One of a list.
    Choice(Vec<String>),
    /// Any of a list.
    Choices(Vec<String>),
}

/// One field of a form.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// Its key in the answer.
    pub name: String,
    /// What to call it (its `title`, else its name).
    pub label: String,
    /// Its `description`.
    pub description: Option<String>,
    /// Its type.
    pub kind: FieldKind,
    /// Its `default`.
    pub default: Option<Value>,
    /// True when the answer must have it.
    pub required: bool,
}

/// A form: its fields, in the schema's order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Form {
    /// The fields.
    pub fields: Vec<Field>,
}

impl Form {
    /// Reads an elicitation schema; `Err` names what codemode cannot ask for.
    pub fn from_schema(schema: &Value) -> Result<Form, String> {
        let properties = match schema.get("properties") {
            None | Some(Value::Null) => return Ok(Form::default()),
            Some(Value::Object(p)) => p,
            Some(_) => return Err("the form's `properties` is not an object".into()),
        };
        let required: Vec<&str> =
            schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
        let fields = properties
            .iter()
            .map(|(name, field)| {
                let kind =
                    field_kind(field).ok_or_else(|| format!("field {name} has a type codemode cannot ask for"))?;
                Ok(Field {
                    name: name.clone(),
                    label: field.get("title").and_then(Value::as_str).unwrap_or(name).to_string(),
                    description: field.get("description").and_then(Value::as_str).map(str::to_owned),
                    kind,
                    default: field.get("default").cloned(),
                    required: required.contains(&name.as_str()),
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(Form { fields })
    }

    /// True when the form has no fields: a yes-or-no question.
    pub fn is_question(&self) -> bool {
        self.fields.is_empty()
    }

    /// `answer` with every field it leaves out that has a default set to it.
    pub fn complete(&self, mut answer: Map<String, Value>) -> Map<String, Value> {
        for field in &self.fields {
            if let (false, Some(default)) = (answer.contains_key(&field.name), &field.default) {
                answer.insert(field.name.clone(), default.clone());
            }
        }
        answer
    }

    /// The required fields `answer` lacks.
    pub fn missing<'a>(&'a self, answer: &Map<String, Value>) -> Vec<&'a str> {
        self.fields.iter().filter(|f| f.required && !answer.contains_key(&f.name)).map(|f| f.name.as_str()).collect()
    }

    /// What a person typed for `field` as its value; empty text is `None` (left out).
    pub fn parse(field: &Field, typed: &str) -> Result<Option<Value>, String> {
        let typed = typed.trim();
        if typed.is_empty() {
            return Ok(None);
        }
        let value = match &field.kind {
            FieldKind::Text { .. } => Value::String(typed.to_string()),
            FieldKind::Number => {
                let n: f64 = typed.parse().map_err(|_| format!("{typed:?} is not a number"))?;
                serde_json::Number::from_f64(n)
                    .map(Value::Number)
                    .ok_or_else(|| format!("{typed:?} is not a number"))?
            }
            FieldKind::Integer => {
                Value::from(typed.parse::<i64>().map_err(|_| format!("{typed:?} is not a whole number"))?)
            }
            FieldKind::Boolean => match typed.to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" => Value::Bool(true),
                "n" | "no" | "false" => Value::Bool(false),
                _ => return Err(format!("{typed:?} is not yes or no")),
            },
            FieldKind::Choice(options) => {
                if !options.iter().any(|o| o == typed) {
                    return Err(format!("{typed:?} is not one of {}", options.join(", ")));
                }
                Value::String(typed.to_string())
            }
            FieldKind::Choices(options) => {
                let picked: Vec<&str> = typed.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
                if let Some(bad) = picked.iter().find(|p| !options.iter().any(|o| o == *p)) {
                    return Err(format!("{bad:?} is not one of {}", options.join(", ")));
                }
                Value::from(picked)
            }
        };
        Ok(Some(value))
    }
}

/// A field's kind from its schema (`enum`/`oneOf` for choices, `items` of those for a
/// list of choices).
fn field_kind(field: &Value) -> Option<FieldKind> {
    let options = |schema: &Value| -> Option<Vec<String>> {
        if let Some(values) = schema.get("enum").and_then(Value::as_array) {
            return Some(values.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect());
        }
        let titled = schema.get("oneOf").or_else(|| schema.get("anyOf"))?.as_array()?;
        Some(titled.iter().filter_map(|o| o.get("const").and_then(Value::as_str).map(str::to_owned)).collect())
    };
    match field.get("type").and_then(Value::as_str) {
        Some("string") => Some(match options(field) {
            Some(list) => FieldKind::Choice(list),
            None => FieldKind::Text { format: field.get("format").and_then(Value::as_str).map(str::to_owned) },
        }),
        Some("number") => Some(FieldKind::Number),
        Some("integer") => Some(FieldKind::Integer),
        Some("boolean") => Some(FieldKind::Boolean),
        Some("array") => options(field.get("items")?).map(FieldKind::Choices),
        None => options(field).map(FieldKind::Choice),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn sep1034() -> Form {
        Form::from_schema(&json!({
            "type": "object",
            "properties": {
                "name": { "type": "string", "default": "John Doe" },
                "age": { "type": "integer", "default": 30 },
                "score": { "type": "number", "default": 95.5 },
                "status": { "type": "string", "enum": ["active", "inactive"], "default": "active" },
                "verified": { "type": "boolean", "default": true },
                "tags": { "type": "array", "items": { "anyOf": [{ "const": "a" }, { "const": "b" }] } },
                "email": { "type": "string", "format": "email" }
            },
            "required": ["email"]
        }))
        .unwrap()
    }

    #[test]
    fn omitted_fields_get_their_defaults_and_given_ones_stay() {
        let form = sep1034();
        let answer = form.complete(json!({ "age": 41 }).as_object().unwrap().clone());
        assert_eq!(
            Value::Object(answer.clone()),
            json!({ "age": 41, "name": "John Doe", "score": 95.5, "status": "active", "verified": true })
        );
        assert_eq!(form.missing(&answer), ["email"]);
    }

    #[test]
    fn fields_are_read_in_order_with_their_kinds() {
        let form = sep1034();
        let names: Vec<&str> = form.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["name", "age", "score", "status", "verified", "tags", "email"]);
        assert_eq!(form.fields[3].kind, FieldKind::Choice(vec!["active".into(), "inactive".into()]));
        assert_eq!(form.fields[5].kind, FieldKind::Choices(vec!["a".into(), "b".into()]));
        assert_eq!(form.fields[6].kind, FieldKind::Text { format: Some("email".into()) });
        assert!(Form::from_schema(&json!({ "type": "object" })).unwrap().is_question());
        assert!(Form::from_schema(&json!({ "properties": { "x": { "type": "object" } } })).is_err());
    }

    #[test]
    fn typed_text_becomes_a_value_or_says_what_is_wrong() {
        let form = sep1034();
        let field = |name: &str| form.fields.iter().find(|f| f.name == name).unwrap().clone();
        assert_eq!(Form::parse(&field("age"), " 7 ").unwrap(), Some(json!(7)));
        assert_eq!(Form::parse(&field("age"), "seven").unwrap_err(), "\"seven\" is not a whole number");
        assert_eq!(Form::parse(&field("verified"), "no").unwrap(), Some(json!(false)));
        assert_eq!(Form::parse(&field("status"), "gone").unwrap_err(), "\"gone\" is not one of active, inactive");
        assert_eq!(Form::parse(&field("tags"), "a, b").unwrap(), Some(json!(["a", "b"])));
        assert_eq!(Form::parse(&field("name"), "  ").unwrap(), None);
    }
}
